"""Chapter 10's coursework: Reusing rollouts: importance sampling (``book/10_importance_sampling.ipynb``)."""

NUMBER = 10
PART, LECTURE = 3, 1
OBJECTIVE = ("compute importance ratios in log space; derive the variance of a reweighted estimate; predict when"
             " reusing a group is safe")
MINUTES = (40, 50)      # reading its text and code, doing its exercises

#: What a student can do after each exercise (by label).
EXERCISE_OBJECTIVES = {
    "ex-ch10-weight": "compute an importance weight by hand after one update",
    "ex-ch10-write-importance-ratios": "implement importance ratios in log space",
    "ex-ch10-variance": "derive the variance of a reweighted estimate and when it beats a fresh one",
    "ex-ch10-reverse": "measure a reweighted estimate when the stale policy is more confident than the new one",
    "ex-ch10-support": "explain why reweighting cannot fix missing support, and relate it to top-k sampling",
    "ex-ch10-drift": "predict from the odds ratio how far the policies may drift before reuse is unsafe",
}
#: The kind of each exercise whose title names none.
UNTITLED_KINDS = {"ex-ch10-variance": "written", "ex-ch10-support": "written", "ex-ch10-reverse": "experiment"}
