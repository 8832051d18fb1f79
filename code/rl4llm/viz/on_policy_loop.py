"""Chapter 9's figures and charts: The whole on-policy loop (``book/09_on_policy_loop.ipynb``)."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from ..studies.onpolicy import learning_curve_band
from .charts import Declared, Slider, line_chart
from .style import CORRECT_COLOR, OTHER_COLOR, PALETTE, relayout


# ----------------------------------------------------------------------------- chapter 9
def draw_learning(fig, G: int, lr: float, steps: int = 30, n_seeds: int = 100, seed: int = 0) -> None:
    """Chapter 9 slider: learning curves of pi(5) over many seeds (median, 10-90% band) and zero-signal groups."""
    G = int(G)
    band = learning_curve_band(G, lr, steps, n_seeds, seed)
    a = _learning_axes(fig, steps=steps, n_seeds=n_seeds)
    a.band.set_data(band["step"], band["low"], band["high"])
    for line, curve in zip(a.runs, band["curves"]):
        line.set_data(band["step"], curve)
    a.median.set_data(band["step"], band["median"])
    a.top.set_title(f"G = {G}, lr = {lr:g}: pi(5) {band['median'][-1]:.2f} after {steps} steps (median)",
                    fontsize=10)
    for bar, share in zip(a.zero_signal, band["zero_signal_fraction"]):
        bar.set_height(share)
    relayout(fig)


def _learning_axes(fig, steps: int, n_seeds: int) -> SimpleNamespace:
    """Chapter 9's panels for ``steps`` steps of ``n_seeds`` runs: the band, five runs and the median of
    pi(5) (top), the share of zero-signal groups per step (bottom); empty until ``draw_learning``."""
    top, bottom = fig.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [2.2, 1]})
    band = top.fill_between([], [], [], color=CORRECT_COLOR, alpha=0.2, label="10-90% of runs (their spread)")
    runs = top.plot(np.zeros((0, min(5, n_seeds))), color=CORRECT_COLOR, lw=0.6, alpha=0.6)
    median, = top.plot([], [], color=CORRECT_COLOR, lw=2.5, label=f"median of {n_seeds} runs")
    top.set_ylim(0, 1)
    top.set_ylabel("pi(5)")
    top.legend(fontsize=8, loc="lower right")
    zero_signal = bottom.bar(np.arange(1, steps + 1) - 0.5, np.zeros(steps), width=0.9, color=OTHER_COLOR)
    bottom.set_ylim(0, 1)
    bottom.set_xlabel("step")
    bottom.set_ylabel("zero-signal\nshare")
    return SimpleNamespace(top=top, band=band, runs=runs, median=median, zero_signal=zero_signal)


#: Chapter 9's group size (every G from 1 to 32) and learning rate (0.25 to 4 in steps of 0.125: the
#: live slider had 16 positions), opening at G = 8, lr = 1.
LEARNING_G = Slider("G", "G", 1, 32, 1, 8, fmt="d")

LEARNING_LR = Slider("lr", "lr", 0.25, 4.0, 0.125, 1.0, fmt=".3f")

#: Steps and runs of each setting of chapter 9's chart.
LEARNING_STEPS, LEARNING_SEEDS = 30, 100

#: What chapter 9's chart draws of each setting's ``learning_curve_band``, per step.
LEARNING_FIELDS = ("median", "low", "high", "zero_signal_fraction")


def learning_band(G: int, lr: float) -> dict:
    """``learning_curve_band`` at one setting of chapter 9's chart (its steps, runs and seed 0), with
    the zero-signal share of step t at step t (none at step 0)."""
    band = learning_curve_band(G, lr, LEARNING_STEPS, LEARNING_SEEDS, 0)
    return {**band, "zero_signal_fraction": np.concatenate([[np.nan], band["zero_signal_fraction"]])}


def learning_chart():
    """Chapter 9: the median of pi(5) over 100 runs, its 10-90% band and the share of zero-signal groups
    per step (``learning_band``), for every G x lr of ``LEARNING_G`` x ``LEARNING_LR``; the median after
    10 and 30 steps and the band's width after 5 printed."""
    bands = {}

    def band(G, lr):
        bands[G, lr] = bands.get((G, lr)) or learning_band(G, lr)
        return [bands[G, lr][f] for f in LEARNING_FIELDS]

    def notes(G, lr):
        b = bands.get((G, lr)) or learning_band(G, lr)
        return {"median at step 10": b["median"][10], "at 30": b["median"][30],
                "10-90% width at step 5": b["high"][5] - b["low"][5]}

    # 3 decimals: a thousandth of the y axis, far under the band's Monte Carlo spread; the 992 settings'
    # curves are most of the page's weight, which stays under the 1.5 MB gzipped budget this way
    return line_chart(band, [LEARNING_G, LEARNING_LR], x=np.arange(LEARNING_STEPS + 1), notes=notes,
                      ydomain=[0, 1], decimals=3, fmt=".3f",      # printed as stored: 3 decimals
                      series=[f"median of {LEARNING_SEEDS} runs", "10% of runs", "90% of runs", "zero-signal share"],
                      styles=["solid", "dotted", "dotted", "dashed"],
                      colors=[CORRECT_COLOR, CORRECT_COLOR, CORRECT_COLOR, PALETTE["grey"]],
                      xlabel="step", ylabel="π(5); share of groups",
                      headline="a larger G narrows the band; a larger lr learns sooner")


# The chapter's chart, and its numbers from the library alone (tests/test_charts.py); it replaced IntSlider G
# 1..32 and FloatSlider lr 0.25..4 step 0.25. Its 992 settings of 100 runs each take a while: the test
# recomputes six.
def _oracle(G, lr):
    band = learning_curve_band(G, lr, 30, 100, 0)
    return np.arange(31), [band["median"], band["low"], band["high"],
                           np.concatenate([[np.nan], band["zero_signal_fraction"]])]


CHARTS = (Declared("learning", learning_chart, _oracle, [LEARNING_G, LEARNING_LR], replaced={"G": 32, "lr": 16},
                   checked=[(1, 0.25), (8, 1.0), (8, 2.0), (32, 4.0), (13, 2.875), (2, 0.5)], decimals=3),)
