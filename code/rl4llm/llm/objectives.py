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

A loss type (:data:`rl4llm.math.loss_types.LOSS_TYPES`) names its objective, so the config reaches an
objective by the loss type's name (``grpo_loss(..., loss_type="cispo")``). A successor (SAPO's soft gate,
LUSPO, VESPO) is one more :class:`Objective` here and one loss type there.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import torch

from .._checks import clip_range, positive_real
from ..math.loss_types import LOSS_TYPES
from ..math.ppo_clip import clip_binds_mask

#: CISPO's cap on the weight when none is given: ScaleRL's epsilon_max, which TRL 1.16 recommends.
EPS_MAX = 5.0


@dataclass(frozen=True)
class Objective:
    """One per-token objective: ``per_token(ratio, a, logp, eps_low, eps_high, delta)`` is l_it (ratio
    (B, T) or (B, 1) with its gradient, a the advantages (B, 1) or (B, T), logp (B, T) masked to 0 where
    padded); ``eps_range`` is the relation that checks and fills ``eps_low`` and ``eps_high`` among
    ``grpo_loss``'s arguments; ``binds(ratio, a, eps_low, eps_high)`` is where its clip or cap binds (the
    tokens TRL counts in its clip ratios)."""
    name: str
    per_token: Callable
    eps_range: Callable
    binds: Callable

    def __repr__(self) -> str:
        return f"Objective({self.name!r})"


def clipped_surrogate(ratio, a, logp, eps_low, eps_high, delta):
    """PPO's clipped surrogate, negated: -min(rho A, clip(rho, 1 - eps_low, 1 + eps_high) A) (chapters 11, 13),
    the unclipped rho capped at ``delta`` when given (the clipped one is not)."""
    clipped_ratio = torch.clamp(ratio, 1 - eps_low, 1 + eps_high)
    if delta is not None:
        ratio = torch.clamp(ratio, max=delta)
    return -torch.minimum(ratio * a, clipped_ratio * a)


def capped_weight(ratio, a, logp, eps_low, eps_high, delta):
    """CISPO's per-token loss: -sg(min(rho, eps_high)) A ln pi(o) (chapter 18; ``eps_low`` and ``delta`` unused)."""
    return -torch.clamp(ratio, max=eps_high).detach() * a * logp


def _cap(args):
    """Relation: CISPO's cap ``eps_high`` is a finite number > 0 (:data:`EPS_MAX` when None); ``eps_low`` is
    unused (the cap is one-sided), as in TRL."""
    args["eps_high"] = EPS_MAX if args["eps_high"] is None else positive_real(args["eps_high"], "eps_high")


#: name -> Objective, in the order the book introduces them.
OBJECTIVES = {
    "clip": Objective("clip", clipped_surrogate, clip_range("eps_low", "eps_high"), clip_binds_mask),
    "cispo": Objective("cispo", capped_weight, _cap,
                       lambda ratio, a, eps_low, eps_high: clip_binds_mask(ratio, a, math.inf, eps_high - 1)),
}


def eps_for_loss_type(args):
    """Relation: the objective of the loss type ``args["loss_type"]`` checks ``eps_low`` and ``eps_high`` and
    fills them in (the clip's ``eps_high`` defaults to ``eps_low``; CISPO's cap to :data:`EPS_MAX`)."""
    OBJECTIVES[LOSS_TYPES[args["loss_type"]].objective].eps_range(args)
