"""Chapter 18's coursework: Sequence-level ratios, dynamic sampling and entropy
(``book/18_sequence_ratios.ipynb``)."""

NUMBER = 18
PART, LECTURE = 5, 1
OBJECTIVE = ("compare GSPO's sequence ratio, the token ratio and their product; price dynamic sampling; compute "
             "pass@k and its unbiased estimator; judge TRL's entropy knobs and Clip-Cov against plain GRPO over "
             "seeds; measure pass@k over many prompts and compare a pre-filter with dynamic sampling")
MINUTES = (80, 130)     # reading its text and code, doing its exercises

#: What a student can do after each exercise (by label).
EXERCISE_OBJECTIVES = {
    "ex-ch18-gspo-ratio": "compute GSPO's length-normalised ratio of a two-token answer and contrast it with the"
                          " exact sequence weight",
    "ex-ch18-cispo-weights": "say which tokens PPO's clip zeroes and what weight CISPO's cap leaves each token",
    "ex-ch18-draws": "compute the groups dynamic sampling draws per kept group, 1 / (1 - p^G - (1 - p)^G)",
    "ex-ch18-pass-at-k": "compute the unbiased pass@k estimate from n samples and contrast it with the plug-in",
    "ex-ch18-crossing": "compute pass@1 and pass@k of two prompt sets and say why a sharper policy can lead at k = 1 "
                        "and trail at large k",
    "ex-ch18-prefilter": "compute how many prompts a pre-filter by pass rate keeps, what it costs in steps and "
                         "what it can take away",
    "ex-ch18-holm": "Holm-adjust several knobs' p-values and say whether a difference that clears its own noise"
                    " floor is real",
    "ex-ch18-write-pass-at-k": "implement the unbiased pass@k estimator 1 - C(n - c, k) / C(n, k)",
    "ex-ch18-length": "predict and measure the length at which the product weight's second moment reaches 10",
    "ex-ch18-group-mean": "test whether dynamic sampling's 1 / (1 - P(flat)) cost holds with Dr. GRPO's "
                          "advantages",
}
#: The kind of each exercise whose title names none.
UNTITLED_KINDS = {}
