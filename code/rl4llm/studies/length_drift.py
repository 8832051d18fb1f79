"""Length drift, shown: the expected completion length over training under each loss aggregation, and
DAPO's two remedies for overlong answers (chapter 17).

The *length toy* is a policy over five whole answers, one softmax over one logit each, whose right and
wrong answers come short and long: "right, short" (2 tokens), "right, long" (8), "wrong, short" (2),
"wrong, long" (8) and "wrong, overlong" (16 tokens, cut at the length cap L_max = 12 and scored 0).
Every token of answer i gets the weight its aggregation gives it (``estimator_bias.token_weights``),
so a group's update is sum_i w_i g(a_i) with g(a) = onehot(a) - pi, as for the tasks of
``estimator_bias``.

DAPO's remedies (``OVERLONG``):

- ``"filter"``: overlong filtering; a truncated answer keeps its reward in its group's advantages but
  its tokens are masked out of the loss (TRL's ``mask_truncated_completions``);
- ``"soft"``: soft overlong punishment; the reward gains R_length(|o|) = 0 for |o| <= L_max - L_cache,
  ((L_max - L_cache) - |o|) / L_cache up to L_max, and -1 beyond (``soft_overlong_penalty``).
"""
from __future__ import annotations

import numpy as np

from .._checks import at_least, checked, logits_vector, one_of, optional, positive_real
from ..math.distributions import softmax
from .estimator_bias import ADVANTAGES, Task, estimator_moments, group_estimates
from ..math.estimators import sample_groups
from ..math.loss_types import LOSS_TYPES

LENGTH_ANSWERS = ("right, short", "right, long", "wrong, short", "wrong, long", "wrong, overlong")
#: Each answer's length in tokens, were it written out in full.
LENGTH_TOKENS = np.array([2, 8, 2, 8, 16])
LENGTH_REWARDS = np.array([1.0, 1.0, 0.0, 0.0, 0.0])
#: The length cap (max_completion_length): the overlong answer is cut after 12 tokens.
LENGTH_CAP = 12
#: DAPO's soft punishment buffer L_cache: answers longer than L_max - L_cache = 6 tokens pay.
SOFT_BUFFER = 6
OVERLONG = ("none", "filter", "soft")


def _buffer_within_cap(args):
    """Relation: 1 <= buffer <= cap."""
    if args["buffer"] > args["cap"]:
        raise ValueError(f"buffer must be in [1, cap = {args['cap']}], got {args['buffer']}")


@checked(_buffer_within_cap, cap=at_least(1), buffer=at_least(1))
def soft_overlong_penalty(length, cap: int = LENGTH_CAP, buffer: int = SOFT_BUFFER) -> np.ndarray:
    """DAPO's R_length(|o|): 0 for |o| <= cap - buffer, ((cap - buffer) - |o|) / buffer for
    cap - buffer < |o| <= cap, and -1 for |o| > cap (chapter 17). Elementwise over ``length``."""
    n = np.asarray(length, dtype=float)
    return np.where(n > cap, -1.0, np.minimum(((cap - buffer) - n) / buffer, 0.0))


def _length_logits(logits, name: str = "logits") -> np.ndarray:
    """Rule: one logit per answer of the length toy."""
    z = logits_vector(logits, name)
    if z.shape != LENGTH_TOKENS.shape:
        raise ValueError(f"{name} must hold {len(LENGTH_ANSWERS)} logits, one per answer of the length toy, "
                         f"got shape {z.shape}")
    return z


@checked(logits=optional(_length_logits), overlong=one_of(OVERLONG))
def length_task(logits=None, overlong: str = "none") -> Task:
    """The length toy at ``logits`` (one per answer of ``LENGTH_ANSWERS``; default 0: uniform) as a
    ``Task`` of ``estimator_bias``: lengths cut at ``LENGTH_CAP``, rewards with the soft punishment
    when ``overlong="soft"``, the truncated answer's tokens masked when ``overlong="filter"``."""
    z = np.zeros(len(LENGTH_ANSWERS)) if logits is None else logits
    pi = softmax(z)
    rewards = LENGTH_REWARDS + (soft_overlong_penalty(LENGTH_TOKENS) if overlong == "soft" else 0.0)
    kept = (LENGTH_TOKENS <= LENGTH_CAP).astype(int) if overlong == "filter" else None
    return Task(LENGTH_ANSWERS, pi, rewards, np.minimum(LENGTH_TOKENS, LENGTH_CAP),
                np.eye(z.size) - pi[None, :], kept)


def _watch(task: Task) -> dict:
    right = LENGTH_REWARDS > 0
    p = task.probs
    return {"length": float(p @ task.lengths), "correct": float(p[right].sum()),
            "length_right": float(p[right] @ task.lengths[right] / p[right].sum()),
            "length_wrong": float(p[~right] @ task.lengths[~right] / p[~right].sum()),
            "overlong": float(p[LENGTH_TOKENS > LENGTH_CAP].sum())}


#: The checks of the two runs' common arguments.
_RUN = dict(loss_type=one_of(LOSS_TYPES), overlong=one_of(OVERLONG), advantage=one_of(ADVANTAGES), G=at_least(2),
            steps=at_least(1), lr=positive_real)


def _run(step, steps, overlong) -> dict:
    z = np.zeros(len(LENGTH_ANSWERS))
    watched = []
    for t in range(steps + 1):
        task = length_task(z, overlong)
        watched.append(_watch(task))
        if t < steps:
            z = z + step(task)
    return {key: np.array([w[key] for w in watched]) for key in watched[0]}


@checked(seed=at_least(0), **_RUN)
def length_drift_run(loss_type: str = "grpo", overlong: str = "none", advantage: str = "group_mean", G: int = 8,
                     steps: int = 40, lr: float = 0.5, seed: int = 0) -> dict:
    """The length toy trained from the uniform policy on groups of G, seeded (chapter 17): each step draws a
    group, weights its answers by ``advantage`` and ``loss_type`` (times L_max, as in ``estimator_bias``)
    and moves the logits by ``lr`` times the estimate. Returns arrays of length steps + 1: ``length``
    E|o| (tokens, cut at the cap), ``length_right`` and ``length_wrong`` (E|o| among right and among
    wrong answers), ``correct`` P(right) and ``overlong`` P(the overlong answer)."""
    rng = np.random.default_rng(seed)

    def step(task):
        group = sample_groups(task.probs, G, 1, rng)
        return lr * group_estimates(task, group, advantage, loss_type, LENGTH_CAP)[0]
    return _run(step, steps, overlong)


@checked(**_RUN)
def length_drift_exact(loss_type: str = "grpo", overlong: str = "none", advantage: str = "group_mean",
                       G: int = 8, steps: int = 40, lr: float = 0.5) -> dict:
    """What ``length_drift_run`` follows on average: each step moves the logits by ``lr`` times the exact
    expected estimate E[X] (``estimator_moments``, every group of G enumerated). Same outputs."""
    return _run(lambda task: lr * estimator_moments.unchecked(task, G, advantage, loss_type, LENGTH_CAP)["mean"],
                steps, overlong)
