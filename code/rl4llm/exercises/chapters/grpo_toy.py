"""Chapter 13's coursework: GRPO, assembled on the toy (``book/13_grpo_toy.ipynb``)."""

NUMBER = 13
PART, LECTURE = 3, 2
OBJECTIVE = ("assemble GRPO and run it on the toy; compute group advantages by hand and in code; read the clip "
             "fraction per inner step and per-token ratios; compare settings against a noise floor")
MINUTES = (35, 45)      # reading its text and code, doing its exercises

#: What a student can do after each exercise (by label).
EXERCISE_OBJECTIVES = {
    "ex-ch13-advantage": "compute a group-normalised advantage by hand under partial credit",
    "ex-ch13-write-group-advantages": "implement GRPO's group advantages with scale, ddof and eps",
    "ex-ch13-pairs": "list the advantages of groups of two and compare G = 2 with G = 8",
}
#: The kind of each exercise whose title names none.
UNTITLED_KINDS = {}
