"""Chapter 15's coursework: GRPO on a tiny transformer (``book/15_tiny_transformer.ipynb``)."""

NUMBER = 15
PART, LECTURE = 4, 1
OBJECTIVE = ("write a verifier that model output can neither fool nor crash; run GRPO on a tiny transformer and "
             "read its diagnostics; tell a run's machine-dependent digits from what holds on every CPU; size a "
             "comparison over seeds")
MINUTES = (60, 75)      # reading its text and code, doing its exercises

#: What a student can do after each exercise (by label).
EXERCISE_OBJECTIVES = {
    "ex-ch15-clip": "make the clip bind in a real run and say which tokens it clips",
    "ex-ch15-padding": "give the position ids a left-padded batch needs, and what breaks without them",
    "ex-ch15-seeds": "size a comparison over seeds from the noise floor",
    "ex-ch15-verifier": "implement a verifier that model output can neither fool nor crash",
    "ex-ch15-break": "break GRPO one knob at a time, predicting each run first",
}
#: The kind of each exercise whose title names none.
UNTITLED_KINDS = {"ex-ch15-padding": "written", "ex-ch15-clip": "experiment"}
