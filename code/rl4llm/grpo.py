"""GRPO's two pieces: group-relative advantages and the clipped, batched loss (chapters 13-15).

``group_advantages`` turns a group's rewards into per-answer advantages (the group mean is the
baseline, no critic). ``grpo_loss`` is the loss the tiny transformer of chapter 15 trains with:
batched (B, T) tensors with a completion mask, no Python loop over tokens or sequences.
"""
from __future__ import annotations

import math

import numpy as np
import torch

from ._checks import (as_float_array, at_least, checked, clip_range, finite_real, in_range, one_of, optional,
                      same_shapes, std_ddof)
from .loss_types import LOSS_TYPES
from .ppo_clip import clip_binds_mask

#: Where GRPO's importance ratio lives: one per token (GRPO, PPO), or one per sequence (GSPO).
IMPORTANCE_SAMPLING_LEVELS = ("token", "sequence")


def _nonnegative(x, name):
    x = finite_real(x, name)
    if x < 0:
        raise ValueError(f"{name} must be a finite number >= 0, got {x!r}")
    return x


def _rewards(rewards, name):
    """Finite rewards shaped (..., G), a torch tensor (as float) or anything numpy reads."""
    if isinstance(rewards, torch.Tensor):
        r = rewards if rewards.is_floating_point() else rewards.to(torch.float32)
        if r.dim() < 1 or r.shape[-1] < 1:
            raise ValueError(f"{name} must be shaped (..., G) with G >= 1, got shape {tuple(r.shape)}")
        if not torch.isfinite(r).all():
            raise ValueError(f"{name} must be finite (no NaN or inf)")
        return r
    return as_float_array(rewards, name)


def _group_of_two_for_ddof_1(args):
    shape = tuple(args["rewards"].shape)
    if shape[-1] < 1 + args["ddof"]:
        raise ValueError(f"rewards must be shaped (..., G) with G >= {1 + args['ddof']} for ddof={args['ddof']}, "
                         f"got shape {shape}")


@checked(_group_of_two_for_ddof_1, rewards=_rewards, ddof=std_ddof, eps=_nonnegative)
def group_advantages(rewards, scale: bool = True, ddof: int = 0, eps: float = 1e-8):
    """A_i = (r_i - mean_j r_j) / (std_j r_j + eps) within each group (chapter 13; chapter 14 compares ddof and scale).

    ``rewards`` is shaped (..., G): the last axis is the group. ``ddof=0`` is the population std
    (the default here); ``ddof=1`` is Bessel's sample std, which TRL uses, with eps = 1e-4:
    ``group_advantages(r, ddof=1, eps=1e-4)`` is TRL's ``scale_rewards="group"``. ``scale=False``
    gives the plain r_i - mean (Dr. GRPO; TRL's ``scale_rewards="none"``). A group whose rewards are all
    equal carries no signal and gets exactly zero advantages, never NaN. Accepts numpy arrays (returns
    numpy) or torch tensors (returns a tensor on the same device).
    """
    r = rewards
    if isinstance(r, torch.Tensor):
        centred = r - r.mean(dim=-1, keepdim=True)
        flat = r.amax(dim=-1, keepdim=True) == r.amin(dim=-1, keepdim=True)
        if scale:
            centred = centred / (r.std(dim=-1, correction=ddof, keepdim=True) + eps)
        return torch.where(flat, torch.zeros_like(centred), centred)
    centred = r - r.mean(axis=-1, keepdims=True)
    flat = r.max(axis=-1, keepdims=True) == r.min(axis=-1, keepdims=True)
    if scale:
        centred = centred / (r.std(axis=-1, ddof=ddof, keepdims=True) + eps)
    return np.where(flat, 0.0, centred)


def mean_over_tokens(x, mask):
    """sum_t m_t x_t / sum_t m_t per sequence, shaped (B, 1): numpy arrays or torch tensors (B, T)
    (a row with no unmasked token gives 0)."""
    return (x * mask).sum(axis=-1, keepdims=True) / mask.sum(axis=-1, keepdims=True).clip(min=1)


def _token_batch(x, name):
    x = as_float_array(x, name)
    if x.ndim != 2:
        raise ValueError(f"{name} must be shaped (batch, tokens), got shape {x.shape}")
    return x


def _binary_mask(x, name):
    x = _token_batch(x, name)
    if not np.all((x == 0) | (x == 1)):
        raise ValueError(f"{name} must contain only 0 and 1")
    return x


@checked(same_shapes("logp", "logp_old", "mask"), logp=_token_batch, logp_old=_token_batch, mask=_binary_mask)
def sequence_ratio(logp, logp_old, mask) -> np.ndarray:
    """GSPO's sequence-level importance ratio, one per sequence (issue 20's chapter on GSPO):

        s_i = exp( sum_t m_it (logp_it - logp_old_it) / sum_t m_it ),

    the geometric mean of the token ratios over the sequence's own tokens (a length-normalised
    pi(y_i) / pi_old(y_i)). Arrays shaped (batch, tokens); returns shape (batch,).
    """
    return np.exp(mean_over_tokens(np.where(mask > 0, logp - logp_old, 0.0), mask))[:, 0]


def k3(log_ref_over_pi: torch.Tensor) -> torch.Tensor:
    """k3 = e^x - x - 1 >= 0 with x = log pi_ref - log pi at a sampled token (chapter 14): its mean
    over samples of pi estimates KL(pi || pi_ref) without bias, and no term is ever negative."""
    return torch.exp(log_ref_over_pi) - log_ref_over_pi - 1


def _tensor(x, name):
    if not isinstance(x, torch.Tensor):
        raise ValueError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    return x


def _loss_batch(args):
    """grpo_loss's tensors: logp, old_logp, mask (and ref_logp) shaped (B, T), advantages (B,), a 0/1
    mask, ref_logp where beta > 0 and max_completion_length where the loss type divides by it."""
    logp = args["logp"]
    if logp.dim() != 2:
        raise ValueError(f"logp must be shaped (B, T), got {tuple(logp.shape)}")
    B, T = logp.shape
    for name in ("old_logp", "mask") + (("ref_logp",) if args["ref_logp"] is not None else ()):
        if tuple(args[name].shape) != (B, T):
            raise ValueError(f"{name} must have the shape of logp {(B, T)}, got {tuple(args[name].shape)}")
    if tuple(args["advantages"].shape) != (B,):
        raise ValueError(f"advantages must be shaped (B,) = ({B},), got {tuple(args['advantages'].shape)}")
    if args["beta"] > 0 and args["ref_logp"] is None:
        raise ValueError("ref_logp must be given when beta > 0 (the KL is measured to the reference policy)")
    if not bool(((args["mask"] == 0) | (args["mask"] == 1)).all()):
        raise ValueError("mask must contain only 0 and 1")
    loss_type = args["loss_type"]
    if LOSS_TYPES[loss_type].needs_max_completion_length and args["max_completion_length"] is None:
        raise ValueError(f"max_completion_length must be given (an integer >= 1) when loss_type={loss_type!r}")


@checked(clip_range("eps_low", "eps_high"), _loss_batch,
         logp=_tensor, old_logp=_tensor, advantages=_tensor, mask=_tensor, ref_logp=optional(_tensor),
         beta=_nonnegative, loss_type=one_of(LOSS_TYPES), max_completion_length=optional(at_least(1)),
         importance_sampling_level=one_of(IMPORTANCE_SAMPLING_LEVELS), delta=optional(in_range(1.0, math.inf,
                                                                                                low_open=True,
                                                                                                high_open=True)))
def grpo_loss(logp: torch.Tensor, old_logp: torch.Tensor, advantages: torch.Tensor, mask: torch.Tensor, *,
              eps_low: float = 0.2, eps_high: float | None = None, beta: float = 0.0,
              ref_logp: torch.Tensor | None = None, loss_type: str = "grpo",
              max_completion_length: int | None = None, importance_sampling_level: str = "token",
              delta: float | None = None) -> tuple[torch.Tensor, dict]:
    """The GRPO loss to MINIMISE (the negated clipped objective), and its diagnostics (chapter 13).

    Per token t of completion i, with rho = exp(logp - old_logp) and A_i broadcast over tokens:

        l_it = -min(rho_it A_i, clip(rho_it, 1 - eps_low, 1 + eps_high) A_i) + beta k3_it,
        k3_it = exp(ref_it - logp_it) - (ref_it - logp_it) - 1      (only when beta > 0),

    aggregated over the unmasked tokens m_it by ``loss_type`` (:mod:`rl4llm.loss_types`):
    ``"grpo"`` the mean per sequence, then over sequences; ``"bnpo"`` and ``"dapo"`` one mean over all
    tokens; ``"dr_grpo"`` the token sum over B * max_completion_length.

    ``importance_sampling_level="sequence"`` is GSPO (TRL's knob of that name): every token of
    sequence i uses its sequence's ratio s_i = exp(sum_t m_it (logp_it - old_it) / sum_t m_it)
    (:func:`sequence_ratio`), clipped like a token ratio. ``delta`` (TRL's two-sided clipping) caps
    the unclipped ratio at delta > 1 as well. The k3 term is plain (TRL's
    ``use_bias_correction_kl=False``): its expected gradient is that of the forward KL(pi_ref || pi),
    although its value estimates KL(pi || pi_ref) (chapter 13). A row with no unmasked token
    contributes 0. Padded positions (mask 0) may hold any finite or infinite log-prob: the exponents
    are masked before ``exp``, so they change neither the loss nor its gradient. ``stats`` holds
    ``clip_fraction`` (share of unmasked tokens where the clip binds: rho < 1 - eps_low with A < 0, or
    rho > 1 + eps_high with A > 0), ``mean_ratio``, and ``mean_kl`` (masked mean of k3 when
    ``ref_logp`` is given, else 0.0), as Python floats.
    """
    a = advantages.to(logp.dtype).unsqueeze(1)                                      # (B, 1)
    m = mask.to(logp.dtype)                                                         # (B, T)
    # Mask BEFORE exp: a padded position may hold any log-prob, and exp of a large one is inf,
    # which the mask's 0 would turn into NaN (inf * 0), in the loss and in its gradient. With the
    # exponent set to 0 there, a padded token has rho = 1 and k3 = 0, and gets no gradient.
    real = m > 0
    zero = torch.zeros_like(logp)
    log_ratio = torch.where(real, logp - old_logp, zero)                            # (B, T)
    if importance_sampling_level == "sequence":
        log_ratio = mean_over_tokens(log_ratio, m)                                  # (B, 1)
    ratio = torch.exp(log_ratio)                                                    # (B, T) or (B, 1)
    clipped_ratio = torch.clamp(ratio, 1 - eps_low, 1 + eps_high)
    if delta is not None:
        ratio = torch.clamp(ratio, max=delta)
    per_token = -torch.minimum(ratio * a, clipped_ratio * a)                        # (B, T) or (B, 1)
    kl = None
    if ref_logp is not None:
        kl = k3(torch.where(real, ref_logp - logp, zero))                           # (B, T)
        if beta > 0:
            per_token = per_token + beta * kl                                       # (B, T)

    masked = per_token * m                                                          # (B, T)
    loss = LOSS_TYPES[loss_type].aggregate(masked, m, max_completion_length)

    with torch.no_grad():
        denom = m.sum().clamp(min=1)
        ratio = ratio.expand_as(logp)
        stats = {
            "clip_fraction": float((clip_binds_mask(ratio, a, eps_low, eps_high).to(m.dtype) * m).sum() / denom),
            "mean_ratio": float((ratio * m).sum() / denom),
            "mean_kl": float((kl * m).sum() / denom) if kl is not None else 0.0,
        }
    return loss, stats
