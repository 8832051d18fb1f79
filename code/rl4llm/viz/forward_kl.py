"""Chapter 5's figures and charts: But SFT is forward KL (``book/05_forward_kl.ipynb``)."""
from __future__ import annotations

import numpy as np

from ..math.two_step import training_curves
from .charts import Declared, Slider, line_chart
from .style import CORRECT_COLOR, OTHER_COLOR, PALETTE, relayout


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
    panels = _training_axes(fig)
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


#: Chapter 5's learning rate: 0.1 to 5 in steps of 0.1 (as the live slider had), opening at lr = 1.
TRAINING_LR = Slider("lr", "lr", 0.1, 5.0, 0.1, 1.0, fmt=".1f")

#: Steps of chapter 5's two runs.
TRAINING_STEPS = 25


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


#: The chapter's charts: SFT's and RL's training curves (chapter 5); it replaced a FloatSlider 0.1..5 step 0.1.
CHARTS = (Declared("training_curves", training_curves_chart,
                   lambda lr: (np.arange(26), [training_curves(lr, 25)[f"{run}_{k}"] for run in ("sft", "rl")
                                               for k in ("5", "05", "5_after_0")]),
                   [TRAINING_LR], replaced={"lr": 50}),)
