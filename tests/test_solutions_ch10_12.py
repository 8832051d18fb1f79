"""Every number stated in the solutions of chapters 10-12, recomputed, and each claim checked by a
second route where one exists (enumeration, Monte Carlo, numpy's pseudo-inverse)."""
import itertools

import numpy as np
import pytest

from rl4llm import (CORRECT, LOGITS, REWARDS, TOY_GROUP, TOY_GROUP_ADVANTAGES, clipped_objective,
                    clipped_surrogate_gradient, drift_case, gae, importance_weighted_jhat_distribution,
                    importance_weighted_jhat_samples, importance_weighted_variance, policy_gradient,
                    policy_kl, ppo_inner_steps, score, softmax, td_errors, trust_region_step)
from rl4llm.math.credit import EXAMPLE_REWARDS, EXAMPLE_VALUES, discounted_returns
from rl4llm.exercises.part3 import BOOSTED_LOGITS
from rl4llm import clip_binds, clipped_objective_grad, drift_variance_ratio, importance_ratios, with_correct_mass
from rl4llm.viz.critic_gae import GAE
from rl4llm.viz.importance_sampling import DRIFT

WRONG = np.arange(5) != CORRECT


# ----------------------------------------------------------------------------- chapter 10
def test_ch10_variance_by_hand_and_the_odds_ratio():
    """ex-ch10-variance: b^2/a - b^2 = 4.75 at a = 0.05, b = 0.5; divided by b(1 - b) it is the odds
    ratio b(1 - a) / (a(1 - b)) = 19; equal to the on-policy variance only at a = b."""
    d = drift_case(new_mass=0.5, G=8, old_mass=0.05)
    a, b = 0.05, 0.5
    assert b ** 2 / a - b ** 2 == pytest.approx(4.75)
    assert importance_weighted_variance(d["p_new"], d["p_old"], REWARDS) == pytest.approx(4.75)
    assert (0.5 * 0.95) / (0.05 * 0.5) == pytest.approx(19.0)
    assert d["is_variance"] / d["on_variance"] == pytest.approx(19.0)
    # the odds-ratio form against the library, over a grid of (a, b), for the 0/1 reward on 5
    for a, b in itertools.product([0.02, 0.2, 0.5, 0.9], [0.05, 0.3, 0.5, 0.95]):
        p_old = with_correct_mass(softmax(LOGITS), CORRECT, a)
        p_new = with_correct_mass(softmax(LOGITS), CORRECT, b)
        ratio = importance_weighted_variance(p_new, p_old, REWARDS) / (b * (1 - b))
        assert ratio == pytest.approx((b / (1 - b)) / (a / (1 - a)))
        assert (ratio > 1) == (a < b) and (ratio < 1) == (a > b)


def test_ch10_reverse_case_J_is_quieter():
    """ex-ch10-reverse, first part: 0.0025 against 0.0475, 1/19 of it; the 5 is drawn ten times as
    often as under pi_new, and each hit counts 0.1."""
    d = drift_case(new_mass=0.05, G=8, old_mass=0.5)
    assert 0.05 ** 2 / 0.5 - 0.05 ** 2 == pytest.approx(0.0025)
    assert d["is_variance"] == pytest.approx(0.0025) and d["on_variance"] == pytest.approx(0.0475)
    assert d["is_variance"] / d["on_variance"] == pytest.approx(1 / 19)
    assert (0.05 * 0.5) / (0.5 * 0.95) == pytest.approx(1 / 19)
    assert d["p_old"][CORRECT] / d["p_new"][CORRECT] == pytest.approx(10.0)
    assert d["ratio"] == pytest.approx(0.1)


def test_ch10_reverse_case_error_rate_is_noisier():
    """ex-ch10-reverse, second part: the error rate 1 - J = 0.95, reweighted from pi_old: wrong answers
    carry 0.5 under pi_old and 0.95 under pi_new, ratio 1.9 each; variance 0.9025 against 0.0475, 19x."""
    d = drift_case(new_mass=0.05, G=8, old_mass=0.5)
    wrong = 1.0 - REWARDS
    assert d["p_new"] @ wrong == pytest.approx(0.95)
    assert d["p_old"][WRONG].sum() == pytest.approx(0.5) and d["p_new"][WRONG].sum() == pytest.approx(0.95)
    assert np.allclose(d["p_new"][WRONG] / d["p_old"][WRONG], 1.9)
    assert np.allclose(d["p_old"][WRONG] / d["p_new"][WRONG], 1 / 1.9)    # "about half as often"
    stale = importance_weighted_variance(d["p_new"], d["p_old"], wrong)
    fresh = importance_weighted_variance(d["p_new"], d["p_new"], wrong)
    assert 0.95 ** 2 / 0.5 - 0.95 ** 2 == pytest.approx(0.9025) and stale == pytest.approx(0.9025)
    assert 0.95 * 0.05 == pytest.approx(0.0475) and fresh == pytest.approx(0.0475)
    assert stale / fresh == pytest.approx(19.0)
    # independent routes: the exact law of one reweighted draw, and Monte Carlo
    values, probs = importance_weighted_jhat_distribution(d["p_new"], d["p_old"], wrong, 1)
    assert probs @ values == pytest.approx(0.95) and probs @ values ** 2 - 0.95 ** 2 == pytest.approx(0.9025)
    draws = importance_weighted_jhat_samples(d["p_new"], d["p_old"], wrong, 1, 200_000, seed=3)
    se_mean = np.sqrt(0.9025 / draws.size)
    assert abs(draws.mean() - 0.95) < 4 * se_mean
    assert draws.var() == pytest.approx(0.9025, rel=0.02)


def test_ch10_reverse_case_kl_is_larger_than_the_drift():
    """ex-ch10-reverse, last part: KL(pi_old || pi_new) = 0.8304 here, 0.4946 for the drift example."""
    reverse = drift_case(new_mass=0.05, G=8, old_mass=0.5)
    drift = drift_case(new_mass=0.5, G=8, old_mass=0.05)
    kl_reverse = policy_kl(np.log(reverse["p_old"]), np.log(reverse["p_new"]))
    kl_drift = policy_kl(np.log(drift["p_old"]), np.log(drift["p_new"]))
    assert round(kl_reverse, 4) == 0.8304 and round(kl_drift, 4) == 0.4946
    by_hand = 0.5 * np.log(0.5 / 0.05) + 0.5 * np.log(0.5 / 0.95)     # the 5, then the wrong answers
    assert kl_reverse == pytest.approx(by_hand)


def test_ch10_missing_support():
    """ex-ch10-support: inf, and the exact law refuses with a ValueError naming p_sample."""
    p_new = with_correct_mass(softmax(LOGITS), CORRECT, 0.3)
    p_old = softmax(LOGITS).copy()
    p_old[CORRECT] = 0.0
    p_old /= p_old.sum()
    assert importance_weighted_variance(p_new, p_old, REWARDS) == float("inf")
    with pytest.raises(ValueError, match="p_sample"):
        importance_weighted_jhat_distribution(p_new, p_old, REWARDS, 8)
    # the sampled estimate converges to 0, not to pi_new(5)
    assert np.all(importance_weighted_jhat_samples(p_new, p_old, REWARDS, 8, 100, seed=0) == 0.0)


def test_ch10_weight_by_hand():
    """ex-ch10-weight: z(5) + ln 2 gives e^z = (1, 4, 4, 2, 1), sum 12, pi_new = (1/12, 1/3, 1/3, 1/6, 1/12);
    rho(5) = 5/3, every wrong answer 5/6; ln rho(5) = ln 2 - ln 1.2; one 5 in four stale draws: 5/12."""
    assert np.allclose(BOOSTED_LOGITS, LOGITS + np.log(2) * (np.arange(5) == CORRECT))
    assert np.allclose(np.exp(BOOSTED_LOGITS), [1, 4, 4, 2, 1]) and np.exp(BOOSTED_LOGITS).sum() == pytest.approx(12)
    p_new = softmax(BOOSTED_LOGITS)
    assert np.allclose(p_new, [1 / 12, 1 / 3, 1 / 3, 1 / 6, 1 / 12])
    assert np.round(p_new, 4).tolist() == [0.0833, 0.3333, 0.3333, 0.1667, 0.0833]
    rho = importance_ratios(BOOSTED_LOGITS, LOGITS)
    assert np.allclose(rho, [5 / 6, 5 / 6, 5 / 3, 5 / 6, 5 / 6])
    assert np.round(rho, 4).tolist() == [0.8333, 0.8333, 1.6667, 0.8333, 0.8333]
    assert np.allclose(rho, p_new / softmax(LOGITS))               # a second route: divide the two laws
    assert np.log(rho[CORRECT]) == pytest.approx(np.log(2) - np.log(12 / 10))
    j_hat = np.mean(rho[[CORRECT, 1, 1, 3]] * REWARDS[[CORRECT, 1, 1, 3]])     # one 5 among four draws
    assert j_hat == pytest.approx(5 / 12) and round(j_hat, 4) == 0.4167
    assert p_new[CORRECT] == pytest.approx(1 / 3)


def test_ch10_drift_experiment():
    """ex-ch10-drift: the variance multiple 19 b / (1 - b): 4.75, 19, 76 at 0.2, 0.5, 0.8; 1 at 0.05;
    2 at b = 2/21 = 0.0952, 2.1111 at 0.1 (two positions up the chart's slider); the same 19 for every G
    at 0.5; P(no 5) = 0.95^G = 0.6634, 0.4401, 0.1937 at G = 8, 16, 32; 32 stale draws are worth 32/19 = 1.7
    fresh ones."""
    assert np.allclose(drift_variance_ratio([0.2, 0.5, 0.8]), [4.75, 19.0, 76.0])
    assert drift_variance_ratio([0.05])[0] == pytest.approx(1.0)
    assert drift_variance_ratio([2 / 21])[0] == pytest.approx(2.0) and round(2 / 21, 4) == 0.0952
    assert round(float(drift_variance_ratio([0.1])[0]), 4) == 2.1111
    assert [v for v in DRIFT[0].values if v <= 0.1] == [0.05, 0.075, 0.1]      # "two positions up the slider"
    b = np.linspace(0.05, 0.95, 19)
    assert np.allclose(drift_variance_ratio(b), 19 * b / (1 - b))
    for G in (1, 4, 8, 16, 32):
        d = drift_case(0.5, G)
        assert d["is_variance"] / d["on_variance"] == pytest.approx(19.0)
    for G, p in [(8, 0.6634), (16, 0.4401), (32, 0.1937)]:
        assert round(drift_case(0.5, G)["p_no_correct"], 4) == p == round(0.95 ** G, 4)
    assert round(32 / 19, 1) == 1.7


# ----------------------------------------------------------------------------- chapter 11
def test_ch11_clip_higher():
    """ex-ch11-cliphigher: only the good-answer case changes, 0.96 -> 1.024; the cap on a good
    answer's probability gain is eps_high * pi_old: 0.1 at 0.5, 0.002 at 0.01, 0.0028 with 0.28."""
    assert clipped_objective(2.0, 0.8, 0.2) == pytest.approx(0.96)
    assert clipped_objective(2.0, 0.8, 0.2, eps_high=0.28) == pytest.approx(1.024)
    assert min(1.6, 1.28 * 0.8) == pytest.approx(1.024)
    for rho, expected in [(0.5, -0.16), (2.0, -0.40)]:
        assert clipped_objective(rho, -0.2, 0.2, eps_high=0.28) == pytest.approx(expected)
        assert clipped_objective(rho, -0.2, 0.2) == pytest.approx(expected)
    for pi_old, eps_high, gain in [(0.5, 0.2, 0.1), (0.01, 0.2, 0.002), (0.01, 0.28, 0.0028)]:
        edge = 1 + eps_high
        assert (edge - 1) * pi_old == pytest.approx(gain)
        # the gradient is cut just past the edge, not just before it
        assert clip_binds([edge + 1e-9], [1.0], 0.2, eps_high).item()
        assert not clip_binds([edge - 1e-9], [1.0], 0.2, eps_high).item()


def test_ch11_first_inner_step_is_reinforce():
    """ex-ch11-first-step: at z = z_old the clipped surrogate's gradient is (1/G) sum_i A_i score(y_i)."""
    grad = clipped_surrogate_gradient(LOGITS, LOGITS, TOY_GROUP, TOY_GROUP_ADVANTAGES, 0.2)
    reinforce = np.mean([a * score(LOGITS, int(y)) for a, y in zip(TOY_GROUP_ADVANTAGES, TOY_GROUP)],
                        axis=0)
    assert np.allclose(grad, reinforce)
    # K = 1: the clip never acts
    assert ppo_inner_steps(LOGITS, TOY_GROUP, TOY_GROUP_ADVANTAGES, 0.2, 0.5, 1)["clip_fraction"][0] == 0.0


def test_ch11_early_stopping_on_kl():
    """ex-ch11-early-stop: the first step with KL > 0.015 is step 7 (KL 0.0151); step 6 has
    pi(5) = 0.2662, above the 0.2491 of the single TRPO step with delta = 0.01."""
    run = ppo_inner_steps(LOGITS, TOY_GROUP, TOY_GROUP_ADVANTAGES, 0.2, 0.5, 24)
    first = int(np.argmax(run["kl"] > 1.5 * 0.01))
    assert first == 7 and round(run["kl"][7], 4) == 0.0151 and run["kl"][6] <= 0.015
    kept = run["probs"][first - 1, CORRECT]
    trpo = softmax(trust_region_step(LOGITS, policy_gradient(LOGITS, REWARDS), 0.01)["logits"])[CORRECT]
    assert round(kept, 4) == 0.2662 and round(trpo, 4) == 0.2491 and kept > trpo


def test_ch11_negative_by_hand():
    """ex-ch11-negative: rho = 0.6, A = -0.5, eps = 0.2: terms -0.3 and -0.4, min -0.4, derivative 0;
    at rho = 1.5: -0.75 and -0.6, min -0.75, derivative -0.5; capping at 1 + eps gives -0.3 and -0.6."""
    assert 0.6 * -0.5 == pytest.approx(-0.3) and np.clip(0.6, 0.8, 1.2) * -0.5 == pytest.approx(-0.4)
    assert np.allclose(clipped_objective(np.array([0.6, 1.5]), np.array([-0.5, -0.5]), 0.2), [-0.4, -0.75])
    assert np.allclose(clipped_objective_grad(np.array([0.6, 1.5]), np.array([-0.5, -0.5]), 0.2), [0.0, -0.5])
    assert clip_binds([0.6], [-0.5], 0.2).item() and not clip_binds([1.5], [-0.5], 0.2).item()
    assert np.allclose(np.minimum([0.6, 1.5], 1.2) * -0.5, [-0.3, -0.6])          # the wrong side
    # the coding solution's example: capping rho at 1 + eps for A = -0.2 at rho = 2
    assert min(2.0, 1.2) * -0.2 == pytest.approx(-0.24) and clipped_objective(2.0, -0.2, 0.2) == pytest.approx(-0.40)


def test_ch11_long_reuse_experiment():
    """ex-ch11-long-reuse: eps = 0.2, K = 24: the 4s' ratio crosses 0.8 at step 13 (0.7950), clip fraction
    0.25 -> 0.625, KL 0.0335; KL 0.0535 at step 24; flickers, 0.875 from step 21. eps = 0.1: 5s clipped
    from step 1, 4s first at step 8 (0.8898); all eight clipped from step 22, KL 0.0202, pi(5) 0.2877
    at 22-24. KL at step 24: 0.0202, 0.0535, 0.0972 for eps = 0.1, 0.2, 0.3."""
    runs = {eps: ppo_inner_steps(LOGITS, TOY_GROUP, TOY_GROUP_ADVANTAGES, eps, 0.5, 24) for eps in (0.1, 0.2, 0.3)}
    run = runs[0.2]
    frac, kl, fours = run["clip_fraction"], run["kl"], run["ratios"][:, 0]
    assert [TOY_GROUP[i] for i in (0, 1, 4)] == [1, 1, 1] and TOY_GROUP_ADVANTAGES[0] == pytest.approx(-0.25)
    assert np.allclose(run["ratios"][:, [1, 4]], fours[:, None])            # the three 4s share a ratio
    first = int(np.argmax(frac > 0.25))
    assert first == 13 and np.all(frac[2:13] == 0.25) and frac[1] == 0.0
    assert round(fours[13], 4) == 0.7950 and fours[12] >= 0.8 and frac[13] == 0.625
    assert round(kl[13], 4) == 0.0335 and round(kl[24], 4) == 0.0535
    assert set(frac[13:21].tolist()) == {0.25, 0.625} and np.all(frac[21:] == 0.875)
    assert np.all(np.diff(kl[:14]) > 0)                   # the KL keeps growing past the first clips
    run = runs[0.1]
    frac, fours = run["clip_fraction"], run["ratios"][:, 0]
    assert frac[1] == 0.25 and int(np.argmax(frac > 0.25)) == 8 and round(fours[8], 4) == 0.8898
    assert int(np.argmax(frac == 1.0)) == 22 and np.all(frac[22:] == 1.0)
    assert [round(k, 4) for k in run["kl"][22:]] == [0.0202] * 3
    assert [round(p, 4) for p in run["probs"][22:, CORRECT]] == [0.2877] * 3
    assert np.allclose(run["probs"][22:], run["probs"][22])                # the policy has stopped
    assert [round(runs[eps]["kl"][24], 4) for eps in (0.1, 0.2, 0.3)] == [0.0202, 0.0535, 0.0972]


# ----------------------------------------------------------------------------- chapter 12
def test_ch12_table_by_hand():
    """ex-ch12-by-hand: gamma = 0.9, lambda = 0.5: delta = (0.04, 0.03, 0.3), gamma lambda = 0.45,
    A = (0.11425, 0.165, 0.3)."""
    assert np.allclose(td_errors(EXAMPLE_REWARDS, EXAMPLE_VALUES, gamma=0.9), [0.04, 0.03, 0.3])
    assert 0.9 * 0.5 == pytest.approx(0.45)
    assert 0.03 + 0.45 * 0.3 == pytest.approx(0.165) and 0.04 + 0.45 * 0.165 == pytest.approx(0.11425)
    assert np.allclose(gae(EXAMPLE_REWARDS, EXAMPLE_VALUES, gamma=0.9, lam=0.5), [0.11425, 0.165, 0.3])


def _two_step_tree(gamma, rng):
    """An enumerable two-step episode: s0 -(a0)-> r0, s1 in {0, 1} -(a1)-> r1, end.

    Returns the policy, transition and reward tables and the exact V^pi(s0), V^pi(s1), Q^pi(s0, a0).
    """
    pi0 = rng.dirichlet(np.ones(3))                      # pi(a0 | s0), three actions
    pi1 = rng.dirichlet(np.ones(2), size=2)              # pi(a1 | s1), two actions in each of two states
    P = rng.dirichlet(np.ones(2), size=3)                # P(s1 | s0, a0)
    r0, r1 = rng.normal(size=3), rng.normal(size=(2, 2))
    V1 = (pi1 * r1).sum(axis=1)                          # one step left: V(s1) = E[r1]
    Q0 = r0 + gamma * P @ V1
    return pi0, pi1, P, r0, r1, V1, Q0, pi0 @ Q0


@pytest.mark.parametrize("gamma", [1.0, 0.9, 0.5])
def test_ch12_telescoping_and_the_perfect_critic(gamma):
    """ex-ch12-telescoping, by enumerating every trajectory of a small random episode:
    lambda = 1 gives G_t - V(s_t) for any critic; with V = V^pi, E[delta_0 | s0, a0] = Q - V = A;
    with V = V^pi + e, it is A + gamma E[e(s1) | s0, a0] - e(s0); E[delta_0 | s0] = 0 only for V^pi."""
    rng = np.random.default_rng(11)
    pi0, pi1, P, r0, r1, V1, Q0, V0 = _two_step_tree(gamma, rng)
    e0, e1 = 0.3, np.array([-0.2, 0.4])                  # an imperfect critic's errors
    for critic_error in (False, True):
        v0 = V0 + (e0 if critic_error else 0.0)
        v1 = V1 + (e1 if critic_error else 0.0)
        for a0 in range(3):
            mean_delta0 = 0.0
            for s1, a1 in itertools.product(range(2), range(2)):
                prob = P[a0, s1] * pi1[s1, a1]
                rewards, values = [r0[a0], r1[s1, a1]], [v0, v1[s1]]
                delta = td_errors(rewards, values, gamma)
                assert np.allclose(gae(rewards, values, gamma, 1.0),
                                   discounted_returns(rewards, gamma) - np.array(values))
                mean_delta0 += prob * delta[0]
            advantage = Q0[a0] - V0
            bias = (gamma * P[a0] @ e1 - e0) if critic_error else 0.0
            assert mean_delta0 == pytest.approx(advantage + bias)
    assert pi0 @ (Q0 - V0) == pytest.approx(0.0)          # every advantage has mean 0 given s0


def test_ch12_by_hand_slips():
    """ex-ch12-by-hand, the usual slips: TD errors without gamma stay (0.1, 0.1, 0.3); weights 0.9^l
    give the lambda = 1 advantage G_0 - V(s_0) = 0.81 - 0.5 = 0.31."""
    assert np.allclose(td_errors(EXAMPLE_REWARDS, EXAMPLE_VALUES, 1.0), [0.1, 0.1, 0.3])
    assert discounted_returns(EXAMPLE_REWARDS, 0.9)[0] == pytest.approx(0.81)
    assert gae(EXAMPLE_REWARDS, EXAMPLE_VALUES, 0.9, 1.0)[0] == pytest.approx(0.31) == 0.81 - 0.5


def test_ch12_equal_credit_experiment():
    """ex-ch12-equal-credit: lambda = 2/3 gives (0.3, 0.3, 0.3); 0.65 gives (0.2918, 0.295, 0.3), 0.675
    (0.3042, 0.3025, 0.3) and 0.7 (0.317, 0.31, 0.3); lambda = 1 gives (0.5, 0.4, 0.3). With lambda = 0.5,
    step 0 gets 0.0120 at gamma = 0.8, first turns negative at the slider's next position 0.775 (-0.0122),
    and gets -0.0359 at 0.75; step 1 -0.005 at 0.7; delta = (-0.05, -0.075, 0.3) at 0.75; the Monte
    Carlo step 0 at 0.75 is 0.5625 - 0.5 = 0.0625."""
    A = lambda gamma, lam: gae(EXAMPLE_REWARDS, EXAMPLE_VALUES, gamma=gamma, lam=lam)
    assert np.allclose(A(1.0, 2 / 3), [0.3, 0.3, 0.3])
    lam = np.linspace(0, 1, 101)                         # below 2/3 the early steps get less, above more
    early = np.array([A(1.0, l)[:2] for l in lam])
    assert np.all((early < 0.3 - 1e-12) == (lam < 2 / 3)[:, None])
    assert np.round(A(1.0, 0.65), 4).tolist() == [0.2918, 0.295, 0.3]
    assert np.round(A(1.0, 0.675), 4).tolist() == [0.3042, 0.3025, 0.3]     # the next position of the slider
    assert np.round(A(1.0, 0.7), 4).tolist() == [0.317, 0.31, 0.3]
    assert np.allclose(A(1.0, 1.0), [0.5, 0.4, 0.3])
    lam_slider, gamma_slider = GAE
    assert lam_slider.step == 0.025 and np.any(np.isclose(lam_slider.values, 0.65)) and np.any(
        np.isclose(lam_slider.values, 0.675))
    gammas = gamma_slider.values[::-1]                               # the chart's slider's values, from 1 down
    step0 = [A(g, 0.5)[0] for g in gammas]
    first_negative = gammas[int(np.argmax(np.array(step0) < 0))]
    assert first_negative == 0.775 and round(A(0.775, 0.5)[0], 4) == -0.0122
    assert round(A(0.8, 0.5)[0], 4) == 0.0120 and round(A(0.75, 0.5)[0], 4) == -0.0359
    step1 = [A(g, 0.5)[1] for g in gammas]
    assert gammas[int(np.argmax(np.array(step1) < 0))] == 0.7 and round(A(0.7, 0.5)[1], 4) == -0.005
    assert np.allclose(td_errors(EXAMPLE_REWARDS, EXAMPLE_VALUES, 0.75), [-0.05, -0.075, 0.3])
    assert A(0.75, 1.0)[0] == pytest.approx(0.0625) == 0.75 ** 2 - 0.5
