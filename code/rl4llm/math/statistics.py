"""Is a difference real? Standard errors and noise floors for results over seeds (chapters 6, 9, 13, 15, 17, 20).

A Monte Carlo estimate comes with its standard error, s / sqrt(n). Two settings compared over seeds
differ by mean(a) - mean(b), whose standard error is sqrt(s_a^2 / n_a + s_b^2 / n_b). The book calls
a difference real only if it clears a **noise floor**: a t quantile times that standard error (Welch's
t-test at the 5% level, two-sided). With few seeds the t quantile matters: with 3 seeds per setting it
is about 2.8-4.3, not 2, and "2 standard errors" would call noise a difference far more often than 5%
of the time (``false_alarm_rate_of_two_se`` computes how often). A lab that makes several comparisons
at once counts its tests: Holm's step-down (``holm``, ``holm_verdicts``) keeps the chance of calling
any one of them real by seed noise alone below the level (chapter 20). A difference measured twice on the same
seeds is tested paired (``paired_noise_floor``, ``paired_verdict``: chapter 19).

Numpy and the standard library only: every chapter can use it.
"""
from __future__ import annotations

import math

import numpy as np

from .._checks import as_float_array, at_least, checked, in_range, positive_real, same_shape, vector_of


def per_seed(x, name: str) -> np.ndarray:
    """Rule: a 1-D array of at least 2 per-seed results."""
    arr = as_float_array(x, name)
    if arr.ndim != 1 or len(arr) < 2:
        raise ValueError(f"{name} must be a 1-D array of at least 2 per-seed results, got shape {arr.shape}")
    return arr


#: The significance level of a two-sided test, in (0, 1).
LEVEL = in_range(0.0, 1.0, low_open=True, high_open=True)


@checked(x=per_seed)
def standard_error(x) -> float:
    """s / sqrt(n), with s the sample standard deviation (ddof 1) of the 1-D results ``x``."""
    return float(x.std(ddof=1) / math.sqrt(len(x)))


@checked(a=per_seed, b=per_seed)
def welch_dof(a, b) -> float:
    """Welch-Satterthwaite degrees of freedom of mean(a) - mean(b) (each at least 1)."""
    va, vb = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b)
    if va + vb == 0:
        return float(len(a) + len(b) - 2)
    return float((va + vb) ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1)))


@checked(p=in_range(0.0, 1.0, low_open=True, high_open=True), dof=positive_real)
def t_quantile(p: float, dof: float) -> float:
    """The p-quantile of Student's t with ``dof`` degrees of freedom (bisection on its CDF)."""
    if p < 0.5:
        return -t_quantile.unchecked(1.0 - p, dof)
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


@checked(a=per_seed, b=per_seed, level=LEVEL)
def noise_floor(a, b, *, level: float = 0.05) -> float:
    """t_{1 - level/2, Welch dof} * sqrt(s_a^2 / n_a + s_b^2 / n_b) (chapters 6, 15).

    A difference of means smaller than this is within what reseeding alone produces at the given
    two-sided level, so it is not evidence that one setting is better.
    """
    se = math.sqrt(a.var(ddof=1) / len(a) + b.var(ddof=1) / len(b))
    return float(t_quantile.unchecked(1.0 - level / 2.0, welch_dof.unchecked(a, b)) * se)


@checked(a=per_seed, b=per_seed, level=LEVEL)
def verdict(a, b, *, level: float = 0.05) -> str:
    """One line: the difference of means, the noise floor, and whether the difference clears it."""
    difference, floor = float(a.mean() - b.mean()), noise_floor.unchecked(a, b, level=level)
    says = "a real difference" if abs(difference) > floor else "not distinguishable from seed noise"
    return f"difference of means {difference:+.4f}, noise floor {floor:.4f} -> {says}"


def _same_seeds(args):
    """Relation: paired results, one per seed in each array, the same seeds in the same order."""
    if len(args["a"]) != len(args["b"]):
        raise ValueError(f"b must hold one result per seed of a ({len(args['a'])} seeds), got {len(args['b'])}")


@checked(_same_seeds, a=per_seed, b=per_seed, level=LEVEL)
def paired_noise_floor(a, b, *, level: float = 0.05) -> float:
    """t_{1 - level/2, n - 1} * s_d / sqrt(n), with d = a - b seed by seed (chapter 19).

    The floor of a difference measured twice on the same seeds (early and late in one run, say): the
    paired t-test at the given two-sided level. Pairing removes what the seeds share, so it is the right
    floor for such a difference, where ``noise_floor`` would treat the two as independent."""
    d = a - b
    return float(t_quantile.unchecked(1.0 - level / 2.0, len(d) - 1) * d.std(ddof=1) / math.sqrt(len(d)))


@checked(_same_seeds, a=per_seed, b=per_seed, level=LEVEL)
def paired_verdict(a, b, *, level: float = 0.05) -> str:
    """One line, as ``verdict``, for paired results: the mean difference, its paired floor, the verdict."""
    difference, floor = float((a - b).mean()), paired_noise_floor.unchecked(a, b, level=level)
    says = "a real difference" if abs(difference) > floor else "not distinguishable from seed noise"
    return f"mean paired difference {difference:+.4f}, paired noise floor {floor:.4f} -> {says}"


@checked(a=per_seed, b=per_seed)
def welch_p_value(a, b) -> float:
    """Two-sided p-value of Welch's t-test of mean(a) = mean(b) (chapter 20).

    t = (mean(a) - mean(b)) / sqrt(s_a^2 / n_a + s_b^2 / n_b) and p = 2 P(T_nu > |t|), with nu the
    Welch-Satterthwaite degrees of freedom (``welch_dof``). So p < level exactly when the difference
    clears ``noise_floor(a, b, level=level)``. With no spread at all, p is 1 for equal means, else 0.
    """
    difference = float(a.mean() - b.mean())
    se = math.sqrt(a.var(ddof=1) / len(a) + b.var(ddof=1) / len(b))
    if se == 0:
        return 1.0 if difference == 0 else 0.0
    return float(2.0 * (1.0 - _t_cdf(abs(difference) / se, welch_dof.unchecked(a, b))))


def _p_values(p, name: str) -> np.ndarray:
    """Rule: a non-empty 1-D array of p-values in [0, 1]."""
    arr = as_float_array(p, name)
    if arr.ndim != 1 or np.any((arr < 0) | (arr > 1)):
        raise ValueError(f"{name} must be a 1-D array of p-values in [0, 1], got {p!r}")
    return arr


@checked(p_values=_p_values)
def holm(p_values) -> np.ndarray:
    """Holm's step-down adjusted p-values of m tests made together (Holm 1979; chapter 20).

    Sort the p-values, p_(1) <= ... <= p_(m); the i-th smallest is adjusted to
    max_{j <= i} min(1, (m - j + 1) p_(j)), and each adjusted value goes back to its test's place.
    Calling a test real when its adjusted p is below the level keeps the chance that *any* of the
    m calls is seed noise (the family-wise error) below the level, whatever the tests' dependence;
    one test alone (m = 1) is unchanged.
    """
    m = len(p_values)
    order = np.argsort(p_values, kind="stable")
    stepped = np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * p_values[order]))
    adjusted = np.empty(m)
    adjusted[order] = stepped
    return adjusted


def comparison_pairs(comparisons, name: str) -> dict:
    """Rule: a non-empty mapping ``{name: (a, b)}`` of two per-seed result arrays each (:func:`per_seed`)."""
    if not isinstance(comparisons, dict) or not comparisons:
        raise ValueError(f"{name} must hold at least one {{name: (a, b)}} pair of per-seed results, got {comparisons!r}")
    return {key: (per_seed(pair[0], f"{name}[{key!r}][0]"), per_seed(pair[1], f"{name}[{key!r}][1]"))
            for key, pair in comparisons.items()}


@checked(comparisons=comparison_pairs, level=LEVEL)
def holm_comparisons(comparisons: dict, *, level: float = 0.05) -> dict[str, dict]:
    """The numbers of comparisons made together, ``{name: (a, b)}`` of per-seed results (chapters 18, 20): for
    each, ``difference`` mean(a) - mean(b), its own noise ``floor``, Welch's ``p`` (``welch_p_value``), its
    Holm-adjusted ``holm_p`` over all the comparisons (``holm``) and ``real``: the adjusted p is below ``level``."""
    names = list(comparisons)
    p = [welch_p_value.unchecked(*comparisons[name]) for name in names]
    rows = {}
    for name, p_i, adjusted in zip(names, p, holm.unchecked(np.array(p))):
        a, b = comparisons[name]
        rows[name] = {"difference": float(a.mean() - b.mean()), "floor": noise_floor.unchecked(a, b, level=level),
                      "p": float(p_i), "holm_p": float(adjusted), "real": bool(adjusted < level)}
    return rows


def holm_line(row: dict) -> str:
    """One comparison of :func:`holm_comparisons` as a line: difference, floor, p, adjusted p and the verdict."""
    says = "a real difference" if row["real"] else "not distinguishable from seed noise"
    return (f"difference of means {row['difference']:+.4f}, noise floor {row['floor']:.4f}, "
            f"p {row['p']:.4f}, Holm-adjusted p {row['holm_p']:.4f} -> {says}")


@checked(comparisons=comparison_pairs, level=LEVEL)
def holm_verdicts(comparisons: dict, *, level: float = 0.05) -> dict[str, str]:
    """One line per comparison made together (:func:`holm_line` of :func:`holm_comparisons`), ``{name: (a, b)}``
    of per-seed results (chapter 20); the difference is called real only if the adjusted p is below ``level``."""
    return {name: holm_line(row) for name, row in holm_comparisons.unchecked(comparisons, level=level).items()}


@checked(n=at_least(2))
def false_alarm_rate_of_two_se(n: int) -> float:
    """How often |mean(a) - mean(b)| > 2 SE when a and b are n seeds of the *same* setting (equal
    variances, so the statistic is t with 2n - 2 degrees of freedom): 2 P(T > 2)."""
    return float(2.0 * (1.0 - _t_cdf(2.0, 2 * n - 2)))


@checked(s=positive_real, difference=positive_real, level=LEVEL)
def seeds_needed(s: float, difference: float, *, level: float = 0.05) -> int:
    """Smallest n seeds per setting whose noise floor t_{1 - level/2, 2n - 2} s sqrt(2 / n) is below
    ``difference``, for two settings with the same spread ``s`` over seeds (chapter 15)."""
    n = 2
    while t_quantile.unchecked(1.0 - level / 2.0, 2 * n - 2) * s * math.sqrt(2.0 / n) >= difference:
        n += 1
    return n


def _statistic(f, name: str):
    """Rule: a callable ``f(x, axis=-1)`` that reduces an array along an axis, as numpy's reductions do."""
    if not callable(f):
        raise ValueError(f"{name} must be a function f(x, axis=-1) such as np.median, got {f!r}")
    return f


def _paired_if_asked(args):
    """Relation: with ``paired``, ``a`` and ``b`` hold one value per seed, the same seeds in the same order."""
    if args["paired"]:
        same_shape(args["a"], args["b"], "a", "b")


@checked(_paired_if_asked, a=per_seed, b=per_seed, statistic=_statistic, resamples=at_least(100), level=LEVEL,
         seed=at_least(0))
def bootstrap_interval(a, b, statistic, *, resamples: int = 10000, level: float = 0.05,
                       seed: int = 0, paired: bool = False) -> tuple[float, float]:
    """Percentile bootstrap interval of statistic(a) - statistic(b), at confidence 1 - level (chapter 21).

    For a statistic with no noise floor of its own (a median, the width of a quantile range), each
    setting's seeds are resampled with replacement, independently, ``resamples`` times (a generator
    seeded with ``seed``, so the interval is reproducible); the interval runs from the level/2 to the
    1 - level/2 quantile of the resampled differences. An interval that excludes 0 says the
    difference is larger than reseeding alone explains. ``statistic(x, axis=-1)`` reduces the last
    axis, as ``np.median`` or ``np.std`` do. With ``paired``, one draw of seed indices picks the same
    runs of both (``a`` and ``b`` hold one value per seed, in the same order), which keeps the pairing of
    runs that share their random numbers at one seed.
    """
    rng = np.random.default_rng(seed)
    if paired:
        index = rng.integers(0, len(a), size=(resamples, len(a)))
        draws = [a[index], b[index]]
    else:
        draws = [x[rng.integers(0, len(x), size=(resamples, len(x)))] for x in (a, b)]
    differences = np.asarray(statistic(draws[0], axis=-1)) - np.asarray(statistic(draws[1], axis=-1))
    low, high = np.quantile(differences, [level / 2.0, 1.0 - level / 2.0])
    return float(low), float(high)


def _paired_samples(args):
    """Relation: ``a`` and ``b`` pair up (one entry of each per batch), at least two pairs, mean(a) not 0."""
    same_shape(args["a"], args["b"], "a", "b")
    if args["a"].size < 2:
        raise ValueError(f"a and b must hold at least 2 pairs, got {args['a'].size}")
    if args["a"].mean() == 0:
        raise ValueError("a must have a nonzero mean (it divides the ratio)")


@checked(_paired_samples, a=vector_of(as_float_array, "real numbers"), b=vector_of(as_float_array, "real numbers"))
def ratio_of_means(a, b) -> tuple[float, float]:
    """``(R, se)``: the ratio of two means R = mean(b) / mean(a) over n paired samples, and its
    delta-method standard error, which keeps the pair's covariance (chapter 17: REINFORCE++'s scales of
    two prompts, measured on the same batches, so correlated):

        se^2 = Var(b - R a) / (n mean(a)^2) = (Var b - 2 R Cov(a, b) + R^2 Var a) / (n mean(a)^2),

    sample variances and covariance with ddof 1. Adding the two means' relative errors in quadrature,
    as for independent samples, leaves out the covariance term. ``tests/test_estimator_bias.py`` checks
    se against a bootstrap over the pairs.
    """
    ratio = b.mean() / a.mean()
    return float(ratio), float((b - ratio * a).std(ddof=1) / (math.sqrt(a.size) * abs(a.mean())))
