"""CISPO's loss (MiniMax-M1, 2025): a capped, detached importance weight on every token (chapter 18).

    l_it = -sg(min(rho_it, eps_max)) A_i ln pi(o_it),   rho_it = exp(logp_it - old_it),
    loss = sum_it m_it l_it / sum_it m_it                (the token mean, as DAPO's),

where sg stops the gradient. Its gradient on token t is -min(rho_t, eps_max) A_i / N times
grad ln pi(o_it): the weight is capped but never zero, so every token keeps a gradient, where PPO's
clip (``grpo_loss``) sets the gradient of a token whose ratio left the band on the advantage's side
to zero. The cap is absolute and one-sided: MiniMax-M1 writes the weight as clip(rho, 1 - eps_low,
1 + eps_high) with eps_low large enough to leave the lower side open, which is min(rho, 1 + eps_high);
TRL 1.16 (``loss_type="cispo"``) computes ``clamp(coef_1, max=epsilon_high)``, so its
``epsilon_high`` is ``eps_max`` itself, not a width (ScaleRL and TRL's documentation use 5; DAPO's
``epsilon_high=0.28`` copied into a CISPO run would cap every weight at 0.28).
"""
from __future__ import annotations

import torch

from .._checks import positive_real


def _tensor(x, name: str) -> torch.Tensor:
    if not isinstance(x, torch.Tensor):
        raise ValueError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    return x


#: CISPO's cap on the weight when none is given: ScaleRL's epsilon_max, which TRL 1.16 recommends.
EPS_MAX = 5.0


def cispo_loss(logp: torch.Tensor, old_logp: torch.Tensor, advantages: torch.Tensor, mask: torch.Tensor, *,
               eps_max: float = EPS_MAX) -> tuple[torch.Tensor, dict]:
    """CISPO's loss to MINIMISE, tensors (B, T) with ``advantages`` (B,) (chapter 18):
    -sum m sg(min(rho, eps_max)) A logp / sum m, TRL 1.16's ``loss_type="cispo"`` with
    ``epsilon_high=eps_max`` (> 0). Returns ``(loss, stats)``: ``stats["clip_ratio"]`` is TRL's
    ``cispo_clip_ratio``, the share of unmasked tokens whose ratio is above the cap and whose advantage
    is positive; ``stats["capped_fraction"]`` the share above the cap whatever the advantage (those
    tokens still get a gradient); ``stats["mean_ratio"]``."""
    for name, x in (("logp", logp), ("old_logp", old_logp), ("advantages", advantages), ("mask", mask)):
        _tensor(x, name)
    if logp.dim() != 2:
        raise ValueError(f"logp must be shaped (B, T), got {tuple(logp.shape)}")
    for name, x in (("old_logp", old_logp), ("mask", mask)):
        if x.shape != logp.shape:
            raise ValueError(f"{name} must have the shape of logp {tuple(logp.shape)}, got {tuple(x.shape)}")
    if tuple(advantages.shape) != (logp.shape[0],):
        raise ValueError(f"advantages must be shaped (B,) = ({logp.shape[0]},), got {tuple(advantages.shape)}")
    cap = positive_real(eps_max, "eps_max")
    m = mask.to(logp.dtype)                                                          # (B, T)
    log_ratio = torch.where(m > 0, logp - old_logp, torch.zeros_like(logp)).detach()
    ratio = torch.exp(log_ratio)                                                     # (B, T), no gradient
    weight = torch.clamp(ratio, max=cap)
    A = advantages.to(logp.dtype).unsqueeze(1)
    per_token = -weight * A * torch.where(m > 0, logp, torch.zeros_like(logp))
    tokens = m.sum().clamp(min=1)
    loss = (per_token * m).sum() / tokens
    capped = (ratio > cap).to(m.dtype) * m
    stats = {"clip_ratio": float((capped * (A > 0).to(m.dtype)).sum() / tokens),
             "capped_fraction": float(capped.sum() / tokens), "mean_ratio": float((ratio * m).sum() / tokens)}
    return loss, stats
