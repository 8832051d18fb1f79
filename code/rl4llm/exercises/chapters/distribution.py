"""Chapter 1's coursework: A language model is a probability distribution (``book/01_distribution.ipynb``)."""

NUMBER = 1
PART, LECTURE = 1, 1
OBJECTIVE = ("turn logits into probabilities with a stable softmax; predict what temperature does (it never "
             "reorders the answers)")
MINUTES = (25, 40)      # reading its text and code, doing its exercises

#: What a student can do after each exercise (by label).
EXERCISE_OBJECTIVES = {
    "ex-ch01-shift": "prove that softmax ignores a common shift of the logits but not a common scale",
    "ex-ch01-limits": "derive the greedy and uniform limits of temperature and say why T = 0 is refused",
    "ex-ch01-cold": "compute a tempered softmax by hand from the toy's weights",
    "ex-ch01-write-softmax": "implement a softmax that is stable for huge logits, with temperature, on any batch",
    "ex-ch01-slider": "predict a probability ratio under temperature before seeing it",
}
#: The kind of each exercise whose title names none.
UNTITLED_KINDS = {"ex-ch01-shift": "written", "ex-ch01-limits": "written"}
