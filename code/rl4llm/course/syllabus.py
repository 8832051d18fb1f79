"""The course as data, for an instructor: every exercise's kind, objective and points, the rubrics
of the work graded by hand, the 5-week syllabus (lectures, reading, what is due; a four-week module
stops after Part IV) and the end-of-module project. The instructor guide (book/instructor_guide.ipynb) prints its tables from here;
``tests/test_coursework.py`` and ``tests/test_syllabus.py`` hold every exercise of the book to it.

Kinds. A chapter names an exercise's kind at the end of its title, "(by hand)", "(coding)" or
"(experiment)" (``rl4llm.course.assignments.exercises`` reads it). The exercises written before that
convention name none, so an assignment plan that reads titles skipped them; :data:`UNTITLED_KINDS`
gives theirs: most are *written* work (derive, prove or explain, and check it with the library: a
short write-up graded by hand with ``RUBRICS["written"]``), the others experiments.

Times are estimates (minutes a student is expected to spend), not measurements.
"""
from __future__ import annotations

from dataclasses import dataclass

KINDS = ("by hand", "coding", "written", "experiment")

#: How each kind is handed in and graded.
GRADED_BY = {
    "by hand": "one number: practised in the answer box or a check cell; handed in as its nbgrader answer cell, "
               "graded out of process within its tolerance",
    "coding": "one function, checked automatically (nbgrader or the pytest route)",
    "written": "a short write-up (a derivation or an argument, with its numerical check), graded by hand",
    "experiment": "a prediction, the runs and an explanation, graded by hand",
}

#: The kind of each exercise whose title names none.
UNTITLED_KINDS = {
    **dict.fromkeys([
        "ex-ch01-shift", "ex-ch01-limits", "ex-ch02-best-temperature", "ex-ch02-topk-temperature",
        "ex-ch02-ties", "ex-ch03-length", "ex-ch03-verifier", "ex-ch04-sum-zero", "ex-ch05-two-labels",
        "ex-ch05-infinity", "ex-ch05-break-reward", "ex-ch06-group-size", "ex-ch06-noise-floor",
        "ex-ch06-unbiased", "ex-ch07-sum-zero", "ex-ch07-lr-ratio", "ex-ch08-shift", "ex-ch08-coordinate",
        "ex-ch08-samples", "ex-ch09-rloo", "ex-ch09-zero-signal", "ex-ch10-variance", "ex-ch10-support",
        "ex-ch11-cliphigher", "ex-ch11-first-step", "ex-ch12-telescoping", "ex-ch12-flat",
        "ex-ch14-aggregation", "ex-ch15-padding", "ex-ch16-units", "ex-ch16-accumulation",
        "ex-ch16-kl-correction", "ex-ch16-four-processes"], "written"),
    **dict.fromkeys([
        "ex-ch04-gibbs", "ex-ch04-half", "ex-ch05-reliable-zero", "ex-ch10-reverse", "ex-ch11-early-stop",
        "ex-ch15-clip", "ex-ch21-knobs"], "experiment"),
}

#: What a student can do after each exercise (by label).
OBJECTIVES = {
    "ex-ch01-shift": "prove that softmax ignores a common shift of the logits but not a common scale",
    "ex-ch01-limits": "derive the greedy and uniform limits of temperature and say why T = 0 is refused",
    "ex-ch01-cold": "compute a tempered softmax by hand from the toy's weights",
    "ex-ch01-write-softmax": "implement a softmax that is stable for huge logits, with temperature, on any batch",
    "ex-ch01-slider": "predict a probability ratio under temperature before seeing it",
    "ex-ch02-best-temperature": "find by calculus the temperature that maximises a token's probability",
    "ex-ch02-topk-temperature": "bound what truncation and temperature together can do to a rare answer",
    "ex-ch02-ties": "reason about tie-breaking in top-k and top-p and why libraries can disagree",
    "ex-ch02-nucleus": "apply temperature, then top-p, by hand",
    "ex-ch02-write-decode-probs": "implement the sampler's distribution: temperature, then top-k, then top-p",
    "ex-ch02-sliders": "predict when a colder, truncated sampler loses the correct answer",
    "ex-ch03-talkative": "compute a string's probability, end-of-sequence included, and a total over spellings",
    "ex-ch03-length": "compare sequences of different lengths with log-probabilities",
    "ex-ch03-verifier": "enumerate what a verifier accepts and what the policy can produce",
    "ex-ch03-write-sequence-probability": "implement a string's probability as a product of conditionals",
    "ex-ch03-sliders": "predict when the long spelling of an answer overtakes the short one",
    "ex-ch04-gibbs": "check Gibbs' inequality numerically and state when it is an equality",
    "ex-ch04-half": "find a learning rate by bisection on the SFT step",
    "ex-ch04-sum-zero": "explain why the SFT gradient sums to zero, from shift invariance",
    "ex-ch04-noisy-labels": "compute a cross-entropy under noisy labels from the surprises",
    "ex-ch04-write-sft-gradient": "implement the SFT gradient pi - onehot(y)",
    "ex-ch04-slider": "predict one SFT step's effect on the correct answer from the gradient",
    "ex-ch05-two-labels": "find the forward-KL optimum of a two-label data set",
    "ex-ch05-infinity": "tell which KL direction becomes infinite on missing support, and what that does to a fit",
    "ex-ch05-break-reward": "find completions that fool a naive verifier and one it wrongly rejects",
    "ex-ch05-reliable-zero": "run SFT and RL from another start and explain how RL treats the second spelling",
    "ex-ch05-forward-kl": "compute the forward KL that SFT minimises, by hand",
    "ex-ch05-write-kl": "implement KL(p || q) with the 0 ln 0 and infinite cases",
    "ex-ch05-slider": "predict what doubling the learning rate does to the SFT and RL curves",
    "ex-ch06-lenient-se": "compute the standard error of the group estimate under partial credit",
    "ex-ch06-group-size": "size a group for a target standard error and for a rare all-wrong group",
    "ex-ch06-noise-floor": "decide whether a difference over seeds is convincing, and how many seeds it needs",
    "ex-ch06-unbiased": "prove the group estimate unbiased and tell unbiasedness from a typical value",
    "ex-ch06-write-jhat-distribution": "implement the binomial law of the group estimate",
    "ex-ch06-bell": "predict the standard error and the shape of the estimate's law as G grows",
    "ex-ch07-partial-credit": "compute a policy-gradient component by hand under partial credit",
    "ex-ch07-sum-zero": "prove that the policy gradient sums to zero over the logits, two ways",
    "ex-ch07-lr-ratio": "derive when an RL step equals an SFT step, and what a tiny J does to RL",
    "ex-ch07-write-score": "implement the score onehot(y) - pi of a softmax policy",
    "ex-ch07-write-policy-gradient": "implement the exact gradient pi * (r - J)",
    "ex-ch07-slider": "predict how much faster SFT moves than RL at a given learning rate",
    "ex-ch08-lenient-baseline": "compute the variance-optimal constant baseline by hand",
    "ex-ch08-shift": "show how the optimal baseline moves when rewards are shifted or scaled",
    "ex-ch08-coordinate": "compute one coordinate's variance with and without a baseline",
    "ex-ch08-samples": "compare more samples with a baseline as ways to reduce variance",
    "ex-ch08-write-estimator-variance": "implement the estimator's total variance for a baseline and G",
    "ex-ch08-overshoot": "predict what a baseline set too high does to the variance",
    "ex-ch09-group-step": "compute one group's rewards, advantages and step by hand",
    "ex-ch09-rloo": "derive the leave-one-out baseline's relation to the group mean, and its mean and variance",
    "ex-ch09-zero-signal": "find when a group carries no signal and size G to keep that rare",
    "ex-ch09-write-group-gradient": "implement the group-mean-baseline estimate for one group",
    "ex-ch09-lr": "predict how the learning rate changes the spread of learning curves over seeds",
    "ex-ch10-weight": "compute an importance weight by hand after one update",
    "ex-ch10-write-importance-ratios": "implement importance ratios in log space",
    "ex-ch10-variance": "derive the variance of a reweighted estimate and when it beats a fresh one",
    "ex-ch10-reverse": "measure a reweighted estimate when the stale policy is more confident than the new one",
    "ex-ch10-support": "explain why reweighting cannot fix missing support, and relate it to top-k sampling",
    "ex-ch10-drift": "predict from the odds ratio how far the policies may drift before reuse is unsafe",
    "ex-ch11-negative": "evaluate the clipped objective by hand for a negative advantage",
    "ex-ch11-write-clipped-objective": "implement PPO's clipped surrogate, with an asymmetric band",
    "ex-ch11-cliphigher": "say which clip cases an asymmetric band changes, and why DAPO uses one",
    "ex-ch11-first-step": "show that the first inner step of PPO is the REINFORCE step",
    "ex-ch11-early-stop": "find where a KL early-stopping rule would end the inner loop, and what it saves",
    "ex-ch11-long-reuse": "predict what many inner steps on one group do once the clip binds",
    "ex-ch12-by-hand": "compute TD errors and GAE advantages by hand with a discount",
    "ex-ch12-write-gae": "implement GAE, discounting and bootstrap value included",
    "ex-ch12-telescoping": "prove that GAE at lambda = 1 is return minus value, and what a perfect critic gives",
    "ex-ch12-flat": "work out what GRPO's flat credit does to boilerplate and decisive tokens",
    "ex-ch12-equal-credit": "predict how lambda and gamma spread credit over an episode's steps",
    "ex-ch13-advantage": "compute a group-normalised advantage by hand under partial credit",
    "ex-ch13-write-group-advantages": "implement GRPO's group advantages with scale, ddof and eps",
    "ex-ch13-pairs": "list the advantages of groups of two and compare G = 2 with G = 8",
    "ex-ch14-aggregation": "compute each loss aggregation's per-token weights and its length bias",
    "ex-ch14-trl-advantage": "compute TRL's group advantage by hand (sample std plus 1e-4) and compare it with "
                             "the book's",
    "ex-ch14-write-grpo-loss": "implement GRPO's loss in torch: clip, KL penalty (k3) and every aggregation",
    "ex-ch14-leash": "predict where the KL leash holds the policy for a given beta",
    "ex-ch15-clip": "make the clip bind in a real run and say which tokens it clips",
    "ex-ch15-padding": "give the position ids a left-padded batch needs, and what breaks without them",
    "ex-ch15-seeds": "size a comparison over seeds from the noise floor",
    "ex-ch15-verifier": "implement a verifier that model output can neither fool nor crash",
    "ex-ch15-break": "break GRPO one knob at a time, predicting each run first",
    "ex-ch16-units": "translate a run's settings into TRL's configuration fields",
    "ex-ch16-accumulation": "decide for each loss type whether gradient accumulation gives the whole-batch gradient",
    "ex-ch16-kl-correction": "say what TRL's KL bias correction changes when the ratio is 1",
    "ex-ch16-four-processes": "find which loss types survive splitting a batch over four processes",
    "ex-ch16-split": "compute by hand the bnpo loss two data-parallel processes follow",
    "ex-ch16-write-data-parallel": "implement the loss that P processes follow for every aggregation",
    "ex-ch16-default-lr": "rerun TRL with its default learning rate and explain what the tiny model does",
    "ex-ch17-k2": "compute the k2 estimate of one token by hand and say what it estimates",
    "ex-ch17-k3-weight": "compute the weight that TRL's ratio correction puts on k3 for one sampled token",
    "ex-ch17-dapo-weight": "compute the weight the dapo aggregation gives each token of a long answer",
    "ex-ch17-write-kl-estimators": "implement k1, k2 and k3 elementwise from log-probabilities",
    "ex-ch17-beta": "predict and measure where each KL leash holds the toy at another beta",
    "ex-ch19-bytes": "add up the bytes of weights, gradients, optimizer state and reference for a 3B run",
    "ex-ch19-zero2": "compute what ZeRO-2 leaves on each of 8 GPUs",
    "ex-ch19-kv": "compute the KV cache of a sampling step from a model's shape",
    "ex-ch19-decode": "say whether one decoding step is bound by memory bandwidth or by FLOPs, and its time",
    "ex-ch19-write-kv-bytes": "implement the KV cache's bytes per token from a model's shape",
    "ex-ch19-split": "find the split of GPUs between sampler and trainer that minimises a step, and whether it moves",
    "ex-ch19-loss-at-start": "compute the loss TRL's default dapo reports at a run's first step, and why it is not 0",
    "ex-ch19-gradient-at-start": "compute the gradient at a run's first step, where the loss is 0 and the policy moves",
    "ex-ch19-read-a-run": "predict, then read from the logged metrics, how a learning rate between the two runs fails",
    "ex-ch18-gspo-ratio": "compute GSPO's length-normalised ratio of a two-token answer and contrast it with the "
                          "exact sequence weight",
    "ex-ch18-draws": "compute the groups dynamic sampling draws per kept group, 1 / (1 - p^G - (1 - p)^G)",
    "ex-ch18-pass-at-k": "compute the unbiased pass@k estimate from n samples and contrast it with the plug-in",
    "ex-ch18-write-pass-at-k": "implement the unbiased pass@k estimator 1 - C(n - c, k) / C(n, k)",
    "ex-ch18-length": "predict and measure the length at which the product weight's second moment reaches 10",
    "ex-ch18-group-mean": "test whether dynamic sampling's 1 / (1 - P(flat)) cost holds with Dr. GRPO's advantages",
    "ex-ch20-sequence-weight": "compute TRL's default importance weight of an answer a separate sampler drew",
    "ex-ch20-opsm-kl": "compute the off-policy mask's measure of a sequence and say whether it is dropped",
    "ex-ch20-write-lognormal-weight-moments": "implement the mean and variance of an importance weight with no "
                                              "cap, truncated and masked",
    "ex-ch20-one-step-off": "predict and measure whether a one-step-off sampler costs accuracy, and how the "
                            "learning rate decides it",
    "ex-ch21-knobs": "name each method's step-size knob and check it by halving and doubling it",
    "ex-ch21-samples": "explain GRPO's head start over REINFORCE with a baseline at the same sample budget",
    "ex-ch21-k3": "compute GRPO's per-token k3 penalty by hand and contrast it with k1",
    "ex-ch21-write-exact-gradient": "implement the exact-gradient learner every method approximates",
}

#: Points of an exercise of each kind; a kind graded by hand has a rubric that adds up to them.
POINTS = {"by hand": 1, "coding": 2, "written": 3, "experiment": 5}


@dataclass(frozen=True)
class Criterion:
    points: int
    earns: str          # what earns the points


#: Rubrics of the work graded by hand. An experiment's rubric reads with its objective: the
#: explanation earns its points when it reaches the objective (the solution says what to look for).
RUBRICS = {
    "written": (
        Criterion(1, "the result asked for (a value, a formula or a yes/no), correct"),
        Criterion(2, "the derivation or argument: each step follows from the chapter's formulas; where the "
                     "exercise asks for a numerical check, the code and its output agree with the result"),
    ),
    "experiment": (
        Criterion(1, "a prediction written before the run, with a reason from the chapter's formulas"),
        Criterion(2, "the runs or slider positions asked for, stated so that they can be repeated (settings, "
                     "seeds), with the numbers or plot that answer the question"),
        Criterion(2, "an explanation of what was seen that reaches the exercise's objective; a wrong prediction, "
                     "explained, earns these points in full"),
    ),
}


@dataclass(frozen=True)
class Lecture:
    title: str
    chapters: tuple[int, ...]


@dataclass(frozen=True)
class Week:
    title: str
    lectures: tuple[Lecture, ...]

    @property
    def chapters(self) -> tuple[int, ...]:
        return tuple(c for lecture in self.lectures for c in lecture.chapters)


#: Five weeks, two lectures each, one part of the book a week (Part V and the summary share the last; a
#: four-week module stops after Part IV).
WEEKS = (
    Week("Part I: from softmax to SFT", (Lecture("Distributions, decoding and strings", (1, 2, 3)),
                                         Lecture("Cross-entropy, SFT and the two KLs", (4, 5)))),
    Week("Part II: the RL core", (Lecture("Estimating reward; the score function", (6, 7)),
                                  Lecture("Baselines and the on-policy loop", (8, 9)))),
    Week("Part III: reusing samples, trust regions, GRPO", (Lecture("Importance sampling and PPO's clip", (10, 11)),
                                                            Lecture("Credit assignment and GRPO; GRPO's choices", (12, 13, 14)))),
    Week("Part IV: GRPO on a real model", (Lecture("GRPO on a tiny transformer", (15,)),
                                           Lecture("From the book to TRL", (16,)))),
    Week("Part V: after GRPO, and the summary", (
        Lecture("Every estimator against the exact gradient; where the KL goes; sequence ratios, dynamic "
                "sampling, pass@k", (17, 18)),
        Lecture("The arithmetic of a real run; when the sampler is not the trainer; every method side by side",
                (19, 20, 21)))),
)

#: What a student can do after each chapter.
CHAPTER_OBJECTIVES = {
    1: "turn logits into probabilities with a stable softmax; predict what temperature does (it never "
       "reorders the answers)",
    2: "name the distribution a sampler draws from (temperature, then top-k, then top-p); explain why "
       "decoding cannot make a rare answer the likeliest",
    3: "compute a string's probability as a product of conditionals, end-of-sequence included; explain why "
       "two spellings of one answer differ",
    4: "compute entropy, cross-entropy and KL and use CE = H + KL; derive the SFT gradient pi - onehot and "
       "take one SFT step",
    5: "identify SFT as forward KL and tell it from reverse KL; explain why SFT drains a second spelling; "
       "write a verifier that never evaluates text",
    6: "estimate the expected reward by sampling; derive the law and standard error of the group estimate; "
       "compare settings over seeds with a noise floor",
    7: "derive the score-function gradient and compute a softmax policy's score by hand; see REINFORCE as "
       "SFT on the model's own samples, weighted by reward",
    8: "show that a constant baseline leaves the gradient unchanged; compute the estimator's variance and "
       "its 1/G law; derive the best constant baseline",
    9: "write the on-policy loop and the group-mean estimate; predict zero-signal groups; read learning-curve "
       "bands over seeds before comparing settings",
    10: "compute importance ratios in log space; derive the variance of a reweighted estimate; predict when "
        "reusing a group is safe",
    11: "measure an update by KL; evaluate PPO's clipped objective and its gradient for both signs of the "
        "advantage; read clip fractions over inner steps",
    12: "compute TD errors and GAE by hand; say what lambda and gamma control; say what GRPO's flat "
        "per-token advantage gives up",
    13: "assemble GRPO and run it on the toy; compute group advantages by hand and in code; read the clip "
        "fraction per inner step and per-token ratios; compare settings against a noise floor",
    14: "predict each loss aggregation's length bias and write grpo_loss; say what the std scaling and TRL's "
        "ddof=1 change; say which KL the k3 penalty's gradient follows; read entropy collapse and what a bonus "
        "and clip-higher do",
    15: "write a verifier that model output can neither fool nor crash; run GRPO on a tiny transformer and read "
        "its diagnostics; tell a run's machine-dependent digits from what holds on every CPU; size a comparison "
        "over seeds",
    16: "map the book's knobs onto TRL's GRPOConfig and spot the defaults that change the algorithm; check TRL's "
        "loss against the book's on one batch; compute what splitting a batch over processes does to each "
        "normaliser",
    17: "compute every group estimator's exact bias, variance and MSE and say which is unbiased; tell the KL "
        "estimators k1, k2, k3 apart and which gradient each leash follows",
    19: "add up a run's memory per GPU (16 bytes a parameter, ZeRO's stages, logits, KV cache) and its time "
        "(sampling, training, weight sync; synchronous against asynchronous); read a run's logged metrics (a loss "
        "of 0 with a gradient, flat groups, a learning rate too high)",
    18: "compare GSPO's sequence ratio, the token ratio and their product; price dynamic sampling; compute "
        "pass@k and its unbiased estimator",
    20: "give the trainer a separate sampler (bf16, stale weights) and measure the log-prob gap per token and "
        "per sequence; compute TRL's four importance-sampling corrections and the off-policy mask; say from a "
        "comparison over seeds where a correction matters and why",
    21: "write each method as its surrogate and loop; compare methods over seeds; compute GRPO's per-token k3 "
        "penalty and contrast it with k1",
}

#: Estimated minutes per chapter: (reading its text and code, doing its exercises).
MINUTES = {1: (25, 40), 2: (35, 55), 3: (30, 45), 4: (40, 60), 5: (55, 75), 6: (60, 75), 7: (45, 60),
           8: (50, 70), 9: (60, 75), 10: (40, 50), 11: (50, 60), 12: (35, 50), 13: (35, 45), 14: (45, 60),
           15: (60, 75), 16: (50, 75), 17: (60, 75), 19: (60, 75), 18: (55, 70), 20: (45, 60), 21: (35, 50)}


@dataclass(frozen=True)
class Project:
    title: str
    week_released: int
    week_due: int
    points: int
    brief: str
    deliverables: tuple[str, ...]
    rubric: tuple[Criterion, ...]


#: The end-of-module project, on chapter 15's trainer.
PROJECT = Project(
    title="One knob of GRPO, measured",
    week_released=3, week_due=4, points=20,
    brief=("Choose one field of `rl4llm.llm.trainer.GRPOConfig` (not `seed`, `device` or `num_threads`) and a second "
           "value for it. Predict, from the book's formulas, how moving it changes the tiny transformer's final "
           "held-out accuracy and one diagnostic of `GRPOTrainer.metrics` (clip fraction, KL, zero-signal "
           "groups...). Starting from chapter 15's warm start with `chapter15_config()` (shortened if the "
           "budget needs it, the same for both settings), run `GRPOTrainer` at both values over enough seeds "
           "to call the difference you predicted (size it with `rl4llm.math.statistics.seeds_needed` and the spread "
           "chapter 15 prints), and report whether the difference clears the noise floor "
           "(`rl4llm.math.statistics.verdict`)."),
    deliverables=("a notebook that runs top to bottom and reproduces every number it states",
                  "a one-page report: prediction, design, results with their noise floor, explanation"),
    rubric=(
        Criterion(3, "a prediction stated before the runs, for the accuracy and the diagnostic, with the "
                     "formula or mechanism it comes from"),
        Criterion(4, "a design that can answer it: one field changed, everything else fixed and stated, the "
                     "number of seeds sized with seeds_needed from a stated spread and difference"),
        Criterion(4, "the runs reproduce: configurations and seeds in the notebook, which runs top to bottom "
                     "and prints every number the report uses"),
        Criterion(5, "results read correctly: means and spread over seeds, the noise floor, and a verdict "
                     "that does not claim more than the floor allows; the diagnostic plotted over steps"),
        Criterion(4, "an explanation that connects what was seen (or not seen) to the book's formulas for "
                     "that field, including why the prediction held or failed"),
    ),
)


def kind(exercise) -> str:
    """The kind of ``exercise`` (an :class:`~rl4llm.course.assignments.Exercise`, which builds on this module
    and so is not imported here): its title's, or :data:`UNTITLED_KINDS`'s."""
    return exercise.kind or UNTITLED_KINDS[exercise.label]


def points(exercise) -> int:
    return POINTS[kind(exercise)]


def total(rubric) -> int:
    return sum(criterion.points for criterion in rubric)


def assigned(chapter_exercises: list) -> list:
    """What the syllabus assigns from one chapter: every by-hand and coding exercise (checked
    automatically), its first written exercise and its first experiment (graded by hand)."""
    chosen = [e for e in chapter_exercises if kind(e) in ("by hand", "coding")]
    for graded_by_hand in ("written", "experiment"):
        chosen += [e for e in chapter_exercises if kind(e) == graded_by_hand][:1]
    return sorted(chosen, key=lambda e: int(e.number.split(".")[1]))
