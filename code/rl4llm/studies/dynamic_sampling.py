"""DAPO's dynamic sampling, run: groups whose rewards are all equal are dropped and refilled (chapter 18).

A group of G answers drawn from pi is *flat* when every answer has the same reward; its advantages
(``group_advantages``) are all zero and it carries no gradient. With answer rewards taking the values v
with probabilities q_v, P(flat) = sum_v q_v^G (``flat_probability``; p^G + (1 - p)^G for a 0/1 reward
with P(right) = p). DAPO resamples until the batch holds ``n_groups`` informative groups, so the number
of groups drawn per kept group is geometric with mean 1 / (1 - P(flat)) (``draws_per_kept_group``).

Because a flat group's estimate is exactly 0, keeping only informative groups multiplies the expected
update by 1 / (1 - P(flat)): E[X | not flat] = E[X] / (1 - P(flat)) (``dynamic_sampling_exact``).
"""
from __future__ import annotations

import numpy as np

from .._checks import as_float_array, at_least, checked, in_range, positive_real, same_shapes
from .estimator_bias import estimator_moments, group_estimates, one_step_task
from ..math.distributions import probability_vector
from ..math.estimators import jhat_distribution, sample_groups
from ..toy.five_token import LOGITS


#: The checks of a policy's answer probabilities, their rewards and the group size.
_GROUPS = {"probs": probability_vector, "rewards": as_float_array, "G": at_least(1)}


@checked(same_shapes("probs", "rewards"), **_GROUPS)
def flat_probability(probs, rewards, G: int) -> float:
    """P(all G rewards of a group are equal) = sum_v (sum_{a: r(a) = v} P(a))^G (chapter 18)."""
    return float(sum(probs[rewards == v].sum() ** G for v in np.unique(rewards)))


def _informative(args):
    """Relation: some group of G answers ~ probs is not flat (else dynamic sampling never fills a batch)."""
    if flat_probability.unchecked(args["probs"], args["rewards"], args["G"]) >= 1.0:
        raise ValueError("every group is flat at these probs and rewards: dynamic sampling never fills a batch")


@checked(same_shapes("probs", "rewards"), _informative, **_GROUPS)
def draws_per_kept_group(probs, rewards, G: int) -> float:
    """The expected number of groups drawn per informative group kept, 1 / (1 - P(flat)) (chapter 18)."""
    return 1.0 / (1.0 - flat_probability.unchecked(probs, rewards, G))


@checked(same_shapes("probs", "rewards"), _informative, **_GROUPS, n_kept=at_least(1), seed=at_least(0))
def groups_drawn_per_kept_group(probs, rewards, G: int, n_kept: int, seed: int) -> np.ndarray:
    """Simulated: for each of ``n_kept`` kept groups, how many groups of G answers ~ ``probs`` were drawn
    until one was not flat (seeded); their mean estimates ``draws_per_kept_group``."""
    rng = np.random.default_rng(seed)
    counts = np.zeros(n_kept, dtype=int)
    for i in range(counts.size):
        r = rewards[sample_groups(probs, G, 1, rng)[0]]
        counts[i] = 1
        while r.max() == r.min():
            r = rewards[sample_groups(probs, G, 1, rng)[0]]
            counts[i] += 1
    return counts


@checked(flat=in_range(0.0, 1.0, high_open=True), batch=at_least(1), oversample=at_least(1))
def expected_rounds(flat: float, batch: int, oversample: int = 3) -> float:
    """The mean number of rounds verl's dynamic sampling draws a step (chapter 18): each round samples
    ``oversample * batch`` groups, each flat with probability ``flat`` independently, until ``batch`` informative
    groups are kept. With S_r ~ Binomial(r * oversample * batch, 1 - flat) the groups kept after r rounds,
    E[R] = sum_{r >= 0} P(S_r < batch). A round lasts as long as its longest answer, so a step's generation
    costs about E[R] rounds' time however few of a round's groups it keeps."""
    total, r = 1.0, 1                           # r = 0: nothing kept yet, P(S_0 < batch) = 1
    while True:                                 # S_r's law is chapter 6's Binomial (jhat_distribution's probs)
        below = float(jhat_distribution.unchecked(1.0 - flat, r * oversample * batch)[1][:batch].sum())
        total += below
        if below < 1e-12:
            return total
        r += 1


#: The checks of a training run's settings.
#: Chapter 18's run of dynamic sampling against the static batch (its exercise ex-ch18-group-mean too): groups of
#: 4, 2 kept groups a step, 15 steps of size 0.25.
CHAPTER_18_RUN = {"G": 4, "n_groups": 2, "steps": 15, "lr": 0.25}
_RUN = {"G": at_least(2), "n_groups": at_least(1), "steps": at_least(1), "lr": positive_real}


@checked(**_RUN, seed=at_least(0))
def dynamic_sampling_run(dynamic: bool = True, G: int = 4, n_groups: int = 2, steps: int = 20, lr: float = 1.0,
                         seed: int = 0, advantage: str = "grpo") -> dict:
    """The one-step toy trained from its logits, seeded (chapter 18). Each step fills a batch of
    ``n_groups`` groups of G: with ``dynamic`` only non-flat groups are kept (drawing until there are
    ``n_groups`` of them), else the first ``n_groups`` drawn; the logits move by ``lr`` times the mean of
    the kept groups' estimates (1/G) sum_i A_i g(y_i) (``estimator_bias``, ``dr_grpo``). Returns
    ``J`` (steps + 1 values), ``groups_drawn`` per step and ``answers_drawn`` (cumulative, steps + 1)."""
    rng = np.random.default_rng(seed)
    z = LOGITS.copy()
    J, drawn = [], []
    for t in range(steps + 1):
        task = one_step_task(z)
        J.append(float(task.probs @ task.rewards))
        if t == steps:
            break
        kept, count = [], 0
        while len(kept) < n_groups:
            group = sample_groups(task.probs, G, 1, rng)
            count += 1
            r = task.rewards[group[0]]
            if not dynamic or r.max() > r.min():
                kept.append(group[0])
        drawn.append(count)
        z = z + lr * group_estimates(task, np.array(kept), advantage, "dr_grpo", 1).mean(axis=0)
    drawn = np.array(drawn)
    return {"J": np.array(J), "groups_drawn": drawn,
            "answers_drawn": G * np.concatenate([[0], np.cumsum(drawn)])}


@checked(**_RUN)
def dynamic_sampling_exact(dynamic: bool = True, G: int = 4, n_groups: int = 2, steps: int = 20, lr: float = 1.0,
                           advantage: str = "grpo") -> dict:
    """The path that ``dynamic_sampling_run`` follows on average: each step moves the logits by ``lr``
    times the exact E[X] (``estimator_moments``), divided by 1 - P(flat) with ``dynamic``. Returns ``J``
    and ``answers_drawn``, the expected cumulative number of answers drawn (n_groups G per step, times
    ``draws_per_kept_group`` with ``dynamic``)."""
    z = LOGITS.copy()
    J, answers = [], [0.0]
    for t in range(steps + 1):
        task = one_step_task(z)
        J.append(float(task.probs @ task.rewards))
        if t == steps:
            break
        cost = draws_per_kept_group(task.probs, task.rewards, G) if dynamic else 1.0
        z = z + lr * cost * estimator_moments(task, G, advantage, "dr_grpo", 1)["mean"]
        answers.append(answers[-1] + n_groups * G * cost)
    return {"J": np.array(J), "answers_drawn": np.array(answers)}
