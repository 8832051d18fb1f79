"""Chapter 17's coursework: Every gradient estimator against the exact gradient, and where the KL goes
(``book/17_estimators.ipynb``)."""

NUMBER = 17
PART, LECTURE = 5, 1
OBJECTIVE = ("compute every group estimator's exact bias, variance and MSE and say which is unbiased; tell the "
             "KL estimators k1, k2, k3 apart and which gradient each leash follows")
MINUTES = (85, 75)      # reading its text and code, doing its exercises

#: What a student can do after each exercise (by label).
EXERCISE_OBJECTIVES = {
    "ex-ch17-dapo-weight": "compute the weight the dapo aggregation gives each token of a long answer",
    "ex-ch17-shrink": "compute a shrunk estimator's mean squared error from its variance and bias, and say why "
                      "the biased group-mean estimate beats RLOO on it",
    "ex-ch17-sapo-weight": "compute the weight SAPO's soft gate gives a token whose ratio has moved, against the "
                           "clip's and CISPO's",
    "ex-ch17-soft-punishment": "compute the reward DAPO's soft overlong punishment leaves a right answer near the "
                               "length cap",
    "ex-ch17-k2": "compute the k2 estimate of one token by hand and say what it estimates",
    "ex-ch17-write-kl-estimators": "implement k1, k2 and k3 elementwise from log-probabilities",
    "ex-ch17-k3-weight": "compute the weight that TRL's ratio correction puts on k3 for one sampled token",
    "ex-ch17-beta": "predict and measure where each KL leash holds the toy at another beta",
    "ex-ch17-missed-kl": "compute the answers' KL gradient on a first-step logit that a per-token penalty leaves at 0",
}
#: The kind of each exercise whose title names none.
UNTITLED_KINDS = {}
