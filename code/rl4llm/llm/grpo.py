"""GRPO's two pieces: group-relative advantages and the clipped, batched loss (chapters 13-15).

``group_advantages`` turns a group's rewards into per-answer advantages (the group mean is the
baseline, no critic). ``grpo_loss`` is the loss the tiny transformer of chapter 15 trains with:
batched (B, T) tensors with a completion mask, no Python loop over tokens or sequences.
"""
from __future__ import annotations

import math

import numpy as np
import torch

from .._checks import (as_float_array, at_least, checked, clip_range, finite_real, flag, in_range, one_of,
                      optional, same_shapes, std_ddof)
from ..math.loss_types import LOSS_TYPES
from ..math.ppo_clip import clip_binds_mask

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


#: The per-token estimates of KL(pi || pi_ref) that ``grpo_loss`` can weigh by beta, each a function of
#: u = log pi_ref - log pi at a token sampled from pi (chapter 17 derives their values and gradients):
#: k1 = -u = log(pi / pi_ref), k2 = u^2 / 2, k3 = e^u - u - 1.
KL_ESTIMATORS = {"k1": torch.neg, "k2": lambda u: u ** 2 / 2, "k3": k3}


def _tensor(x, name):
    if not isinstance(x, torch.Tensor):
        raise ValueError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    return x


def _loss_batch(args):
    """grpo_loss's tensors: logp, old_logp, mask (and ref_logp) shaped (B, T), advantages (B,) or (B, T), a 0/1
    mask, ref_logp where beta > 0 and max_completion_length where the loss type divides by it."""
    logp = args["logp"]
    if logp.dim() != 2:
        raise ValueError(f"logp must be shaped (B, T), got {tuple(logp.shape)}")
    B, T = logp.shape
    for name in ("old_logp", "mask") + (("ref_logp",) if args["ref_logp"] is not None else ()):
        if tuple(args[name].shape) != (B, T):
            raise ValueError(f"{name} must have the shape of logp {(B, T)}, got {tuple(args[name].shape)}")
    if tuple(args["advantages"].shape) not in ((B,), (B, T)):
        raise ValueError(f"advantages must be shaped (B,) = ({B},) or (B, T) = {(B, T)}, "
                         f"got {tuple(args['advantages'].shape)}")
    if args["advantages"].dim() == 2 and args["importance_sampling_level"] != "token":
        raise ValueError("advantages per token (B, T) need importance_sampling_level='token' (a sequence's "
                         "ratio and its clip count are the sequence's)")
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
         importance_sampling_level=one_of(IMPORTANCE_SAMPLING_LEVELS),
         delta=optional(in_range(1.0, math.inf, low_open=True, high_open=True)),
         kl_estimator=one_of(KL_ESTIMATORS), use_bias_correction_kl=flag)
def grpo_loss(logp: torch.Tensor, old_logp: torch.Tensor, advantages: torch.Tensor, mask: torch.Tensor, *,
              eps_low: float = 0.2, eps_high: float | None = None, beta: float = 0.0,
              ref_logp: torch.Tensor | None = None, loss_type: str = "grpo",
              max_completion_length: int | None = None, importance_sampling_level: str = "token",
              delta: float | None = None, kl_estimator: str = "k3",
              use_bias_correction_kl: bool = False) -> tuple[torch.Tensor, dict]:
    """The GRPO loss to MINIMISE (the negated clipped objective), and its diagnostics (chapters 13-14).

    Per token t of completion i, with rho = exp(logp - old_logp) and A_i broadcast over tokens (or A_it,
    when ``advantages`` is (B, T): an advantage per token, at the token level; chapter 20's trainer passes
    A_i w_it, TRL's per-token importance weight w_it >= 0 riding on the advantage, which equals TRL's
    ``per_token_loss * importance_sampling_ratio`` because the clipped term is positively homogeneous):

        l_it = -min(rho_it A_i, clip(rho_it, 1 - eps_low, 1 + eps_high) A_i) + beta w_it k_it,
        k3_it = exp(ref_it - logp_it) - (ref_it - logp_it) - 1      (the default k, when beta > 0),

    aggregated over the unmasked tokens m_it by ``loss_type`` (:mod:`rl4llm.math.loss_types`):
    ``"grpo"`` the mean per sequence, then over sequences; ``"bnpo"`` and ``"dapo"`` one mean over all
    tokens; ``"dr_grpo"`` the token sum over B * max_completion_length.

    ``importance_sampling_level="sequence"`` is GSPO (TRL's knob of that name): every token of
    sequence i uses its sequence's ratio s_i = exp(sum_t m_it (logp_it - old_it) / sum_t m_it)
    (:func:`sequence_ratio`), clipped like a token ratio. ``delta`` (TRL's two-sided clipping) caps
    the unclipped ratio at delta > 1 as well.

    The KL term, as TRL 1.16 computes it: ``kl_estimator`` picks k from :data:`KL_ESTIMATORS` (TRL has
    k3 only); w_it = 1, or with ``use_bias_correction_kl=True`` w_it = rho_it (the sequence ratio s_i at
    the sequence level), before delta's cap and not detached. Plain k3's expected gradient is the
    forward KL(pi_ref || pi)'s, although its value estimates KL(pi || pi_ref); times the ratio, whose
    gradient adds k3 grad log pi, it is the reverse KL's (chapter 17). A row with no unmasked token
    contributes 0. Padded positions (mask 0) may hold any finite or infinite log-prob: the exponents
    are masked before ``exp``, so they change neither the loss nor its gradient.

    ``stats`` (Python floats), with TRL's meaning: ``clip_fraction`` (TRL's ``clip_ratio/region_mean``),
    ``clip_low_fraction`` and ``clip_high_fraction`` (``clip_ratio/low_mean``, ``/high_mean``): the share
    of unmasked tokens (of sequences, at the sequence level) where the clip binds, rho < 1 - eps_low
    with A < 0, rho > 1 + eps_high with A > 0, or either; ``clip_low_min`` and ``clip_high_max``
    (``clip_ratio/low_min``, ``/high_max``): the smallest per-sequence low share and the largest high
    share; ``mean_kl`` (TRL's ``kl``): the masked mean of w k3 when ``ref_logp`` is given, else 0.0,
    whatever ``kl_estimator`` is; and ``mean_ratio``, the masked token mean of the ratio.
    """
    a = advantages.to(logp.dtype)
    a = a.unsqueeze(1) if a.dim() == 1 else a                                       # (B, 1) or (B, T)
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
    kl = None
    if ref_logp is not None:
        log_ref_over_pi = torch.where(real, ref_logp - logp, zero)                   # (B, T)
        kl = k3(log_ref_over_pi)                                                    # (B, T)
        penalty = kl if kl_estimator == "k3" else KL_ESTIMATORS[kl_estimator](log_ref_over_pi)
        if use_bias_correction_kl:        # TRL's: times the ratio, before delta's cap, not detached
            kl, penalty = kl * ratio, penalty * ratio
    if delta is not None:
        ratio = torch.clamp(ratio, max=delta)
    per_token = -torch.minimum(ratio * a, clipped_ratio * a)                        # (B, T) or (B, 1)
    if beta > 0:
        per_token = per_token + beta * penalty                                      # (B, T)

    masked = per_token * m                                                          # (B, T)
    loss = LOSS_TYPES[loss_type].aggregate(masked, m, max_completion_length)

    with torch.no_grad():
        stats = _clip_stats(ratio, a, m, eps_low, eps_high, importance_sampling_level == "sequence") | {
            "mean_ratio": float((ratio.expand_as(logp) * m).sum() / m.sum().clamp(min=1)),
            "mean_kl": float((kl * m).sum() / m.sum().clamp(min=1)) if kl is not None else 0.0,
        }
    return loss, stats


def _clip_stats(ratio, a, m, eps_low, eps_high, per_sequence_ratio: bool) -> dict:
    """Where the clip binds, counted as TRL 1.16 logs it: over unmasked tokens, or over sequences when
    each sequence has one ratio (GSPO); the low and high sides apart (a side's clip set to inf is off)."""
    low = clip_binds_mask(ratio, a, eps_low, math.inf).to(m.dtype)
    high = clip_binds_mask(ratio, a, math.inf, eps_high).to(m.dtype)
    region = clip_binds_mask(ratio, a, eps_low, eps_high).to(m.dtype)
    if per_sequence_ratio:
        share, per_sequence = (lambda x: float(x.mean())), (lambda x: x[:, 0])
    else:
        share = lambda x: float((x * m).sum() / m.sum().clamp(min=1))            # noqa: E731
        per_sequence = lambda x: (x * m).sum(dim=1) / m.sum(dim=1)               # noqa: E731 (NaN: no token)
    low_shares, high_shares = per_sequence(low), per_sequence(high)
    counted = ~torch.isnan(low_shares)
    return {"clip_fraction": share(region), "clip_low_fraction": share(low), "clip_high_fraction": share(high),
            "clip_low_min": float(low_shares[counted].min()) if counted.any() else math.nan,
            "clip_high_max": float(high_shares[counted].max()) if counted.any() else math.nan}
