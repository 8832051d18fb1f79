"""Who samples a GRPO run's completions (chapter 20): a strategy the trainer calls.

:class:`PolicySampler` is chapter 15's: the policy samples itself, so log pi_old is what the sampler
recorded. :class:`RolloutEngineSampler` is a rollout engine (:class:`rl4llm.llm.rollout_engine.RolloutEngine`:
lower precision, weights ``staleness`` updates behind) with TRL 1.16's corrections of the mismatch
(:mod:`rl4llm.llm.rollout_correction`): the trainer rescores the engine's tokens with its own weights
(the loss's log pi_old, as in TRL) and, with ``correction``, weights each sequence (or token) by
pi_old / pi_samp, capped as ``mode``, ``clip_max`` and ``clip_min`` say (TRL's
``vllm_importance_sampling_correction``, ``_mode``, ``_clip_max``, ``_clip_min``). Either takes
DeepSeek-V3.2's off-policy sequence mask, ``off_policy_mask_threshold`` (TRL's name).

The trainer (:class:`rl4llm.llm.trainer.GRPOTrainer`) takes one as ``sampler=`` and calls
:meth:`~Sampler.start` once, :meth:`~Sampler.sync` and :meth:`~Sampler.rescore` at every rollout,
:meth:`~Sampler.weighted_advantages` at every inner step and :meth:`~Sampler.metrics` at every step.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from .._checks import at_least, check_fields, flag, in_range, one_of, optional, positive_real
from .kl_placement import KLInReward
from .model import GPT, Rollout, completion_logprobs
from .rollout_correction import (IMPORTANCE_SAMPLING_MODES, cap_range, importance_weights, off_policy_mask,
                                 sampler_gap, weighted_advantages)
from .rollout_engine import SAMPLER_PRECISIONS, RolloutEngine

#: The sampler/trainer mismatch (chapter 20) under TRL 1.16's names, logged where a rollout engine samples
#: (NaN otherwise).
SAMPLING_METRICS = ("sampling/sampling_logp_difference/mean", "sampling/sampling_logp_difference/max",
                    "sampling/importance_sampling_ratio/min", "sampling/importance_sampling_ratio/mean",
                    "sampling/importance_sampling_ratio/max")

_THRESHOLD = {"off_policy_mask_threshold": optional(in_range(0.0, math.inf, high_open=True))}


@dataclass(frozen=True, kw_only=True)
class Sampler:
    """What every sampler shares: DeepSeek-V3.2's off-policy sequence mask (``off_policy_mask_threshold``,
    None: off), applied at every inner step, and TRL's ``sampling/*`` metrics."""
    off_policy_mask_threshold: float | None = None

    def start(self, policy: GPT) -> RolloutEngine | None:
        """The rollout engine this run samples with (None: the policy samples itself)."""
        return None

    def sync(self, engine: RolloutEngine | None, policy: GPT):
        """The model that samples this step: the policy itself."""
        return policy

    def check_with(self, kl, ratio) -> None:
        """Refuse a KL placement (chapter 17) or a ratio (chapter 18) this sampler cannot serve."""

    def rescore(self, policy: GPT, rollout: Rollout, keep: torch.Tensor, temperature: float,
                group_size: int) -> tuple[torch.Tensor | None, torch.Tensor | None]:
        """The trainer's log-probs of the kept rows and their importance weights: none, when the policy sampled."""
        return None, None

    def weighted_advantages(self, batch, logp: torch.Tensor) -> torch.Tensor:
        """The advantages times TRL's weights (chapter 20): the batch's importance weights (per sequence,
        or per token in the ``token_*`` modes) and the off-policy sequence mask of the current log-probs
        ``logp``, each where configured (else the advantages as they are)."""
        advantages, threshold = batch.advantages, self.off_policy_mask_threshold
        if batch.importance_weights is not None:
            advantages = weighted_advantages(advantages, batch.importance_weights)
        if threshold is not None:
            keep = off_policy_mask.unchecked(batch.advantages, logp, batch.sampler_logp, batch.mask, threshold)
            advantages = weighted_advantages(advantages, keep)
        return advantages

    @staticmethod
    def metrics(batch) -> dict:
        """TRL's ``sampling/*`` metrics of the batch (chapter 20): |log pi_old - log pi_sampler| over the kept
        completion tokens (mean, max) and the importance weights (min, mean, max: a sequence mode's over the
        answers, a token mode's over the completion tokens only, as TRL takes them); NaN where not measured."""
        out = dict.fromkeys(SAMPLING_METRICS, math.nan)
        if batch.trainer_logp is not None and bool(batch.mask.any()):
            gap = sampler_gap(batch.trainer_logp, batch.sampler_logp, batch.mask)[batch.mask > 0].abs()
            out["sampling/sampling_logp_difference/mean"] = float(gap.mean())
            out["sampling/sampling_logp_difference/max"] = float(gap.max())
        w = batch.importance_weights
        if w is not None and w.shape == batch.mask.shape:
            w = w[batch.mask > 0]                   # a token mode's (B, T) weights: the padding left out
        if w is not None and w.numel():
            for name, value in (("min", w.min()), ("mean", w.mean()), ("max", w.max())):
                out[f"sampling/importance_sampling_ratio/{name}"] = float(value)
        return out


@dataclass(frozen=True, kw_only=True)
class PolicySampler(Sampler):
    """The policy samples itself (chapter 15's default): the sampler's log-probs are log pi_old."""

    def __post_init__(self):
        check_fields(self, _THRESHOLD)


@dataclass(frozen=True, kw_only=True)
class RolloutEngineSampler(Sampler):
    """A rollout engine samples (chapter 20): ``precision`` one of :data:`SAMPLER_PRECISIONS`, weights
    ``staleness`` outer steps old; with ``correction`` TRL's importance weight pi_old / pi_samp in ``mode``
    (one of :data:`~rl4llm.llm.rollout_correction.IMPORTANCE_SAMPLING_MODES`), capped at ``clip_max`` and
    floored at ``clip_min`` (None: no bound). Defaults: bf16, synchronous, TRL 1.16's correction."""
    precision: str = "bfloat16"
    staleness: int = 0
    correction: bool = True
    mode: str = "sequence_mask"
    clip_max: float | None = 3.0
    clip_min: float | None = None

    def __post_init__(self):
        check_fields(self, {"precision": one_of(SAMPLER_PRECISIONS), "staleness": at_least(0), "correction": flag,
                            "mode": one_of(IMPORTANCE_SAMPLING_MODES), "clip_max": optional(positive_real),
                            "clip_min": optional(in_range(0.0, math.inf, high_open=True)), **_THRESHOLD},
                     cap_range())

    def start(self, policy: GPT) -> RolloutEngine:
        """A rollout engine holding a copy of ``policy``."""
        return RolloutEngine(policy, self.precision, self.staleness)

    def sync(self, engine: RolloutEngine, policy: GPT):
        """Hand ``engine`` the trainer's weights; it samples with those of ``staleness`` steps ago."""
        engine.sync(policy)
        return engine.model

    def check_with(self, kl, ratio) -> None:
        """A rollout engine's log-probs are not the trainer's: the KL in the reward would measure the
        engine's policy, so it is refused; TRL's token modes weight tokens of a token-level ratio."""
        if isinstance(kl, KLInReward):
            raise ValueError("kl=KLInReward() needs the policy to sample (sampler=PolicySampler()): with a "
                             "rollout engine its log-probs are the engine's, not the policy's")
        if self.correction and self.mode.startswith("token") and ratio.level != "token":
            raise ValueError(f"mode={self.mode!r} weights each token, which needs ImportanceRatio(level='token'), "
                             f"got level={ratio.level!r}")

    def rescore(self, policy: GPT, rollout: Rollout, keep: torch.Tensor, temperature: float,
                group_size: int) -> tuple[torch.Tensor | None, torch.Tensor | None]:
        """The trainer rescores the kept rows the engine drew, as TRL does (log pi_old), and weighs each
        by pi_old / pi_samp as configured (None without ``correction``); (None, None) when no row is kept."""
        if not bool(keep.any()):
            return None, None
        with torch.no_grad():
            trainer_logp, _ = completion_logprobs(policy, rollout.tokens[keep], rollout.prompt_len, temperature,
                                                  group_size)
        weights = importance_weights.unchecked(trainer_logp, rollout.logp[keep], rollout.mask[keep], mode=self.mode,
                                               clip_max=self.clip_max, clip_min=self.clip_min) \
            if self.correction else None
        return trainer_logp, weights
