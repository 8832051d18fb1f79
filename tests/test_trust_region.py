"""rl4llm.math.trust_region (chapter 11): the policy's KL, the Fisher matrix, conjugate gradient and TRPO's step."""

import numpy as np
import pytest

from rl4llm import (CORRECT, LOGITS, REWARDS, conjugate_gradient, fisher_matrix, kl_divergence, policy_gradient,
                    policy_kl, score, softmax, trust_region_step)


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
