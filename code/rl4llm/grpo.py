"""GRPO's two pieces: group-relative advantages and the clipped, batched loss (chapters 13-14).

``group_advantages`` turns a group's rewards into per-answer advantages (the group mean is the
baseline, no critic). ``grpo_loss`` is the loss the tiny transformer of chapter 14 trains with:
batched (B, T) tensors with a completion mask, no Python loop over tokens or sequences.
"""
from __future__ import annotations

import numpy as np
import torch

from ._checks import as_float_array, finite_real, integer_at_least, real_in_range

LOSS_TYPES = ("grpo", "bnpo", "dapo", "dr_grpo")


def group_advantages(rewards, scale: bool = True, ddof: int = 0, eps: float = 1e-8):
    """A_i = (r_i - mean_j r_j) / (std_j r_j + eps) within each group (chapter 13).

    ``rewards`` is shaped (..., G): the last axis is the group. ``ddof=0`` is the population std
    (the default here); ``ddof=1`` is Bessel's sample std, which TRL uses, with eps = 1e-4:
    ``group_advantages(r, ddof=1, eps=1e-4)`` is TRL's ``scale_rewards="group"``. ``scale=False``
    gives the plain r_i - mean (Dr. GRPO; TRL's ``scale_rewards="none"``). A group whose rewards are all equal carries no signal and gets
    exactly zero advantages, never NaN. Accepts numpy arrays (returns numpy) or torch tensors
    (returns a tensor on the same device).
    """
    if ddof not in (0, 1) or isinstance(ddof, bool):
        raise ValueError(f"ddof must be 0 (population std) or 1 (sample std), got {ddof!r}")
    eps = finite_real(eps, "eps")
    if eps < 0:
        raise ValueError(f"eps must be a finite number >= 0, got {eps!r}")
    if isinstance(rewards, torch.Tensor):
        r = rewards.to(torch.float32) if not rewards.is_floating_point() else rewards
        _check_group_shape(tuple(r.shape), ddof)
        if not torch.isfinite(r).all():
            raise ValueError("rewards must be finite (no NaN or inf)")
        centred = r - r.mean(dim=-1, keepdim=True)
        flat = (r.amax(dim=-1, keepdim=True) == r.amin(dim=-1, keepdim=True))
        if scale:
            centred = centred / (r.std(dim=-1, correction=ddof, keepdim=True) + eps)
        return torch.where(flat, torch.zeros_like(centred), centred)
    r = as_float_array(rewards, "rewards")
    _check_group_shape(r.shape, ddof)
    centred = r - r.mean(axis=-1, keepdims=True)
    flat = r.max(axis=-1, keepdims=True) == r.min(axis=-1, keepdims=True)
    if scale:
        centred = centred / (r.std(axis=-1, ddof=ddof, keepdims=True) + eps)
    return np.where(flat, 0.0, centred)


def _check_group_shape(shape: tuple, ddof: int) -> None:
    if len(shape) < 1 or shape[-1] < 1 + ddof:
        raise ValueError(f"rewards must be shaped (..., G) with G >= {1 + ddof} for ddof={ddof}, got shape {shape}")


def k3(log_ref_over_pi: torch.Tensor) -> torch.Tensor:
    """k3 = e^x - x - 1 >= 0 with x = log pi_ref - log pi at a sampled token (chapter 13): its mean
    over samples of pi estimates KL(pi || pi_ref) without bias, and no term is ever negative."""
    return torch.exp(log_ref_over_pi) - log_ref_over_pi - 1


def grpo_loss(logp: torch.Tensor, old_logp: torch.Tensor, advantages: torch.Tensor, mask: torch.Tensor, *,
              eps_low: float = 0.2, eps_high: float | None = None, beta: float = 0.0,
              ref_logp: torch.Tensor | None = None, loss_type: str = "grpo",
              max_completion_length: int | None = None) -> tuple[torch.Tensor, dict]:
    """The GRPO loss to MINIMISE (the negated clipped objective), and its diagnostics (chapter 13).

    Per token t of completion i, with rho = exp(logp - old_logp) and A_i broadcast over tokens:

        l_it = -min(rho_it A_i, clip(rho_it, 1 - eps_low, 1 + eps_high) A_i) + beta k3_it,
        k3_it = exp(ref_it - logp_it) - (ref_it - logp_it) - 1      (only when beta > 0),

    aggregated over the unmasked tokens m_it by ``loss_type``:

    - ``"grpo"``: (1/B) sum_i [ sum_t m_it l_it / sum_t m_it ]   (mean per sequence, then over sequences)
    - ``"bnpo"``, ``"dapo"``: sum_it m_it l_it / sum_it m_it      (one mean over all tokens;
      in TRL the two agree only in one process without gradient accumulation)
    - ``"dr_grpo"``: sum_it m_it l_it / (B * max_completion_length)  (a constant normaliser)

    The k3 term is plain (TRL's ``use_bias_correction_kl=False``): its expected gradient is that
    of the forward KL(pi_ref || pi), although its value estimates KL(pi || pi_ref) (chapter 13).
    A row with no unmasked token contributes 0 (its normaliser is clamped to 1). Padded positions
    (mask 0) may hold any finite or infinite log-prob: the exponents are masked before ``exp``, so
    they change neither the loss nor its gradient. ``stats`` holds
    ``clip_fraction`` (share of unmasked tokens where the clip binds: rho < 1 - eps_low with A < 0,
    or rho > 1 + eps_high with A > 0), ``mean_ratio``, and ``mean_kl`` (masked mean of k3 when
    ``ref_logp`` is given, else 0.0), as Python floats.
    """
    eps_low = real_in_range(eps_low, "eps_low", 0.0, 1.0, low_open=True, high_open=True)
    eps_high = eps_low if eps_high is None else real_in_range(eps_high, "eps_high", 0.0, 1.0, low_open=True,
                                                              high_open=True)
    beta = finite_real(beta, "beta")
    if beta < 0:
        raise ValueError(f"beta must be a finite number >= 0, got {beta!r}")
    if loss_type not in LOSS_TYPES:
        raise ValueError(f"loss_type must be one of {LOSS_TYPES}, got {loss_type!r}")
    for name, t in (("logp", logp), ("old_logp", old_logp), ("advantages", advantages), ("mask", mask)):
        if not isinstance(t, torch.Tensor):
            raise ValueError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if logp.dim() != 2:
        raise ValueError(f"logp must be shaped (B, T), got {tuple(logp.shape)}")
    B, T = logp.shape
    for name, t in (("old_logp", old_logp), ("mask", mask)) + ((("ref_logp", ref_logp),) if ref_logp is not None else ()):
        if tuple(t.shape) != (B, T):
            raise ValueError(f"{name} must have the shape of logp {(B, T)}, got {tuple(t.shape)}")
    if tuple(advantages.shape) != (B,):
        raise ValueError(f"advantages must be shaped (B,) = ({B},), got {tuple(advantages.shape)}")
    if ref_logp is not None and not isinstance(ref_logp, torch.Tensor):
        raise ValueError(f"ref_logp must be a torch.Tensor or None, got {type(ref_logp).__name__}")
    if beta > 0 and ref_logp is None:
        raise ValueError("ref_logp must be given when beta > 0 (the KL is measured to the reference policy)")
    m = mask.to(logp.dtype)
    if not bool(((m == 0) | (m == 1)).all()):
        raise ValueError("mask must contain only 0 and 1")
    if loss_type == "dr_grpo":
        if max_completion_length is None:
            raise ValueError("max_completion_length must be given (an integer >= 1) when loss_type='dr_grpo'")
        max_completion_length = integer_at_least(max_completion_length, "max_completion_length", 1)

    a = advantages.to(logp.dtype).unsqueeze(1)
    # Mask BEFORE exp: a padded position may hold any log-prob, and exp of a large one is inf,
    # which the mask's 0 would turn into NaN (inf * 0), in the loss and in its gradient. With the
    # exponent set to 0 there, a padded token has rho = 1 and k3 = 0, and gets no gradient.
    real = m > 0
    zero = torch.zeros_like(logp)
    ratio = torch.exp(torch.where(real, logp - old_logp, zero))
    objective = torch.minimum(ratio * a, torch.clamp(ratio, 1 - eps_low, 1 + eps_high) * a)
    per_token = -objective
    kl = None
    if ref_logp is not None:
        log_ref_over_pi = torch.where(real, ref_logp - logp, zero)
        kl = k3(log_ref_over_pi)
        if beta > 0:
            per_token = per_token + beta * kl

    masked = per_token * m
    n_tokens = m.sum()
    if loss_type == "grpo":
        loss = (masked.sum(dim=1) / m.sum(dim=1).clamp(min=1)).mean()
    elif loss_type in ("bnpo", "dapo"):
        loss = masked.sum() / n_tokens.clamp(min=1)
    else:
        loss = masked.sum() / (B * max_completion_length)

    with torch.no_grad():
        denom = n_tokens.clamp(min=1)
        clipped = ((ratio < 1 - eps_low) & (a < 0)) | ((ratio > 1 + eps_high) & (a > 0))
        stats = {
            "clip_fraction": float((clipped.to(m.dtype) * m).sum() / denom),
            "mean_ratio": float((ratio * m).sum() / denom),
            "mean_kl": float((kl * m).sum() / denom) if kl is not None else 0.0,
        }
    return loss, stats
