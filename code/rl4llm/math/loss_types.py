"""GRPO's loss types: how the per-token losses of a batch become one number (chapters 13-16).

Every loss type is one :class:`LossType` in :data:`LOSS_TYPES`, defined here once; the loss
(:func:`rl4llm.llm.grpo.grpo_loss`), the trainer's config, the toy, data parallelism, the TRL bridge,
the scripts, the exercises and the tests all read this registry. With l_it the per-token loss, m_it
the completion mask, B rows and L = ``max_completion_length``:

- ``"grpo"``: (1/B) sum_i [ sum_t m_it l_it / sum_t m_it ]   (mean per sequence, then over sequences)
- ``"bnpo"``, ``"dapo"``: sum_it m_it l_it / sum_it m_it      (one mean over all tokens)
- ``"dr_grpo"``: sum_it m_it l_it / (B L)                     (a constant normaliser)

``"bnpo"`` and ``"dapo"`` differ only across processes: under data parallelism TRL 1.16 divides
``"dapo"``'s per-process token sum by the whole batch's token count over P (gathered from every
process), ``"bnpo"``'s by the process's own count (chapter 16). Adding a loss type is one
:func:`register_loss_type` call.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class LossType:
    """One aggregation: ``aggregate(masked, mask, max_completion_length)`` maps the masked per-token
    losses (B, T) to the loss; ``gathered_tokens``: under data parallelism its token count is the whole
    batch's, gathered over processes; ``needs_max_completion_length``: it divides by L."""
    name: str
    aggregate: Callable
    gathered_tokens: bool = False
    needs_max_completion_length: bool = False


def sequence_mean(masked, mask, max_completion_length=None):
    """Each row's mean over its own tokens, then the mean over rows (a row with no token gives 0)."""
    return (masked.sum(dim=1) / mask.sum(dim=1).clamp(min=1)).mean()


def token_mean(masked, mask, max_completion_length=None):
    """One mean over every unmasked token of the batch."""
    return masked.sum() / mask.sum().clamp(min=1)


def constant_normaliser(masked, mask, max_completion_length):
    """The token sum over B * max_completion_length, whatever the lengths (Dr. GRPO)."""
    return masked.sum() / (masked.shape[0] * max_completion_length)


#: name -> LossType, in the order the book introduces them.
LOSS_TYPES: dict[str, LossType] = {}


def register_loss_type(loss_type: LossType) -> LossType:
    """Add ``loss_type`` to :data:`LOSS_TYPES` (every module that takes ``loss_type`` accepts it)."""
    LOSS_TYPES[loss_type.name] = loss_type
    return loss_type


def loss_type_names(loss_types, name: str = "loss_types") -> tuple[str, ...]:
    """A non-empty sequence of registered loss types (:data:`rl4llm.math.loss_types.LOSS_TYPES`)."""
    names = tuple(loss_types)
    if not names or any(t not in LOSS_TYPES for t in names):
        raise ValueError(f"{name} must be a non-empty sequence of {tuple(LOSS_TYPES)}, got {names!r}")
    return names


for _entry in (LossType("grpo", sequence_mean), LossType("bnpo", token_mean),
               LossType("dapo", token_mean, gathered_tokens=True),
               LossType("dr_grpo", constant_normaliser, needs_max_completion_length=True)):
    register_loss_type(_entry)
