"""Chapter 7's coursework: The score-function trick (``book/07_score_function.ipynb``)."""

NUMBER = 7
PART, LECTURE = 2, 1
OBJECTIVE = ("derive the score-function gradient and compute a softmax policy's score by hand; see REINFORCE as "
             "SFT on the model's own samples, weighted by reward")
MINUTES = (45, 60)      # reading its text and code, doing its exercises

#: What a student can do after each exercise (by label).
EXERCISE_OBJECTIVES = {
    "ex-ch07-partial-credit": "compute a policy-gradient component by hand under partial credit",
    "ex-ch07-sum-zero": "prove that the policy gradient sums to zero over the logits, two ways",
    "ex-ch07-lr-ratio": "derive when an RL step equals an SFT step, and what a tiny J does to RL",
    "ex-ch07-write-score": "implement the score onehot(y) - pi of a softmax policy",
    "ex-ch07-write-policy-gradient": "implement the exact gradient pi * (r - J)",
    "ex-ch07-slider": "predict how much faster SFT moves than RL at a given learning rate",
}
#: The kind of each exercise whose title names none.
UNTITLED_KINDS = {"ex-ch07-sum-zero": "written", "ex-ch07-lr-ratio": "written"}
