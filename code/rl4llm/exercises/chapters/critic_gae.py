"""Chapter 12's coursework: The critic, GAE, and why GRPO does without them (``book/12_critic_gae.ipynb``)."""

NUMBER = 12
PART, LECTURE = 3, 2
OBJECTIVE = ("compute TD errors and GAE by hand; say what lambda and gamma control; say what GRPO's flat "
             "per-token advantage gives up")
MINUTES = (35, 50)      # reading its text and code, doing its exercises

#: What a student can do after each exercise (by label).
EXERCISE_OBJECTIVES = {
    "ex-ch12-by-hand": "compute TD errors and GAE advantages by hand with a discount",
    "ex-ch12-write-gae": "implement GAE, discounting and bootstrap value included",
    "ex-ch12-telescoping": "prove that GAE at lambda = 1 is return minus value, and what a perfect critic gives",
    "ex-ch12-flat": "work out what GRPO's flat credit does to boilerplate and decisive tokens",
    "ex-ch12-equal-credit": "predict how lambda and gamma spread credit over an episode's steps",
}
#: The kind of each exercise whose title names none.
UNTITLED_KINDS = {"ex-ch12-telescoping": "written", "ex-ch12-flat": "written"}
