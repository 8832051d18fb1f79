"""GRPO's per-token objectives, one registry (chapters 13, 18): what each token's loss l_it is, given its
importance ratio rho_it = exp(logp_it - old_it) and its advantage A_i.

- ``"clip"`` (PPO, GRPO, DAPO, Dr. GRPO; chapters 11, 13): l_it = -min(rho_it A_i, clip(rho_it, 1 - eps_low,
  1 + eps_high) A_i), with ``delta`` (TRL's two-sided clipping) capping the unclipped rho at delta > 1.
- ``"cispo"`` (MiniMax-M1, 2025; chapter 18): l_it = -sg(min(rho_it, eps_high)) A_i ln pi(o_it), sg stopping
  the gradient. Its gradient on token t is -min(rho_t, eps_high) A_i grad ln pi(o_it) (over the
  aggregation's normaliser): the weight is capped but never zero, so every token keeps a gradient, where
  the clip sets the gradient of a token whose ratio left the band on the advantage's side to zero. The
  cap is absolute and one-sided: MiniMax-M1 writes the weight as clip(rho, 1 - eps_low, 1 + eps_high) with
  eps_low large enough to leave the lower side open, which is min(rho, 1 + eps_high); TRL 1.16
  (``loss_type="cispo"``) computes ``clamp(coef_1, max=epsilon_high)``, so its ``epsilon_high`` is the cap
  itself, not a width (ScaleRL and TRL's documentation use 5, :data:`EPS_MAX`; DAPO's
  ``epsilon_high=0.28`` copied into a CISPO run would cap every weight at 0.28).

- ``"sapo"`` (*Soft Adaptive Policy Optimization*, arXiv 2511.20347; chapter 17):
  l_it = -(4 / tau) sigmoid(tau (rho_it - 1)) A_i, tau = tau_pos where A_i > 0, else tau_neg (TRL's
  ``sapo_temperature_pos`` = 1 and ``sapo_temperature_neg`` = 1.05). Its gradient on token t is
  -4 sigmoid'(tau (rho - 1)) rho A_i grad ln pi(o_it) = -rho sech^2(tau (rho - 1) / 2) A_i grad ln pi: the
  weight is rho at rho = 1 (PPO's) and fades smoothly to 0 as rho leaves 1 on either side, where the clip
  cuts to 0 at the band's edge and only on the advantage's side.
- ``"vespo"`` (*Variational Sequence-Level Soft Policy Optimization*, arXiv 2602.10693; chapter 17):
  l_it = -sg(phi(w_i)) A_i ln pi(o_it), with the SEQUENCE ratio w_i = exp(sum_t m_it (logp_it - old_it))
  (a product over the tokens, not GSPO's geometric mean) and the gamma-shaped weight
  phi(w) = e^lambda w^k e^(-lambda w), so phi(1) = 1; (k, lambda) = (k_pos, lambda_pos) = (2, 3) where
  A_i >= 0, (k_neg, lambda_neg) = (3, 2) where A_i < 0 (TRL's ``vespo_*`` knobs). phi rises as w^k
  below 1 and falls as e^(-lambda w) above it, peaking at w = k / lambda: it damps a sequence whose
  ratio left 1 either way, as CISPO's cap damps a token from above only. TRL 1.16 computes it in log
  space: each log-ratio clamped to [-20, 20], their sum to [ln 1e-8, 20], a NaN or infinite phi set to 0.

A loss type (:data:`rl4llm.math.loss_types.LOSS_TYPES`) names its objective, so the config reaches an
objective by the loss type's name (``grpo_loss(..., loss_type="cispo")``). LUSPO is no new objective: it
is PPO's clip with a sum over each answer's tokens (the registry's ``"luspo"``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import torch

from .._checks import clip_range, nonnegative_real, positive_real
from ..math.loss_types import LOSS_TYPES
from ..math.ppo_clip import clip_binds_mask

#: CISPO's cap on the weight when none is given: ScaleRL's epsilon_max, which TRL 1.16 recommends.
EPS_MAX = 5.0

#: The knobs of SAPO's gate and VESPO's weight, TRL 1.16's names and defaults (``grpo_loss`` takes them by
#: these names; the clip and CISPO ignore them).
SOFT_KNOBS = {"sapo_temperature_pos": 1.0, "sapo_temperature_neg": 1.05, "vespo_k_pos": 2.0,
              "vespo_lambda_pos": 3.0, "vespo_k_neg": 3.0, "vespo_lambda_neg": 2.0}

#: The rule each of :data:`SOFT_KNOBS` must satisfy: a temperature and a decay are > 0, a power >= 0.
SOFT_KNOB_RULES = {name: nonnegative_real if "_k_" in name else positive_real for name in SOFT_KNOBS}


@dataclass(frozen=True)
class Objective:
    """One per-token objective: ``per_token(ratio, a, logp, log_ratio, m, knobs)`` is l_it (ratio (B, T) or
    (B, 1) with its gradient, a the advantages (B, 1) or (B, T), logp (B, T) and the per-token log-ratio
    log_ratio (B, T) masked to 0 where padded, m the 0/1 mask, ``knobs`` a dict of ``eps_low``,
    ``eps_high``, ``delta`` and :data:`SOFT_KNOBS`); ``eps_range`` is the relation that checks and fills
    ``eps_low`` and ``eps_high`` among ``grpo_loss``'s arguments; ``binds(ratio, a, eps_low, eps_high)`` is
    where its clip or cap binds (the tokens TRL counts in its clip ratios; never, for a soft weight);
    ``stats(log_ratio, a, m, knobs)`` the extra diagnostics it logs (VESPO's mean phi)."""
    name: str
    per_token: Callable
    eps_range: Callable
    binds: Callable
    stats: Callable = lambda log_ratio, a, m, knobs: {}

    def __repr__(self) -> str:
        return f"Objective({self.name!r})"


def clipped_surrogate(ratio, a, logp, log_ratio, m, knobs):
    """PPO's clipped surrogate, negated: -min(rho A, clip(rho, 1 - eps_low, 1 + eps_high) A) (chapters 11, 13),
    the unclipped rho capped at ``delta`` when given (the clipped one is not)."""
    clipped_ratio = torch.clamp(ratio, 1 - knobs["eps_low"], 1 + knobs["eps_high"])
    if knobs["delta"] is not None:
        ratio = torch.clamp(ratio, max=knobs["delta"])
    return -torch.minimum(ratio * a, clipped_ratio * a)


def capped_weight(ratio, a, logp, log_ratio, m, knobs):
    """CISPO's per-token loss: -sg(min(rho, eps_high)) A ln pi(o) (chapter 18; ``eps_low`` and ``delta`` unused)."""
    return -torch.clamp(ratio, max=knobs["eps_high"]).detach() * a * logp


def soft_gate(ratio, a, logp, log_ratio, m, knobs):
    """SAPO's per-token loss: -(4 / tau) sigmoid(tau (rho - 1)) A, tau = ``sapo_temperature_pos`` where A > 0,
    else ``sapo_temperature_neg`` (chapter 17; the eps and ``delta`` unused)."""
    tau = torch.where(a > 0, knobs["sapo_temperature_pos"], knobs["sapo_temperature_neg"])
    return -torch.sigmoid(tau * (ratio - 1)) * 4 / tau * a


def gamma_weight(log_ratio, a, m, knobs):
    """VESPO's per-sequence weight phi(w) = exp(lambda + k ln w - lambda w) (B, 1), no gradient: ln w the masked
    sum of the per-token log-ratios (each clamped to [-20, 20]; the sum to [ln 1e-8, 20]), (k, lambda) the
    positive pair where A >= 0, the negative one where A < 0; a NaN or infinite phi is 0 (as TRL 1.16)."""
    with torch.no_grad():
        log_w = (torch.clamp(log_ratio, -20.0, 20.0) * m).sum(dim=-1, keepdim=True).clamp(math.log(1e-8), 20.0)
        nonneg = a >= 0
        k = torch.where(nonneg, knobs["vespo_k_pos"], knobs["vespo_k_neg"])
        lam = torch.where(nonneg, knobs["vespo_lambda_pos"], knobs["vespo_lambda_neg"])
        phi = torch.exp(lam + k * log_w - lam * torch.exp(log_w))
        return phi.nan_to_num(nan=0.0, posinf=0.0, neginf=0.0)


def gamma_weighted(ratio, a, logp, log_ratio, m, knobs):
    """VESPO's per-token loss: -sg(phi(w_i)) A ln pi(o) (:func:`gamma_weight`; chapter 17)."""
    return -gamma_weight(log_ratio, a, m, knobs) * a * logp


def _cap(args):
    """Relation: CISPO's cap ``eps_high`` is a finite number > 0 (:data:`EPS_MAX` when None); ``eps_low`` is
    unused (the cap is one-sided), as in TRL."""
    args["eps_high"] = EPS_MAX if args["eps_high"] is None else positive_real(args["eps_high"], "eps_high")


def _never(ratio, a, eps_low, eps_high):
    """A soft weight has no clip to bind: False everywhere."""
    return torch.zeros_like(ratio * a, dtype=torch.bool)


#: name -> Objective, in the order the book introduces them.
OBJECTIVES = {
    "clip": Objective("clip", clipped_surrogate, clip_range("eps_low", "eps_high"), clip_binds_mask),
    "cispo": Objective("cispo", capped_weight, _cap,
                       lambda ratio, a, eps_low, eps_high: clip_binds_mask(ratio, a, math.inf, eps_high - 1)),
    "sapo": Objective("sapo", soft_gate, clip_range("eps_low", "eps_high"), _never),
    "vespo": Objective("vespo", gamma_weighted, clip_range("eps_low", "eps_high"), _never,
                       lambda log_ratio, a, m, knobs: {"phi_seq_mean": float(gamma_weight(log_ratio, a, m, knobs).mean())}),
}


def eps_for_loss_type(args):
    """Relation: the objective of the loss type ``args["loss_type"]`` checks ``eps_low`` and ``eps_high`` and
    fills them in (the clip's ``eps_high`` defaults to ``eps_low``; CISPO's cap to :data:`EPS_MAX`)."""
    OBJECTIVES[LOSS_TYPES[args["loss_type"]].objective].eps_range(args)
