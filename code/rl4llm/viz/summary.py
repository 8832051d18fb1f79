"""Chapter 21's figures and charts: Everything in one place (``book/21_summary.ipynb``)."""
from __future__ import annotations

import numpy as np

from .style import CORRECT_COLOR, PALETTE

#: One colour per method, no two of the same hue (Okabe-Ito; GRPO in the correct-answer green); a method
#: not named here falls back to the sky blue.
METHOD_COLORS = {"SFT": PALETTE["grey"], "REINFORCE": PALETTE["orange"], "REINFORCE + baseline": PALETTE["blue"],
                 "TRPO": PALETTE["purple"], "PPO": PALETTE["black"], "GRPO": CORRECT_COLOR}


def _band(ax, curves: np.ndarray, color, label: str, linestyle="-") -> None:
    steps = np.arange(curves.shape[1])
    ax.plot(steps, curves.mean(axis=0), color=color, label=label, linestyle=linestyle, linewidth=2)
    if curves.shape[0] > 1:
        low, high = np.quantile(curves, [0.1, 0.9], axis=0)
        ax.fill_between(steps, low, high, color=color, alpha=0.2, linewidth=0)


def widest_from(widths: dict) -> tuple[str, int]:
    """The method whose band is the widest at the last step, and the first step from which it stays the
    widest to the end: ``widths`` maps each method to its band's width at every step (chapter 21)."""
    names = list(widths)
    table = np.array([widths[name] for name in names])
    widest = table.argmax(axis=0)
    last = widest[-1]
    start = len(widest) - 1
    while start > 0 and widest[start - 1] == last:
        start -= 1
    return names[last], start


def draw_method_curves(fig, curves: dict, widths: dict | None = None) -> None:
    """pi(5) of every method on the toy: mean over seeds with a 10-90% band (chapter 21). With ``widths``
    ({method: the band's width at every step}), a second panel plots each width against the step from step 1
    (at step 0 every run is at the start, width 0), on a log scale, so that the narrow late bands can be told
    apart."""
    ax = fig.add_subplot(1, 2 if widths else 1, 1)
    styles = ["-", "--", "-", "-.", "-", "-"]
    for j, (name, c) in enumerate(curves.items()):
        color = METHOD_COLORS.get(name, PALETTE["sky"])
        _band(ax, c, color, f"{name} ({c.shape[0]} run{'s' if c.shape[0] > 1 else ''})", styles[j % len(styles)])
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("update step (each RL step samples one group of 8)")
    ax.set_ylabel("π(5)")
    ax.set_title("every method raises π(5) on the toy", fontsize=11)
    ax.legend(fontsize=8, loc="lower right")
    if widths:
        right = fig.add_subplot(1, 2, 2)
        for j, (name, c) in enumerate(curves.items()):
            if name in widths:
                right.plot(np.arange(1, len(widths[name])), widths[name][1:], color=METHOD_COLORS.get(name, PALETTE["sky"]),
                           linestyle=styles[j % len(styles)], linewidth=2, label=name)
        right.set_yscale("log")
        right.set_xlabel("update step")
        right.set_ylabel("width of the 10-90% band")
        name, start = widest_from(widths)
        right.set_title(f"from step {start} on, {name}'s band is widest", fontsize=10)
    fig.tight_layout()
