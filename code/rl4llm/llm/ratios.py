"""The loss's ratio, past chapter 15's per-token clip (chapter 18): a strategy the trainer calls.

:class:`ImportanceRatio` holds TRL's two knobs of the ratio in :func:`rl4llm.llm.grpo.grpo_loss`:
``level="sequence"`` is GSPO's one ratio per sequence,

    s_i = exp( sum_t m_it (log pi(y_it) - log pi_old(y_it)) / sum_t m_it ),

clipped as a token ratio would be; ``delta`` is TRL's two-sided clip, the unclipped ratio capped at
delta > 1. The default, ``ImportanceRatio()``, is chapter 15's: a ratio per token, no cap.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from .._checks import check_fields, in_range, one_of, optional
from .grpo import IMPORTANCE_SAMPLING_LEVELS


@dataclass(frozen=True)
class ImportanceRatio:
    """The ratio the clipped loss uses (chapter 18): per ``level`` "token" or "sequence" (GSPO; TRL's
    ``importance_sampling_level``), the unclipped one capped at ``delta`` > 1 (TRL's; None: no cap)."""
    level: str = "token"
    delta: float | None = None

    def __post_init__(self):
        check_fields(self, {"level": one_of(IMPORTANCE_SAMPLING_LEVELS),
                            "delta": optional(in_range(1.0, math.inf, low_open=True, high_open=True))})

    def loss_options(self) -> dict:
        """The ratio keywords of :func:`rl4llm.llm.grpo.grpo_loss`."""
        return {"importance_sampling_level": self.level, "delta": self.delta}
