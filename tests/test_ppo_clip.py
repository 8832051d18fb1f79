"""rl4llm.math.ppo_clip (chapter 11): the clipped objective, its gradient, where the clip binds and PPO's inner steps."""

import numpy as np
import pytest
import torch

from rl4llm import (CORRECT, LOGITS, REWARDS, TOY_GROUP, TOY_GROUP_ADVANTAGES, clip_binds, clip_fraction,
                    clipped_objective, clipped_objective_grad, clipped_surrogate, clipped_surrogate_gradient,
                    conjugate_gradient, drift_case, drift_variance_ratio, importance_ratios,
                    importance_weighted_variance, policy_gradient, policy_kl, ppo_inner_steps, score,
                    trust_region_step)
from numerics import finite_difference

#: A group of G = 8 toy answers: 4, 4, 5, 6, 4, 0, 5, 15 (two of eight correct).
GROUP = np.array([1, 1, 2, 3, 1, 0, 2, 4])
GROUP_ADV = np.array([-0.25, -0.25, 0.75, -0.25, -0.25, -0.25, 0.75, -0.25])


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
