"""A sampler that is not the trainer: the tiny GPT's rollout engine (chapter 20).

Past one machine, a GRPO run samples with an inference engine (vLLM, SGLang) and trains with another
stack. The engine holds its own copy of the weights, usually in bf16, runs other kernels, and in an
asynchronous run it samples with weights that are some updates old. :class:`RolloutEngine` is that
copy for the tiny GPT, with the two differences a reader can switch on:

- ``precision``: ``"float32"`` (the trainer's own numbers), ``"bfloat16"`` (weights and activations in
  bf16, the logits upcast to fp32 for the softmax, as vLLM does with a bf16 checkpoint), or
  ``"bfloat16_logits"`` (fp32 weights, the logits rounded to bf16 before the softmax);
- ``staleness`` k: at outer step t the engine samples with the weights the trainer had k updates
  earlier (k = 0: synchronous; k = 1: one-step-off, the engine drafts batch t + 1 while the trainer
  learns on batch t; k > 1: k-step asynchronous). The first k steps sample with the starting weights.

Its ``model`` samples through :func:`rl4llm.llm.model.sample` as the trainer's policy would, and the
rollout's log-probs are then log pi_samp; :mod:`rl4llm.llm.rollout_correction` compares them with the
trainer's.
"""
from __future__ import annotations

import copy
from collections import deque

import torch
import torch.nn as nn

from .._checks import at_least, checked, one_of
from .model import GPT

#: The engine's numbers: the trainer's fp32, bf16 weights (and activations), or fp32 weights with bf16 logits.
SAMPLER_PRECISIONS = ("float32", "bfloat16", "bfloat16_logits")


class EngineModel(nn.Module):
    """The policy as the engine computes it: ``forward`` has :class:`rl4llm.llm.model.GPT`'s signature and
    returns fp32 logits, computed in ``precision`` (see :data:`SAMPLER_PRECISIONS`)."""

    def __init__(self, policy: GPT, precision: str):
        super().__init__()
        self.precision = precision
        self.model = copy.deepcopy(policy).requires_grad_(False)
        if precision == "bfloat16":
            self.model.to(torch.bfloat16)

    def forward(self, idx: torch.Tensor, past: list | None = None) -> tuple[torch.Tensor, list]:
        logits, present = self.model(idx, past)                            # (B, T, vocab)
        if self.precision == "bfloat16_logits":
            logits = logits.to(torch.bfloat16)
        return logits.float(), present


class RolloutEngine:
    """A copy of the trainer's policy that samples (chapter 20): lower precision, weights ``staleness``
    updates behind. Call :meth:`sync` with the trainer's policy once per outer step, then sample with
    ``model``."""

    @checked(precision=one_of(SAMPLER_PRECISIONS), staleness=at_least(0))
    def __init__(self, policy: GPT, precision: str = "bfloat16", staleness: int = 0):
        self.precision, self.staleness = precision, staleness
        self.model = EngineModel(policy, precision)
        self._queue: deque[dict] = deque()         # the trainer's weights the engine has not loaded yet

    def sync(self, policy: GPT) -> None:
        """Hand the engine the trainer's current weights; it loads those of ``staleness`` syncs ago."""
        self._queue.append({k: v.detach().clone() for k, v in policy.state_dict().items()})
        if len(self._queue) > self.staleness:
            self.model.model.load_state_dict(self._queue.popleft())     # cast to the engine's dtype

    def state_dict(self) -> dict:
        """The engine's loaded weights and its queue, for a checkpoint."""
        return {"model": self.model.model.state_dict(), "queue": list(self._queue)}

    def load_state_dict(self, state: dict) -> None:
        self.model.model.load_state_dict(state["model"])
        self._queue = deque(state["queue"])
