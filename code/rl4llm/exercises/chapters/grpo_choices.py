"""Chapter 14's coursework: GRPO's choices: aggregation, the standard deviation, the KL and entropy
(``book/14_grpo_choices.ipynb``)."""

NUMBER = 14
PART, LECTURE = 3, 2
OBJECTIVE = ("predict each loss aggregation's length bias and write grpo_loss; say what the std scaling and "
             "TRL's ddof=1 change; say which KL the k3 penalty's gradient follows; read entropy collapse and "
             "what a bonus and clip-higher do")
MINUTES = (45, 60)      # reading its text and code, doing its exercises

#: What a student can do after each exercise (by label).
EXERCISE_OBJECTIVES = {
    "ex-ch14-aggregation": "compute each loss aggregation's per-token weights and its length bias",
    "ex-ch14-trl-advantage": "compute TRL's group advantage by hand (sample std plus 1e-4) and compare it with "
                             "the book's",
    "ex-ch14-write-grpo-loss": "implement GRPO's loss in torch: clip, KL penalty (k3) and every aggregation",
    "ex-ch14-leash": "predict where the KL leash holds the policy for a given beta",
}
#: The kind of each exercise whose title names none.
UNTITLED_KINDS = {"ex-ch14-aggregation": "written"}
