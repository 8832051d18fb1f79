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

from .._checks import as_float_array, integer_at_least


def _chance(p) -> np.ndarray:
    arr = as_float_array(p, "p", ndim_min=0)
    if np.any((arr < 0) | (arr > 1)):
        raise ValueError(f"p must be a probability in [0, 1], got {p!r}")
    return arr


def pass_at_k(p, k: int) -> np.ndarray:
    """1 - (1 - p)^k, elementwise over ``p`` in [0, 1] (chapter 18)."""
    return 1.0 - (1.0 - _chance(p)) ** integer_at_least(k, "k", 1)


def _n_c_k(n, c, k) -> tuple[int, int, int]:
    n, k = integer_at_least(n, "n", 1), integer_at_least(k, "k", 1)
    c = integer_at_least(c, "c", 0)
    if c > n:
        raise ValueError(f"c must be an integer in [0, n = {n}], got {c}")
    if k > n:
        raise ValueError(f"k must be an integer in [1, n = {n}], got {k}")
    return n, c, k


def pass_at_k_estimate(n: int, c: int, k: int) -> float:
    """1 - C(n - c, k) / C(n, k): the unbiased estimate of pass@k from ``c`` right answers among ``n``
    samples (chapter 18), computed as 1 - prod_{i=n-c+1}^{n} (1 - k / i) (no huge binomials)."""
    n, c, k = _n_c_k(n, c, k)
    if n - c < k:
        return 1.0
    return float(1.0 - np.prod(1.0 - k / np.arange(n - c + 1, n + 1)))


def pass_at_k_estimate_mean(p: float, n: int, k: int) -> float:
    """The exact mean of ``pass_at_k_estimate`` over c ~ Binomial(n, p): equals ``pass_at_k(p, k)``."""
    p = float(_chance(p))
    n, _, k = _n_c_k(n, 0, k)
    return float(sum(math.comb(n, c) * p ** c * (1 - p) ** (n - c) * pass_at_k_estimate(n, c, k)
                     for c in range(n + 1)))
