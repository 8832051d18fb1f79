"""pass@k: the chance that at least one of k answers is right, exactly and from n samples (chapter 18).

With P(right) = p for one answer, k independent answers contain a right one with probability

    pass@k = 1 - (1 - p)^k                       (``pass_at_k``; pass@1 = p).

From n samples of which c are right, the estimator of Chen et al. (2021),

    1 - C(n - c, k) / C(n, k)                    (``pass_at_k_estimate``, k <= n),

is unbiased: its mean over c ~ Binomial(n, p) is exactly 1 - (1 - p)^k (``pass_at_k_estimate_mean``
sums that law), where plugging c / n into the formula, 1 - (1 - c/n)^k, is biased low.
"""
from __future__ import annotations

import math

import numpy as np

from .._checks import as_float_array, at_least, checked


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
