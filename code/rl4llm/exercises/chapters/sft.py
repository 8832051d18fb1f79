"""Chapter 4's coursework: Supervised fine-tuning, one step at a time (``book/04_sft.ipynb``)."""

NUMBER = 4
PART, LECTURE = 1, 2
OBJECTIVE = ("compute entropy, cross-entropy and KL and use CE = H + KL; derive the SFT gradient pi - onehot and"
             " take one SFT step")
MINUTES = (40, 60)      # reading its text and code, doing its exercises

#: What a student can do after each exercise (by label).
EXERCISE_OBJECTIVES = {
    "ex-ch04-gibbs": "check Gibbs' inequality numerically and state when it is an equality",
    "ex-ch04-half": "find a learning rate by bisection on the SFT step",
    "ex-ch04-sum-zero": "explain why the SFT gradient sums to zero, from shift invariance",
    "ex-ch04-noisy-labels": "compute a cross-entropy under noisy labels from the surprises",
    "ex-ch04-write-sft-gradient": "implement the SFT gradient pi - onehot(y)",
    "ex-ch04-slider": "predict one SFT step's effect on the correct answer from the gradient",
}
#: The kind of each exercise whose title names none.
UNTITLED_KINDS = {"ex-ch04-sum-zero": "written", "ex-ch04-gibbs": "experiment", "ex-ch04-half": "experiment"}
