"""Chapter 1's figures and charts: A language model is a probability distribution
(``book/01_distribution.ipynb``)."""
from __future__ import annotations

import numpy as np

from ..math.distributions import softmax
from ..toy.five_token import CORRECT, LOGITS, VOCAB
from .charts import Declared, Slider, bar_chart
from .style import CORRECT_COLOR, relayout, token_colors


class _ValueBars:
    """Bars with their heights printed on top, built at height 0; ``set`` moves both."""

    def __init__(self, ax, x, fmt: str = ".3f", **style):
        self.bars = ax.bar(x, np.zeros(len(x)), **style)
        self.labels = [ax.annotate("", (bar.get_x() + bar.get_width() / 2, 0.0), ha="center", va="bottom",
                                   fontsize=9) for bar in self.bars]
        self.fmt = fmt

    def set(self, heights) -> None:
        """Every bar to its height, its printed value on top of it."""
        for bar, label, height in zip(self.bars, self.labels, heights):
            bar.set_height(height)
            label.xy = label.xyann = (label.xy[0], height)      # the point and the text's place
            label.set_text(format(height, self.fmt))


def draw_distribution(fig, temperature: float = 1.0) -> None:
    """Bar chart of the toy's pi = softmax(z / T) over (0, 4, 5, 6, 15), the correct 5 highlighted
    (chapter 1's temperature slider)."""
    pi = softmax(LOGITS, temperature)
    ax, bars = _distribution_axes(fig)
    bars.set(pi)
    ax.set_title(f"T = {temperature:g}: P(5) = {pi[CORRECT]:.3f}, the mode is still 4", color="black")
    relayout(fig)


def _distribution_axes(fig):
    """Chapter 1's axes: bars for pi (set by ``draw_distribution``), the uniform level, labels, legend."""
    ax = fig.add_subplot(1, 1, 1)
    bars = _ValueBars(ax, VOCAB, color=token_colors(VOCAB, CORRECT), edgecolor="black", linewidth=0.6)
    ax.axhline(1 / len(VOCAB), color="black", linestyle=":", linewidth=1, label="uniform (T → ∞)")
    ax.set_ylim(0, 1.05)
    ax.set_xlabel("answer token to 2+3=")
    ax.set_ylabel("probability π(token)")
    ax.legend(loc="upper right")
    ax.get_xticklabels()[CORRECT].set_color(CORRECT_COLOR)
    return ax, bars


# ----------------------------------------------------------------------------- live charts (chapters 1, 2, 4)
# Each slider figure as a chart that redraws in the reader's browser (rl4llm.viz.charts): the bars
# are the library's numbers on the sliders' whole grid, computed here.

#: Chapter 1's temperature: 0.05 to 20 (the live slider's range) in steps of 0.05, opening at T = 1.
TEMPERATURE = Slider("T", "T", 0.05, 20.0, 0.05, 1.0)


def distribution_chart():
    """Chapter 1: pi_T = softmax(z / T) over the toy's answers, for every T of ``TEMPERATURE``."""
    return bar_chart(lambda T: softmax(LOGITS, T), [TEMPERATURE], categories=VOCAB, correct=CORRECT,
                     xlabel="answer token to 2+3=", ylabel="probability π(token)",
                     headline="the order never changes", readout="P(5)",
                     level=1 / len(VOCAB), level_label="uniform (T → ∞)")


#: The chapter's charts (tests/test_charts.py): the bars are softmax(z / T) (chapter 1); the chart replaced a
#: FloatLogSlider 10^-1.3..10^1.3 step 0.05.
CHARTS = (Declared("temperature", distribution_chart, lambda T: softmax(LOGITS, T), [TEMPERATURE], VOCAB,
                   replaced={"T": 53}),)
