"""Where the KL to the reference enters a GRPO run (chapter 17): a strategy the trainer calls.

:class:`KLInLoss` is GRPO's and TRL's: ``beta k_it`` per token in the loss, with the estimator k1, k2
or k3 of :data:`rl4llm.llm.grpo.KL_ESTIMATORS` and TRL's ``use_bias_correction_kl`` (the term times the
ratio, the reverse KL's gradient). :class:`KLInReward` is classic RLHF-PPO's: the reward of answer i
becomes

    r_i - beta sum_t k1_it,     k1_it = log pi_old(y_it) - log pi_ref(y_it),

a number per answer, from which the group advantages are formed; the loss then has no KL term. Both
log-probs come from the same full forward pass (:func:`completion_logprobs`), not log pi_old from the
sampling pass: the two routes differ by float rounding, and a group whose answers all score alike would
then differ only by that rounding, which the group's std scales up to advantages of order 1 (at step 1,
where pi_old = pi_ref, every flat group would look informative and train on noise).
The trainer (:class:`rl4llm.llm.trainer.GRPOTrainer`) takes one as ``kl=`` and calls
:meth:`loss_options` once and :meth:`shaped_rewards` at every rollout.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from .._checks import check_fields, flag, one_of
from .grpo import KL_ESTIMATORS
from .model import Rollout, completion_logprobs


@dataclass(frozen=True)
class KLInLoss:
    """beta k per token in the loss (chapter 17): ``estimator`` k1, k2 or k3 (TRL: k3 only), times the
    ratio with ``use_bias_correction_kl`` (TRL's knob). The chapter-15 default: k3, uncorrected."""
    estimator: str = "k3"
    use_bias_correction_kl: bool = False

    def __post_init__(self):
        check_fields(self, {"estimator": one_of(KL_ESTIMATORS), "use_bias_correction_kl": flag})

    def loss_options(self, beta: float) -> dict:
        """The KL keywords of :func:`rl4llm.llm.grpo.grpo_loss`: the loss carries beta's term."""
        return {"beta": beta, "kl_estimator": self.estimator, "use_bias_correction_kl": self.use_bias_correction_kl}

    def shaped_rewards(self, policy, reference, rollout: Rollout, rewards: torch.Tensor, beta: float,
                       temperature: float) -> tuple[torch.Tensor, None]:
        """The rewards the advantages come from, unchanged (the KL is in the loss), and no reference log-probs."""
        return rewards, None


@dataclass(frozen=True)
class KLInReward:
    """r - beta sum_t k1 per answer (chapter 17): the shaped reward is log pi_old / pi_ref per answer,
    so the estimator is k1 and there is no ratio to correct it with; the loss has no KL term."""

    def loss_options(self, beta: float) -> dict:
        """The KL keywords of :func:`rl4llm.llm.grpo.grpo_loss`: no KL term in the loss."""
        return {"beta": 0.0}

    def shaped_rewards(self, policy, reference, rollout: Rollout, rewards: torch.Tensor, beta: float,
                       temperature: float) -> tuple[torch.Tensor, torch.Tensor | None]:
        """r_i - beta sum_t k1_it, shaped (N, G) like ``rewards``, with k1 = log pi_old / pi_ref of each
        sampled token (``policy`` is pi_old, the weights that sampled; both scored by one full forward pass),
        and the reference's log-probs of every sampled row (None when beta = 0: unshaped)."""
        if beta == 0:
            return rewards, None
        G = rewards.shape[1]
        with torch.no_grad():
            ref_logp, _ = completion_logprobs(reference, rollout.tokens, rollout.prompt_len, temperature, G)
            old_logp, _ = completion_logprobs(policy, rollout.tokens, rollout.prompt_len, temperature, G)
        k1 = KL_ESTIMATORS["k1"](ref_logp - old_logp) * rollout.mask
        return rewards - beta * k1.sum(dim=1).view(-1, G), ref_logp
