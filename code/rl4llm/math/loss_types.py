"""GRPO's loss types: the per-token objective, how the per-token losses of a batch become one number, and
the weight that puts on each token (chapters 13-18).

Every loss type is one :class:`LossType` in :data:`LOSS_TYPES`, defined here once; the loss
(:func:`rl4llm.llm.grpo.grpo_loss`), the trainer's config, the toy, the studies (``estimator_bias``,
``length_drift``), data parallelism, the TRL bridge, the scripts, the exercises and the tests all read
this registry. With l_it the per-token loss, m_it the completion mask, B rows and L =
``max_completion_length``:

- ``"grpo"``: (1/B) sum_i [ sum_t m_it l_it / sum_t m_it ]   (mean per sequence, then over sequences)
- ``"bnpo"``, ``"dapo"``: sum_it m_it l_it / sum_it m_it      (one mean over all tokens)
- ``"dr_grpo"``: sum_it m_it l_it / (B L)                     (a constant normaliser)
- ``"cispo"``: DAPO's token mean of CISPO's per-token objective (chapter 18; TRL 1.16's ``loss_type="cispo"``)
- ``"sapo"``: ``"grpo"``'s mean per sequence of SAPO's soft gate (chapter 17)
- ``"luspo"``: (1/B) sum_i sum_t m_it l_it                   (each answer's token sum, then the mean over answers:
  LUSPO, *Length-Unbiased Sequence Policy Optimization*, arXiv 2602.05261, TRL 1.16's ``loss_type="luspo"``,
  meant for GSPO's sequence ratio, where it is GSPO's sequence loss times the answer's length; chapter 17)
- ``"vespo"``: DAPO's token mean of VESPO's gamma-weighted per-token objective (chapter 17)

``"bnpo"`` and ``"dapo"`` differ only across processes: under data parallelism TRL 1.16 divides
``"dapo"``'s per-process token sum by the whole batch's token count over P (gathered from every
process), ``"bnpo"``'s by the process's own count (chapter 16).

Each entry carries three things. ``objective`` names the per-token objective l_it (a key of
:data:`rl4llm.llm.grpo.OBJECTIVES`: PPO's clip, or CISPO's capped detached weight; the torch functions
live beside the loss in ``llm/``, so that this registry stays numpy). ``aggregate`` is the aggregation,
written with the methods numpy arrays and torch tensors share (``sum(axis=...)``, ``clip(min=...)``,
``mean()``), so one function serves the loss (tensors) and the numpy layers. ``token_weight`` is the
exact weight -d loss / d logp_it that the loss puts on every token of answer i at rho = 1 (for
``"cispo"``, with a cap eps_high >= 1, as TRL's 5; SAPO's gate and VESPO's weight are 1 there), a numpy
function of the advantages, the lengths (tokens per answer) and L, batches on the last axis: the
studies of chapter 17 read it, and ``tests/test_loss_types.py`` checks it against autograd through
``grpo_loss``. Adding a loss type is one :func:`register_loss_type` call with all three, plus its test.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class LossType:
    """One loss type: ``aggregate(masked, mask, max_completion_length)`` maps the masked per-token losses
    (B, T) to the loss; ``token_weight(advantages, lengths, max_completion_length)`` is -d loss / d logp on
    every token of answer i at rho = 1 (arrays (..., B); an answer of length >= 1); ``objective`` names its
    per-token objective (``"clip"``: PPO's); ``gathered_tokens``: under data parallelism its token count is
    the whole batch's, gathered over processes; ``needs_max_completion_length``: it divides by L;
    ``importance_sampling_level``: the ratio's level TRL 1.16 asks for with it (it warns otherwise: LUSPO's
    ``"sequence"``, VESPO's ``"token"``), None where either serves."""
    name: str
    aggregate: Callable
    token_weight: Callable
    objective: str = "clip"
    gathered_tokens: bool = False
    needs_max_completion_length: bool = False
    importance_sampling_level: str | None = None

    def __repr__(self) -> str:
        return f"LossType({self.name!r})"


def sequence_mean(masked, mask, max_completion_length=None):
    """Each row's mean over its own tokens, then the mean over rows (a row with no token gives 0)."""
    return (masked.sum(axis=1) / mask.sum(axis=1).clip(min=1)).mean()


def sequence_mean_weight(advantages, lengths, max_completion_length=None):
    """``sequence_mean``'s weight at rho = 1: A_i / (B |o_i|), a long answer's tokens pushed less."""
    return advantages / (lengths.shape[-1] * lengths.clip(min=1))


def token_mean(masked, mask, max_completion_length=None):
    """One mean over every unmasked token of the batch."""
    return masked.sum() / mask.sum().clip(min=1)


def token_mean_weight(advantages, lengths, max_completion_length=None):
    """``token_mean``'s weight at rho = 1: A_i / sum_j |o_j|, equal per token, set by the batch."""
    return advantages / lengths.sum(axis=-1, keepdims=True).clip(min=1)


def sequence_sum(masked, mask, max_completion_length=None):
    """Each row's sum over its own tokens, then the mean over rows (LUSPO): a long answer weighs more."""
    return masked.sum(axis=1).mean()


def sequence_sum_weight(advantages, lengths, max_completion_length=None):
    """``sequence_sum``'s weight at rho = 1: A_i / B on every token, whatever the lengths."""
    return advantages / lengths.shape[-1]


def constant_normaliser(masked, mask, max_completion_length):
    """The token sum over B * max_completion_length, whatever the lengths (Dr. GRPO)."""
    return masked.sum() / (masked.shape[0] * max_completion_length)


def constant_normaliser_weight(advantages, lengths, max_completion_length):
    """``constant_normaliser``'s weight at rho = 1: A_i / (B L), a constant."""
    return advantages / (lengths.shape[-1] * max_completion_length)


#: name -> LossType, in the order the book introduces them.
LOSS_TYPES: dict[str, LossType] = {}


def register_loss_type(loss_type: LossType) -> LossType:
    """Add ``loss_type`` to :data:`LOSS_TYPES` (every module that takes ``loss_type`` accepts it)."""
    LOSS_TYPES[loss_type.name] = loss_type
    return loss_type


def loss_types_with(objective: str) -> tuple[str, ...]:
    """The registered loss types whose per-token objective is ``objective`` and that serve at either ratio
    level, in the book's order: ``"clip"`` gives the aggregations of PPO's clip that chapters 13-16 compare
    (LUSPO, meant for GSPO's sequence ratio only, is chapter 17's)."""
    return tuple(name for name, entry in LOSS_TYPES.items()
                 if entry.objective == objective and entry.importance_sampling_level is None)


def loss_type_names(loss_types, name: str = "loss_types") -> tuple[str, ...]:
    """Rule: a non-empty sequence of registered loss types (:data:`rl4llm.math.loss_types.LOSS_TYPES`)."""
    names = tuple(loss_types)
    if not names or any(t not in LOSS_TYPES for t in names):
        raise ValueError(f"{name} must be a non-empty sequence of {tuple(LOSS_TYPES)}, got {names!r}")
    return names


for _entry in (LossType("grpo", sequence_mean, sequence_mean_weight),
               LossType("bnpo", token_mean, token_mean_weight),
               LossType("dapo", token_mean, token_mean_weight, gathered_tokens=True),
               LossType("dr_grpo", constant_normaliser, constant_normaliser_weight,
                        needs_max_completion_length=True),
               LossType("cispo", token_mean, token_mean_weight, objective="cispo", gathered_tokens=True),
               LossType("sapo", sequence_mean, sequence_mean_weight, objective="sapo"),
               LossType("luspo", sequence_sum, sequence_sum_weight, importance_sampling_level="sequence"),
               LossType("vespo", token_mean, token_mean_weight, objective="vespo", gathered_tokens=True,
                        importance_sampling_level="token")):
    register_loss_type(_entry)
