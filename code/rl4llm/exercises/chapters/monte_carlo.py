"""Chapter 6's coursework: Sampling is acting: estimating J by Monte Carlo (``book/06_monte_carlo.ipynb``)."""

NUMBER = 6
PART, LECTURE = 2, 1
OBJECTIVE = ("estimate the expected reward by sampling; derive the law and standard error of the group estimate;"
             " compare settings over seeds with a noise floor")
MINUTES = (60, 75)      # reading its text and code, doing its exercises

#: What a student can do after each exercise (by label).
EXERCISE_OBJECTIVES = {
    "ex-ch06-lenient-se": "compute the standard error of the group estimate under partial credit",
    "ex-ch06-group-size": "size a group for a target standard error and for a rare all-wrong group",
    "ex-ch06-noise-floor": "decide whether a difference over seeds is convincing, and how many seeds it needs",
    "ex-ch06-unbiased": "prove the group estimate unbiased and tell unbiasedness from a typical value",
    "ex-ch06-write-jhat-distribution": "implement the binomial law of the group estimate",
    "ex-ch06-bell": "predict the standard error and the shape of the estimate's law as G grows",
}
#: The kind of each exercise whose title names none.
UNTITLED_KINDS = {"ex-ch06-group-size": "written", "ex-ch06-noise-floor": "written", "ex-ch06-unbiased": "written"}
