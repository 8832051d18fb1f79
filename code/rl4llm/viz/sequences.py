"""Chapter 3's figures and charts: One answer, two strings (``book/03_sequences.ipynb``)."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from ..math.two_step import two_spellings, two_token_paths
from .charts import Declared, Slider, line_chart
from .distribution import _ValueBars
from .style import CORRECT_COLOR, OTHER_COLOR, PALETTE, relayout


def draw_string_probabilities(fig) -> None:
    """Left: P("5") and P("05") as products of conditionals. Right: their log-probabilities as sums of
    log-factors, one segment per step (chapter 3)."""
    paths = two_token_paths()
    left, right = fig.add_subplot(1, 2, 1), fig.add_subplot(1, 2, 2)
    names = list(paths)
    totals = [float(np.prod(paths[n])) for n in names]
    left.bar([f'"{n}"' for n in names], totals, color=CORRECT_COLOR, edgecolor="black", linewidth=0.6)
    for i, p in enumerate(totals):
        left.annotate(f"{p:.4f}", (i, p), ha="center", va="bottom", fontsize=9)
    left.set_ylabel("P(string | 2+3=)")
    left.set_title(f'"5" is {totals[0] / totals[1]:.4g}x as likely')
    shades = [PALETTE["blue"], PALETTE["orange"], PALETTE["purple"]]
    for row, name in enumerate(names):
        start = 0.0
        for step, factor in enumerate(paths[name]):
            width = -np.log(factor)
            right.barh(row, width, left=start, color=shades[step], edgecolor="black", linewidth=0.6,
                       label=f"step {step + 1}" if row == len(names) - 1 else None)
            start += width
        # the bar's length is -ln P, the quantity on the axis (positive), printed at its end
        right.annotate(f"{start:.4f}", (start, row), xytext=(4, 0), textcoords="offset points", va="center",
                       fontsize=9)
    right.set_yticks(range(len(names)), [f'"{n}"' for n in names])
    right.set_xlim(0, 5.2)
    right.set_xlabel("-ln P (nats): the segments add")
    right.set_title("log-probabilities add")
    right.legend(loc="lower right", fontsize=8)
    fig.tight_layout()


def draw_two_spellings(fig, pi_0: float = 0.1, p_5_after_0: float = 0.2) -> None:
    """Chapter 3's slider: P("5") and P("05") as products of conditionals, when the first step gives
    "0" probability ``pi_0`` and "0" is followed by "5" with probability ``p_5_after_0``.

    Left: the two probabilities and their sum at the slider's values. Right: both against pi_0, at
    the slider's P(5 | 0), the slider's pi_0 marked.
    """
    now = two_spellings(pi_0, p_5_after_0)
    a = _two_spellings_axes(fig)
    a.bars.set([now["5"], now["05"], now["correct"]])
    a.left.set_title(f"π(0) = {pi_0:.2f}, P(5 | 0) = {p_5_after_0:.2f}", fontsize=10)
    grid = np.linspace(0.0, 1.0, 101)
    sweep = [two_spellings(q, p_5_after_0) for q in grid]
    a.p5.set_data(grid, [s["5"] for s in sweep])
    a.p05.set_data(grid, [s["05"] for s in sweep])
    a.p05.set_label(f'P("05") = π(0) × {p_5_after_0:.2f} × 1')
    a.slider.set_xdata([pi_0, pi_0])
    a.slider.set_label(f"slider π(0) = {pi_0:.2f}")
    a.dots.set_data([pi_0, pi_0], [now["5"], now["05"]])
    a.right.legend(loc="upper center", fontsize=8, frameon=True, framealpha=0.9, edgecolor="none")
    relayout(fig)


def _two_spellings_axes(fig) -> SimpleNamespace:
    """Chapter 3's panels: bars for P("5"), P("05") and their sum (left), empty curves against pi(0)
    with the slider's mark (right)."""
    left, right = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1, 1.4]})
    bars = _ValueBars(left, ['"5"', '"05"', "correct\n(either)"], fmt=".4f",
                      color=[CORRECT_COLOR, CORRECT_COLOR, OTHER_COLOR], edgecolor="black", linewidth=0.6)
    bars.bars[1].set_hatch("//")
    left.set_ylim(0, 1.0)
    left.set_ylabel("probability")
    p5, = right.plot([], [], color=CORRECT_COLOR, lw=2, label='P("5") = π(5) × 0.8')
    p05, = right.plot([], [], color=CORRECT_COLOR, lw=2, ls="--")
    slider = right.axvline(0.0, color=PALETTE["blue"], lw=1)
    dots, = right.plot([], [], "o", color="black", ms=5)
    right.set_xlim(0, 1)
    right.set_ylim(0, 1.0)
    right.set_xlabel('first-step probability π(0) of the token "0"')
    right.set_title("the first factor moves, the later ones stay", fontsize=10)
    return SimpleNamespace(left=left, right=right, bars=bars, p5=p5, p05=p05, slider=slider, dots=dots)


# ----------------------------------------------------------------------------- live charts (chapters 3, 5)
#: Chapter 3's first factor pi(0), 0 to 1 in steps of 0.01 (the marker on the curves), opening at the toy's 0.1.
PI_0 = Slider("pi_0", "π(0)", 0.0, 1.0, 0.01, 0.1)

#: Chapter 3's second factor P(5 | 0), 0 to 1 in steps of 0.02, opening at the toy's 0.2.
P_5_AFTER_0 = Slider("p_5_after_0", "P(5 | 0)", 0.0, 1.0, 0.02, 0.2)


def two_spellings_chart():
    """Chapter 3: P("5"), P("05") and P(correct) (``two_spellings``) against pi(0), for every P(5 | 0) of
    ``P_5_AFTER_0``; the slider's pi(0) marked and the three probabilities there printed."""
    def curves(p_5_after_0):
        at = [two_spellings(q, p_5_after_0) for q in PI_0.values]
        return [[a[key] for a in at] for key in ("5", "05", "correct")]

    return line_chart(curves, [P_5_AFTER_0], x=PI_0.values, marker=PI_0, readout_per_line=2,
                      series=['P("5")', 'P("05")', "P(correct)"], styles=["solid", "dashed", "dotted"],
                      colors=[CORRECT_COLOR, PALETTE["blue"], "black"], ydomain=[0, 1],
                      xlabel='first-step probability π(0) of "0"', ylabel="probability",
                      headline='"05" can never pass its first factor π(0)')


#: The chapter's charts: the two spellings' probabilities (chapter 3); it replaced two FloatSliders 0..1 step 0.05.
CHARTS = (Declared("two_spellings", two_spellings_chart,
                   lambda p_5_after_0: (PI_0.values, [[two_spellings(q, p_5_after_0)[k] for q in PI_0.values]
                                                      for k in ("5", "05", "correct")]),
                   [P_5_AFTER_0], marker=PI_0, replaced={"pi_0": 21, "p_5_after_0": 21}),)
