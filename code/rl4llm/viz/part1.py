"""Figures for Part I (chapters 1-5): the toy's distribution, decoding, SFT."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from ..math.distributions import decode_probs, entropy, log_softmax, softmax
from ..math.gradients import sft_step
from ..toy.five_token import CORRECT, LOGITS, VOCAB
from ..math.two_step import training_curves, two_spellings, two_token_paths
from .charts import Slider, bar_chart, line_chart
from .inplace import kept, relayout
from .style import CORRECT_COLOR, OTHER_COLOR, PALETTE, token_colors


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
    ax, bars = kept(fig, _distribution_axes)
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
    ax, bars = kept(fig, _token_axes, ylabel="sampling probability",
                    outline_label="model π (T = 1, no truncation)")
    bars.set(probs)
    ax.set_title(f"T = {temperature:g}, top-k = {top_k}, top-p = {top_p:g}: P(5) = {probs[CORRECT]:.4f}")
    relayout(fig)


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
    ax, bars = kept(fig, _token_axes, ylabel="probability π(token)", outline_label="before the step")
    bars.set(after)
    ax.set_title(f"One SFT step, lr = {lr:g}: π(5) {before[CORRECT]:.4f} → {after[CORRECT]:.4f}")
    relayout(fig)


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
    """P("5"), P("05") and P(5 | 0) over exact updates of every logit of the two-step policy: SFT on
    the label "5" (left) vs RL on the verifier's expected reward (right) (chapter 5's slider)."""
    curves = training_curves(lr, steps)
    panels = kept(fig, _training_axes)
    titles = ('SFT on the label "5"', "RL on the verifier (exact gradient)")
    for (ax, lines), name, title in zip(panels, ("sft", "rl"), titles):
        for line, key in zip(lines, ("5", "05", "5_after_0")):
            line.set_data(curves["step"], curves[f"{name}_{key}"])
        p05 = curves[f"{name}_05"]
        ax.set_title(f'{title}\nP("05"): {p05[0]:.4f}, peak {p05.max():.4f}, end {p05[-1]:.4f}', fontsize=10)
        ax.set_xlabel(f"update step (lr = {lr:g})")
    relayout(fig)


def _training_axes(fig):
    """Chapter 5's two log-scale panels (SFT, RL), each with empty lines for P("5"), P("05"), P(5 | 0)."""
    axes = fig.subplots(1, 2, sharey=True)
    panels = []
    for ax in axes:
        lines = (ax.semilogy([], [], color=CORRECT_COLOR, lw=2, label='P("5")')[0],
                 ax.semilogy([], [], color=CORRECT_COLOR, lw=2, ls="--", label='P("05")')[0],
                 ax.semilogy([], [], color=PALETTE["blue"], lw=1.5, ls=":", label="P(5 | 0)")[0])
        panels.append((ax, lines))
    axes[0].set_ylabel("probability (log scale)")
    axes[0].set_ylim(1e-4, 1.0)
    axes[0].legend(loc="lower left", fontsize=9)
    return panels


def draw_two_spellings(fig, pi_0: float = 0.1, p_5_after_0: float = 0.2) -> None:
    """Chapter 3's slider: P("5") and P("05") as products of conditionals, when the first step gives
    "0" probability ``pi_0`` and "0" is followed by "5" with probability ``p_5_after_0``.

    Left: the two probabilities and their sum at the slider's values. Right: both against pi_0, at
    the slider's P(5 | 0), the slider's pi_0 marked.
    """
    now = two_spellings(pi_0, p_5_after_0)
    a = kept(fig, _two_spellings_axes)
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


# ----------------------------------------------------------------------------- live charts (chapters 1, 2, 4)
# Each slider figure as a chart that redraws in the reader's browser (rl4llm.viz.charts): the bars
# are the library's numbers on the sliders' whole grid, computed here.

#: Chapter 1's temperature: 0.05 to 20 (the live slider's range) in steps of 0.05, opening at T = 1.
TEMPERATURE = Slider("T", "T", 0.05, 20.0, 0.05, 1.0)
#: Chapter 2's three sampler settings: T from 0.05 to 5, every top-k, top-p in steps of 0.025.
DECODING = (Slider("T", "T", 0.05, 5.0, 0.05, 1.0), Slider("top_k", "top-k", 1, 5, 1, 5, fmt="d"),
            Slider("top_p", "top-p", 0.025, 1.0, 0.025, 1.0, fmt=".3f"))
#: Chapter 4's learning rate: 0 to 5 in steps of 0.01, opening at lr = 1.
LEARNING_RATE = Slider("lr", "lr", 0.0, 5.0, 0.01, 1.0)


def distribution_chart():
    """Chapter 1: pi_T = softmax(z / T) over the toy's answers, for every T of ``TEMPERATURE``."""
    return bar_chart(lambda T: softmax(LOGITS, T), [TEMPERATURE], categories=VOCAB, correct=CORRECT,
                     xlabel="answer token to 2+3=", ylabel="probability π(token)",
                     headline="the order never changes", readout="P(5)",
                     level=1 / len(VOCAB), level_label="uniform (T → ∞)")


def decoding_chart():
    """Chapter 2: the distribution the sampler draws from, ``decode_probs(LOGITS, T, top_k, top_p)``,
    on the whole grid of ``DECODING``, over the model's pi (dashed outline)."""
    return bar_chart(lambda T, top_k, top_p: decode_probs(LOGITS, T, top_k=top_k, top_p=top_p), DECODING,
                     categories=VOCAB, correct=CORRECT, xlabel="answer token to 2+3=",
                     ylabel="sampling probability", headline="4 is never below 5", readout="P(5)",
                     outline=softmax(LOGITS), outline_label="model π (T = 1, no truncation)")


def sft_step_chart():
    """Chapter 4: pi after one SFT step on the label 5, ``softmax(sft_step(LOGITS, CORRECT, lr))``, for
    every lr of ``LEARNING_RATE``, over pi before the step (dashed outline)."""
    return bar_chart(lambda lr: softmax(sft_step(LOGITS, CORRECT, lr)), [LEARNING_RATE], categories=VOCAB,
                     correct=CORRECT, xlabel="answer token to 2+3=", ylabel="probability π(token)",
                     headline="one SFT step on the label 5", readout="π(5) after the step",
                     outline=softmax(LOGITS), outline_label="before the step")


# ----------------------------------------------------------------------------- live charts (chapters 3, 5)
#: Chapter 3's first factor pi(0), 0 to 1 in steps of 0.01 (the marker on the curves), opening at the toy's 0.1.
PI_0 = Slider("pi_0", "π(0)", 0.0, 1.0, 0.01, 0.1)
#: Chapter 3's second factor P(5 | 0), 0 to 1 in steps of 0.02, opening at the toy's 0.2.
P_5_AFTER_0 = Slider("p_5_after_0", "P(5 | 0)", 0.0, 1.0, 0.02, 0.2)
#: Chapter 5's learning rate: 0.1 to 5 in steps of 0.1 (as the live slider had), opening at lr = 1.
TRAINING_LR = Slider("lr", "lr", 0.1, 5.0, 0.1, 1.0, fmt=".1f")
#: Steps of chapter 5's two runs.
TRAINING_STEPS = 25


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


def training_curves_chart():
    """Chapter 5: P("5"), P("05") and P(5 | 0) over ``TRAINING_STEPS`` exact updates (``training_curves``),
    SFT on the label "5" and RL on the verifier, for every lr of ``TRAINING_LR``; RL's P("05") peak
    and both runs' end printed."""
    keys = ("5", "05", "5_after_0")

    def curves(lr):
        c = training_curves(lr, TRAINING_STEPS)
        return [c[f"{run}_{key}"] for run in ("sft", "rl") for key in keys]

    def notes(lr):
        c = training_curves(lr, TRAINING_STEPS)
        return {'RL P("05") highest': c["rl_05"].max(), "at step": int(np.argmax(c["rl_05"])),   # the last at lr 0.1
                'end: RL P("05")': c["rl_05"][-1], "SFT": c["sft_05"][-1]}

    return line_chart(curves, [TRAINING_LR], x=np.arange(TRAINING_STEPS + 1), notes=notes, log_y=True,
                      ydomain=[1e-4, 1],
                      series=[f'{run}: {name}' for run in ("SFT", "RL") for name in ('P("5")', 'P("05")', "P(5 | 0)")],
                      styles=["solid", "dashed", "dotted"] * 2, colors=[PALETTE["blue"]] * 3 + [PALETTE["vermillion"]] * 3,
                      xlabel="update step", ylabel="probability (log scale)",
                      headline='SFT drains "05" at once; RL lifts it, then drains it')
