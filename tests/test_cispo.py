"""rl4llm.cispo.cispo_loss: its value and its autograd gradient against the closed form, and validation."""
import numpy as np
import pytest
import torch

from rl4llm import grpo_loss
from rl4llm.cispo import cispo_loss


def _batch(seed=0, B=3, T=4):
    g = torch.Generator().manual_seed(seed)
    logp = torch.log(torch.rand(B, T, generator=g, dtype=torch.float64) * 0.9 + 0.05)
    old = logp.detach() + 0.6 * (torch.rand(B, T, generator=g, dtype=torch.float64) - 0.5)
    mask = torch.tensor([[1, 1, 1, 0], [1, 1, 0, 0], [1, 1, 1, 1]], dtype=torch.float64)
    return logp.requires_grad_(True), old, torch.tensor([1.0, -0.5, 0.25], dtype=torch.float64), mask


def test_value_and_gradient_equal_the_closed_form():
    logp, old, A, mask = _batch()
    loss, stats = cispo_loss(logp, old, A, mask, eps_low=0.1, eps_high=0.15)
    weight = torch.clamp(torch.exp((logp - old).detach()), 0.9, 1.15)
    n = mask.sum()
    assert torch.isclose(loss, -(weight * A[:, None] * logp * mask).sum() / n)
    (grad,) = torch.autograd.grad(loss, logp)
    assert torch.allclose(grad, -weight * A[:, None] * mask / n)
    assert bool((grad[mask > 0] != 0).all())                   # every token keeps a gradient
    ratio = torch.exp((logp - old).detach())
    assert np.isclose(stats["clipped_fraction"], float((((ratio < 0.9) | (ratio > 1.15)) * mask).sum() / n))


def test_inside_the_band_it_has_ppos_gradient_and_ppo_zeroes_where_cispo_does_not():
    logp, old, A, mask = _batch(seed=3)
    grads = {}
    for name, fn in (("cispo", lambda: cispo_loss(logp, old, A, mask, eps_low=0.1, eps_high=0.1)),
                     ("ppo", lambda: grpo_loss(logp, old, A, mask, eps_low=0.1, loss_type="dapo"))):
        (grads[name],) = torch.autograd.grad(fn()[0], logp)
    rho = torch.exp(logp - old).detach()
    inside = ((rho >= 0.9) & (rho <= 1.1) & (mask > 0))
    assert torch.allclose(grads["cispo"][inside], grads["ppo"][inside])
    ppo_zero = (grads["ppo"] == 0) & (mask > 0)
    assert bool(ppo_zero.any()) and bool((grads["cispo"][ppo_zero] != 0).all())


def test_padding_gets_no_gradient_and_infinite_padding_is_harmless():
    logp, old, A, mask = _batch()
    old = torch.where(mask > 0, old, torch.full_like(old, -torch.inf))
    loss, _ = cispo_loss(logp, old, A, mask)
    (grad,) = torch.autograd.grad(loss, logp)
    assert torch.isfinite(loss) and bool((grad[mask == 0] == 0).all())


def test_validation():
    logp, old, A, mask = _batch()
    with pytest.raises(ValueError, match="logp must be a torch.Tensor"):
        cispo_loss(logp.detach().numpy(), old, A, mask)
    with pytest.raises(ValueError, match="mask must have the shape of logp"):
        cispo_loss(logp, old, A, mask[:, :2])
    with pytest.raises(ValueError, match=r"advantages must be shaped \(B,\)"):
        cispo_loss(logp, old, A[:2], mask)
    with pytest.raises(ValueError, match="eps_high must be in"):
        cispo_loss(logp, old, A, mask, eps_high=0.0)
    with pytest.raises(ValueError, match="eps_low must be in"):
        cispo_loss(logp, old, A, mask, eps_low=1.5)
    with pytest.raises(ValueError, match=r"logp must be shaped \(B, T\)"):
        cispo_loss(logp[0], old[0], A, mask[0])
