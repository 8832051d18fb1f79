"""Chapter 3's coursework: One answer, two strings (``book/03_sequences.ipynb``)."""

NUMBER = 3
PART, LECTURE = 1, 1
OBJECTIVE = ("compute a string's probability as a product of conditionals, end-of-sequence included; explain why"
             " two spellings of one answer differ")
MINUTES = (30, 45)      # reading its text and code, doing its exercises

#: What a student can do after each exercise (by label).
EXERCISE_OBJECTIVES = {
    "ex-ch03-talkative": "compute a string's probability, end-of-sequence included, and a total over spellings",
    "ex-ch03-length": "compare sequences of different lengths with log-probabilities",
    "ex-ch03-verifier": "enumerate what a verifier accepts and what the policy can produce",
    "ex-ch03-write-sequence-probability": "implement a string's probability as a product of conditionals",
    "ex-ch03-sliders": "predict when the long spelling of an answer overtakes the short one",
}
#: The kind of each exercise whose title names none.
UNTITLED_KINDS = {"ex-ch03-length": "written", "ex-ch03-verifier": "written"}
