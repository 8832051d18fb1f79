"""The numbers stated in the solutions of chapters 6-9, each computed the way the solution says.

A solution that states a number is checked here by running the code it describes (or the
equivalent library call), so a change in the library or in the runs shows up as a failing test.
"""
import math

from fractions import Fraction

import numpy as np
import pytest

from rl4llm import (CORRECT, LOGITS, REWARDS, estimator_variance, expected_reward, optimal_baseline,
                    policy_gradient, score, sft_gradient, softmax)
from rl4llm.math.estimators import (gradient_by_finite_differences, group_estimator_moments,
                               group_mean_baseline_gradient, jhat_distribution, jhat_samples,
                               leave_one_out_gradient, sample_groups, std_and_standard_error, variance_curve,
                               zero_signal_probability)
from rl4llm.studies.onpolicy import SEED_RUN, learning_curve_band, repeated_band, seed_study
from rl4llm.math.statistics import noise_floor, t_quantile

PI = softmax(LOGITS)


# ----------------------------------------------------------------------------- chapter 6
def test_ch06_group_size():
    values, law = jhat_distribution(0.2, 1600)
    assert np.sqrt(law @ (values - 0.2) ** 2) == pytest.approx(0.01, abs=1e-12)
    assert round(math.log(0.01) / math.log(0.8), 1) == 20.6
    assert round(jhat_distribution(0.2, 21)[1][0], 4) == 0.0092 < 0.01
    assert round(jhat_distribution(0.2, 20)[1][0], 4) == 0.0115 > 0.01


@pytest.fixture(scope="module")
def sigma():
    """The chapter's spread of one run: 4096 runs of SEED_RUN (seed 1), as printed in chapter 6."""
    return seed_study(4096, seed=1, **SEED_RUN)["std"]


def test_ch06_noise_floor_solution(sigma):
    assert round(sigma, 4) == 0.0951
    assert round(sigma * math.sqrt(2 / 4), 4) == 0.0673
    assert round(t_quantile(0.975, 6), 3) == 2.447                     # Welch dof at 4 + 4 equal spreads
    assert round(t_quantile(0.975, 6) * sigma * math.sqrt(2 / 4), 4) == 0.1646
    n = 8 * sigma ** 2 / 0.03 ** 2
    assert round(n, 1) == 80.4 and math.ceil(n) == 81
    assert 2 * sigma * math.sqrt(2 / 81) <= 0.03 < 2 * sigma * math.sqrt(2 / 80)
    assert round(t_quantile(0.975, 160), 3) == 1.975
    assert round(2 * (1.959964 + 0.841621) ** 2 * sigma ** 2 / 0.03 ** 2) == 158   # 80% power


def test_ch06_noise_floor_simulation(sigma):
    m = seed_study(1000 * 81, seed=2, **SEED_RUN)["finals"].reshape(500, 2, 81).mean(axis=2)
    difference = m[:, 0] - m[:, 1]
    assert round(difference.std(ddof=1), 4) == 0.0150
    assert round(sigma * math.sqrt(2 / 81), 4) == 0.0149
    assert round(np.mean(np.abs(difference) > 0.03), 3) == 0.038


def test_ch06_seed_study_defaults_are_not_the_chapter_run():
    default = seed_study(4096, seed=1)["std"]           # 20 steps, not SEED_RUN's 10
    assert round(default, 3) == 0.036
    assert math.ceil(8 * default ** 2 / 0.03 ** 2) == 12


def test_ch06_unbiased_and_median():
    values, law = jhat_distribution(0.2, 4)
    assert law @ values == pytest.approx(0.2, abs=1e-15)
    cumulative = np.cumsum(law)
    assert round(cumulative[0], 4) == 0.4096 and round(cumulative[1], 4) == 0.8192
    assert values[np.searchsorted(cumulative, 0.5)] == 0.25


def test_ch06_text_g8_against_g4():
    """The verdicts printed in the chapter's noise-floor section, and their reading in the text."""
    for n, real in ((4, False), (64, True)):
        a = seed_study(n, seed=20, **SEED_RUN)["finals"]
        b = seed_study(n, seed=21, **{**SEED_RUN, "G": 8})["finals"]
        assert (abs(b.mean() - a.mean()) > noise_floor(b, a)) == real
    a4, a64 = (seed_study(n, seed=20, **SEED_RUN)["finals"].std(ddof=1) for n in (4, 64))
    assert 1.8 < a4 / a64 < 2.2                      # "spread twice as widely as the 64"


def test_ch06_lenient_se():
    r = np.array([0, 0, 1, 0, 0.5])
    J = expected_reward(LOGITS, r)
    assert J == pytest.approx(0.25) and PI @ r ** 2 == pytest.approx(0.225)
    assert PI @ r ** 2 - J ** 2 == pytest.approx(0.1625) and J * (1 - J) == pytest.approx(0.1875)
    se = np.sqrt((PI @ r ** 2 - J ** 2) / 4)
    assert se ** 2 == pytest.approx(0.040625) and round(se, 4) == 0.2016 > 0.2
    samples = jhat_samples(PI, r, 4, 20_000, seed=0)
    std, std_se = std_and_standard_error(samples)
    assert round(samples.std(ddof=1), 4) == round(std, 4) == 0.2015 and round(std_se, 4) == 0.0010
    assert np.allclose(np.unique(samples), np.arange(9) / 8)


def test_ch06_write_jhat_distribution_overflows_at_1600():
    with pytest.raises(OverflowError):
        np.array([math.comb(1600, k) for k in range(1601)], dtype=float)
    assert jhat_distribution(0.2, 1600)[1].sum() == pytest.approx(1.0)


def test_ch06_bell():
    assert [round(0.4 / math.sqrt(G), 3) for G in (16, 64)] == [0.1, 0.05]
    zero = {G: jhat_distribution(0.2, G)[1][0] for G in (8, 13, 14, 16)}
    assert [round(zero[G], 3) for G in (8, 13, 14, 16)] == [0.168, 0.055, 0.044, 0.028]
    assert zero[13] > 0.05 > zero[14]
    below = {G: 0.5 * math.erfc(math.sqrt(G / 8)) for G in (4, 16, 64)}
    assert round(below[4], 3) == 0.159 and round(below[16], 3) == 0.023 and round(below[64], 5) == 0.00003
    assert round(jhat_distribution(0.2, 4)[1][0], 2) == 0.41


# ----------------------------------------------------------------------------- chapter 7
def test_ch07_gradient_sums_to_zero():
    rng = np.random.default_rng(0)
    assert abs(policy_gradient(rng.normal(size=5), rng.normal(size=5)).sum()) < 1e-15


def test_ch07_partial_credit():
    r = np.array([0, 0, 1, 0, 0.5])
    assert expected_reward(LOGITS, r) == pytest.approx(0.25)
    grad = policy_gradient(LOGITS, r)
    assert np.allclose(grad, [-0.025, -0.1, 0.15, -0.05, 0.025])
    assert np.allclose(gradient_by_finite_differences(LOGITS, r), grad, atol=1e-8)
    assert set(np.flatnonzero(grad > 0)) == {CORRECT, 4}                    # the logits of 5 and 15


def test_ch07_rl_and_sft_agree_at_lr_over_J():
    for logits in (LOGITS, np.array([0.3, -1.2, 0.5, 2.0, 0.0])):
        J = expected_reward(logits, REWARDS)
        grad = policy_gradient(logits, REWARDS)
        assert np.allclose(grad, J * (np.eye(5)[CORRECT] - softmax(logits)))
        assert np.allclose((1 / J) * grad, -sft_gradient(logits, CORRECT))


# ----------------------------------------------------------------------------- chapter 8
def test_ch08_optimal_baseline_moves_with_the_grader():
    b_star = optimal_baseline(LOGITS, REWARDS)
    assert round(optimal_baseline(LOGITS, REWARDS + 10), 4) == 10.2324
    assert optimal_baseline(LOGITS, 3 * REWARDS + 10) == pytest.approx(3 * b_star + 10)
    for a, c in ((1.0, 0.0), (1.0, 10.0), (3.0, -2.0), (0.5, 7.0)):
        curve = variance_curve(LOGITS, a * REWARDS + c, 0.0, [0.0])
        assert round(curve["variance_mean"] / curve["variance_optimal"], 3) == 1.008
        # the variance at a b + c under a r + c is a^2 times the variance at b under r
        b = np.linspace(-1, 1, 11)
        moved = variance_curve(LOGITS, a * REWARDS + c, 0.0, a * b + c)["variance"]
        assert np.allclose(moved, a ** 2 * variance_curve(LOGITS, REWARDS, 0.0, b)["variance"])
    curve = variance_curve(LOGITS, REWARDS, 0.0, [0.0])
    assert round(curve["variance_mean"], 4) == 0.0984 and round(curve["variance_optimal"], 4) == 0.0976
    share = {}
    for c in (0.0, 10.0):
        v = variance_curve(LOGITS, REWARDS + c, 0.0, [0.0])
        share[c] = (v["variance_none"] - v["variance_mean"]) / (v["variance_none"] - v["variance_optimal"])
    assert round(share[0.0], 2) == 0.98 and share[10.0] > 0.9999


def _coordinate_variance(r, b):
    x = (r - b) * np.array([score(LOGITS, y) for y in range(5)])[:, CORRECT]
    return PI @ (x - PI @ x) ** 2


def test_ch08_one_coordinate_at_a_time():
    none01, mean01 = _coordinate_variance(REWARDS, 0.0), _coordinate_variance(REWARDS, 0.2)
    assert round(none01, 4) == 0.1024 and round(mean01, 4) == 0.0576
    assert none01 / mean01 == pytest.approx(16 / 9) and round(none01 / mean01, 2) == 1.78
    none10, mean10 = _coordinate_variance(REWARDS + 10, 0.0), _coordinate_variance(REWARDS + 10, 10.2)
    assert round(none10, 4) == 18.6624 and round(mean10, 4) == 0.0576
    assert none10 / mean10 == pytest.approx(324)
    total01 = estimator_variance(LOGITS, REWARDS, 0.0) / estimator_variance(LOGITS, REWARDS, 0.2)
    total10 = estimator_variance(LOGITS, REWARDS + 10, 0.0) / estimator_variance(LOGITS, REWARDS + 10, 10.2)
    assert round(total01, 1) == 1.4 and round(total10) == 788


def test_ch08_more_samples_or_a_baseline():
    with_baseline = estimator_variance(LOGITS, REWARDS + 10, 10.2)
    assert estimator_variance(LOGITS, REWARDS + 10, 0.0, G=789) < with_baseline
    assert estimator_variance(LOGITS, REWARDS + 10, 0.0, G=788) > with_baseline


def test_ch08_lenient_baseline():
    r = np.array([0, 0, 1, 0, 0.5])
    g_sq = np.array([(score(LOGITS, y) ** 2).sum() for y in range(5)])
    assert np.allclose(g_sq, [1.06, 0.46, 0.86, 0.86, 1.06])
    assert PI @ (r * g_sq) == pytest.approx(0.225) and PI @ g_sq == pytest.approx(0.74)
    b_star = optimal_baseline(LOGITS, r)
    assert b_star == pytest.approx(45 / 148) and round(b_star, 4) == 0.3041
    J = expected_reward(LOGITS, r)
    assert J == pytest.approx(0.25)
    at_star, at_mean, at_zero = (estimator_variance(LOGITS, r, b) for b in (b_star, J, 0.0))
    # Exact fractions, not rounded digits: at_zero = 649/4000 = 0.16225 sits on a rounding half, so
    # round(at_zero, 4) depends on the last bit the CPU's arithmetic leaves.
    exact = [Fraction(434, 4625), Fraction(12, 125), Fraction(649, 4000)]
    assert [at_star, at_mean, at_zero] == pytest.approx([float(f) for f in exact], abs=1e-12)
    assert [round(float(f), 4) for f in exact[:2]] == [0.0938, 0.0960]
    assert round(at_mean / at_star, 3) == 1.023


def test_ch08_write_estimator_variance_on_the_toy():
    assert round(estimator_variance(LOGITS, REWARDS, 0.2, 4), 4) == 0.0246
    assert estimator_variance(LOGITS, REWARDS, 0.2, 4) == pytest.approx(estimator_variance(LOGITS, REWARDS, 0.2) / 4)


def test_ch08_overshoot():
    mean = estimator_variance(LOGITS, REWARDS, 0.2)
    ratios = {b: estimator_variance(LOGITS, REWARDS, b) / mean for b in (0.0, 0.2, 0.4, 0.5, 1.0)}
    assert [round(x, 3) for x in ratios.values()] == [1.398, 1.0, 1.203, 1.530, 5.423]
    assert [f"{x:.3f}" for x in ratios.values()] == ["1.398", "1.000", "1.203", "1.530", "5.423"]  # the chart prints
    b_star = optimal_baseline(LOGITS, REWARDS)
    assert round(2 * b_star, 2) == 0.46
    assert estimator_variance(LOGITS, REWARDS, 2 * b_star) == pytest.approx(estimator_variance(LOGITS, REWARDS, 0.0))
    assert ratios[0.4] < ratios[0.0] < ratios[0.5]
    r10 = REWARDS + 10
    mean10 = estimator_variance(LOGITS, r10, 10.2)
    assert round(estimator_variance(LOGITS, r10, 0.0) / mean10) == 788
    assert estimator_variance(LOGITS, r10, 11.0) / mean10 == pytest.approx(ratios[1.0])
    b10 = optimal_baseline(LOGITS, r10)
    assert round(b10, 4) == 10.2324 and round(2 * b10, 2) == 20.46
    assert estimator_variance(LOGITS, r10, 2 * b10) == pytest.approx(estimator_variance(LOGITS, r10, 0.0))
    for b in np.linspace(-1, 11, 25):      # the same parabola moved by 10
        assert estimator_variance(LOGITS, r10, b) == pytest.approx(estimator_variance(LOGITS, REWARDS, b - 10))


# ----------------------------------------------------------------------------- chapter 9
def test_ch09_leave_one_out():
    group = sample_groups(PI, G=8, n_groups=1, rng=np.random.default_rng(3))[0]      # the chapter's group
    assert np.allclose(leave_one_out_gradient(LOGITS, group, REWARDS),
                       8 / 7 * group_mean_baseline_gradient(LOGITS, group, REWARDS), atol=1e-15)
    loo = group_estimator_moments(LOGITS, REWARDS, 8, "leave_one_out")
    assert np.allclose(loo["mean"], [-0.02, -0.08, 0.16, -0.04, -0.02], atol=1e-14)
    ratio8 = loo["total_variance"] / group_estimator_moments(LOGITS, REWARDS, 8, "mean")["total_variance"]
    assert round(ratio8, 4) == 1.3061
    ratio2 = (group_estimator_moments(LOGITS, REWARDS, 2, "leave_one_out")["total_variance"]
              / group_estimator_moments(LOGITS, REWARDS, 2, "mean")["total_variance"])
    assert ratio2 == pytest.approx(4.0)


def test_ch09_zero_signal():
    p = np.linspace(0.01, 0.99, 99)
    for G in (2, 5, 8):
        probs = [zero_signal_probability(x, G) for x in p]
        assert p[int(np.argmin(probs))] == pytest.approx(0.5)
        assert zero_signal_probability(0.5, G) == pytest.approx(2.0 ** (1 - G))
    assert round(zero_signal_probability(0.1, 29), 3) == 0.047 < 0.05
    assert round(zero_signal_probability(0.1, 28), 3) == 0.052 > 0.05
    assert zero_signal_probability(0.9, 29) == pytest.approx(zero_signal_probability(0.1, 29))


def test_ch09_learning_rate_one_figure_each():
    figures = {lr: learning_curve_band(8, lr, steps=10, seed=0) for lr in (0.5, 1.0, 2.0, 4.0)}
    medians = [round(f["median"][10], 4) for f in figures.values()]
    widths = [round(f["high"][5] - f["low"][5], 4) for f in figures.values()]
    assert medians == [0.4457, 0.7455, 0.9227, 0.9714]
    assert widths == [0.0662, 0.1495, 0.1647, 0.0995]
    assert round(widths[2] - widths[1], 4) == 0.0152
    assert medians[0] < 0.5


@pytest.fixture(scope="module")
def redrawn():
    """The chapter's table: setting k (lr = 0.5, 1, 2, 4 are k = 0..3) redrawn with seeds 100 k to 100 k + 29."""
    return {lr: repeated_band(8, lr, steps=10, n_repeats=30, n_seeds=100, seed=100 * k)
            for k, lr in enumerate((0.5, 1.0, 2.0, 4.0))}


def test_ch09_learning_rate_over_30_figures(redrawn):
    assert max(round(r["median"][:, 10].std(ddof=1), 3) for r in redrawn.values()) == 0.007
    single = [learning_curve_band(8, lr, steps=10, seed=0)["median"][10] for lr in redrawn]
    sd = [r["median"][:, 10].std(ddof=1) for r in redrawn.values()]
    for k in range(3):        # neighbouring single-figure medians: many standard deviations apart
        assert single[k + 1] - single[k] > 5 * math.hypot(sd[k], sd[k + 1])
    sd_width = [redrawn[lr]["width"][:, 5].std(ddof=1) for lr in (1.0, 2.0)]
    assert [round(x, 3) for x in sd_width] == [0.010, 0.018]
    assert round(math.hypot(0.010, 0.018), 3) == 0.021 and abs(math.hypot(*sd_width) - 0.021) < 0.001
    assert 0.0152 < math.hypot(*sd_width)
    w1, w2 = redrawn[1.0]["width"][:, 5], redrawn[2.0]["width"][:, 5]
    assert round(w1.mean(), 3) == 0.155 and round(w2.mean(), 3) == 0.190
    assert w2.mean() - w1.mean() > noise_floor(w2, w1)
    # the band closes: at lr = 4 by step 5, at lr = 1 and 2 by step 10 (narrower than at step 5)
    assert redrawn[4.0]["width"][:, 5].mean() < redrawn[2.0]["width"][:, 5].mean()
    for lr in (1.0, 2.0):
        assert redrawn[lr]["width"][:, 10].mean() < redrawn[lr]["width"][:, 5].mean()
    assert redrawn[0.5]["width"][:, 10].mean() > redrawn[0.5]["width"][:, 5].mean()     # later at 0.5


def test_ch06_t_quantiles_quoted_in_the_text_and_draw_seeds():
    assert round(t_quantile(0.975, 1), 1) == 12.7 and round(t_quantile(0.975, 3), 2) == 3.18
    assert [round(t_quantile(0.975, 2 * n - 2), 2) for n in (2, 3, 4, 8, 30)] == [4.3, 2.78, 2.45, 2.14, 2.0]


def test_ch09_group_step():
    group = [2, 1, 1, 0]                                    # 5, 4, 4, 0
    assert REWARDS[group].tolist() == [1, 0, 0, 0]
    estimate = group_mean_baseline_gradient(LOGITS, group, REWARDS)
    assert np.allclose(estimate, [-0.0625, -0.125, 0.1875, 0, 0], atol=1e-15)
    advantages = REWARDS[group] - REWARDS[group].mean()
    assert np.allclose(advantages, [0.75, -0.25, -0.25, -0.25]) and advantages.sum() == 0
    no_baseline = (REWARDS[group][:, None] * (np.eye(5)[group] - PI)).mean(axis=0)
    assert np.allclose(no_baseline, [-0.025, -0.1, 0.2, -0.05, -0.025])
    assert np.allclose(0.75 * policy_gradient(LOGITS, REWARDS), [-0.015, -0.06, 0.12, -0.03, -0.015])
    assert np.allclose(policy_gradient(LOGITS, REWARDS), [-0.02, -0.08, 0.16, -0.04, -0.02])


def test_ch09_slider_runs_start_as_the_ten_step_figures():
    """The lr experiment reads the slider's figure (30 steps) through learning_curve_band(8, lr, steps=10)."""
    for lr in (0.5, 1.0, 2.0, 4.0):
        short, long = learning_curve_band(8, lr, steps=10, seed=0), learning_curve_band(8, lr, steps=30, seed=0)
        for key in ("median", "low", "high"):
            assert np.allclose(short[key], long[key][:11], atol=1e-12)


def test_ch09_band_widest_in_between():
    widths = {lr: learning_curve_band(8, lr, steps=10, seed=0) for lr in (2.0, 4.0)}
    assert round(widths[2.0]["high"][5] - widths[2.0]["low"][5], 4) == 0.1647
    assert round(widths[4.0]["high"][5] - widths[4.0]["low"][5], 4) == 0.0995
