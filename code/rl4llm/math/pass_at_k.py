"""pass@k: the chance that at least one of k answers is right, exactly and from n samples (chapter 18).

With P(right) = p for one answer, k independent answers contain a right one with probability

    pass@k = 1 - (1 - p)^k                       (``pass_at_k``; pass@1 = p).

From n samples of which c are right, the estimator of Chen et al. (2021),

    1 - C(n - c, k) / C(n, k)                    (``pass_at_k_estimate``, k <= n),

is unbiased: its mean over c ~ Binomial(n, p) is exactly 1 - (1 - p)^k (``pass_at_k_estimate_mean``
sums that law), where plugging c / n into the formula, 1 - (1 - c/n)^k, is biased low.

Over many prompts j with c_j right answers among n samples each, pass@k of the prompt set is the mean
over prompts of the per-prompt estimates, mean_j [1 - C(n - c_j, k) / C(n, k)]; its standard error is
the prompts' std / sqrt(#prompts) (``pass_at_k_over_prompts``).
"""
from __future__ import annotations

import math

import numpy as np

from .._checks import as_float_array, at_least, checked
from .statistics import standard_error


def _chances(p, name: str) -> np.ndarray:
    """Rule: a probability in [0, 1], or an array of them."""
    arr = as_float_array(p, name, ndim_min=0)
    if np.any((arr < 0) | (arr > 1)):
        raise ValueError(f"{name} must be a probability in [0, 1], got {p!r}")
    return arr


@checked(p=_chances, k=at_least(1))
def pass_at_k(p, k: int) -> np.ndarray:
    """1 - (1 - p)^k, elementwise over ``p`` in [0, 1] (chapter 18)."""
    return 1.0 - (1.0 - p) ** k


def _at_most_n(*names: str):
    """Relation: each count ``names`` (c, k) is at most the number of samples n."""
    lowest = {"c": 0, "k": 1}

    def relation(args):
        for name in names:
            if args[name] > args["n"]:
                raise ValueError(f"{name} must be an integer in [{lowest[name]}, n = {args['n']}], got {args[name]}")
    return relation


@checked(_at_most_n("c", "k"), n=at_least(1), c=at_least(0), k=at_least(1))
def pass_at_k_estimate(n: int, c: int, k: int) -> float:
    """1 - C(n - c, k) / C(n, k): the unbiased estimate of pass@k from ``c`` right answers among ``n``
    samples (chapter 18), computed as 1 - prod_{i=n-c+1}^{n} (1 - k / i) (no huge binomials)."""
    if n - c < k:
        return 1.0
    return float(1.0 - np.prod(1.0 - k / np.arange(n - c + 1, n + 1)))


@checked(_at_most_n("k"), p=_chances, n=at_least(1), k=at_least(1))
def pass_at_k_estimate_mean(p: float, n: int, k: int) -> float:
    """The exact mean of ``pass_at_k_estimate`` over c ~ Binomial(n, p): equals ``pass_at_k(p, k)``."""
    p = float(p)
    return float(sum(math.comb(n, c) * p ** c * (1 - p) ** (n - c) * pass_at_k_estimate.unchecked(n, c, k)
                     for c in range(n + 1)))


def _right_counts(counts, name: str) -> np.ndarray:
    """Rule: a 1-D array of right-answer counts, integers >= 0, one per prompt, at least 2 prompts."""
    arr = np.asarray(counts)
    if arr.ndim != 1 or arr.size < 2 or not np.issubdtype(arr.dtype, np.integer) or arr.min() < 0:
        raise ValueError(f"{name} must be a 1-D array of at least 2 integers >= 0 (right answers per prompt), "
                         f"got {counts!r}")
    return arr


def _sample_sizes(ks, name: str) -> np.ndarray:
    """Rule: a non-empty 1-D array of integers k >= 1."""
    arr = np.asarray(ks)
    if arr.ndim != 1 or arr.size == 0 or not np.issubdtype(arr.dtype, np.integer) or arr.min() < 1:
        raise ValueError(f"{name} must be a non-empty 1-D array of integers >= 1, got {ks!r}")
    return arr


def _counts_and_ks_at_most_n(args):
    """Relation: every count and every k is at most the number of samples n."""
    for name, lowest in (("counts", 0), ("ks", 1)):
        if args[name].max() > args["n"]:
            raise ValueError(f"{name} must be integers in [{lowest}, n = {args['n']}], got max {args[name].max()}")


@checked(_counts_and_ks_at_most_n, counts=_right_counts, n=at_least(1), ks=_sample_sizes)
def pass_at_k_over_prompts(counts, n: int, ks) -> tuple[np.ndarray, np.ndarray]:
    """pass@k of a prompt set from ``counts[j]`` right answers among ``n`` samples of prompt j (chapter 18):
    for each k in ``ks``, the mean over prompts of ``pass_at_k_estimate(n, c_j, k)`` (unbiased for the mean
    of 1 - (1 - p_j)^k) and its standard error over prompts. Returns (means, standard errors), one per k."""
    table = np.array([[pass_at_k_estimate.unchecked(n, c, int(k)) for k in ks] for c in range(n + 1)])
    per_prompt = table[counts]                                              # (prompts, len(ks))
    return per_prompt.mean(axis=0), np.array([standard_error.unchecked(column) for column in per_prompt.T])
