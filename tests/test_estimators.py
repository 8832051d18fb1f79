"""Tests for rl4llm.math.estimators (chapters 6-9): every number of chapters.md rows 6-9 that lives
here, each formula checked by an independent route (enumeration, Monte Carlo within 4 standard
errors with a fixed seed, finite differences), and every bad input."""
import itertools
import math

import numpy as np
import pytest

from rl4llm import (CORRECT, LOGITS, REWARDS, expected_reward, policy_gradient, score, softmax)
from rl4llm.math.estimators import (estimator_variance, expected_group_gradient, expected_policy_after_step,
                               gradient_by_enumeration, gradient_by_finite_differences,
                               gradient_from_advantages, gradient_samples, group_count_law,
                               group_estimator_moments, group_mean_baseline_gradient, inverse_cdf,
                               jhat_distribution, jhat_samples, jhat_study, leave_one_out_gradient,
                               optimal_baseline, sample_groups, spread_of_means, std_and_standard_error,
                               total_variance_and_standard_error, variance_curve, zero_signal_probability)

PI = softmax(LOGITS)


# ----------------------------------------------------------------------------- sampling
def test_sample_groups_shape_dtype_and_reproducible():
    a = sample_groups(PI, 8, 100, np.random.default_rng(3))
    b = sample_groups(PI, 8, 100, np.random.default_rng(3))
    assert a.shape == (100, 8) and np.issubdtype(a.dtype, np.integer)
    assert np.array_equal(a, b)
    assert a.min() >= 0 and a.max() <= 4


def test_sample_groups_frequencies_match_probs_within_4_se():
    n = 200_000
    y = sample_groups(PI, 4, n // 4, np.random.default_rng(0)).ravel()
    freq = np.bincount(y, minlength=5) / y.size
    se = np.sqrt(PI * (1 - PI) / y.size)
    assert np.all(np.abs(freq - PI) < 4 * se)


def test_sample_groups_never_draws_zero_probability_answers():
    probs = [0.0, 0.5, 0.0, 0.5, 0.0]
    y = sample_groups(probs, 16, 2000, np.random.default_rng(1))
    assert set(np.unique(y)) == {1, 3}
    # a point mass on the last answer, and rounding in the cumulative sum of thirds
    assert np.all(sample_groups([0, 0, 1.0], 5, 100, np.random.default_rng(2)) == 2)
    y = sample_groups([1 / 3, 1 / 3, 1 / 3, 0.0], 8, 5000, np.random.default_rng(4))
    assert y.max() == 2


def test_inverse_cdf_is_the_quantile_function():
    u = np.array([[0.0, 0.0999, 0.1001, 0.4999, 0.5001, 0.6999, 0.7001, 0.8999, 0.9001, 0.9999]])
    assert inverse_cdf(PI, u).tolist() == [[0, 0, 1, 1, 2, 2, 3, 3, 4, 4]]
    # one policy per row
    probs = np.array([[1.0, 0.0], [0.0, 1.0]])
    assert inverse_cdf(probs, np.full((2, 3), 0.5)).tolist() == [[0, 0, 0], [1, 1, 1]]


@pytest.mark.parametrize("G", [0, -1, 2.5, 4.0, True, "4"])
def test_sample_groups_rejects_bad_G(G):
    with pytest.raises(ValueError, match="G"):
        sample_groups(PI, G, 10, np.random.default_rng(0))


@pytest.mark.parametrize("n_groups", [0, 1.5, None])
def test_sample_groups_rejects_bad_n_groups(n_groups):
    with pytest.raises(ValueError, match="n_groups"):
        sample_groups(PI, 4, n_groups, np.random.default_rng(0))


@pytest.mark.parametrize("rng", [0, None, np.random.RandomState(0)])
def test_sample_groups_rejects_non_generator(rng):
    with pytest.raises(ValueError, match="rng"):
        sample_groups(PI, 4, 10, rng)


@pytest.mark.parametrize("probs", [[0.5, 0.6], [-0.1, 1.1], [np.nan, 1.0], [], [[0.5, 0.5]], "ab"])
def test_sample_groups_rejects_bad_probs(probs):
    with pytest.raises(ValueError, match="probs"):
        sample_groups(probs, 4, 10, np.random.default_rng(0))


# ----------------------------------------------------------------------------- chapter 6: J-hat
def test_j_is_pi_of_5_by_enumeration():
    enumerated = sum(PI[y] * REWARDS[y] for y in range(5))
    assert enumerated == pytest.approx(0.2, abs=1e-12)
    assert expected_reward(LOGITS, REWARDS) == pytest.approx(enumerated, abs=1e-12)


def test_jhat_law_at_G4_is_256_256_96_16_1_over_625():
    values, law = jhat_distribution(0.2, 4)
    assert values.tolist() == [0, 0.25, 0.5, 0.75, 1.0]
    assert np.allclose(law * 625, [256, 256, 96, 16, 1], atol=1e-9)
    assert law[0] == pytest.approx(0.4096, abs=1e-12)
    assert zero_signal_probability(0.2, 4) == pytest.approx(0.4096 + 0.0016, abs=1e-12)


@pytest.mark.parametrize("G", [1, 4, 9, 64])
def test_jhat_law_matches_exact_binomial_and_its_moments(G):
    values, law = jhat_distribution(0.2, G)
    exact = [math.comb(G, k) * 0.2 ** k * 0.8 ** (G - k) for k in range(G + 1)]
    assert np.allclose(law, exact, rtol=1e-10, atol=1e-300)
    assert law.sum() == pytest.approx(1.0, abs=1e-12)
    assert law @ values == pytest.approx(0.2, abs=1e-12)
    variance = law @ (values - 0.2) ** 2
    assert variance == pytest.approx(0.16 / G, abs=1e-12)           # single sample: 0.16 (std 0.4)
    assert math.sqrt(variance) == pytest.approx(0.4 / math.sqrt(G), abs=1e-12)


def test_jhat_law_edges_and_large_G():
    assert jhat_distribution(0.0, 3)[1].tolist() == [1, 0, 0, 0]
    assert jhat_distribution(1.0, 3)[1].tolist() == [0, 0, 0, 1]
    law = jhat_distribution(0.2, 5000)[1]
    assert np.all(np.isfinite(law)) and law.sum() == pytest.approx(1.0, abs=1e-9)


@pytest.mark.parametrize("G", [1, 4, 64])
def test_jhat_monte_carlo_matches_the_law(G):
    n = 20_000
    samples = jhat_samples(PI, REWARDS, G, n, seed=11)
    se = 0.4 / math.sqrt(G) / math.sqrt(n)
    assert abs(samples.mean() - 0.2) < 4 * se
    study = jhat_study(G, 0.2, n, seed=11)
    # every value expected at least 20 times, then the remaining tail mass as one cell
    common = study["law"] * n >= 20
    cells_law = np.append(study["law"][common], study["law"][~common].sum())
    cells_freq = np.append(study["frequencies"][common], study["frequencies"][~common].sum())
    se_freq = np.sqrt(cells_law * (1 - cells_law) / n)
    assert np.all(np.abs(cells_freq - cells_law) <= 4 * se_freq + 1e-12)
    assert study["standard_error"] == pytest.approx(0.4 / math.sqrt(G))


def test_spread_of_means_follows_one_over_sqrt_n():
    values = np.random.default_rng(5).normal(0.0, 2.0, 40_000)
    for n in (1, 4, 16, 100):
        n_batches = values.size // n
        # the standard deviation of a sample std of m normal values is about sigma / sqrt(2 (m - 1))
        tolerance = 4 * (2.0 / math.sqrt(n)) / math.sqrt(2 * (n_batches - 1))
        assert abs(spread_of_means(values, n) - 2.0 / math.sqrt(n)) < tolerance
    with pytest.raises(ValueError, match="n"):
        spread_of_means(values[:10], 6)
    with pytest.raises(ValueError, match="values"):
        spread_of_means([[1.0, 2.0]], 1)


@pytest.mark.parametrize("p", [-0.1, 1.5, np.nan, "x"])
def test_jhat_distribution_rejects_bad_p(p):
    with pytest.raises(ValueError, match="p"):
        jhat_distribution(p, 4)


@pytest.mark.parametrize("G", [0, 1.0, -3])
def test_jhat_distribution_rejects_bad_G(G):
    with pytest.raises(ValueError, match="G"):
        jhat_distribution(0.2, G)


# ----------------------------------------------------------------------------- chapter 7: gradient
def test_score_of_5_and_the_exact_gradient():
    assert np.allclose(score(LOGITS, CORRECT), [-0.1, -0.4, 0.8, -0.2, -0.1])
    grad = policy_gradient(LOGITS, REWARDS)
    assert np.allclose(grad, [-0.02, -0.08, 0.16, -0.04, -0.02])
    assert grad.sum() == pytest.approx(0.0, abs=1e-15)


def test_gradient_three_ways_agree():
    closed = policy_gradient(LOGITS, REWARDS)
    enumerated = sum(PI[y] * REWARDS[y] * score(LOGITS, y) for y in range(5))
    h = 1e-6
    finite_diff = np.array([(expected_reward(LOGITS + h * e, REWARDS) - expected_reward(LOGITS - h * e, REWARDS))
                            / (2 * h) for e in np.eye(5)])
    assert np.allclose(enumerated, closed, atol=1e-15)
    assert np.allclose(finite_diff, closed, atol=1e-9)
    # the library's two routes
    assert np.allclose(gradient_by_enumeration(LOGITS, REWARDS), enumerated, atol=1e-15)
    assert np.allclose(gradient_by_finite_differences(LOGITS, REWARDS), closed, atol=1e-9)
    other_r, other_z = np.array([0.3, -1.0, 2.0, 0.5, 7.0]), np.array([0.4, -0.2, 1.3, 0.0, -1.1])
    assert np.allclose(gradient_by_enumeration(other_z, other_r), policy_gradient(other_z, other_r), atol=1e-14)
    assert np.allclose(gradient_by_finite_differences(other_z, other_r), policy_gradient(other_z, other_r), atol=1e-8)
    with pytest.raises(ValueError, match="h"):
        gradient_by_finite_differences(LOGITS, REWARDS, h=0.0)


def test_gradient_monte_carlo_within_4_se():
    n = 50_000
    samples = gradient_samples(LOGITS, REWARDS, n, seed=7)
    se = samples.std(axis=0, ddof=1) / math.sqrt(n)
    assert np.all(np.abs(samples.mean(axis=0) - policy_gradient(LOGITS, REWARDS)) < 4 * se)


# ----------------------------------------------------------------------------- chapter 8: variance
def _variance_by_enumeration(r, b):
    """Trace of the covariance of (r(y) - b) score(y), y ~ pi, straight from the definition."""
    estimates = np.array([(r[y] - b) * score(LOGITS, y) for y in range(5)])
    mean = PI @ estimates
    return float(sum(PI[y] * (estimates[y] - mean) @ (estimates[y] - mean) for y in range(5)))


@pytest.mark.parametrize("offset, b", [(0, 0), (0, 0.2), (10, 0), (10, 10.2), (3, -1.5)])
def test_estimator_variance_matches_the_definition(offset, b):
    r = REWARDS + offset
    assert estimator_variance(LOGITS, r, b) == pytest.approx(_variance_by_enumeration(r, b), rel=1e-12)
    assert estimator_variance(LOGITS, r, b, G=8) == pytest.approx(_variance_by_enumeration(r, b) / 8, rel=1e-12)


def test_estimator_variance_matches_monte_carlo():
    n = 100_000
    samples = gradient_samples(LOGITS, REWARDS + 10, n, seed=3)          # b = 0, 10/11 grader
    total = samples.var(axis=0, ddof=1).sum()
    exact = estimator_variance(LOGITS, REWARDS + 10, 0.0)
    # the sample variance of n values has relative standard error about sqrt(2 / n) or more
    # (kurtosis); a 4% band is over 10 standard errors here
    assert abs(total / exact - 1) < 0.04


def test_baseline_weights_and_unchanged_expectation():
    b = expected_reward(LOGITS, REWARDS)
    assert REWARDS[1] - b == pytest.approx(-0.2) and REWARDS[CORRECT] - b == pytest.approx(0.8)
    for shift in (0.0, 10.0):
        r = REWARDS + shift
        b = expected_reward(LOGITS, r)
        weights = r - b
        assert weights[1] == pytest.approx(-0.2) and weights[CORRECT] == pytest.approx(0.8)
        for baseline in (0.0, b, -3.0):
            with_b = sum(PI[y] * (r[y] - baseline) * score(LOGITS, y) for y in range(5))
            assert np.allclose(with_b, policy_gradient(LOGITS, REWARDS), atol=1e-12)


def test_788x_and_1_4x():
    grader_10_11 = REWARDS + 10
    ratio = estimator_variance(LOGITS, grader_10_11, 0.0) / estimator_variance(LOGITS, grader_10_11, 10.2)
    assert round(ratio) == 788
    ratio01 = estimator_variance(LOGITS, REWARDS, 0.0) / estimator_variance(LOGITS, REWARDS, 0.2)
    assert round(ratio01, 1) == 1.4
    # with the mean baseline the two graders give the same estimator, hence the same variance
    assert estimator_variance(LOGITS, grader_10_11, 10.2) == pytest.approx(
        estimator_variance(LOGITS, REWARDS, 0.2), rel=1e-9)


def test_optimal_baseline_is_43_over_185_and_minimises_the_variance():
    b_star = optimal_baseline(LOGITS, REWARDS)
    assert b_star == pytest.approx(43 / 185, abs=1e-12)
    assert round(b_star, 4) == 0.2324
    grid = np.linspace(-1, 1.5, 2501)
    variances = [estimator_variance(LOGITS, REWARDS, b) for b in grid]
    assert abs(grid[int(np.argmin(variances))] - b_star) < 1e-3 + 1e-12
    # derivative zero at b*: central difference of the variance
    h = 1e-5
    slope = (estimator_variance(LOGITS, REWARDS, b_star + h) - estimator_variance(LOGITS, REWARDS, b_star - h)) / (2 * h)
    assert abs(slope) < 1e-9
    # shifting every reward by c shifts b* by c
    assert optimal_baseline(LOGITS, REWARDS + 10) == pytest.approx(10 + 43 / 185, abs=1e-12)


def test_mean_baseline_gets_98_percent_of_the_reduction():
    curve = variance_curve(LOGITS, REWARDS, 0.0, [0.0, 0.2])
    share = (curve["variance_none"] - curve["variance_mean"]) / (curve["variance_none"] - curve["variance_optimal"])
    assert round(share, 2) == 0.98
    assert curve["mean"] == pytest.approx(0.2) and curve["optimal"] == pytest.approx(43 / 185)
    assert np.allclose(curve["variance"], [curve["variance_none"], curve["variance_mean"]])
    shifted = variance_curve(LOGITS, REWARDS, 10.0, [10.2])
    assert shifted["variance"][0] == pytest.approx(curve["variance_mean"], rel=1e-9)


@pytest.mark.parametrize("baseline", [np.nan, np.inf, -np.inf, "0", None])
def test_estimator_variance_rejects_bad_baseline(baseline):
    with pytest.raises(ValueError, match="baseline"):
        estimator_variance(LOGITS, REWARDS, baseline)


@pytest.mark.parametrize("rewards", [[0, 1], [0, 0, 1, 0, 0, 0], [0, 0, np.nan, 0, 0], [0, 0, np.inf, 0, 0],
                                     [[0, 0, 1, 0, 0]]])
def test_rewards_of_wrong_length_or_not_finite_are_rejected(rewards):
    with pytest.raises(ValueError, match="rewards"):
        estimator_variance(LOGITS, rewards)
    with pytest.raises(ValueError, match="rewards"):
        optimal_baseline(LOGITS, rewards)
    with pytest.raises(ValueError, match="rewards"):
        group_mean_baseline_gradient(LOGITS, [[0, 2]], rewards)
    with pytest.raises(ValueError, match="rewards"):
        expected_group_gradient(LOGITS, rewards, 4)


def test_bad_G_offset_and_logits_are_rejected():
    with pytest.raises(ValueError, match="G"):
        estimator_variance(LOGITS, REWARDS, 0.0, G=0)
    with pytest.raises(ValueError, match="G"):
        expected_policy_after_step(LOGITS, REWARDS, 2.5, 1.0)
    with pytest.raises(ValueError, match="offset"):
        variance_curve(LOGITS, REWARDS, np.nan, [0.0])
    with pytest.raises(ValueError, match="logits"):
        estimator_variance([[0.0, 1.0]], [0.0, 1.0])
    with pytest.raises(ValueError, match="lr"):
        expected_policy_after_step(LOGITS, REWARDS, 4, np.inf)


# ----------------------------------------------------------------------------- chapter 9: groups
def _group_gradient_by_loop(logits, group, rewards):
    r = np.array([rewards[y] for y in group])
    return np.mean([(r[i] - r.mean()) * score(logits, y) for i, y in enumerate(group)], axis=0)


def test_group_mean_baseline_gradient_matches_a_plain_loop():
    groups = sample_groups(PI, 6, 20, np.random.default_rng(9))
    vectorised = group_mean_baseline_gradient(LOGITS, groups, REWARDS)
    assert vectorised.shape == (20, 5)
    for group, estimate in zip(groups, vectorised):
        assert np.allclose(estimate, _group_gradient_by_loop(LOGITS, group, REWARDS), atol=1e-15)
    # one policy per group, leading axes kept
    logits = LOGITS + np.random.default_rng(1).normal(size=(20, 5))
    batched = group_mean_baseline_gradient(logits, groups.reshape(20, 6), REWARDS)
    assert np.allclose(batched[3], _group_gradient_by_loop(logits[3], groups[3], REWARDS))
    assert group_mean_baseline_gradient(LOGITS, groups.reshape(4, 5, 6), REWARDS).shape == (4, 5, 5)


def test_zero_signal_group_gives_zero_gradient():
    for group in ([1, 1, 3, 0], [2, 2, 2, 2], [4]):
        assert np.all(group_mean_baseline_gradient(LOGITS, group, REWARDS) == 0)


@pytest.mark.parametrize("G", [1, 2, 3, 4])
def test_group_mean_baseline_expectation_is_one_minus_one_over_G_by_enumerating_every_ordered_group(G):
    grad = policy_gradient(LOGITS, REWARDS)
    groups = np.array(list(itertools.product(range(5), repeat=G)))
    probs = np.prod(PI[groups], axis=1)
    expectation = probs @ group_mean_baseline_gradient(LOGITS, groups, REWARDS)
    assert np.allclose(expectation, (1 - 1 / G) * grad, atol=1e-15)
    assert np.allclose(expected_group_gradient(LOGITS, REWARDS, G), expectation, atol=1e-15)


def test_group_mean_baseline_expectation_holds_for_other_rewards():
    rewards = np.array([0.3, -1.0, 2.0, 0.5, 7.0])
    logits = np.array([0.4, -0.2, 1.3, 0.0, -1.1])
    for G in (2, 5, 8):
        assert np.allclose(expected_group_gradient(logits, rewards, G),
                           (1 - 1 / G) * policy_gradient(logits, rewards), atol=1e-14)


def test_group_mean_baseline_expectation_by_monte_carlo():
    G, n = 8, 40_000
    estimates = group_mean_baseline_gradient(LOGITS, sample_groups(PI, G, n, np.random.default_rng(21)), REWARDS)
    se = estimates.std(axis=0, ddof=1) / math.sqrt(n)
    assert np.all(np.abs(estimates.mean(axis=0) - (1 - 1 / G) * policy_gradient(LOGITS, REWARDS)) < 4 * se)


def test_group_count_law_matches_ordered_enumeration():
    G = 4
    counts, law = group_count_law(PI, G)
    assert counts.shape == (math.comb(G + 4, 4), 5) and np.all(counts.sum(axis=1) == G)
    assert law.sum() == pytest.approx(1.0, abs=1e-14)
    ordered = {}
    for group in itertools.product(range(5), repeat=G):
        key = tuple(np.bincount(group, minlength=5))
        ordered[key] = ordered.get(key, 0.0) + np.prod(PI[list(group)])
    assert len(ordered) == counts.shape[0]
    for c, p in zip(counts, law):
        assert p == pytest.approx(ordered[tuple(c)], abs=1e-15)
    assert group_count_law(PI, 8)[0].shape[0] == 495
    assert group_count_law([1.0], 3)[0].tolist() == [[3]]


def test_expected_pi5_after_one_step_is_0_2322():
    expected = expected_policy_after_step(LOGITS, REWARDS, 8, 1.0)
    assert round(expected[CORRECT], 4) == 0.2322
    assert expected.sum() == pytest.approx(1.0, abs=1e-12)
    # below the exact-gradient step (0.2366): (1 - 1/G) of the gradient and the curvature of softmax
    assert expected[CORRECT] < softmax(LOGITS + policy_gradient(LOGITS, REWARDS))[CORRECT]
    assert np.allclose(expected_policy_after_step(LOGITS, REWARDS, 8, 0.0), PI)


def test_expected_pi5_after_one_step_by_monte_carlo():
    n = 40_000
    groups = sample_groups(PI, 8, n, np.random.default_rng(8))
    after = softmax(LOGITS + group_mean_baseline_gradient(LOGITS, groups, REWARDS))[:, CORRECT]
    se = after.std(ddof=1) / math.sqrt(n)
    assert abs(after.mean() - expected_policy_after_step(LOGITS, REWARDS, 8, 1.0)[CORRECT]) < 4 * se


def test_zero_signal_probability():
    assert zero_signal_probability(0.2, 1) == pytest.approx(1.0)
    assert zero_signal_probability(0.2, 8) == pytest.approx(0.8 ** 8 + 0.2 ** 8)
    counts, law = group_count_law(PI, 8)
    all_equal = (counts[:, CORRECT] == 0) | (counts[:, CORRECT] == 8)
    assert law[all_equal].sum() == pytest.approx(zero_signal_probability(0.2, 8), abs=1e-14)


@pytest.mark.parametrize("samples", [[0.5, 1.0], [[0, 5]], [[-1, 0]], [True, False], [], np.zeros((2, 0), int)])
def test_group_gradient_rejects_bad_samples(samples):
    with pytest.raises(ValueError, match="samples"):
        group_mean_baseline_gradient(LOGITS, samples, REWARDS)


def test_gradient_samples_rejects_bad_inputs():
    with pytest.raises(ValueError, match="baseline"):
        gradient_samples(LOGITS, REWARDS, 10, 0, baseline=np.nan)
    with pytest.raises(ValueError, match="n"):
        gradient_samples(LOGITS, REWARDS, 0, 0)
    with pytest.raises(ValueError, match="seed"):
        gradient_samples(LOGITS, REWARDS, 10, -1)


# ----------------------------------------------------------------------------- uncertainty of Monte Carlo numbers
def test_std_and_standard_error_is_the_sample_std_and_its_delta_method_error():
    values = np.random.default_rng(0).normal(size=50_000)
    s, se = std_and_standard_error(values)
    assert s == pytest.approx(values.std(ddof=1), rel=1e-12)
    assert se == pytest.approx(s / math.sqrt(2 * values.size), rel=0.03)     # normal data: s / sqrt(2n)


@pytest.mark.parametrize("n", [200, 1000])
def test_std_standard_error_matches_the_spread_of_repeated_estimates(n):
    """Independent route: redraw n values 4000 times; the std of the 4000 s is what se estimates.

    Bernoulli(0.2) values (chapter 6's J-hat at G = 1) and skewed gamma values."""
    rng = np.random.default_rng(n)
    for draws in ((rng.random((4000, n)) < 0.2).astype(float), rng.gamma(2.0, size=(4000, n))):
        spread = draws.std(axis=1, ddof=1).std()
        reported = np.mean([std_and_standard_error(d)[1] for d in draws[:1000]])
        assert reported == pytest.approx(spread, rel=0.1)


def test_std_and_standard_error_rejects_bad_values():
    for bad in ([1.0], [[1.0, 2.0]], [2.0, 2.0, 2.0], [1.0, np.nan]):
        with pytest.raises(ValueError, match="values"):
            std_and_standard_error(bad)


def test_total_variance_and_standard_error_against_exact_enumeration():
    for rewards, b in ((REWARDS, 0.0), (REWARDS + 10, 0.0), (REWARDS, 0.2)):
        samples = gradient_samples(LOGITS, rewards, 100_000, seed=4, baseline=b)
        v, se = total_variance_and_standard_error(samples)
        assert v == pytest.approx(samples.var(axis=0, ddof=1).sum(), rel=1e-10)
        # the exact standard error: the std of |X - grad J|^2 over the five answers, over sqrt(n)
        x = (rewards - b)[:, None] * (np.eye(5) - PI)
        d2 = ((x - policy_gradient(LOGITS, rewards)) ** 2).sum(axis=1)
        exact_se = math.sqrt(PI @ d2 ** 2 - (PI @ d2) ** 2) / math.sqrt(samples.shape[0])
        assert se == pytest.approx(exact_se, rel=0.02)
        assert abs(v - estimator_variance(LOGITS, rewards, b)) < 4 * se


def test_total_variance_and_standard_error_rejects_bad_samples():
    for bad in (np.ones(5), np.ones((1, 5)), np.full((3, 2), np.inf)):
        with pytest.raises(ValueError, match="samples"):
            total_variance_and_standard_error(bad)


# ----------------------------------------------------------------------------- leave one out
def _leave_one_out_by_loop(logits, group, rewards):
    r = [rewards[y] for y in group]
    G = len(group)
    terms = []
    for i, y in enumerate(group):
        others = [r[j] for j in range(G) if j != i]
        terms.append((r[i] - sum(others) / (G - 1)) * score(logits, y))
    return np.mean(terms, axis=0)


def test_leave_one_out_gradient_matches_a_plain_loop_and_is_g_over_g_minus_1_times_the_group_mean():
    groups = sample_groups(PI, 6, 30, np.random.default_rng(2))
    vectorised = leave_one_out_gradient(LOGITS, groups, REWARDS)
    for group, estimate in zip(groups, vectorised):
        assert np.allclose(estimate, _leave_one_out_by_loop(LOGITS, group, REWARDS), atol=1e-15)
    assert np.allclose(vectorised, 6 / 5 * group_mean_baseline_gradient(LOGITS, groups, REWARDS))
    assert leave_one_out_gradient(LOGITS, groups.reshape(5, 6, 6), REWARDS).shape == (5, 6, 5)


def test_gradient_from_advantages_is_the_sum_of_advantage_times_score():
    rng = np.random.default_rng(8)
    groups = sample_groups(PI, 5, 12, rng)
    advantages = rng.normal(size=(12, 5))
    fast = gradient_from_advantages(PI, groups, advantages)
    for group, a, estimate in zip(groups, advantages, fast):
        assert np.allclose(estimate, np.mean([a_i * score(LOGITS, y) for a_i, y in zip(a, group)], axis=0))


@pytest.mark.parametrize("G", [2, 3, 4])
def test_leave_one_out_is_unbiased_by_enumerating_every_ordered_group(G):
    """Every ordered group of G answers, each baseline from the OTHER rewards by a plain loop."""
    for logits, rewards in ((LOGITS, REWARDS), (np.array([0.4, -0.2, 1.3, 0.0, -1.1]),
                                                 np.array([0.3, -1.0, 2.0, 0.5, 7.0]))):
        pi = softmax(logits)
        groups = list(itertools.product(range(5), repeat=G))
        probs = np.array([np.prod(pi[list(g)]) for g in groups])
        estimates = np.array([_leave_one_out_by_loop(logits, g, rewards) for g in groups])
        mean = probs @ estimates
        assert np.allclose(mean, policy_gradient(logits, rewards), atol=1e-14)
        moments = group_estimator_moments(logits, rewards, G, "leave_one_out")
        assert np.allclose(moments["mean"], mean, atol=1e-14)
        variance = probs @ ((estimates - mean) ** 2).sum(axis=1)
        assert moments["total_variance"] == pytest.approx(variance, rel=1e-10)
        assert moments["mean_squared_error"] == pytest.approx(variance, rel=1e-10)   # unbiased


def test_group_estimator_moments_for_the_mean_and_for_a_constant_baseline():
    grad = policy_gradient(LOGITS, REWARDS)
    for G in (1, 2, 5, 8):
        mean_baseline = group_estimator_moments(LOGITS, REWARDS, G, "mean")
        assert np.allclose(mean_baseline["mean"], expected_group_gradient(LOGITS, REWARDS, G), atol=1e-15)
        bias_sq = (grad / G) @ (grad / G)
        assert mean_baseline["mean_squared_error"] == pytest.approx(
            mean_baseline["total_variance"] + bias_sq, rel=1e-10)
        # a constant b: chapter 8's closed form for the variance of a mean of G iid estimates
        for rewards, b in ((REWARDS, 0.0), (REWARDS, 0.2), (REWARDS + 10, 0.0), (REWARDS + 10, 10.2)):
            constant = group_estimator_moments(LOGITS, rewards, G, b)
            assert np.allclose(constant["mean"], grad, atol=1e-13)
            assert constant["total_variance"] == pytest.approx(
                estimator_variance(LOGITS, rewards, b, G), rel=1e-9)


def test_leave_one_out_numbers_of_chapter_9_and_monte_carlo():
    loo = group_estimator_moments(LOGITS, REWARDS, 8, "leave_one_out")
    mean = group_estimator_moments(LOGITS, REWARDS, 8, "mean")
    assert loo["total_variance"] / mean["total_variance"] == pytest.approx((8 / 7) ** 2, rel=1e-12)
    assert round(loo["total_variance"], 4) == 0.0150 and round(mean["total_variance"], 4) == 0.0115
    assert round(mean["mean_squared_error"], 4) == 0.0120
    assert round(group_estimator_moments(LOGITS, REWARDS, 8, 0.2)["total_variance"], 4) == 0.0123
    samples = leave_one_out_gradient(LOGITS, sample_groups(PI, 8, 100_000, np.random.default_rng(0)), REWARDS)
    se = samples.std(axis=0, ddof=1) / math.sqrt(len(samples))
    assert np.all(np.abs(samples.mean(axis=0) - policy_gradient(LOGITS, REWARDS)) < 4 * se)


def test_leave_one_out_rejects_bad_input():
    with pytest.raises(ValueError, match="G"):
        leave_one_out_gradient(LOGITS, [2], REWARDS)
    with pytest.raises(ValueError, match="samples"):
        leave_one_out_gradient(LOGITS, [2, 7], REWARDS)
    with pytest.raises(ValueError, match="G"):
        group_estimator_moments(LOGITS, REWARDS, 1, "leave_one_out")
    with pytest.raises(ValueError, match="baseline"):
        group_estimator_moments(LOGITS, REWARDS, 4, "median")
    with pytest.raises(ValueError, match="baseline"):
        group_estimator_moments(LOGITS, REWARDS, 4, np.nan)
