"""Chapter 2's figures and charts: Decoding rearranges, it does not relocate (``book/02_decoding.ipynb``)."""
from __future__ import annotations

import numpy as np

from ..math.distributions import decode_probs, softmax
from ..toy.five_token import CORRECT, LOGITS, VOCAB
from .charts import Declared, Slider, bar_chart
from .distribution import _ValueBars
from .style import CORRECT_COLOR, OTHER_COLOR, PALETTE, relayout, token_colors


# ----------------------------------------------------------------------------- chapters 2-5


#: The temperatures of chapter 2's curve, log-spaced, with T = 2 (the maximiser) on the grid.
TEMPERATURE_GRID = np.geomspace(0.05, 80.0, 401)


def _token_axes(fig, ylabel: str, outline_label: str):
    """Axes of a distribution over VOCAB (correct answer in CORRECT_COLOR) drawn over the toy's pi
    (dashed outline): the bars start at height 0 (chapters 2 and 4 set them)."""
    ax = fig.add_subplot(1, 1, 1)
    ax.bar(VOCAB, softmax(LOGITS), fill=False, edgecolor="black", linestyle="--", linewidth=1.2,
           label=outline_label, zorder=3)
    bars = _ValueBars(ax, VOCAB, color=token_colors(VOCAB, CORRECT), edgecolor="black", linewidth=0.6, alpha=0.9)
    ax.set_ylim(0, 1.1)
    ax.set_xlabel("answer token to 2+3=")
    ax.get_xticklabels()[CORRECT].set_color(CORRECT_COLOR)
    ax.set_ylabel(ylabel)
    ax.legend(loc="upper right")
    return ax, bars


def draw_p5_vs_temperature(fig, temperature: float | None = None) -> None:
    """P(5) = softmax(z / T)[5] against T on a log axis (left), and the flat top of the same curve
    magnified (right), where the maximum 0.2071 at T = 2 sits just above the limit 0.2 (chapter 2)."""
    p5 = softmax(LOGITS[None, :] / TEMPERATURE_GRID[:, None])[:, CORRECT]
    best = int(np.argmax(p5))
    marks = {t: float(softmax(LOGITS, t)[CORRECT]) for t in (0.5, 1.0, 2.0)}
    full, zoom = fig.subplots(1, 2)
    for ax in (full, zoom):
        ax.semilogx(TEMPERATURE_GRID, p5, color=CORRECT_COLOR, lw=2, label="P(5) at temperature T")
        ax.axhline(p5[best], color="black", ls=":", lw=1, label=f"the most any T gives: {p5[best]:.4f}")
        if temperature is not None:
            ax.axvline(temperature, color=PALETTE["blue"], lw=1, label=f"slider T = {temperature:g}")
        ax.set_xlabel("temperature T (log scale)")
    full.plot(0.5, marks[0.5], "o", color="black", ms=5)
    full.annotate(f"T = 0.5: {marks[0.5]:.4f}", (0.5, marks[0.5]), textcoords="offset points", xytext=(8, -6),
                  fontsize=9)
    full.set_ylim(0, 0.25)
    full.set_ylabel("P(5)")
    full.set_title("the whole curve", fontsize=10)
    full.legend(loc="lower right", fontsize=8)
    zoom.axhline(0.2, color=OTHER_COLOR, ls="--", lw=1)
    for t, (dx, dy) in ((1.0, (6, -10)), (2.0, (6, 5))):
        zoom.plot(t, marks[t], "o", color="black", ms=5)
        zoom.annotate(f"T = {t:g}: {marks[t]:.4f}", (t, marks[t]), textcoords="offset points", xytext=(dx, dy),
                      fontsize=9)
    zoom.annotate("T → ∞: 0.2", (80.0, 0.2), textcoords="offset points", xytext=(0, -12), fontsize=9, ha="right")
    zoom.set_xlim(0.7, 80.0)
    zoom.set_ylim(0.1955, 0.2095)
    zoom.set_title("zoom: P(5) from 0.1955 to 0.2095", fontsize=10)
    full.indicate_inset_zoom(zoom, edgecolor="black")
    fig.suptitle(f"No temperature lifts P(5) above {p5[best]:.4f} (at T = {TEMPERATURE_GRID[best]:.3g})")
    fig.tight_layout()


def draw_decoding(fig, temperature: float = 1.0, top_k: int = 5, top_p: float = 1.0) -> None:
    """The distribution the sampler draws from after temperature, top-k and top-p, over the model's pi
    (dashed outline); the title reports P(5) (chapter 2's sliders)."""
    probs = decode_probs(LOGITS, temperature, top_k=top_k, top_p=top_p)
    ax, bars = _token_axes(fig, ylabel="sampling probability",
                    outline_label="model π (T = 1, no truncation)")
    bars.set(probs)
    ax.set_title(f"T = {temperature:g}, top-k = {top_k}, top-p = {top_p:g}: P(5) = {probs[CORRECT]:.4f}")
    relayout(fig)


#: Chapter 2's three sampler settings: T from 0.05 to 5, every top-k, top-p in steps of 0.025.
DECODING = (Slider("T", "T", 0.05, 5.0, 0.05, 1.0), Slider("top_k", "top-k", 1, 5, 1, 5, fmt="d"),
            Slider("top_p", "top-p", 0.025, 1.0, 0.025, 1.0, fmt=".3f"))


def decoding_chart():
    """Chapter 2: the distribution the sampler draws from, ``decode_probs(LOGITS, T, top_k, top_p)``,
    on the whole grid of ``DECODING``, over the model's pi (dashed outline)."""
    return bar_chart(lambda T, top_k, top_p: decode_probs(LOGITS, T, top_k=top_k, top_p=top_p), DECODING,
                     categories=VOCAB, correct=CORRECT, xlabel="answer token to 2+3=",
                     ylabel="sampling probability", headline="4 is never below 5", readout="P(5)",
                     outline=softmax(LOGITS), outline_label="model π (T = 1, no truncation)")


#: The chapter's charts: the sampler's distribution (chapter 2); it replaced FloatLogSlider 10^-1.3..10^1.7 step
#: 0.05, IntSlider 1..5 and FloatSlider 0.05..1 step 0.05.
CHARTS = (Declared("decoding", decoding_chart,
                   lambda T, top_k, top_p: decode_probs(LOGITS, T, top_k=top_k, top_p=top_p), list(DECODING), VOCAB,
                   replaced={"T": 61, "top_k": 5, "top_p": 20}),)
