"""Chapter 16's coursework: From this book to TRL, and past one machine (``book/16_to_trl.ipynb``)."""

NUMBER = 16
PART, LECTURE = 4, 2
OBJECTIVE = ("map the book's knobs onto TRL's GRPOConfig and spot the defaults that change the algorithm; check "
             "TRL's loss against the book's on one batch; compute what splitting a batch over processes does to "
             "each normaliser")
MINUTES = (50, 75)      # reading its text and code, doing its exercises

#: What a student can do after each exercise (by label).
EXERCISE_OBJECTIVES = {
    "ex-ch16-units": "translate a run's settings into TRL's configuration fields",
    "ex-ch16-accumulation": "decide for each loss type whether gradient accumulation gives the whole-batch "
                            "gradient",
    "ex-ch16-kl-correction": "say what TRL's KL bias correction changes when the ratio is 1",
    "ex-ch16-four-processes": "find which loss types survive splitting a batch over four processes",
    "ex-ch16-split": "compute by hand the bnpo loss two data-parallel processes follow",
    "ex-ch16-write-data-parallel": "implement the loss that P processes follow for every aggregation",
    "ex-ch16-default-lr": "rerun TRL with its default learning rate and explain what the tiny model does",
}
#: The kind of each exercise whose title names none.
UNTITLED_KINDS = {"ex-ch16-units": "written", "ex-ch16-accumulation": "written", "ex-ch16-kl-correction": "written",
                  "ex-ch16-four-processes": "written"}
