"""Chapter 5's coursework: But SFT is forward KL (``book/05_forward_kl.ipynb``)."""

NUMBER = 5
PART, LECTURE = 1, 2
OBJECTIVE = ("identify SFT as forward KL and tell it from reverse KL; explain why SFT drains a second spelling; "
             "write a verifier that never evaluates text")
MINUTES = (55, 75)      # reading its text and code, doing its exercises

#: What a student can do after each exercise (by label).
EXERCISE_OBJECTIVES = {
    "ex-ch05-two-labels": "find the forward-KL optimum of a two-label data set",
    "ex-ch05-infinity": "tell which KL direction becomes infinite on missing support, and what that does to a "
                        "fit",
    "ex-ch05-break-reward": "find completions that fool a naive verifier and one it wrongly rejects",
    "ex-ch05-reliable-zero": "run SFT and RL from another start and explain how RL treats the second spelling",
    "ex-ch05-forward-kl": "compute the forward KL that SFT minimises, by hand",
    "ex-ch05-write-kl": "implement KL(p || q) with the 0 ln 0 and infinite cases",
    "ex-ch05-slider": "predict what doubling the learning rate does to the SFT and RL curves",
}
#: The kind of each exercise whose title names none.
UNTITLED_KINDS = {"ex-ch05-two-labels": "written", "ex-ch05-infinity": "written", "ex-ch05-break-reward": "written",
                  "ex-ch05-reliable-zero": "experiment"}
