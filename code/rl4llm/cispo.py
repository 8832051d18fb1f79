"""CISPO's loss (MiniMax-M1, 2025): a clipped, detached importance weight on every token (chapter 18).

    l_it = -sg(clip(rho_it, 1 - eps_low, 1 + eps_high)) A_i ln pi(o_it),   rho_it = exp(logp_it - old_it),
    loss = sum_it m_it l_it / sum_it m_it                                  (the token mean, as DAPO's),

where sg stops the gradient. Its gradient on token t is -clip(rho_t) A_i / N times grad ln pi(o_it): the
weight is clipped but never zero, so every token keeps a gradient, where PPO's clip (``grpo_loss``)
sets the gradient of a token whose ratio left the band on the advantage's side to zero. MiniMax-M1
clips only from above (a large ``eps_low`` leaves the lower side open); ScaleRL uses 1 + eps_high = 5.
"""
from __future__ import annotations

import math

import torch

from ._checks import real_in_range


def _tensor(x, name: str) -> torch.Tensor:
    if not isinstance(x, torch.Tensor):
        raise ValueError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    return x


def cispo_loss(logp: torch.Tensor, old_logp: torch.Tensor, advantages: torch.Tensor, mask: torch.Tensor, *,
               eps_low: float = 0.2, eps_high: float = 0.28) -> tuple[torch.Tensor, dict]:
    """CISPO's loss to MINIMISE, tensors (B, T) with ``advantages`` (B,) (chapter 18):
    -sum m sg(clip(rho, 1 - eps_low, 1 + eps_high)) A logp / sum m. ``eps_low`` in (0, 1],
    ``eps_high`` > 0. Returns ``(loss, stats)``, ``stats["clipped_fraction"]`` the share of unmasked
    tokens whose weight the clip changed (they still get a gradient) and ``stats["mean_ratio"]``."""
    for name, x in (("logp", logp), ("old_logp", old_logp), ("advantages", advantages), ("mask", mask)):
        _tensor(x, name)
    if logp.dim() != 2:
        raise ValueError(f"logp must be shaped (B, T), got {tuple(logp.shape)}")
    for name, x in (("old_logp", old_logp), ("mask", mask)):
        if x.shape != logp.shape:
            raise ValueError(f"{name} must have the shape of logp {tuple(logp.shape)}, got {tuple(x.shape)}")
    if tuple(advantages.shape) != (logp.shape[0],):
        raise ValueError(f"advantages must be shaped (B,) = ({logp.shape[0]},), got {tuple(advantages.shape)}")
    low = real_in_range(eps_low, "eps_low", 0.0, 1.0, low_open=True)
    high = real_in_range(eps_high, "eps_high", 0.0, math.inf, low_open=True, high_open=True)
    m = mask.to(logp.dtype)                                                          # (B, T)
    log_ratio = torch.where(m > 0, logp - old_logp, torch.zeros_like(logp)).detach()
    ratio = torch.exp(log_ratio)                                                     # (B, T), no gradient
    weight = torch.clamp(ratio, 1 - low, 1 + high)
    per_token = -weight * advantages.to(logp.dtype).unsqueeze(1) * torch.where(m > 0, logp, torch.zeros_like(logp))
    tokens = m.sum().clamp(min=1)
    loss = (per_token * m).sum() / tokens
    stats = {"clipped_fraction": float(((weight != ratio).to(m.dtype) * m).sum() / tokens),
             "mean_ratio": float((ratio * m).sum() / tokens)}
    return loss, stats
