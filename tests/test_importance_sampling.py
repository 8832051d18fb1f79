"""rl4llm.math.importance_sampling (chapter 10): reusing samples from an older policy, its ratios and their variance."""

import numpy as np
import pytest

from rl4llm import (CORRECT, LOGITS, REWARDS, drift_case, drift_variance_ratio, importance_ratios,
                    importance_weighted_jhat_distribution, importance_weighted_jhat_samples,
                    importance_weighted_variance, policy_gradient_step, softmax, with_correct_mass)
from rl4llm.math.estimators import jhat_distribution


def test_close_case_lr_01():
    new = policy_gradient_step(LOGITS, REWARDS, 0.1)
    rho = importance_ratios(new, LOGITS)
    assert round(rho.min(), 4) == 0.9932
    assert round(rho.max(), 4) == 1.0173
    assert round(softmax(new)[CORRECT], 4) == 0.2035
    # the identity: sum_y pi_old(y) rho(y) r(y) = J under pi_new, here pi_new(5)
    assert np.isclose(softmax(LOGITS) @ (rho * REWARDS), softmax(new)[CORRECT])
    # barely noisier than on-policy: per-sample variances within 3% of each other
    p_old, p_new = softmax(LOGITS), softmax(new)
    is_var = importance_weighted_variance(p_new, p_old, REWARDS)
    on_var = importance_weighted_variance(p_new, p_new, REWARDS)
    assert 1.0 < is_var / on_var < 1.03


def test_importance_ratios_direct():
    rng = np.random.default_rng(0)
    new, old = rng.normal(size=5), rng.normal(size=5)
    assert np.allclose(importance_ratios(new, old), softmax(new) / softmax(old))
    assert np.allclose(importance_ratios(old, old), 1.0)
    # computed in log space: pi(0) = e^-800 underflows to 0, yet the ratio is exactly 1, not 0/0
    assert np.allclose(importance_ratios([0.0, 800.0], [0.0, 800.0]), 1.0)


def test_with_correct_mass_keeps_proportions():
    pi = softmax(LOGITS)
    p = with_correct_mass(pi, CORRECT, 0.05)
    assert np.isclose(p.sum(), 1.0) and p[CORRECT] == 0.05
    wrong = np.arange(5) != CORRECT
    assert np.allclose(p[wrong] / p[wrong].sum(), pi[wrong] / pi[wrong].sum())


def test_drift_case_numbers():
    d = drift_case(0.5, 8)
    assert np.isclose(d["ratio"], 10.0)
    assert round(d["p_no_correct"], 4) == 0.6634 and np.isclose(d["p_no_correct"], 0.95 ** 8)
    assert np.allclose(d["is_values"][:4], [0.0, 1.25, 2.5, 3.75])
    assert np.isclose(d["is_variance"], 4.75) and np.isclose(d["on_variance"], 0.25)
    assert np.isclose(d["is_variance"] / d["on_variance"], 19.0)
    # unbiased: both laws have mean J = 0.5; variances of the group mean are per-sample / G
    for values, probs, var in [(d["is_values"], d["is_probs"], 4.75), (d["on_values"], d["on_probs"], 0.25)]:
        assert np.isclose(probs.sum(), 1.0) and np.isclose(probs @ values, 0.5)
        assert np.isclose(probs @ values ** 2 - 0.25, var / 8)


def test_drift_variance_ratio_curve():
    curve = drift_variance_ratio([0.05, 0.1, 0.5, 0.9])
    assert np.isclose(curve[0], 1.0) and np.isclose(curve[2], 19.0)
    assert np.all(np.diff(curve) > 0)
    for mass, value in zip([0.1, 0.9], curve[[1, 3]]):
        d = drift_case(mass, 1)
        assert np.isclose(value, d["is_variance"] / d["on_variance"])


def test_variance_batched_matches_one_at_a_time():
    pi = softmax(LOGITS)
    p_new = with_correct_mass(pi, CORRECT, np.array([0.1, 0.3, 0.7]))
    assert p_new.shape == (3, 5) and np.allclose(p_new.sum(axis=1), 1.0)
    p_old = np.broadcast_to(with_correct_mass(pi, CORRECT, 0.05), p_new.shape)
    batched = importance_weighted_variance(p_new, p_old, REWARDS)
    assert np.allclose(batched, [importance_weighted_variance(a, b, REWARDS) for a, b in zip(p_new, p_old)])


def test_jhat_law_matches_binomial_route():
    """Independent route: with one rewarded answer, J-hat = rho * (fraction of 5s), a binomial law."""
    p_old = with_correct_mass(softmax(LOGITS), CORRECT, 0.05)
    p_new = with_correct_mass(softmax(LOGITS), CORRECT, 0.5)
    values, probs = importance_weighted_jhat_distribution(p_new, p_old, REWARDS, 8)
    frac, binom = jhat_distribution(0.05, 8)
    assert np.allclose(values, 10 * frac) and np.allclose(probs, binom)


def test_jhat_law_general_rewards_by_enumeration():
    """Several distinct rewards: compare the convolution with brute-force enumeration of G = 3 draws."""
    p_s = np.array([0.5, 0.3, 0.2])
    p_t = np.array([0.2, 0.3, 0.5])
    r = np.array([1.0, -2.0, 0.5])
    values, probs = importance_weighted_jhat_distribution(p_t, p_s, r, 3)
    w = p_t / p_s * r
    law = {}
    for a in range(3):
        for b in range(3):
            for c in range(3):
                v = round((w[a] + w[b] + w[c]) / 3, 10)
                law[v] = law.get(v, 0.0) + p_s[a] * p_s[b] * p_s[c]
    assert np.allclose(values, sorted(law)) and np.allclose(probs, [law[v] for v in sorted(law)])
    # G = 1: the variance of the law is importance_weighted_variance
    v1, p1 = importance_weighted_jhat_distribution(p_t, p_s, r, 1)
    assert np.isclose(p1 @ v1 ** 2 - (p1 @ v1) ** 2, importance_weighted_variance(p_t, p_s, r))


def test_sampled_estimates_match_exact_law():
    """Monte Carlo route: the sampled IS estimates agree with the exact mean and variance."""
    d = drift_case(0.5, 8)
    n = 20000
    est = importance_weighted_jhat_samples(d["p_new"], d["p_old"], REWARDS, 8, n, seed=1)
    se = np.sqrt(4.75 / 8 / n)
    assert abs(est.mean() - 0.5) < 4 * se
    assert np.all(np.isin(np.round(est, 10), np.round(d["is_values"], 10)))
    assert abs(est.var() / (4.75 / 8) - 1) < 0.05
    share_zero = np.mean(est == 0)
    assert abs(share_zero - 0.95 ** 8) < 4 * np.sqrt(0.95 ** 8 * (1 - 0.95 ** 8) / n)


def test_variance_inf_when_sampler_misses_reward():
    assert importance_weighted_variance([0.5, 0.5], [1.0, 0.0], [0.0, 1.0]) == float("inf")
    with pytest.raises(ValueError, match="p_sample"):
        importance_weighted_jhat_distribution([0.5, 0.5], [1.0, 0.0], [0.0, 1.0], 4)
