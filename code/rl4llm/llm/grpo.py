"""GRPO's batched loss (chapters 13-15, 17, 18): ``grpo_loss`` is the loss the tiny transformer of chapter
15 trains with, batched (B, T) tensors with a completion mask, no Python loop over tokens or sequences.

Its advantages come from :func:`rl4llm.math.credit.group_advantages` (the group mean is the baseline, no
critic); its per-token objective and its aggregation from the loss type's registry entries
(:data:`rl4llm.math.loss_types.LOSS_TYPES`, :data:`rl4llm.llm.objectives.OBJECTIVES`). ``cispo_loss`` is
the CISPO loss type's route through it.
"""
from __future__ import annotations

import math

import torch

from .._checks import at_least, checked, flag, in_range, nonnegative_real, one_of, optional, tensor
from ..math.importance_sampling import mean_over_tokens
from ..math.loss_types import LOSS_TYPES
from .objectives import EPS_MAX, OBJECTIVES, SOFT_KNOB_RULES, SOFT_KNOBS, eps_for_loss_type

#: Where GRPO's importance ratio lives: one per token (GRPO, PPO), or one per sequence (GSPO).
IMPORTANCE_SAMPLING_LEVELS = ("token", "sequence")


def k3(log_ref_over_pi: torch.Tensor) -> torch.Tensor:
    """k3 = e^x - x - 1 >= 0 with x = log pi_ref - log pi at a sampled token (chapter 14): its mean
    over samples of pi estimates KL(pi || pi_ref) without bias, and no term is ever negative."""
    return torch.exp(log_ref_over_pi) - log_ref_over_pi - 1


#: The per-token estimates of KL(pi || pi_ref) that ``grpo_loss`` can weigh by beta, each a function of
#: u = log pi_ref - log pi at a token sampled from pi (chapter 17 derives their values and gradients):
#: k1 = -u = log(pi / pi_ref), k2 = u^2 / 2, k3 = e^u - u - 1.
KL_ESTIMATORS = {"k1": torch.neg, "k2": lambda u: u ** 2 / 2, "k3": k3}


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


@checked(eps_for_loss_type, _loss_batch,
         logp=tensor, old_logp=tensor, advantages=tensor, mask=tensor, ref_logp=optional(tensor),
         beta=nonnegative_real, loss_type=one_of(LOSS_TYPES), max_completion_length=optional(at_least(1)),
         importance_sampling_level=one_of(IMPORTANCE_SAMPLING_LEVELS),
         delta=optional(in_range(1.0, math.inf, low_open=True, high_open=True)),
         kl_estimator=one_of(KL_ESTIMATORS), use_bias_correction_kl=flag, **SOFT_KNOB_RULES)
def grpo_loss(logp: torch.Tensor, old_logp: torch.Tensor, advantages: torch.Tensor, mask: torch.Tensor, *,
              eps_low: float = 0.2, eps_high: float | None = None, beta: float = 0.0,
              ref_logp: torch.Tensor | None = None, loss_type: str = "grpo",
              max_completion_length: int | None = None, importance_sampling_level: str = "token",
              delta: float | None = None, kl_estimator: str = "k3",
              use_bias_correction_kl: bool = False,
              sapo_temperature_pos: float = SOFT_KNOBS["sapo_temperature_pos"],
              sapo_temperature_neg: float = SOFT_KNOBS["sapo_temperature_neg"],
              vespo_k_pos: float = SOFT_KNOBS["vespo_k_pos"], vespo_lambda_pos: float = SOFT_KNOBS["vespo_lambda_pos"],
              vespo_k_neg: float = SOFT_KNOBS["vespo_k_neg"],
              vespo_lambda_neg: float = SOFT_KNOBS["vespo_lambda_neg"]) -> tuple[torch.Tensor, dict]:
    """The GRPO loss to MINIMISE (the negated clipped objective), and its diagnostics (chapters 13-14).

    Per token t of completion i, with rho = exp(logp - old_logp) and A_i broadcast over tokens (or A_it,
    when ``advantages`` is (B, T): an advantage per token, at the token level; chapter 20's trainer passes
    A_i w_it, TRL's per-token importance weight w_it >= 0 riding on the advantage, which equals TRL's
    ``per_token_loss * importance_sampling_ratio`` because the clipped term is positively homogeneous):

        l_it = -min(rho_it A_i, clip(rho_it, 1 - eps_low, 1 + eps_high) A_i) + beta w_it k_it,
        k3_it = exp(ref_it - logp_it) - (ref_it - logp_it) - 1      (the default k, when beta > 0),

    aggregated over the unmasked tokens m_it by ``loss_type`` (:mod:`rl4llm.math.loss_types`):
    ``"grpo"`` the mean per sequence, then over sequences; ``"bnpo"`` and ``"dapo"`` one mean over all
    tokens; ``"dr_grpo"`` the token sum over B * max_completion_length; ``"luspo"`` each answer's token
    sum, then the mean over answers. The first term is the loss type's per-token objective
    (:data:`rl4llm.llm.objectives.OBJECTIVES`): PPO's clip above; for ``"cispo"`` (chapter 18, DAPO's
    token mean) -sg(min(rho_it, eps_high)) A_i logp_it, where ``eps_high`` is the absolute cap (TRL's
    ``epsilon_high``; 5 when None); for ``"sapo"`` (``"grpo"``'s aggregation) SAPO's soft gate
    -(4 / tau) sigmoid(tau (rho_it - 1)) A_i, tau = ``sapo_temperature_pos`` where A_i > 0, else
    ``sapo_temperature_neg``; for ``"vespo"`` (DAPO's token mean) -sg(phi(w_i)) A_i logp_it with VESPO's
    gamma weight of the sequence's product ratio w_i and the ``vespo_*`` knobs (chapter 17). ``eps_low``
    and ``delta`` play no part outside the clip, nor the SAPO and VESPO knobs outside their own.

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

    ``stats`` (Python floats), with TRL's meaning (the clip shares are 0 for SAPO and VESPO, which have no
    clip; VESPO adds ``phi_seq_mean``, TRL's ``vespo/phi_seq_mean``, the mean of phi over the rows): ``clip_fraction`` (TRL's ``clip_ratio/region_mean``),
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
    token_log_ratio = torch.where(real, logp - old_logp, zero)                      # (B, T)
    log_ratio = token_log_ratio
    if importance_sampling_level == "sequence":
        log_ratio = mean_over_tokens(log_ratio, m)                                  # (B, 1)
    ratio = torch.exp(log_ratio)                                                    # (B, T) or (B, 1)
    kl = None
    if ref_logp is not None:
        log_ref_over_pi = torch.where(real, ref_logp - logp, zero)                   # (B, T)
        kl = k3(log_ref_over_pi)                                                    # (B, T)
        penalty = kl if kl_estimator == "k3" else KL_ESTIMATORS[kl_estimator](log_ref_over_pi)
        if use_bias_correction_kl:        # TRL's: times the ratio, before delta's cap, not detached
            kl, penalty = kl * ratio, penalty * ratio
    objective = OBJECTIVES[LOSS_TYPES[loss_type].objective]
    knobs = {"eps_low": eps_low, "eps_high": eps_high, "delta": delta,
             "sapo_temperature_pos": sapo_temperature_pos, "sapo_temperature_neg": sapo_temperature_neg,
             "vespo_k_pos": vespo_k_pos, "vespo_lambda_pos": vespo_lambda_pos,
             "vespo_k_neg": vespo_k_neg, "vespo_lambda_neg": vespo_lambda_neg}
    per_token = objective.per_token(ratio, a, torch.where(real, logp, zero), token_log_ratio, m, knobs)
    if delta is not None:
        ratio = torch.clamp(ratio, max=delta)
    if beta > 0:
        per_token = per_token + beta * penalty                                      # (B, T)

    masked = per_token * m                                                          # (B, T)
    loss = LOSS_TYPES[loss_type].aggregate(masked, m, max_completion_length)

    with torch.no_grad():
        stats = _clip_stats(objective.binds, ratio, a, m, eps_low, eps_high,
                            importance_sampling_level == "sequence") | {
            "mean_ratio": float((ratio.expand_as(logp) * m).sum() / m.sum().clamp(min=1)),
            "mean_kl": float((kl * m).sum() / m.sum().clamp(min=1)) if kl is not None else 0.0,
        } | objective.stats(token_log_ratio, a, m, knobs)
    return loss, stats


def _clip_stats(binds, ratio, a, m, eps_low, eps_high, per_sequence_ratio: bool) -> dict:
    """Where the objective's clip (or cap) ``binds``, counted as TRL 1.16 logs it: over unmasked tokens, or
    over sequences when each sequence has one ratio (GSPO); the low and high sides apart (a side's clip
    set to inf is off)."""
    low = binds(ratio, a, eps_low, math.inf).to(m.dtype)
    high = binds(ratio, a, math.inf, eps_high).to(m.dtype)
    region = binds(ratio, a, eps_low, eps_high).to(m.dtype)
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


def cispo_loss(logp: torch.Tensor, old_logp: torch.Tensor, advantages: torch.Tensor, mask: torch.Tensor, *,
               eps_max: float = EPS_MAX) -> tuple[torch.Tensor, dict]:
    """CISPO's loss to MINIMISE (chapter 18): ``grpo_loss(..., loss_type="cispo", eps_high=eps_max)``, that is
    -sum m sg(min(rho, eps_max)) A logp / sum m (:mod:`rl4llm.llm.objectives`), TRL 1.16's
    ``loss_type="cispo"`` with ``epsilon_high=eps_max`` (> 0). Returns ``(loss, stats)``: ``grpo_loss``'s
    stats, with ``stats["clip_ratio"]`` TRL's ``cispo_clip_ratio`` (the share of unmasked tokens whose
    ratio is above the cap and whose advantage is positive: ``clip_fraction``) and
    ``stats["capped_fraction"]`` the share above the cap whatever the advantage (those tokens still get a
    gradient)."""
    loss, stats = grpo_loss(logp, old_logp, advantages, mask, loss_type="cispo", eps_high=eps_max)
    m = mask.to(logp.dtype)
    capped = torch.where(m > 0, logp - old_logp, torch.zeros_like(logp)).detach().exp() > eps_max
    return loss, stats | {"clip_ratio": stats["clip_fraction"],
                          "capped_fraction": float((capped * m).sum() / m.sum().clamp(min=1))}
