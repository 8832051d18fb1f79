"""Figures for Part I (chapters 1-5): the toy's distribution, decoding, SFT."""
from __future__ import annotations

from ..distributions import softmax
from ..toy import CORRECT, LOGITS, VOCAB
from .style import CORRECT_COLOR, token_colors


def draw_distribution(fig, temperature: float = 1.0) -> None:
    """Bar chart of the toy's pi = softmax(z / T) over (0, 4, 5, 6, 15), the correct 5 highlighted
    (chapter 1's temperature slider)."""
    pi = softmax(LOGITS, temperature)
    ax = fig.add_subplot(1, 1, 1)
    bars = ax.bar(VOCAB, pi, color=token_colors(VOCAB, CORRECT), edgecolor="black", linewidth=0.6)
    for bar, p in zip(bars, pi):
        ax.annotate(f"{p:.3f}", (bar.get_x() + bar.get_width() / 2, p), ha="center", va="bottom", fontsize=9)
    ax.axhline(1 / len(VOCAB), color="black", linestyle=":", linewidth=1, label="uniform (T → ∞)")
    ax.set_ylim(0, 1.05)
    ax.set_xlabel("answer token to 2+3=")
    ax.set_ylabel("probability π(token)")
    ax.set_title(f"T = {temperature:g}: P(5) = {pi[CORRECT]:.3f}, the mode is still 4", color="black")
    ax.legend(loc="upper right")
    ax.get_xticklabels()[CORRECT].set_color(CORRECT_COLOR)
    fig.tight_layout()

