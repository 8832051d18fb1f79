"""Chapter 20's coursework: When the sampler is not the trainer (``book/20_sampler_trainer.ipynb``)."""

NUMBER = 20
PART, LECTURE = 5, 2
OBJECTIVE = ("give the trainer a separate sampler (bf16, stale weights) and measure the log-prob gap per token "
             "and per sequence; compute TRL's four importance-sampling corrections and the off-policy mask; say "
             "from a comparison over seeds where a correction matters and why; say what TRL's asynchronous trainer "
             "computes instead (its ratio against the engine's log-probs, max_staleness) and what its clip sees")
MINUTES = (55, 70)      # reading its text and code, doing its exercises

#: What a student can do after each exercise (by label).
EXERCISE_OBJECTIVES = {
    "ex-ch20-sequence-weight": "compute TRL's truncated and masked importance weights of an answer a separate "
                               "sampler drew, and say where they differ",
    "ex-ch20-opsm-kl": "compute the off-policy mask's measure of a sequence and say whether it is dropped",
    "ex-ch20-write-lognormal-weight-moments": "implement the mean and variance of an importance weight with no "
                                              "cap, truncated and masked",
    "ex-ch20-one-step-off": "compute a log-normal weight's std from the log-ratio's, then predict and measure "
                            "whether a one-step-off sampler costs accuracy, and how the learning rate decides it",
    "ex-ch20-async-clip": "compute the ratio AsyncGRPOTrainer's clip sees on a stale token and say whether its "
                          "clipped term carries a gradient, against GRPOTrainer's rescored ratio",
}
#: The kind of each exercise whose title names none.
UNTITLED_KINDS = {}
