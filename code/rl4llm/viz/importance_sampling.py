"""Chapter 10's figures and charts: Reusing rollouts: importance sampling
(``book/10_importance_sampling.ipynb``)."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from .. import drift_case, drift_variance_ratio
from .charts import Declared, Slider, line_chart
from .style import CORRECT_COLOR, PALETTE, relayout


# --------------------------------------------------------------------------- chapter 10
def draw_drift(fig, drift: float = 0.5, G: int = 8) -> None:
    """Chapter 10's drift slider: the law of J-hat from G stale draws (reweighted) vs G fresh ones.

    pi_old(5) = 0.05 is fixed; ``drift`` is pi_new(5), the target J.
    """
    d = drift_case(drift, G)
    a = _drift_axes(fig)
    width = 0.4 * min(np.min(np.diff(d["is_values"]), initial=1.0), np.min(np.diff(d["on_values"]), initial=1.0))
    a.law.bar(d["on_values"] - width / 2, d["on_probs"], width=width, color=PALETTE["blue"],
              label="G fresh draws from π_new")
    a.law.bar(d["is_values"] + width / 2, d["is_probs"], width=width, color=PALETTE["orange"],
              label="G stale draws from π_old, × ratio")
    a.target.set_xdata([d["J"], d["J"]])
    a.target.set_label(f"target J = π_new(5) = {d['J']:.2f}")
    a.law.set_xlim(-0.1, max(1.05, min(d["is_values"][-1], 3 * d["ratio"] / G + 0.5)))
    a.law.set_title(f"G = {G}: P(no 5 among the stale draws) = {d['p_no_correct']:.3f}")
    a.law.legend(loc="upper right", fontsize=8)
    a.here.set_data([drift], [d["is_variance"] / d["on_variance"]])
    a.var.set_title(f"ratio {d['ratio']:.1f}: {d['is_variance'] / d['on_variance']:.1f}× the variance")
    relayout(fig)


def _drift_axes(fig) -> SimpleNamespace:
    """Chapter 10's panels: the two laws of J-hat and the target (left, bars drawn by ``draw_drift``),
    the variance ratio against pi_new(5) with the slider's point (right)."""
    law, var = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1.6, 1]})
    target = law.axvline(0.0, color=CORRECT_COLOR, linewidth=2)
    law.set_ylim(0, 1.0)
    law.set_xlabel("estimate Ĵ of J (reward per answer)")
    law.set_ylabel("probability")
    grid = np.linspace(0.05, 0.95, 37)
    var.plot(grid, drift_variance_ratio(grid), color=PALETTE["orange"])
    here, = var.plot([], [], "o", color=PALETTE["vermillion"])
    var.axhline(1.0, color="black", linestyle=":", linewidth=1)
    var.set_yscale("log")
    var.set_xlabel("π_new(5)  (π_old(5) = 0.05)")
    var.set_ylabel("variance, stale ÷ fresh")
    return SimpleNamespace(law=law, var=var, target=target, here=here)


# --------------------------------------------------------------------------- live charts (chapters 10-12)
# Each slider figure as a chart that redraws in the reader's browser (rl4llm.viz.charts): the curves are
# the library's numbers on the sliders' whole grid, computed here.

#: Chapter 10: pi_new(5) from 0.05 to 0.95 (the live slider's range) in steps of 0.025; every G from 1 to 32.
DRIFT = (Slider("drift", "π_new(5)", 0.05, 0.95, 0.025, 0.5, fmt=".3f"), Slider("G", "G", 1, 32, 1, 8, fmt="d"))

#: Chapter 10's x axis: how many 5s a group of G draws holds (0 to the largest G).
FIVES = np.arange(DRIFT[1].stop + 1, dtype=float)


def drift_law(drift: float, G: int) -> np.ndarray:
    """Chapter 10's curves: the probability that a group of G draws holds k fives (k on ``FIVES``),
    fresh from pi_new and stale from pi_old (``drift_case``; 0 above G)."""
    d = drift_case(drift, G)
    rows = np.zeros((2, FIVES.size))
    rows[0, :G + 1], rows[1, :G + 1] = d["on_probs"], d["is_probs"]
    return rows


def drift_notes(drift: float, G: int) -> dict:
    """Chapter 10's numbers over the chart: what each stale 5 adds to J-hat, the chance of none, the
    variance multiple (``drift_case``, ``drift_variance_ratio``)."""
    d = drift_case(drift, G)
    return {"stale 5 adds ρ(5)/G": float(d["is_values"][1]), "P(no stale 5)": float(d["p_no_correct"]),
            "variance stale ÷ fresh": float(drift_variance_ratio([drift])[0])}


def drift_chart():
    """Chapter 10: how many 5s G fresh draws (from pi_new) and G stale ones (from pi_old, pi_old(5) = 0.05)
    hold, on the whole grid of ``DRIFT``, with the stale estimate's worth per 5 and its variance multiple."""
    return line_chart(drift_law, DRIFT, x=FIVES, series=["G fresh draws from π_new", "G stale draws from π_old"],
                      xlabel="number of 5s among the G draws", ylabel="probability", notes=drift_notes,
                      headline="stale draws rarely hold a 5, and each counts ρ(5)/G",
                      colors=[PALETTE["blue"], PALETTE["orange"]], styles=["solid", "dashed"], ydomain=[0, 1])


# The chapter's chart, and its numbers from the library alone (tests/test_charts.py); it replaced a FloatSlider
# 0.05..0.95 step 0.05 and an IntSlider 1..32.
def _oracle(drift, G):
    d = drift_case(drift, G)
    law = np.zeros((2, 33))                               # how many 5s among G draws: 0 to 32
    law[0, :G + 1], law[1, :G + 1] = d["on_probs"], d["is_probs"]
    return np.arange(33), law


CHARTS = (Declared("drift", drift_chart, _oracle, list(DRIFT), replaced={"drift": 19, "G": 32}),)
