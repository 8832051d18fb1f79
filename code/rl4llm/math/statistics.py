"""Is a difference real? Standard errors and noise floors for results over seeds (chapters 6, 9, 13, 15, 17).

A Monte Carlo estimate comes with its standard error, s / sqrt(n). Two settings compared over seeds
differ by mean(a) - mean(b), whose standard error is sqrt(s_a^2 / n_a + s_b^2 / n_b). The book calls
a difference real only if it clears a **noise floor**: a t quantile times that standard error (Welch's
t-test at the 5% level, two-sided). With few seeds the t quantile matters: with 3 seeds per setting it
is about 2.8-4.3, not 2, and "2 standard errors" would call noise a difference far more often than 5%
of the time (``false_alarm_rate_of_two_se`` computes how often).

Numpy and the standard library only: every chapter can use it.
"""
from __future__ import annotations

import math

import numpy as np

from .._checks import as_float_array, real_in_range


def _per_seed(x, name: str) -> np.ndarray:
    arr = as_float_array(x, name)
    if arr.ndim != 1 or len(arr) < 2:
        raise ValueError(f"{name} must be a 1-D array of at least 2 per-seed results, got shape {arr.shape}")
    return arr


def standard_error(x) -> float:
    """s / sqrt(n), with s the sample standard deviation (ddof 1) of the 1-D results ``x``."""
    x = _per_seed(x, "x")
    return float(x.std(ddof=1) / math.sqrt(len(x)))


def welch_dof(a, b) -> float:
    """Welch-Satterthwaite degrees of freedom of mean(a) - mean(b) (each at least 1)."""
    a, b = _per_seed(a, "a"), _per_seed(b, "b")
    va, vb = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b)
    if va + vb == 0:
        return float(len(a) + len(b) - 2)
    return float((va + vb) ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1)))


def t_quantile(p: float, dof: float) -> float:
    """The p-quantile of Student's t with ``dof`` degrees of freedom (bisection on its CDF)."""
    p = real_in_range(p, "p", 0.0, 1.0, low_open=True, high_open=True)
    dof = real_in_range(dof, "dof", 0.0, math.inf, low_open=True, high_open=True)
    if p < 0.5:
        return -t_quantile(1.0 - p, dof)
    low, high = 0.0, 1.0
    while _t_cdf(high, dof) < p:
        high *= 2.0
    for _ in range(200):
        mid = 0.5 * (low + high)
        low, high = (mid, high) if _t_cdf(mid, dof) < p else (low, mid)
    return 0.5 * (low + high)


def _t_cdf(t: float, dof: float) -> float:
    """P(T <= t) for t >= 0, through the regularised incomplete beta function."""
    x = dof / (dof + t * t)
    return 1.0 - 0.5 * _betainc(dof / 2.0, 0.5, x)


def _betainc(a: float, b: float, x: float) -> float:
    """Regularised incomplete beta I_x(a, b) by its continued fraction (Numerical Recipes, 6.4)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x > (a + 1.0) / (a + b + 2.0):
        return 1.0 - _betainc(b, a, 1.0 - x)
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > 1e-300 else 1e-300)
    h = d
    for m in range(1, 500):
        for numerator in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                          -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > 1e-300 else 1e-300)
            c = 1.0 + numerator / c
            c = c if abs(c) > 1e-300 else 1e-300
            h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return front * h / a


def noise_floor(a, b, *, level: float = 0.05) -> float:
    """t_{1 - level/2, Welch dof} * sqrt(s_a^2 / n_a + s_b^2 / n_b) (chapters 6, 15).

    A difference of means smaller than this is within what reseeding alone produces at the given
    two-sided level, so it is not evidence that one setting is better.
    """
    a, b = _per_seed(a, "a"), _per_seed(b, "b")
    level = real_in_range(level, "level", 0.0, 1.0, low_open=True, high_open=True)
    se = math.sqrt(a.var(ddof=1) / len(a) + b.var(ddof=1) / len(b))
    return float(t_quantile(1.0 - level / 2.0, welch_dof(a, b)) * se)


def verdict(a, b, *, level: float = 0.05) -> str:
    """One line: the difference of means, the noise floor, and whether the difference clears it."""
    a, b = _per_seed(a, "a"), _per_seed(b, "b")
    difference, floor = float(a.mean() - b.mean()), noise_floor(a, b, level=level)
    says = "a real difference" if abs(difference) > floor else "not distinguishable from seed noise"
    return f"difference of means {difference:+.4f}, noise floor {floor:.4f} -> {says}"


def false_alarm_rate_of_two_se(n: int) -> float:
    """How often |mean(a) - mean(b)| > 2 SE when a and b are n seeds of the *same* setting (equal
    variances, so the statistic is t with 2n - 2 degrees of freedom): 2 P(T > 2)."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 2:
        raise ValueError(f"n must be an integer >= 2 seeds per setting, got {n!r}")
    return float(2.0 * (1.0 - _t_cdf(2.0, 2 * n - 2)))


def seeds_needed(s: float, difference: float, *, level: float = 0.05) -> int:
    """Smallest n seeds per setting whose noise floor t_{1 - level/2, 2n - 2} s sqrt(2 / n) is below
    ``difference``, for two settings with the same spread ``s`` over seeds (chapter 15)."""
    s = real_in_range(s, "s", 0.0, math.inf, low_open=True, high_open=True)
    difference = real_in_range(difference, "difference", 0.0, math.inf, low_open=True, high_open=True)
    n = 2
    while t_quantile(1.0 - level / 2.0, 2 * n - 2) * s * math.sqrt(2.0 / n) >= difference:
        n += 1
    return n
