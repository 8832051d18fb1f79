"""Chapter 21's coursework: Everything in one place (``book/21_summary.ipynb``)."""

NUMBER = 21
PART, LECTURE = 5, 2
OBJECTIVE = ("write each method as its surrogate and loop; compare methods over seeds; compute GRPO's per-token "
             "k3 penalty and contrast it with k1")
MINUTES = (45, 60)      # reading its text and code, doing its exercises

#: What a student can do after each exercise (by label).
EXERCISE_OBJECTIVES = {
    "ex-ch21-knobs": "name each method's step-size knob and check it by halving and doubling it",
    "ex-ch21-samples": "explain GRPO's head start over REINFORCE with a baseline at the same sample budget",
    "ex-ch21-k3": "compute GRPO's per-token k3 penalty by hand and contrast it with k1",
    "ex-ch21-ahead": "tell from a TRL config whether the ratio can leave 1, and find the chapter that measures it",
    "ex-ch21-write-exact-gradient": "implement the exact-gradient learner every method approximates",
}
#: The kind of each exercise whose title names none.
UNTITLED_KINDS = {}
