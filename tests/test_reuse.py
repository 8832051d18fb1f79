"""Tests for reusing samples: rl4llm.math.importance_sampling (chapter 10), rl4llm.math.trust_region and rl4llm.math.ppo_clip
(chapter 11)."""

import numpy as np
import pytest
import torch

from rl4llm import (CORRECT, LOGITS, REWARDS, TOY_GROUP, TOY_GROUP_ADVANTAGES, clip_binds, clip_fraction,
                    clipped_objective, clipped_objective_grad, clipped_surrogate, clipped_surrogate_gradient,
                    conjugate_gradient, drift_case, drift_variance_ratio, fisher_matrix, importance_ratios,
                    importance_weighted_jhat_distribution, importance_weighted_jhat_samples,
                    importance_weighted_variance, kl_divergence, policy_gradient, policy_gradient_step, policy_kl,
                    ppo_inner_steps, score, softmax, trust_region_step, with_correct_mass)
from rl4llm.math.estimators import jhat_distribution
from numerics import finite_difference

#: A group of G = 8 toy answers: 4, 4, 5, 6, 4, 0, 5, 15 (two of eight correct).
GROUP = np.array([1, 1, 2, 3, 1, 0, 2, 4])
GROUP_ADV = np.array([-0.25, -0.25, 0.75, -0.25, -0.25, -0.25, 0.75, -0.25])


# ----------------------------------------------------------------------------- chapter 10
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


# ----------------------------------------------------------------------------- chapter 11: KL, TRPO
def test_policy_kl():
    rng = np.random.default_rng(2)
    p, q = rng.normal(size=5), rng.normal(size=5)
    pp, qq = softmax(p), softmax(q)
    assert np.isclose(policy_kl(p, q), np.sum(pp * np.log(pp / qq)))
    assert np.isclose(policy_kl(p, q), kl_divergence(pp, qq))
    assert policy_kl(p, p + 3.0) == pytest.approx(0.0, abs=1e-12)   # shift-invariant
    assert policy_kl(p, q) > 0


def test_fisher_is_score_covariance_and_kl_curvature():
    pi = softmax(LOGITS)
    by_enumeration = sum(pi[y] * np.outer(score(LOGITS, y), score(LOGITS, y)) for y in range(5))
    F = fisher_matrix(LOGITS)
    assert np.allclose(F, by_enumeration)
    d = np.array([0.3, -0.1, 0.2, 0.0, -0.4]) * 1e-2
    assert policy_kl(LOGITS, LOGITS + d) == pytest.approx(0.5 * d @ F @ d, rel=1e-2)


def test_conjugate_gradient_solves_spd_system():
    rng = np.random.default_rng(3)
    M = rng.normal(size=(6, 6))
    A = M @ M.T + 6 * np.eye(6)
    b = rng.normal(size=6)
    assert np.allclose(conjugate_gradient(A, b, iters=20), np.linalg.solve(A, b))


def test_trust_region_step_respects_delta():
    g = policy_gradient(LOGITS, REWARDS)
    for delta in (1e-3, 1e-2, 5e-2):
        step = trust_region_step(LOGITS, g, delta)
        assert 0 < step["kl"] <= delta
        assert np.isclose(step["kl"], policy_kl(LOGITS, step["logits"]))
        # along the natural direction s, F s = g: for the toy s = r - J up to a shift of every logit
        d = step["logits"] - LOGITS
        s_nat = REWARDS - REWARDS.mean()
        coef = (d - d.mean()) @ s_nat / (s_nat @ s_nat)
        assert coef > 0 and np.allclose(d - d.mean(), coef * s_nat)
        assert np.allclose(fisher_matrix(LOGITS) @ d, coef * g)
        assert step["logits"][CORRECT] > LOGITS[CORRECT]


def test_fisher_is_singular_along_all_ones():
    """F 1 = 0 (a shift of every logit leaves pi unchanged); rank n - 1 when every pi > 0."""
    rng = np.random.default_rng(5)
    for z in (LOGITS, rng.normal(size=6)):
        F = fisher_matrix(z)
        assert np.allclose(F @ np.ones(z.size), 0.0, atol=1e-15)
        assert np.linalg.matrix_rank(F) == z.size - 1
        assert np.all(np.linalg.eigvalsh(F) > -1e-15)             # positive semi-definite


def test_conjugate_gradient_on_singular_psd_gives_the_pseudo_inverse_solution():
    """Independent route: numpy's pinv. b in the range of F, CG from 0 returns F^+ b."""
    rng = np.random.default_rng(6)
    for _ in range(5):
        z = rng.normal(size=5)
        F = fisher_matrix(z)
        b = rng.normal(size=5)
        b -= b.mean()                                               # in the range: orthogonal to 1
        x = conjugate_gradient(F, b, iters=5, tol=1e-30)
        assert np.allclose(F @ x, b) and abs(x.sum()) < 1e-10       # a solution, orthogonal to 1
        assert np.allclose(x, np.linalg.pinv(F) @ b)


def test_trust_region_direction_is_the_pseudo_inverse_natural_gradient():
    """s = F^+ g, checked against numpy's pinv for random logits and gradients (even ones with an
    all-ones component, which F^+ ignores and which a shift of every logit cannot act on)."""
    rng = np.random.default_rng(7)
    for _ in range(10):
        z, g = rng.normal(size=5), rng.normal(size=5)
        s = np.linalg.pinv(fisher_matrix(z)) @ g
        step = trust_region_step(z, g, delta=1e-3)
        d = step["logits"] - z
        coef = d @ s / (s @ s)
        assert coef > 0 and np.allclose(d, coef * s)
        assert np.allclose(trust_region_step(z, g + 3.0, delta=1e-3)["logits"], step["logits"])
    # a gradient that only shifts every logit: no direction at all, no step
    flat = trust_region_step(LOGITS, np.ones(5), delta=1e-2)
    assert flat["fraction"] == 0.0 and np.array_equal(flat["logits"], LOGITS)


# ----------------------------------------------------------------------------- chapter 11: the clip
def test_clip_cases_from_the_text():
    assert clipped_objective(2.0, 0.8, 0.2) == pytest.approx(0.96)
    assert clipped_objective(0.5, -0.2, 0.2) == pytest.approx(-0.16)
    assert clipped_objective(2.0, -0.2, 0.2) == pytest.approx(-0.40)
    assert clipped_objective_grad(2.0, 0.8, 0.2) == 0.0          # flat past 1 + eps for A > 0
    assert clipped_objective_grad(0.5, -0.2, 0.2) == 0.0         # flat below 1 - eps for A < 0
    assert clipped_objective_grad(2.0, -0.2, 0.2) == pytest.approx(-0.2)   # never capped
    assert clipped_objective_grad(0.5, 0.8, 0.2) == pytest.approx(0.8)     # correction toward 1 kept
    assert isinstance(clipped_objective(2.0, 0.8, 0.2), float)


def test_clip_band_table_same_band_opposite_sign():
    rho = np.array([0.5, 1.0, 2.0])
    assert np.allclose(clipped_objective_grad(rho, np.full(3, 0.8), 0.2), [0.8, 0.8, 0.0])
    assert np.allclose(clipped_objective_grad(rho, np.full(3, -0.2), 0.2), [0.0, -0.2, -0.2])


def test_clipped_objective_grad_against_autograd():
    rho = np.linspace(0.05, 2.5, 50)
    rho = rho[(np.abs(rho - 0.8) > 1e-3) & (np.abs(rho - 1.2) > 1e-3)]   # away from the kinks
    for A in (0.8, -0.2, 0.0):
        for eps, eps_high in ((0.2, None), (0.2, 0.28)):
            high = eps if eps_high is None else eps_high
            t = torch.tensor(rho, requires_grad=True)
            obj = torch.minimum(t * A, torch.clamp(t, 1 - eps, 1 + high) * A)
            obj.sum().backward()
            adv = np.full_like(rho, A)
            assert np.allclose(clipped_objective_grad(rho, adv, eps, eps_high), t.grad.numpy())
            assert np.allclose(clipped_objective(rho, adv, eps, eps_high), obj.detach().numpy())


def test_clipped_objective_grad_against_finite_differences():
    rho = np.array([0.3, 0.7, 0.9, 1.1, 1.3, 2.0])
    for A in (0.8, -0.2):
        adv = np.full_like(rho, A)
        h = 1e-6
        fd = (clipped_objective(rho + h, adv, 0.2) - clipped_objective(rho - h, adv, 0.2)) / (2 * h)
        assert np.allclose(clipped_objective_grad(rho, adv, 0.2), fd)


def test_clip_binds_and_fraction_hand_built():
    rho = [0.5, 0.5, 1.0, 1.25, 1.25, 2.0, 0.79, 1.21]
    adv = [-1.0, 1.0, 5.0, 1.0, -1.0, 0.0, -0.1, 0.1]
    # binds: (0.5, A<0) yes; (0.5, A>0) no; in band no; (1.25, A>0) yes; (1.25, A<0) no;
    # A = 0 never; (0.79, A<0) yes; (1.21, A>0) yes
    assert clip_binds(rho, adv, 0.2).tolist() == [True, False, False, True, False, False, True, True]
    assert clip_fraction(rho, adv, 0.2) == pytest.approx(4 / 8)
    # clip-higher: eps_high = 0.28 lets 1.21 and 1.25 through on the A > 0 side
    assert clip_fraction(rho, adv, 0.2, eps_high=0.28) == pytest.approx(2 / 8)
    # exactly on the edge does not bind
    assert clip_fraction([1.2, 0.8], [1.0, -1.0], 0.2) == 0.0


def test_surrogate_gradient_against_finite_differences():
    rng = np.random.default_rng(4)
    old = LOGITS
    for trial in range(6):
        z = old + rng.normal(scale=0.3, size=5)
        for eps_high in (None, 0.28):
            grad = clipped_surrogate_gradient(z, old, GROUP, GROUP_ADV, 0.2, eps_high)
            fd = finite_difference(lambda x: clipped_surrogate(x, old, GROUP, GROUP_ADV, 0.2, eps_high), z)
            assert np.allclose(grad, fd, atol=1e-7)


def test_surrogate_gradient_against_autograd():
    z = LOGITS + np.array([0.1, -0.3, 0.4, 0.0, 0.2])
    t = torch.tensor(z, requires_grad=True)
    rho = torch.exp(torch.log_softmax(t, 0) - torch.log_softmax(torch.tensor(LOGITS), 0))[GROUP]
    A = torch.tensor(GROUP_ADV)
    torch.minimum(rho * A, torch.clamp(rho, 0.8, 1.2) * A).mean().backward()
    assert np.allclose(clipped_surrogate_gradient(z, LOGITS, GROUP, GROUP_ADV, 0.2), t.grad.numpy())


def test_surrogate_gradient_on_policy_is_reinforce():
    grad = clipped_surrogate_gradient(LOGITS, LOGITS, GROUP, GROUP_ADV, 0.2)
    reinforce = np.mean([a * score(LOGITS, int(y)) for a, y in zip(GROUP_ADV, GROUP)], axis=0)
    assert np.allclose(grad, reinforce)


def test_toy_group_constants():
    assert np.array_equal(TOY_GROUP, GROUP) and np.allclose(TOY_GROUP_ADVANTAGES, GROUP_ADV)
    assert TOY_GROUP_ADVANTAGES.sum() == pytest.approx(0.0)


def test_ppo_inner_steps():
    out = ppo_inner_steps(LOGITS, GROUP, GROUP_ADV, eps=0.2, lr=0.5, K=12)
    assert out["logits"].shape == (13, 5) and out["ratios"].shape == (13, 8)
    assert out["kl"][0] == 0.0 and out["clip_fraction"][0] == 0.0
    assert out["surrogate"][0] == pytest.approx(GROUP_ADV.mean())
    assert np.all(np.diff(out["kl"]) > 0)                      # the policy keeps drifting away
    assert out["clip_fraction"][1] == 0.0 and out["clip_fraction"][-1] > 0   # the clip starts to bind
    assert np.all(np.diff(out["surrogate"]) > 0)               # ascent on the surrogate
    assert out["probs"][-1, CORRECT] > out["probs"][0, CORRECT]
    # rows are consistent with a hand-written loop
    z = LOGITS.copy()
    for k in range(12):
        z = z + 0.5 * clipped_surrogate_gradient(z, LOGITS, GROUP, GROUP_ADV, 0.2)
        assert np.allclose(out["logits"][k + 1], z)
        assert np.isclose(out["kl"][k + 1], policy_kl(LOGITS, z))
    assert ppo_inner_steps(LOGITS, GROUP, GROUP_ADV, 0.2, 0.5, 1)["kl"].shape == (2,)


# ----------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("eps", [0.0, 1.0, -0.1, 1.5, float("nan")])
def test_bad_eps(eps):
    with pytest.raises(ValueError, match="eps must"):
        clipped_objective(1.0, 1.0, eps)
    with pytest.raises(ValueError, match="eps must"):
        clipped_objective_grad(1.0, 1.0, eps)
    with pytest.raises(ValueError, match="eps_low"):
        clip_fraction([1.0], [1.0], eps)
    with pytest.raises(ValueError, match="eps_high"):
        clip_fraction([1.0], [1.0], 0.2, eps_high=eps)
    with pytest.raises(ValueError, match="eps"):
        ppo_inner_steps(LOGITS, GROUP, GROUP_ADV, eps, 0.5, 3)


def test_bad_shapes_and_values():
    with pytest.raises(ValueError, match="ratio"):
        clipped_objective([1.0, 2.0], [1.0], 0.2)
    with pytest.raises(ValueError, match="ratio"):
        clipped_objective([-1.0], [1.0], 0.2)
    with pytest.raises(ValueError, match="new_logits"):
        importance_ratios([0.0, 1.0], [0.0, 1.0, 2.0])
    with pytest.raises(ValueError, match="advantages"):
        clipped_surrogate_gradient(LOGITS, LOGITS, GROUP, GROUP_ADV[:3], 0.2)
    with pytest.raises(ValueError, match="samples"):
        clipped_surrogate_gradient(LOGITS, LOGITS, [0, 5], [1.0, -1.0], 0.2)
    with pytest.raises(ValueError, match="samples"):
        clipped_surrogate_gradient(LOGITS, LOGITS, [0.0, 1.0], [1.0, -1.0], 0.2)
    with pytest.raises(ValueError, match="logits"):
        clipped_surrogate_gradient(LOGITS[:3], LOGITS, GROUP, GROUP_ADV, 0.2)
    with pytest.raises(ValueError, match="p_target"):
        importance_weighted_variance([0.5, 0.5], [0.2, 0.3, 0.5], [0, 1])
    with pytest.raises(ValueError, match="p_sample"):
        importance_weighted_variance([0.5, 0.5], [0.2, 0.9], [0, 1])
    with pytest.raises(ValueError, match="G"):
        drift_case(0.5, 0)
    with pytest.raises(ValueError, match="mass"):
        drift_case(1.0, 8)
    with pytest.raises(ValueError, match="mass"):
        drift_variance_ratio([0.5, 0.0])
    with pytest.raises(ValueError, match="rewards"):
        importance_weighted_variance([0.5, 0.5], [0.5, 0.5], [0.0, 1.0, 0.0])
    with pytest.raises(ValueError, match="q_logits"):
        policy_kl([0.0, 1.0], [float("inf"), 0.0])
    with pytest.raises(ValueError, match="delta"):
        trust_region_step(LOGITS, policy_gradient(LOGITS, REWARDS), 0.0)
    with pytest.raises(ValueError, match="matrix"):
        conjugate_gradient(np.eye(3), np.ones(2))


@pytest.mark.parametrize("K", [0, -1, 2.0, True])
def test_bad_K(K):
    with pytest.raises(ValueError, match="K"):
        ppo_inner_steps(LOGITS, GROUP, GROUP_ADV, 0.2, 0.5, K)


@pytest.mark.parametrize("lr", [0.0, -0.5, float("inf")])
def test_bad_lr(lr):
    with pytest.raises(ValueError, match="lr"):
        ppo_inner_steps(LOGITS, GROUP, GROUP_ADV, 0.2, lr, 3)
