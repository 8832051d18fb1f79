"""Chapter 4's figures and charts: Supervised fine-tuning, one step at a time (``book/04_sft.ipynb``)."""
from __future__ import annotations

from ..math.distributions import entropy, log_softmax, softmax
from ..math.gradients import sft_step
from ..toy.five_token import CORRECT, LOGITS, VOCAB
from .charts import Declared, Slider, bar_chart
from .decoding import _token_axes
from .style import CORRECT_COLOR, relayout, token_colors


def draw_surprise(fig) -> None:
    """The surprise -ln pi(i) of each answer, and the entropy H(pi) as their pi-weighted mean (chapter 4)."""
    surprise = -log_softmax(LOGITS)
    ax = fig.add_subplot(1, 1, 1)
    ax.bar(VOCAB, surprise, color=token_colors(VOCAB, CORRECT), edgecolor="black", linewidth=0.6)
    h = entropy(softmax(LOGITS))
    ax.axhline(h, color="black", ls="--", lw=1, label=f"entropy H(π) = {h:.4f} nats")
    ax.set_xlabel("answer token to 2+3=")
    ax.set_ylabel("surprise -ln π(token) (nats)")
    ax.set_title("Rare answers surprise more; entropy is the average surprise")
    ax.legend(loc="upper center")
    ax.get_xticklabels()[CORRECT].set_color(CORRECT_COLOR)
    fig.tight_layout()


def draw_sft_step(fig, lr: float = 1.0) -> None:
    """The toy's pi before (dashed outline) and after one SFT step on the label 5 (chapter 4's slider)."""
    before = softmax(LOGITS)
    after = softmax(sft_step(LOGITS, CORRECT, lr))
    ax, bars = _token_axes(fig, ylabel="probability π(token)", outline_label="before the step")
    bars.set(after)
    ax.set_title(f"One SFT step, lr = {lr:g}: π(5) {before[CORRECT]:.4f} → {after[CORRECT]:.4f}")
    relayout(fig)


#: Chapter 4's learning rate: 0 to 5 in steps of 0.01, opening at lr = 1.
LEARNING_RATE = Slider("lr", "lr", 0.0, 5.0, 0.01, 1.0)


def sft_step_chart():
    """Chapter 4: pi after one SFT step on the label 5, ``softmax(sft_step(LOGITS, CORRECT, lr))``, for
    every lr of ``LEARNING_RATE``, over pi before the step (dashed outline)."""
    return bar_chart(lambda lr: softmax(sft_step(LOGITS, CORRECT, lr)), [LEARNING_RATE], categories=VOCAB,
                     correct=CORRECT, xlabel="answer token to 2+3=", ylabel="probability π(token)",
                     headline="one SFT step on the label 5", readout="π(5) after the step",
                     outline=softmax(LOGITS), outline_label="before the step")


#: The chapter's charts: softmax after one SFT step (chapter 4); it replaced a FloatSlider 0..5 step 0.1.
CHARTS = (Declared("sft_step", sft_step_chart, lambda lr: softmax(sft_step(LOGITS, CORRECT, lr)), [LEARNING_RATE], VOCAB,
                   replaced={"lr": 51}),)
