"""When the sampler is not the trainer: TRL 1.16's correction of the mismatch (chapter 20).

A rollout engine draws completion y_i from its own copy of the policy, pi_samp (lower precision,
weights some updates old), and records log pi_samp(y_it) of every drawn token. The trainer scores
the same tokens with its own weights, log pi_old(y_it), before its first update. The gap

    d_it = log pi_old(y_it) - log pi_samp(y_it)            (0 on padding)

is chapter 10's importance sampling again: the samples came from pi_samp, the gradient is wanted
under pi_old, so each sample should carry the ratio pi_old / pi_samp. TRL 1.16 forms it per token
or per sequence and tames it with a cap C_max (and an optional floor C_min),
``vllm_importance_sampling_mode``:

    token_*:     r_it = exp(d_it)                   one ratio per token, shaped (B, T)
    sequence_*:  r_i  = exp(sum_t d_it)             pi_old(y_i) / pi_samp(y_i), shaped (B, 1)
    *_truncate:  w = clamp(r, C_min, C_max)         (Ionides' truncated importance sampling)
    *_mask:      w = r where C_min <= r <= C_max, else 0

and multiplies each token's clipped loss by w (a constant: no gradient flows through it). The
sequence ratio is the product of the token ratios, so its log is a sum of T terms and its variance
grows with the length (chapter 18); the cap bounds the variance that chapter 10 measured.

DeepSeek-V3.2's off-policy sequence mask (TRL's ``off_policy_mask_threshold`` delta) drops a whole
sequence when its advantage is negative and the policy has moved far from the sampler on it:

    keep_i = [A_i >= 0] or [ (1/|y_i|) sum_t m_it (log pi_samp(y_it) - log pi_theta(y_it)) <= delta ],

measured at every inner step with the current policy's log-probs (no gradient). Both live here once,
computed exactly as TRL 1.16 computes them (``tests/test_rollout_correction.py`` runs TRL's own code on
the same batch).
"""
from __future__ import annotations

import math

import torch

from .._checks import checked, in_range, one_of, optional, tensor

#: TRL 1.16's ``vllm_importance_sampling_mode`` values: granularity (token, sequence) x what happens
#: outside [C_min, C_max] (truncate: clamp to the range; mask: weight 0).
IMPORTANCE_SAMPLING_MODES = ("token_truncate", "token_mask", "sequence_truncate", "sequence_mask")


def _token_batch(args):
    """The log-prob tensors and the mask share one (B, T) shape; the mask holds only 0 and 1."""
    names = [n for n in ("trainer_logp", "logp", "sampler_logp", "mask") if n in args]
    shape = tuple(args[names[0]].shape)
    if len(shape) != 2:
        raise ValueError(f"{names[0]} must be shaped (B, T), got {shape}")
    for name in names[1:]:
        if tuple(args[name].shape) != shape:
            raise ValueError(f"{name} must have the shape of {names[0]} {shape}, got {tuple(args[name].shape)}")
    if not bool(((args["mask"] == 0) | (args["mask"] == 1)).all()):
        raise ValueError("mask must contain only 0 and 1")
    if "advantages" in args and tuple(args["advantages"].shape) not in ((shape[0],), (shape[0], 1)):
        raise ValueError(f"advantages must be shaped (B,) or (B, 1) with B = {shape[0]}, "
                         f"got {tuple(args['advantages'].shape)}")


def cap_range(mode: str = "mode", clip_max: str = "clip_max", clip_min: str = "clip_min"):
    """Relation: the named arguments are a mode and its bounds, C_min <= C_max, and a ``*_truncate``
    mode has at least one of them (:class:`rl4llm.llm.samplers.RolloutEngineSampler` checks its fields
    with it)."""
    def relation(args):
        low, high = args[clip_min], args[clip_max]
        if low is not None and high is not None and low > high:
            raise ValueError(f"{clip_min} must be <= {clip_max}, got {clip_min}={low} and {clip_max}={high}")
        if low is None and high is None and args[mode].endswith("truncate"):
            raise ValueError(f"{clip_min} and {clip_max} must not both be None when {mode}={args[mode]!r} "
                             f"(nothing to truncate to)")
    return relation


_RATIO = optional(in_range(0.0, math.inf, high_open=True))


@checked(_token_batch, trainer_logp=tensor, sampler_logp=tensor, mask=tensor)
def sampler_gap(trainer_logp: torch.Tensor, sampler_logp: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """The sampler/trainer gap of every completion token, d_it = m_it (log pi_old - log pi_samp),
    shaped (B, T) and 0 on padding (chapter 20). Its row sums are the log of each sequence's ratio
    pi_old(y_i) / pi_samp(y_i); TRL logs mean and max of |d_it| over the completion tokens as
    ``sampling/sampling_logp_difference/mean`` and ``/max``."""
    return (trainer_logp - sampler_logp) * mask


@checked(_token_batch, cap_range(), trainer_logp=tensor, sampler_logp=tensor, mask=tensor,
         mode=one_of(IMPORTANCE_SAMPLING_MODES), clip_max=_RATIO, clip_min=_RATIO)
def importance_weights(trainer_logp: torch.Tensor, sampler_logp: torch.Tensor, mask: torch.Tensor, *,
                       mode: str = "sequence_mask", clip_max: float | None = 3.0,
                       clip_min: float | None = None) -> torch.Tensor:
    """TRL 1.16's importance weight for a sampler that is not the trainer (chapter 20).

    With d = :func:`sampler_gap`: ``token_*`` modes take r_it = exp(d_it), shaped (B, T) (1 on
    padding); ``sequence_*`` modes take r_i = exp(sum_t d_it), shaped (B, 1). ``*_truncate`` clamps
    r to [clip_min, clip_max]; ``*_mask`` sets it to 0 outside that range (None: no bound on that
    side). Defaults are TRL's: ``sequence_mask`` with clip_max = 3. The loss multiplies each token's
    clipped term by this weight, which carries no gradient.
    """
    gap = sampler_gap.unchecked(trainer_logp, sampler_logp, mask).detach()
    log_ratio = gap.sum(dim=-1, keepdim=True) if mode.startswith("sequence") else gap
    ratio = torch.exp(log_ratio)
    if mode.endswith("truncate"):
        return torch.clamp(ratio, min=clip_min, max=clip_max)
    low = -math.inf if clip_min is None else clip_min
    high = math.inf if clip_max is None else clip_max
    return ratio.masked_fill((ratio < low) | (ratio > high), 0.0)


@checked(_token_batch, advantages=tensor, logp=tensor, sampler_logp=tensor, mask=tensor,
         threshold=in_range(0.0, math.inf, high_open=True))
def off_policy_mask(advantages: torch.Tensor, logp: torch.Tensor, sampler_logp: torch.Tensor,
                    mask: torch.Tensor, threshold: float) -> torch.Tensor:
    """DeepSeek-V3.2's off-policy sequence mask, as TRL 1.16's ``off_policy_mask_threshold`` (chapter 20).

    keep_i = 1 if A_i >= 0 or the sequence's mean k1 estimate of KL(pi_samp || pi_theta),
    sum_t m_it (log pi_samp - log pi_theta) / sum_t m_it, is <= ``threshold``; else 0. Shaped
    (B, 1). ``logp`` is the current policy's (detached here: the mask is a constant); a sequence is
    dropped only when it is both bad (A < 0) and far off-policy, since pushing down an answer the
    policy no longer produces teaches little and can destabilise it.
    """
    kl = (sampler_logp - logp.detach()) * mask
    mean_kl = kl.sum(dim=1, keepdim=True) / mask.sum(dim=1, keepdim=True).clamp(min=1.0)
    return ((advantages.reshape(-1, 1) >= 0) | (mean_kl <= threshold)).to(mask.dtype)


def weighted_advantages(advantages: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """A w for weights w >= 0 (chapter 20): one per sequence, (B, 1), gives A_i w_i shaped (B,) like
    ``advantages``; one per token, (B, T), gives A_i w_it shaped (B, T) (``advantages`` may already be).

    PPO's clipped term is positively homogeneous in the advantage: for w >= 0 with no gradient,
    w min(rho A, clip(rho) A) = min(rho (w A), clip(rho) (w A)). So an importance weight (any of TRL's
    four modes), the off-policy mask, or their product can ride on the advantage:
    :func:`rl4llm.llm.grpo.grpo_loss` with ``advantages = A w`` is TRL's loss with ``per_token_loss * w``,
    the KL term left unweighted as in TRL.
    """
    w = weights.to(advantages.dtype)
    if advantages.dim() == 1 and w.shape[1] == 1:
        return advantages * w.reshape(-1)                                           # (B,)
    return (advantages.unsqueeze(1) if advantages.dim() == 1 else advantages) * w   # (B, T)
