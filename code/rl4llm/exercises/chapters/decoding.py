"""Chapter 2's coursework: Decoding rearranges, it does not relocate (``book/02_decoding.ipynb``)."""

NUMBER = 2
PART, LECTURE = 1, 1
OBJECTIVE = ("name the distribution a sampler draws from (temperature, then top-k, then top-p); explain why "
             "decoding cannot make a rare answer the likeliest")
MINUTES = (35, 55)      # reading its text and code, doing its exercises

#: What a student can do after each exercise (by label).
EXERCISE_OBJECTIVES = {
    "ex-ch02-best-temperature": "find by calculus the temperature that maximises a token's probability",
    "ex-ch02-topk-temperature": "bound what truncation and temperature together can do to a rare answer",
    "ex-ch02-ties": "reason about tie-breaking in top-k and top-p and why libraries can disagree",
    "ex-ch02-nucleus": "apply temperature, then top-p, by hand",
    "ex-ch02-write-decode-probs": "implement the sampler's distribution: temperature, then top-k, then top-p",
    "ex-ch02-sliders": "predict when a colder, truncated sampler loses the correct answer",
}
#: The kind of each exercise whose title names none.
UNTITLED_KINDS = {"ex-ch02-best-temperature": "written", "ex-ch02-topk-temperature": "written",
                  "ex-ch02-ties": "written"}
