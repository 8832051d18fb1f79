"""Chapter 7's figures and charts: The score-function trick (``book/07_score_function.ipynb``)."""
from __future__ import annotations

import numpy as np

from ..math.estimators import gradient_by_enumeration, gradient_by_finite_differences, gradient_samples
from ..math.gradients import policy_gradient
from ..studies.onpolicy import rl_and_sft_steps
from ..toy.five_token import CORRECT, LOGITS, REWARDS, VOCAB
from .charts import Declared, Slider, line_chart
from .style import CORRECT_COLOR, OTHER_COLOR, PALETTE, relayout, token_colors


# ----------------------------------------------------------------------------- chapter 7
def draw_gradient_three_ways(fig) -> None:
    """Chapter 7: grad J by the closed form, by enumeration of E[r score] and by finite differences."""
    closed = policy_gradient(LOGITS, REWARDS)
    enumerated = gradient_by_enumeration(LOGITS, REWARDS)
    finite = gradient_by_finite_differences(LOGITS, REWARDS)
    ax = fig.add_subplot(1, 1, 1)
    x = np.arange(len(VOCAB))
    for shift, values, label, hatch in ((-0.25, closed, "closed form pi (r - J)", ""),
                                        (0.0, enumerated, "enumeration E[r score]", "//"),
                                        (0.25, finite, "finite differences on J", "..")):
        ax.bar(x + shift, values, width=0.25, color=token_colors(VOCAB, CORRECT), hatch=hatch,
               edgecolor="black", lw=0.5, label=label)
    ax.axhline(0, color="black", lw=0.8)
    ax.set_xticks(x, [f'"{v}"' for v in VOCAB])
    ax.set_xlabel("logit of answer")
    ax.set_ylabel("dJ / dz (per unit logit)")
    ax.set_title("Three routes, one gradient: only 5's logit goes up")
    ax.legend(fontsize=8)
    fig.tight_layout()


def draw_gradient_monte_carlo(fig, n: int = 4000, seed: int = 0) -> None:
    """Chapter 7: running Monte Carlo means of r(y) score(y) converging to grad J, +- 2 standard errors."""
    samples = gradient_samples(LOGITS, REWARDS, n, seed)
    exact = policy_gradient(LOGITS, REWARDS)
    count = np.arange(1, n + 1)[:, None]
    running = np.cumsum(samples, axis=0) / count
    ax = fig.add_subplot(1, 1, 1)
    for i, color in ((CORRECT, CORRECT_COLOR), (1, PALETTE["blue"])):
        half_width = 2 * samples[:, i].std() / np.sqrt(count[:, 0])
        ax.fill_between(count[:, 0], exact[i] - half_width, exact[i] + half_width, color=color, alpha=0.15)
        ax.plot(count[:, 0], running[:, i], color=color, label=f'logit of "{VOCAB[i]}"')
        ax.axhline(exact[i], color=color, ls="--", lw=1)
    ax.set_xscale("log")
    ax.set_ylim(-0.4, 0.5)
    ax.set_xlabel("number of samples n")
    ax.set_ylabel("running mean of r(y) score(y)")
    ax.set_title("Monte Carlo closes in on the exact gradient (dashed)")
    ax.legend(fontsize=8)
    fig.tight_layout()


def draw_steps(fig, lr: float) -> None:
    """Chapter 7 slider: pi after one exact RL step and after one SFT step, at the same lr."""
    steps = rl_and_sft_steps(lr)
    left, bars, marker = _steps_axes(fig)
    for key, group in bars.items():
        for bar, height in zip(group, steps[key]):
            bar.set_height(height)
    left.set_title(f"lr = {lr:g}: pi(5) RL {steps['pi_rl'][CORRECT]:.3f}, SFT {steps['pi_sft'][CORRECT]:.3f}",
                   fontsize=10)
    marker.set_xdata([lr, lr])
    relayout(fig)


def _steps_axes(fig):
    """Chapter 7's panels: bars of pi before, after an RL step and after an SFT step (heights set by
    ``draw_steps``, left); pi(5) after one step against the learning rate, lr marked (right)."""
    left, right = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1.3, 1]})
    x = np.arange(len(VOCAB))
    bars = {key: left.bar(x + shift, np.zeros(len(VOCAB)), width=0.27, color=token_colors(VOCAB, CORRECT),
                          alpha=alpha, edgecolor="black", lw=0.5, label=label)
            for shift, key, label, alpha in ((-0.27, "pi_before", "before", 0.35), (0.0, "pi_rl", "RL step", 0.7),
                                             (0.27, "pi_sft", "SFT step", 1.0))}
    left.set_xticks(x, [f'"{v}"' for v in VOCAB])
    left.set_xlabel("answer (bars: before, RL, SFT)")
    left.set_ylabel("probability")
    left.set_ylim(0, 1)
    grid = np.linspace(0, 8, 81)
    curves = rl_and_sft_steps(grid)
    right.plot(grid, curves["pi_rl"][:, CORRECT], color=CORRECT_COLOR, label="RL")
    right.plot(grid, curves["pi_sft"][:, CORRECT], color=CORRECT_COLOR, ls="--", label="SFT")
    marker = right.axvline(0.0, color=OTHER_COLOR)
    right.set_xlabel("learning rate")
    right.set_ylabel("pi(5) after one step")
    right.set_title("SFT at lr = RL at 5 lr", fontsize=10)
    right.legend(fontsize=8)
    return left, bars, marker


# ----------------------------------------------------------------------------- live charts (chapters 6-9)
#: Chapter 7's learning rate: 0 to 8 in steps of 0.1 (the live slider had 33 positions), opening at 1.
STEP_LR = Slider("lr", "lr", 0.0, 8.0, 0.1, 1.0, fmt=".1f")


def steps_chart():
    """Chapter 7: pi(5) after one exact RL step and after one SFT step (``rl_and_sft_steps``) against
    the learning rate, the slider's lr marked."""
    steps = rl_and_sft_steps(STEP_LR.values)
    return line_chart(lambda: [steps["pi_rl"][:, CORRECT], steps["pi_sft"][:, CORRECT]], [], x=STEP_LR.values,
                      series=["RL step", "SFT step"], colors=[CORRECT_COLOR, PALETTE["blue"]],
                      styles=["solid", "dashed"], xlabel="learning rate lr", ylabel="π(5) after one step",
                      headline="SFT at lr goes as far as RL at 5 lr", marker=STEP_LR, ydomain=[0, 1])


#: The chapter's charts: one RL and one SFT step's pi(5) over the learning rate (chapter 7); it replaced a
#: FloatSlider 0..8 step 0.25.
CHARTS = (Declared("steps", steps_chart,
                   lambda: (STEP_LR.values, [rl_and_sft_steps(STEP_LR.values)[k][:, CORRECT] for k in ("pi_rl", "pi_sft")]),
                   [], marker=STEP_LR, replaced={"lr": 33}),)
