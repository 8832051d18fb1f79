"""Chapter 8's figures and charts: Baselines: wrong answers have to count (``book/08_baselines.ipynb``)."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from ..math.estimators import estimator_variance, optimal_baseline, variance_curve
from ..math.gradients import expected_reward
from ..toy.five_token import LOGITS, REWARDS
from .charts import Declared, Slider, line_chart
from .style import CORRECT_COLOR, PALETTE, relayout


# ----------------------------------------------------------------------------- chapter 8
#: Baselines on the horizontal axis of chapter 8's figure.
BASELINE_GRID = np.linspace(-1.0, 12.0, 261)


def draw_baseline(fig, offset: float, baseline: float) -> None:
    """Chapter 8 slider: total variance of (r + offset - b) score(y) against b, at one offset."""
    curve = variance_curve(LOGITS, REWARDS, offset, BASELINE_GRID)
    here = estimator_variance(LOGITS, REWARDS + offset, baseline)
    a = _baseline_axes(fig)
    a.curve.set_data(curve["baselines"], curve["variance"])
    a.none.set_data([0.0], [curve["variance_none"]])
    a.mean.set_data([curve["mean"]], [curve["variance_mean"]])
    a.optimal.set_data([curve["optimal"]], [curve["variance_optimal"]])
    a.yours.set_data([baseline], [here])
    a.yours.set_label(f"your b = {baseline:g}")
    a.ax.set_title(f"Grader {offset:g}/{offset + 1:g}, b = {baseline:g}: {here / curve['variance_mean']:.1f}x "
                   "the mean baseline's variance", fontsize=10)
    a.ax.legend(fontsize=8, loc="upper left")
    relayout(fig)


def _baseline_axes(fig) -> SimpleNamespace:
    """Chapter 8's log axes: the variance curve and the marks of four baselines, empty until
    ``draw_baseline`` sets them."""
    ax = fig.add_subplot(1, 1, 1)
    a = SimpleNamespace(ax=ax, curve=ax.semilogy([], [], color=PALETTE["blue"])[0],
                        none=ax.semilogy([], [], "s", color=PALETTE["vermillion"], label="no baseline (b = 0)")[0],
                        mean=ax.semilogy([], [], "o", color=CORRECT_COLOR, ms=8, label="b = mean reward J")[0],
                        optimal=ax.semilogy([], [], "x", color="black", ms=8, label="b* (optimal)")[0],
                        yours=ax.semilogy([], [], "D", color=PALETTE["orange"])[0])
    ax.set_xlabel("baseline b (reward units)")
    ax.set_ylabel("total variance (trace of covariance)")
    ax.set_ylim(0.05, 300)
    return a


#: Chapter 8's grader offset (rewards offset / offset + 1): 0 to 10 in steps of 0.25, opening at 10.
OFFSET = Slider("offset", "offset", 0.0, 10.0, 0.25, 10.0)

#: Chapter 8's baseline b (the marker): -1 to 11 in steps of 0.1 (as the live slider had), opening at 0.
BASELINE = Slider("b", "b", -1.0, 11.0, 0.1, 0.0, fmt=".1f")


def baseline_points() -> np.ndarray:
    """The b of chapter 8's chart: the slider's positions, and the mean reward J and the optimum b* of
    every grader offset, so that the chart's J and b* markers sit exactly where they are."""
    marks = [variance_curve(LOGITS, REWARDS, offset, [0.0])[key] for offset in OFFSET.values
             for key in ("mean", "optimal")]
    return np.unique(np.round(np.r_[BASELINE.values, marks], 10))


def baseline_chart():
    """Chapter 8: the total variance of (r + offset - b) score(y) against b (``variance_curve``) as a
    multiple of the mean baseline's, for every offset of ``OFFSET``; the mean reward J and the optimal
    b* of that grader marked on the curve, and the slider's b marked."""
    b = baseline_points()

    def curve(offset):
        c = variance_curve(LOGITS, REWARDS, offset, b)
        ratio = c["variance"] / c["variance_mean"]
        at_mean, at_optimal = (np.where(np.isclose(b, c[key], rtol=0, atol=1e-9), ratio, np.nan)
                               for key in ("mean", "optimal"))
        return [ratio, at_mean, at_optimal]

    def notes(offset):
        c = variance_curve(LOGITS, REWARDS, offset, b)
        return {"mean reward J": c["mean"], "best b*": c["optimal"]}

    return line_chart(curve, [OFFSET], x=b, marker=BASELINE, notes=notes, log_y=True,
                      ydomain=[0.5, 3000], series=["variance ÷ the mean baseline's", "b = mean reward J",
                                                   "b = b* (optimal)"],
                      styles=["solid", "ring", "points"], colors=[PALETTE["blue"], CORRECT_COLOR, "black"],
                      readout=["variance ÷ the mean baseline's"],
                      xlabel="baseline b (reward units)", ylabel="total variance ÷ that at b = J",
                      headline="the valley sits at the grader's mean reward", fmt=".3f")


# The chapter's chart, and its numbers from the library alone (tests/test_charts.py); it replaced
# FloatSliders offset 0..10 step 0.5 and b -1..11 step 0.1.
def _oracle_x():
    """The slider's b, and every grader's mean reward J and optimal b* (the chart marks both)."""
    marks = [f(LOGITS, REWARDS + offset) for offset in OFFSET.values for f in (expected_reward, optimal_baseline)]
    return np.unique(np.round(np.r_[BASELINE.values, marks], 10))


def _oracle(offset):
    r, b = REWARDS + offset, _oracle_x()
    mean, best = expected_reward(LOGITS, r), optimal_baseline(LOGITS, r)
    ratio = np.array([estimator_variance(LOGITS, r, x) for x in b]) / estimator_variance(LOGITS, r, mean)
    return b, [ratio, np.where(np.isclose(b, mean, rtol=0, atol=1e-9), ratio, np.nan),
               np.where(np.isclose(b, best, rtol=0, atol=1e-9), ratio, np.nan)]


CHARTS = (Declared("baseline", baseline_chart, _oracle, [OFFSET], marker=BASELINE,
                   replaced={"offset": 21, "b": 121}),)
