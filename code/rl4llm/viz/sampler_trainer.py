"""Chapter 20's live chart: what a cap does to the importance weight of a sampler that is not the trainer
(``rl4llm.viz.charts``).

The chart stores :func:`rl4llm.llm.sampler_study.lognormal_weight_moments` at every position of its sliders:
the weight's standard deviation over the per-token log-ratio spread sigma, for a sequence of L tokens, with
no cap, truncated at C and masked above C."""
from __future__ import annotations

import math

import numpy as np

from ..llm.sampler_study import CAP_RULES, lognormal_weight_moments
from .charts import Declared, Slider, line_chart


#: A sequence's length in tokens (every value up to chapter 15's longest completion, and twice it) and the cap.
LENGTH = Slider("L", "tokens L", 1, 8, 1, 4, fmt="d")

CAP = Slider("cap", "cap C", 1.5, 5.0, 0.125, 3.0)

#: The per-token spread of ln(pi_old / pi_samp), 0.04 to 1: a bf16 engine's (below 0.01) lies left of it, a far-stale one's
#: (0.9 at k = 8 in chapter 20) at its right end.
SIGMA = np.round(np.arange(1, 26) / 25, 2)

#: Each curve's label: no correction, TRL's truncation and TRL's mask.
RULE_LABELS = ("no cap", "truncated at C", "masked above C")


def weight_stds(L: int, cap: float) -> list[list[float]]:
    """The standard deviation of a sequence's weight, one row per rule of ``CAP_RULES``, over ``SIGMA``."""
    moments = lognormal_weight_moments.unchecked
    return [[math.sqrt(moments(s * math.sqrt(L), cap, rule)[1]) for s in SIGMA] for rule in CAP_RULES]


def weight_chart():
    """The spread of a sequence's weight over sigma, with a slider for L and one for the cap C."""
    return line_chart(weight_stds, [LENGTH, CAP], x=SIGMA, series=list(RULE_LABELS),
                      xlabel="per-token spread sigma of ln(pi_old / pi_samp)", ylabel="std of the sequence's weight",
                      headline="a cap bounds the spread that explodes with sigma sqrt(L)", log_y=True,
                      ydomain=[1e-3, 1e3], styles=["solid", "dashed", "dotted"])


#: The chapter's chart, and its numbers from the closed form (tests/test_charts.py).
CHARTS = (Declared("weight", weight_chart,
                   lambda L, cap: (SIGMA, [[math.sqrt(lognormal_weight_moments(s * math.sqrt(L), cap, rule)[1])
                                            for s in SIGMA] for rule in CAP_RULES]),
                   [LENGTH, CAP]),)
