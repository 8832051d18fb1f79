"""Figures for Part I (chapters 1-5): the toy's distribution, decoding, SFT."""
from __future__ import annotations

import numpy as np

from ..distributions import decode_probs, entropy, log_softmax, softmax
from ..gradients import sft_step
from ..toy import CORRECT, LOGITS, VOCAB, two_token_paths
from ..two_strings import training_curves
from .style import CORRECT_COLOR, OTHER_COLOR, PALETTE, token_colors


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



# ----------------------------------------------------------------------------- chapters 2-5


#: The temperatures of chapter 2's curve, log-spaced, with T = 2 (the maximiser) on the grid.
TEMPERATURE_GRID = np.geomspace(0.05, 80.0, 401)


def _token_bars(ax, probs, *, outline=None, outline_label=None) -> None:
    """Bars of a distribution over VOCAB (correct answer in CORRECT_COLOR), optionally over an outline."""
    bars = ax.bar(VOCAB, probs, color=token_colors(VOCAB, CORRECT), edgecolor="black", linewidth=0.6, alpha=0.9)
    if outline is not None:
        ax.bar(VOCAB, outline, fill=False, edgecolor="black", linestyle="--", linewidth=1.2, label=outline_label,
               zorder=3)
    for bar, p in zip(bars, probs):
        ax.annotate(f"{p:.3f}", (bar.get_x() + bar.get_width() / 2, p), ha="center", va="bottom", fontsize=9)
    ax.set_ylim(0, 1.1)
    ax.set_xlabel("answer token to 2+3=")
    ax.get_xticklabels()[CORRECT].set_color(CORRECT_COLOR)


def draw_p5_vs_temperature(fig, temperature: float | None = None) -> None:
    """P(5) = softmax(z / T)[5] against T on a log axis, its maximum at T = 2 marked (chapter 2)."""
    p5 = softmax(LOGITS[None, :] / TEMPERATURE_GRID[:, None])[:, CORRECT]
    best = int(np.argmax(p5))
    ax = fig.add_subplot(1, 1, 1)
    ax.semilogx(TEMPERATURE_GRID, p5, color=CORRECT_COLOR, lw=2, label="P(5) at temperature T")
    ax.axhline(p5[best], color="black", ls=":", lw=1, label=f"best any T can do: {p5[best]:.4f}")
    for t in (0.5, 1.0, 2.0):
        value = softmax(LOGITS, t)[CORRECT]
        ax.plot(t, value, "o", color="black", ms=5)
        ax.annotate(f"T = {t:g}: {value:.4f}", (t, value), textcoords="offset points", xytext=(6, -14), fontsize=9)
    if temperature is not None:
        ax.axvline(temperature, color=PALETTE["blue"], lw=1, label=f"slider T = {temperature:g}")
    ax.set_ylim(0, 0.25)
    ax.set_xlabel("temperature T (log scale)")
    ax.set_ylabel("P(5)")
    ax.set_title(f"No temperature lifts P(5) above {p5[best]:.4f} (at T = {TEMPERATURE_GRID[best]:.3g})")
    ax.legend(loc="lower right")
    fig.tight_layout()


def draw_decoding(fig, temperature: float = 1.0, top_k: int = 5, top_p: float = 1.0) -> None:
    """The distribution the sampler draws from after temperature, top-k and top-p, over the model's pi
    (dashed outline); the title reports P(5) (chapter 2's sliders)."""
    probs = decode_probs(LOGITS, temperature, top_k=top_k, top_p=top_p)
    ax = fig.add_subplot(1, 1, 1)
    _token_bars(ax, probs, outline=softmax(LOGITS), outline_label="model π (T = 1, no truncation)")
    ax.set_ylabel("sampling probability")
    ax.set_title(f"T = {temperature:g}, top-k = {top_k}, top-p = {top_p:g}: P(5) = {probs[CORRECT]:.4f}")
    ax.legend(loc="upper right")
    fig.tight_layout()


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
        right.annotate(f"{-start:.4f}", (start, row), xytext=(4, 0), textcoords="offset points", va="center",
                       fontsize=9)
    right.set_yticks(range(len(names)), [f'"{n}"' for n in names])
    right.set_xlim(0, 5.2)
    right.set_xlabel("-ln P (nats): the segments add")
    right.set_title("log-probabilities add")
    right.legend(loc="lower right", fontsize=8)
    fig.tight_layout()


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
    ax = fig.add_subplot(1, 1, 1)
    _token_bars(ax, after, outline=before, outline_label="before the step")
    ax.set_ylabel("probability π(token)")
    ax.set_title(f"One SFT step, lr = {lr:g}: π(5) {before[CORRECT]:.4f} → {after[CORRECT]:.4f}")
    ax.legend(loc="upper right")
    fig.tight_layout()


def draw_kl_fits(fig, p, fits) -> None:
    """A two-peaked p (grey bars) and the one-peaked q that minimises each KL direction (chapter 5).

    ``fits`` maps a label (e.g. "forward KL(p || q)") to a fitted q.
    """
    ax = fig.add_subplot(1, 1, 1)
    bins = np.arange(len(p))
    ax.bar(bins, p, width=1.0, color=OTHER_COLOR, alpha=0.6, label="target p (two modes)")
    for (label, q), color in zip(fits.items(), (PALETTE["blue"], PALETTE["vermillion"])):
        ax.plot(bins, q, color=color, lw=2, label=label)
    ax.set_xlabel("outcome (bin)")
    ax.set_ylabel("probability")
    ax.set_title("Forward KL covers both modes; reverse KL picks one")
    ax.legend(loc="upper right", fontsize=9)
    fig.tight_layout()


def draw_training_curves(fig, lr: float = 1.0, steps: int = 25) -> None:
    """P("5") and P("05") over exact updates: SFT on the label "5" vs RL on the verifier (chapter 5's slider)."""
    curves = training_curves(lr, steps)
    axes = fig.subplots(1, 2, sharey=True)
    for ax, name, title in zip(axes, ("sft", "rl"), ('SFT on the label "5"', "RL on the verifier's reward")):
        ax.semilogy(curves["step"], curves[f"{name}_5"], color=CORRECT_COLOR, lw=2, label='P("5")')
        ax.semilogy(curves["step"], curves[f"{name}_05"], color=CORRECT_COLOR, lw=2, ls="--", label='P("05")')
        ax.set_title(f"{title}\nP(\"05\"): {curves[f'{name}_05'][0]:.4f} → {curves[f'{name}_05'][-1]:.4f}",
                     fontsize=10)
        ax.set_xlabel(f"update step (lr = {lr:g})")
    axes[0].set_ylabel("probability of the string (log scale)")
    axes[0].set_ylim(1e-4, 1.0)
    axes[0].legend(loc="lower left")
    fig.tight_layout()
