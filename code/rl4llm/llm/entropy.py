"""Entropy control, a strategy the trainer calls (chapter 18): TRL 1.16's three entropy knobs and the two
covariance methods of Cui et al. (2025), Clip-Cov and KL-Cov, beside the clipped loss.

:class:`EntropyControl` wraps :func:`rl4llm.llm.grpo.grpo_loss` as TRL's ``_compute_loss`` wraps its policy
loss. With H_t the policy's entropy at token t and m_t the loss's mask:

* ``top_quantile`` = rho < 1 (TRL's ``top_entropy_quantile``, the 80/20 paper's rho = 0.2): the policy
  term keeps only the tokens with H_t >= the (1 - rho) quantile of the unmasked H (``torch.quantile``,
  linear interpolation, as TRL's ``get_high_entropy_mask``); every other token's policy loss is 0 but still
  counts in the loss type's normaliser, and the KL term keeps every token. Implemented as the advantage
  times that 0/1 mask, which is the same per-token loss because the clipped term is linear in A.
* ``coef`` = c > 0 (TRL's ``entropy_coef``): loss <- loss - c * sum_t e_t H_t / max(1, sum_t e_t), the mean
  entropy over the effective mask e = m (times the top-quantile mask when rho < 1), whatever the loss type.
* ``adaptive`` (TRL's ``use_adaptive_entropy`` with ``entropy_target``, ``entropy_coef_delta``, ``_min``,
  ``_max``): c follows :func:`rl4llm.math.entropy.adaptive_entropy_step` once per optimizer step.
* ``cov`` = "clip_cov" or "kl_cov" (verl's ``loss_mode``, with ``cov_ratio``, ``clip_cov_lb``,
  ``clip_cov_ub``, ``kl_coef``): the tokens of :func:`rl4llm.math.entropy.clip_cov_tokens` get a 0
  advantage (their gradient detached); those of :func:`rl4llm.math.entropy.kl_cov_tokens` add
  kl_coef |log pi - log pi_old| to their per-token loss, aggregated by the loss type. verl's KL-Cov also
  drops the ratio clip on every token; here the run's clip stays (set it wide to get verl's loss).

``EntropyControl()`` changes nothing: its loss is ``grpo_loss``'s, bit for bit.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from .._checks import at_least, check_fields, flag, in_range, one_of, optional
from ..math.entropy import adaptive_entropy_step, clip_cov_tokens, kl_cov_tokens, token_covariance
from ..math.loss_types import LOSS_TYPES
from ..math.ppo_clip import clip_binds_mask
from .grpo import grpo_loss

COV_METHODS = ("clip_cov", "kl_cov")
_REAL, _ANY = in_range(0.0, math.inf, high_open=True), in_range(-math.inf, math.inf, low_open=True, high_open=True)


def _coef_range(fields):
    """Relation: coef_min <= coef_max."""
    if fields["coef_min"] > fields["coef_max"]:
        raise ValueError(f"coef_min must be at most coef_max, got {fields['coef_min']} > {fields['coef_max']}")


def _cov_bounds(fields):
    """Relation: clip_cov_lb < clip_cov_ub."""
    if fields["clip_cov_lb"] >= fields["clip_cov_ub"]:
        raise ValueError(f"clip_cov_lb must be below clip_cov_ub, got {fields['clip_cov_lb']} >= "
                         f"{fields['clip_cov_ub']}")


@dataclass
class EntropyControl:
    """The entropy knobs of a run (chapter 18); TRL's defaults, and verl's for the covariance methods.
    ``last_entropy`` and ``steps`` are its state (the previous step's measured entropy; the optimizer
    steps taken, which seed Clip-Cov's draw with ``seed``), saved with a checkpoint."""
    coef: float = 0.0
    adaptive: bool = False
    target: float = 0.2
    delta: float = 0.005
    coef_min: float = 0.0
    coef_max: float = 1.0
    top_quantile: float = 1.0
    cov: str | None = None
    cov_ratio: float = 2e-4
    clip_cov_lb: float = 1.0
    clip_cov_ub: float = 5.0
    kl_coef: float = 1.0
    seed: int = 0
    last_entropy: float = math.inf
    steps: int = 0

    def __post_init__(self):
        check_fields(self, {"coef": _REAL, "adaptive": flag, "target": _REAL, "delta": _REAL, "coef_min": _REAL,
                            "coef_max": _REAL, "top_quantile": in_range(0.0, 1.0), "cov": optional(one_of(COV_METHODS)),
                            "cov_ratio": in_range(0.0, 1.0, low_open=True), "clip_cov_lb": _ANY,
                            "clip_cov_ub": _ANY, "kl_coef": _REAL, "seed": at_least(0), "steps": at_least(0)},
                     _coef_range, _cov_bounds)

    @property
    def bonus(self) -> bool:
        """Whether the loss carries the entropy bonus (TRL: a non-zero coefficient, or adaptive control)."""
        return self.coef != 0.0 or self.adaptive

    @property
    def per_token(self) -> bool:
        """Whether the advantages become per token (a top-quantile mask or a covariance method)."""
        return self.top_quantile < 1.0 or self.cov is not None

    def loss(self, logp, entropy, old_logp, advantages, mask, ref_logp, options: dict) -> tuple[torch.Tensor, dict]:
        """The loss of one optimizer step and ``grpo_loss``'s stats, plus ``entropy_coef`` (the coefficient
        after this step, as TRL logs it) and ``cov_fraction`` (the share of unmasked tokens a covariance
        method acted on). ``entropy`` (B, T) carries its gradient when the bonus is on."""
        effective = mask
        if self.per_token:
            a = advantages if advantages.dim() == 2 else advantages[:, None].expand_as(logp)
            keep = torch.ones_like(logp)
            if self.top_quantile < 1.0:
                keep = high_entropy_mask(entropy.detach(), mask, 1.0 - self.top_quantile).to(logp.dtype)
                effective = mask * keep
            selected = self._cov_tokens(logp, old_logp, a, mask, options)
            if self.cov == "clip_cov":
                keep = keep * (1.0 - selected)
            advantages = a * keep
        loss, stats = grpo_loss.unchecked(logp, old_logp, advantages, mask, ref_logp=ref_logp, **options)
        cov_fraction = 0.0
        if self.cov is not None:
            cov_fraction = float((selected * mask).sum() / mask.sum().clamp(min=1))
            if self.cov == "kl_cov":
                m = mask.to(logp.dtype)
                penalty = self.kl_coef * (logp - old_logp).abs() * selected * m
                loss = loss + LOSS_TYPES[options["loss_type"]].aggregate(penalty, m, options["max_completion_length"])
        if self.bonus:
            mean_entropy = (entropy * effective).sum() / effective.sum().clamp(min=1)
            loss = loss - self._coefficient(entropy, effective) * mean_entropy
        self.steps += 1
        return loss, stats | {"entropy_coef": self.coef, "cov_fraction": cov_fraction}

    def _cov_tokens(self, logp, old_logp, advantages, mask, options) -> torch.Tensor:
        """The 0/1 tensor of tokens the covariance method acts on (zeros without one)."""
        if self.cov is None:
            return torch.zeros_like(logp)
        m = mask.detach().cpu().numpy()
        cov = token_covariance(advantages.detach().cpu().double().numpy(), logp.detach().cpu().double().numpy(), m)
        if self.cov == "clip_cov":
            rho = torch.exp((logp - old_logp).detach() * mask)
            binds = clip_binds_mask(rho, advantages, options["eps_low"], options["eps_high"]).cpu().numpy()
            chosen = clip_cov_tokens(cov, (m > 0) & ~binds, self.cov_ratio, self.clip_cov_lb, self.clip_cov_ub,
                                     np.random.default_rng([self.seed, self.steps]))
        else:
            chosen = kl_cov_tokens(cov, self.cov_ratio)
        return torch.as_tensor(chosen, dtype=logp.dtype, device=logp.device)

    def _coefficient(self, entropy, effective) -> float:
        """The coefficient this step applies; with ``adaptive``, TRL's update of it and of ``last_entropy``."""
        if not self.adaptive:
            return self.coef
        measured = float((entropy.detach() * effective).sum() / effective.sum().clamp(min=1))
        applied, self.coef = adaptive_entropy_step(self.coef, self.last_entropy, measured, self.target, self.delta,
                                                   self.coef_min, self.coef_max)
        self.last_entropy = measured
        return applied


def high_entropy_mask(entropy: torch.Tensor, mask: torch.Tensor, quantile: float) -> torch.Tensor:
    """TRL 1.16's ``get_high_entropy_mask`` on one process: True where the token is unmasked and its
    entropy is at least the ``quantile`` quantile of the unmasked entropies (``torch.quantile``, linear)."""
    real = mask.bool()
    if not bool(real.any()):
        return torch.zeros_like(real)
    threshold = torch.quantile(entropy[real].float(), quantile)
    return (entropy * mask >= threshold) & real
