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


def draw_method_curves(fig, curves: dict) -> None:
    """pi(5) of every method on the toy: mean over seeds with a 10-90% band (chapter 21)."""
    ax = fig.add_subplot(1, 1, 1)
    styles = ["-", "--", "-", "-.", "-", "-"]
    for j, (name, c) in enumerate(curves.items()):
        color = METHOD_COLORS.get(name, PALETTE["sky"])
        _band(ax, c, color, f"{name} ({c.shape[0]} run{'s' if c.shape[0] > 1 else ''})", styles[j % len(styles)])
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("update step (each RL step samples one group of 8)")
    ax.set_ylabel("π(5)")
    ax.set_title("every method raises π(5) on the toy", fontsize=11)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
