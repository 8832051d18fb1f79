"""The book's helpers for showing library code and judging differences over seeds."""
import math

import numpy as np
import pytest

from rl4llm import gae, group_advantages, softmax
from rl4llm.math.statistics import (bootstrap_interval, false_alarm_rate_of_two_se, holm, holm_verdicts, noise_floor,
                                   paired_noise_floor, paired_verdict, ratio_of_means, seeds_needed,
                                   standard_error, t_quantile, verdict, welch_dof, welch_p_value)
from rl4llm.viz.source import show_source


def test_source_is_shown_exactly_as_written_with_its_declared_checks():
    import inspect
    import textwrap

    text = show_source(group_advantages).text
    assert text == textwrap.dedent(inspect.getsource(group_advantages))
    assert text.startswith("@checked(") and "def group_advantages(" in text         # the ranges, then the signature
    assert '"""A_i = (r_i - mean_j r_j)' in text and "raise ValueError" not in text  # the body is the formula
    compile(show_source(gae).text, "gae", "exec")                                    # valid Python
    listing = show_source(softmax)._repr_markdown_()
    assert listing == "```python\n" + show_source(softmax).text.rstrip() + "\n```\n"
    assert "<" not in listing.split("\n", 1)[0]                 # a fence, not a highlighter's HTML


def test_a_listing_holding_backticks_gets_a_longer_fence():
    from rl4llm.viz.source import show_code
    assert show_code("x = '```'", "python")._repr_markdown_() == "````python\nx = '```'\n````\n"
    assert repr(show_code("a: 1\n", "yaml")) == "a: 1\n"


@pytest.mark.parametrize("p, dof, expected", [(0.975, 1, 12.7062), (0.975, 4, 2.7764), (0.975, 10, 2.2281),
                                              (0.95, 30, 1.6973), (0.975, 1e6, 1.9600), (0.5, 3, 0.0)])
def test_t_quantiles_match_the_table(p, dof, expected):
    assert t_quantile(p, dof) == pytest.approx(expected, abs=1e-4)
    assert t_quantile(1 - p, dof) == pytest.approx(-expected, abs=1e-4)


def test_noise_floor_is_welchs_t_times_the_standard_error_of_the_difference():
    a, b = [0.0, 1.0, 2.0], [1.0, 1.5, 2.0]
    se = math.sqrt(1.0 / 3 + 0.25 / 3)
    assert welch_dof(a, b) == pytest.approx((1 / 3 + 0.25 / 3) ** 2 / ((1 / 3) ** 2 / 2 + (0.25 / 3) ** 2 / 2))
    assert noise_floor(a, b) == pytest.approx(t_quantile(0.975, welch_dof(a, b)) * se)
    assert standard_error(a) == pytest.approx(1 / math.sqrt(3))
    assert "not distinguishable" in verdict(a, b) and "a real difference" in verdict([5.0, 5.1], [0.0, 0.1])


def test_paired_floor_by_hand_and_its_false_alarm_rate():
    """By hand: d = (1, 2, 3), s_d = 1, floor t_{0.975, 2} / sqrt(3) = 4.3027 / 1.7321. Independent route: pairs
    of the same setting sharing a large per-seed effect call noise a difference about 5% of the time, and the
    paired floor is far below Welch's, which counts the shared effect as noise."""
    assert paired_noise_floor([2.0, 4.0, 6.0], [1.0, 2.0, 3.0]) == pytest.approx(4.302653 / math.sqrt(3), abs=1e-5)
    assert "not distinguishable" in paired_verdict([2.0, 4.0, 6.0], [1.0, 2.0, 3.0])      # mean 2 < 2.4841
    assert "a real difference" in paired_verdict([2.0, 4.0, 6.0], [0.5, 2.5, 4.5])    # d = 1.5 each: s_d = 0
    rng = np.random.default_rng(1)
    shared = rng.normal(scale=10.0, size=(4000, 3))
    a, b = shared + rng.normal(size=(4000, 3)), shared + rng.normal(size=(4000, 3))
    alarms = np.mean([abs((x - y).mean()) > paired_noise_floor(x, y) for x, y in zip(a, b)])
    assert 0.035 < alarms < 0.065
    assert np.median([paired_noise_floor(x, y) / noise_floor(x, y) for x, y in zip(a[:500], b[:500])]) < 0.3
    with pytest.raises(ValueError, match="b must hold one result per seed"):
        paired_noise_floor([1.0, 2.0, 3.0], [1.0, 2.0])


def test_the_floor_calls_noise_a_difference_at_most_5_percent_of_the_time_and_two_se_more():
    """Independent route: simulate many pairs of 3-seed runs of the same setting."""
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(20000, 3)), rng.normal(size=(20000, 3))
    alarms = np.mean([abs(x.mean() - y.mean()) > noise_floor(x, y) for x, y in zip(a[:4000], b[:4000])])
    assert 0.02 < alarms <= 0.05 + 0.01      # Welch is slightly conservative with 3 seeds
    se = np.sqrt(a.var(axis=1, ddof=1) / 3 + b.var(axis=1, ddof=1) / 3)
    two_se = np.mean(np.abs(a.mean(axis=1) - b.mean(axis=1)) > 2 * se)
    assert two_se == pytest.approx(false_alarm_rate_of_two_se(3), abs=0.01)
    assert false_alarm_rate_of_two_se(3) > 0.1


@pytest.mark.parametrize("call, name", [(lambda: noise_floor([1.0], [1.0, 2.0]), "a"),
                                        (lambda: noise_floor([1.0, 2.0], [[1.0, 2.0]]), "b"),
                                        (lambda: t_quantile(1.0, 3), "p"), (lambda: t_quantile(0.9, 0), "dof"),
                                        (lambda: false_alarm_rate_of_two_se(1), "n"),
                                        (lambda: noise_floor([1.0, 2.0], [1.0, 2.0], level=0.0), "level")])
def test_bad_inputs(call, name):
    with pytest.raises(ValueError, match=name):
        call()


@pytest.mark.parametrize("s, expected", [(0.03, 19), (0.05, 50)])
def test_seeds_needed_is_the_first_n_whose_floor_clears_the_difference(s, expected):
    """Chapter 15's exercise: 8 s^2 / 0.02^2 seeds would do with a z of 2; the t quantile adds a few."""
    n = seeds_needed(s, 0.02)
    assert n == expected
    floor = lambda k: t_quantile(0.975, 2 * k - 2) * s * math.sqrt(2 / k)
    assert floor(n) < 0.02 <= floor(n - 1)
    with pytest.raises(ValueError, match="difference"):
        seeds_needed(0.03, 0.0)


def test_welchs_p_value_matches_the_closed_form_t_cdf_with_two_degrees_of_freedom():
    """Independent route: two seeds a side with equal spreads give Welch 2 dof, where
    P(T > t) = (1 - t / sqrt(2 + t^2)) / 2 in closed form."""
    a, b = [1.0, 2.0], [0.0, -1.0]                  # difference 2, each variance 0.5
    assert welch_dof(a, b) == pytest.approx(2.0)
    t = 2.0 / math.sqrt(0.5 / 2 + 0.5 / 2)
    assert welch_p_value(a, b) == pytest.approx(1 - t / math.sqrt(2 + t * t), abs=1e-12)
    assert welch_p_value(b, a) == pytest.approx(welch_p_value(a, b))
    assert welch_p_value([1.0, 1.0], [1.0, 1.0]) == 1.0 and welch_p_value([1.0, 1.0], [2.0, 2.0]) == 0.0


def test_welchs_p_is_below_the_level_exactly_when_the_difference_clears_the_noise_floor():
    rng = np.random.default_rng(1)
    for _ in range(200):
        a, b = rng.normal(size=3), rng.normal(0.8, 1.0, size=3)
        gap = abs(a.mean() - b.mean()) - noise_floor(a, b)
        if abs(gap) > 1e-9:
            assert (welch_p_value(a, b) < 0.05) == (gap > 0)


def _holm_by_step_down(p, level):
    """Holm (1979) as he wrote it: test the smallest p at level / m, the next at level / (m - 1), ...,
    and stop at the first that fails; returns which tests are rejected."""
    m, rejected = len(p), [False] * len(p)
    for step, i in enumerate(sorted(range(m), key=lambda i: p[i])):
        if p[i] > level / (m - step):
            break
        rejected[i] = True
    return rejected


@pytest.mark.parametrize("p", [[0.01, 0.04, 0.03, 0.005], [0.2], [0.001, 0.001, 0.5], [0.04, 0.04, 0.04],
                               [0.0125, 0.02, 0.3, 0.011, 0.0001, 1.0, 0.009]])
def test_holm_adjusted_p_values_reject_what_the_step_down_procedure_rejects(p):
    adjusted = holm(p)
    for level in (0.01, 0.05, 0.1, 0.2):
        assert [bool(x <= level) for x in adjusted] == _holm_by_step_down(p, level)
    assert np.all(adjusted >= np.asarray(p)) and np.all(adjusted <= 1)


def test_holm_by_hand():
    # sorted 0.005, 0.01, 0.03, 0.04 times 4, 3, 2, 1: 0.02, 0.03, 0.06, 0.04 -> running max 0.02, 0.03, 0.06, 0.06
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.3]) == pytest.approx([0.3])
    assert holm([0.5, 0.6]) == pytest.approx([1.0, 1.0])


def test_holm_keeps_the_chance_of_any_false_call_below_the_level_where_seven_plain_tests_do_not():
    """Independent route: simulate a lab of seven comparisons of 3-seed runs of one setting."""
    rng = np.random.default_rng(2)
    labs = rng.normal(size=(1000, 7, 2, 3))
    plain = np.mean([any(welch_p_value(a, b) < 0.05 for a, b in lab) for lab in labs])
    adjusted = np.mean([any(holm([welch_p_value(a, b) for a, b in lab]) < 0.05) for lab in labs])
    assert plain > 0.2 and adjusted <= 0.05


def test_holm_verdicts_print_each_difference_its_floor_and_its_adjusted_verdict():
    lines = holm_verdicts({"big": ([5.0, 5.1, 5.2], [0.0, 0.1, 0.2]), "small": ([0.0, 1.0, 2.0], [1.0, 1.5, 2.0])})
    assert lines["big"].startswith("difference of means +5.0000, noise floor ") and lines["big"].endswith("a real difference")
    p = holm([welch_p_value([5.0, 5.1, 5.2], [0.0, 0.1, 0.2]), welch_p_value([0.0, 1.0, 2.0], [1.0, 1.5, 2.0])])
    assert f"Holm-adjusted p {p[0]:.4f}" in lines["big"] and lines["small"].endswith("not distinguishable from seed noise")
    # one comparison alone is judged as verdict judges it
    alone = holm_verdicts({"x": ([0.1, 0.2, 0.25], [0.0, 0.02, 0.05])})["x"]
    assert ("a real difference" in alone) == ("a real difference" in verdict([0.1, 0.2, 0.25], [0.0, 0.02, 0.05]))


@pytest.mark.parametrize("call, match", [(lambda: holm([0.2, 1.5]), "p_values"), (lambda: holm([]), "p_values"),
                                         (lambda: holm([[0.1]]), "p_values"),
                                         (lambda: holm_verdicts({"x": ([0.0, 1.0], [1.0, 2.0])}, level=1.0), "level"),
                                         (lambda: holm_verdicts({}), "comparisons"),
                                         (lambda: welch_p_value([1.0], [1.0, 2.0]), "a")])
def test_bad_inputs_name_the_parameter(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_bootstrap_interval_of_a_difference_of_means_matches_the_normal_theory_interval():
    """Independent route: for means of 400 draws each the bootstrap's percentile interval is close to
    difference +- 1.96 standard errors; it is reproducible from its seed, and excludes 0 only for a real gap."""
    rng = np.random.default_rng(1)
    a, b = rng.normal(0.3, 1.0, 400), rng.normal(0.0, 2.0, 400)
    se = math.sqrt(a.var(ddof=1) / 400 + b.var(ddof=1) / 400)
    low, high = bootstrap_interval(a, b, np.mean)
    difference = a.mean() - b.mean()
    assert low == pytest.approx(difference - 1.96 * se, abs=0.15 * se)
    assert high == pytest.approx(difference + 1.96 * se, abs=0.15 * se)
    assert low > 0 and bootstrap_interval(a, b, np.mean) == (low, high)
    same_low, same_high = bootstrap_interval(a, rng.normal(0.3, 1.0, 400), np.median)
    assert same_low < 0 < same_high


@pytest.mark.parametrize("call, match", [(lambda: bootstrap_interval([1.0, 2.0], [1.0, 2.0], "median"), "statistic"),
                                         (lambda: bootstrap_interval([1.0], [1.0, 2.0], np.mean), "a"),
                                         (lambda: bootstrap_interval([1.0, 2.0], [1.0, 2.0], np.mean, resamples=10),
                                          "resamples"),
                                         (lambda: bootstrap_interval([1.0, 2.0], [1.0, 2.0], np.mean, level=1.0),
                                          "level")])
def test_bootstrap_interval_bad_inputs_name_the_parameter(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_holm_comparisons_hold_the_numbers_holm_verdicts_prints():
    """Each row's difference, floor, Welch p and Holm p equal the functions computed one by one, and its line is
    holm_verdicts's."""
    from rl4llm.math.statistics import holm_comparisons, holm_line
    rng = np.random.default_rng(3)
    comparisons = {f"c{i}": (rng.normal(shift, 1, 4), rng.normal(0, 1, 4)) for i, shift in enumerate((0.0, 1.0, 3.0))}
    rows, lines = holm_comparisons(comparisons), holm_verdicts(comparisons)
    p = [welch_p_value(*pair) for pair in comparisons.values()]
    for (name, (a, b)), adjusted, p_i in zip(comparisons.items(), holm(np.array(p)), p):
        row = rows[name]
        assert row["difference"] == pytest.approx(a.mean() - b.mean()) and row["floor"] == pytest.approx(noise_floor(a, b))
        assert (row["p"], row["holm_p"], row["real"]) == (pytest.approx(p_i), pytest.approx(adjusted), adjusted < 0.05)
        assert holm_line(row) == lines[name]


@pytest.mark.parametrize("correlation", [-0.6, 0.0, 0.6])
def test_ratio_of_means_standard_error_against_a_bootstrap(correlation):
    """The delta-method se of mean(b) / mean(a) against a bootstrap over the pairs (fixed seeds), and, when
    the pair is correlated, away from the independent formula that adds the relative errors in quadrature."""
    rng = np.random.default_rng(0)
    n = 2000
    cov = np.array([[0.09, correlation * 0.3 * 0.6], [correlation * 0.3 * 0.6, 0.36]])
    a, b = rng.multivariate_normal([2.7, 2.6], cov, size=n).T
    ratio, se = ratio_of_means(a, b)
    assert ratio == pytest.approx(b.mean() / a.mean())
    boot = np.random.default_rng(1).integers(0, n, size=(4000, n))
    boot_se = (b[boot].mean(axis=1) / a[boot].mean(axis=1)).std(ddof=1)
    assert se == pytest.approx(boot_se, rel=0.05)
    independent = abs(ratio) * np.hypot(a.std(ddof=1) / np.sqrt(n) / a.mean(), b.std(ddof=1) / np.sqrt(n) / b.mean())
    if correlation != 0:
        assert abs(se - independent) / se > 0.15 and abs(boot_se - independent) / boot_se > 0.15


def test_ratio_of_means_bad_inputs():
    with pytest.raises(ValueError, match="a and b must have the same shape"):
        ratio_of_means([1.0, 2.0], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="at least 2 pairs"):
        ratio_of_means([1.0], [1.0])
    with pytest.raises(ValueError, match="nonzero mean"):
        ratio_of_means([1.0, -1.0], [1.0, 2.0])
    with pytest.raises(ValueError, match="b must"):
        ratio_of_means([1.0, 2.0], [1.0, np.nan])


def test_paired_bootstrap_of_a_mean_difference_is_the_normal_theory_interval_of_the_per_pair_differences():
    """Independent route: for 400 correlated pairs, the paired percentile interval of mean(a) - mean(b) is close to
    mean(d) +- 1.96 SE(d), d = a - b, and narrower than the unpaired bootstrap's (which ignores the correlation)."""
    rng = np.random.default_rng(1)
    shared = rng.normal(size=400)
    a, b = shared + 0.3 * rng.normal(size=400) + 0.1, shared + 0.3 * rng.normal(size=400)
    d = a - b
    se = d.std(ddof=1) / np.sqrt(len(d))
    low, high = bootstrap_interval(a, b, np.mean, paired=True)
    assert low == pytest.approx(d.mean() - 1.96 * se, abs=0.2 * se)
    assert high == pytest.approx(d.mean() + 1.96 * se, abs=0.2 * se)
    unpaired_low, unpaired_high = bootstrap_interval(a, b, np.mean)
    assert high - low < (unpaired_high - unpaired_low) / 2
    assert bootstrap_interval(a, b, np.mean, paired=True) == (low, high)          # seeded: reproducible


def test_paired_bootstrap_keeps_the_pairs():
    """b = a + 3 has every quantile range as wide as a's in any joint resampling, so the paired interval of
    the width difference is exactly 0; resampled separately, the widths differ."""
    def width(x, axis=-1):
        low, high = np.quantile(x, [0.1, 0.9], axis=axis)
        return high - low
    a = np.random.default_rng(2).normal(size=32)
    low, high = bootstrap_interval(a, a + 3.0, width, resamples=2000, paired=True)
    assert abs(low) < 1e-12 and abs(high) < 1e-12
    unpaired_low, unpaired_high = bootstrap_interval(a, a + 3.0, width, resamples=2000)
    assert unpaired_low < 0 < unpaired_high


@pytest.mark.parametrize("a, b", [([1.0, 2.0], [1.0, 2.0, 3.0]), ([1.0], [2.0]), ([[1.0, 2.0]], [[1.0, 2.0]])])
def test_paired_bootstrap_bad_input_names_the_parameter(a, b):
    with pytest.raises(ValueError, match="a"):
        bootstrap_interval(a, b, np.mean, paired=True)
