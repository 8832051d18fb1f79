"""Chapter 9's coursework: The whole on-policy loop (``book/09_on_policy_loop.ipynb``)."""

NUMBER = 9
PART, LECTURE = 2, 2
OBJECTIVE = ("write the on-policy loop and the group-mean estimate; predict zero-signal groups; read "
             "learning-curve bands over seeds before comparing settings")
MINUTES = (60, 75)      # reading its text and code, doing its exercises

#: What a student can do after each exercise (by label).
EXERCISE_OBJECTIVES = {
    "ex-ch09-group-step": "compute one group's rewards, advantages and step by hand",
    "ex-ch09-rloo": "derive the leave-one-out baseline's relation to the group mean, and its mean and variance",
    "ex-ch09-zero-signal": "find when a group carries no signal and size G to keep that rare",
    "ex-ch09-write-group-gradient": "implement the group-mean-baseline estimate for one group",
    "ex-ch09-lr": "predict how the learning rate changes the spread of learning curves over seeds",
}
#: The kind of each exercise whose title names none.
UNTITLED_KINDS = {"ex-ch09-rloo": "written", "ex-ch09-zero-signal": "written"}
