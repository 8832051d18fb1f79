"""Chapter 8's coursework: Baselines: wrong answers have to count (``book/08_baselines.ipynb``)."""

NUMBER = 8
PART, LECTURE = 2, 2
OBJECTIVE = ("show that a constant baseline leaves the gradient unchanged; compute the estimator's variance and "
             "its 1/G law; derive the best constant baseline")
MINUTES = (50, 70)      # reading its text and code, doing its exercises

#: What a student can do after each exercise (by label).
EXERCISE_OBJECTIVES = {
    "ex-ch08-lenient-baseline": "compute the variance-optimal constant baseline by hand",
    "ex-ch08-shift": "show how the optimal baseline moves when rewards are shifted or scaled",
    "ex-ch08-coordinate": "compute one coordinate's variance with and without a baseline",
    "ex-ch08-samples": "compare more samples with a baseline as ways to reduce variance",
    "ex-ch08-write-estimator-variance": "implement the estimator's total variance for a baseline and G",
    "ex-ch08-overshoot": "predict what a baseline set too high does to the variance",
}
#: The kind of each exercise whose title names none.
UNTITLED_KINDS = {"ex-ch08-shift": "written", "ex-ch08-coordinate": "written", "ex-ch08-samples": "written"}
