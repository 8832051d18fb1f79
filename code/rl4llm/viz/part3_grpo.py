"""Figures for chapter 13 (GRPO on the toy) and chapter 16 (every method in one place)."""
from __future__ import annotations

import numpy as np

from ..toy_grpo import grpo_slider_run
from .style import CORRECT_COLOR, LINE_COLORS, PALETTE


def draw_grpo_run(fig, G: int = 8, eps: float = 0.2, lr: float = 1.0, beta: float = 0.0) -> None:
    """Chapter 13's slider figure: one short seeded GRPO run (``grpo_slider_run``).

    Left: pi(5) per step. Right: the diagnostics practitioners watch: entropy, KL(pi || pi_ref)
    and the clip fraction.
    """
    run = grpo_slider_run(G=G, eps=eps, lr=lr, beta=beta)
    steps = np.arange(run["pi_correct"].size)
    left, right = fig.subplots(1, 2)
    left.plot(steps, run["pi_correct"], color=CORRECT_COLOR, linewidth=2)
    left.set_ylim(0, 1.02)
    left.set_xlabel("GRPO step (one group each)")
    left.set_ylabel("π(5)")
    left.set_title(f"G={G}, ε={eps:g}, lr={lr:g}, β={beta:g}: π(5) → {run['pi_correct'][-1]:.2f}", fontsize=10)
    right.plot(steps, run["entropy"], label="entropy H(π) (nats)", color=PALETTE["blue"])
    right.plot(steps, run["kl_ref"], label="KL(π ‖ π_ref) (nats)", color=PALETTE["vermillion"])
    right.plot(steps[1:], run["clip_fraction"], label="clip fraction", color=PALETTE["black"], linestyle="--")
    right.set_ylim(0, 1.7)
    right.set_xlabel("GRPO step")
    right.set_ylabel("nats / fraction")
    right.set_title("diagnostics", fontsize=10)
    right.legend(fontsize=8, loc="upper right")
    fig.tight_layout()


def draw_per_token_ratios(fig, result: dict, answers, eps_low: float = 0.2) -> None:
    """Per-token ratios of the "5"/"05" toy after each inner step (``two_step_inner_steps``).

    One panel per inner step k >= 1: a cell per token (rows: answers, columns: token positions),
    coloured by rho - 1, printed with its value; a thick black frame where the clip binds.
    """
    ratios, clipped, mask = result["ratios"], result["clipped"], result["mask"]
    n = ratios.shape[0] - 1
    axes = np.atleast_1d(fig.subplots(1, n, sharey=True))
    for k, ax in enumerate(axes, start=1):
        shown = np.where(mask > 0, ratios[k] - 1.0, np.nan)
        ax.imshow(shown, cmap="PuOr_r", vmin=-0.35, vmax=0.35, aspect="auto")
        for i, tokens in enumerate(result["tokens"]):
            for t, token in enumerate(tokens):
                frame = "black" if clipped[k, i, t] else "none"
                ax.text(t, i, f"{token}\n{ratios[k, i, t]:.3f}", ha="center", va="center", fontsize=7.5,
                        bbox={"edgecolor": frame, "facecolor": "none", "linewidth": 2, "pad": 1.5})
        ax.set_xticks(range(mask.shape[1]), [f"t={t + 1}" for t in range(mask.shape[1])])
        ax.set_title(f"after inner step {k}\nclip fraction {result['clip_fraction'][k]:.2f}", fontsize=9)
        ax.grid(False)
    labels = [f"{a} (A={A:+.2f})" for a, A in zip(answers, result["advantages"])]
    axes[0].set_yticks(range(len(labels)), labels)
    for tick, r in zip(axes[0].get_yticklabels(), result["rewards"]):
        tick.set_color(CORRECT_COLOR if r > 0 else "black")
    fig.suptitle(f"per-token ratio ρ_t; framed: the clip binds (band [{1 - eps_low:.1f}, {1 + eps_low:.1f}])",
                 fontsize=10)
    fig.tight_layout()


def draw_aggregation(fig, weights: dict, labels, lengths) -> None:
    """Per-token weight w_i = -d loss / d logp_it that each loss_type gives each answer (chapter 13).

    ``weights``: loss_type -> ``aggregation_weights`` result.
    """
    ax = fig.add_subplot(1, 1, 1)
    x = np.arange(len(labels))
    width = 0.8 / len(weights)
    for j, (loss_type, res) in enumerate(weights.items()):
        ax.bar(x + (j - (len(weights) - 1) / 2) * width, res["per_token"], width, label=loss_type,
               color=LINE_COLORS[j], edgecolor="black", linewidth=0.5)
    ax.axhline(0, color="black", linewidth=0.8)
    ax.set_xticks(x, [f"{lab}\n{n} tokens" for lab, n in zip(labels, lengths)])
    ax.set_ylabel("weight on each token's ∇ log π")
    ax.set_title("'grpo' pushes long answers' tokens less, right or wrong", fontsize=11)
    ax.legend(title="loss_type", fontsize=9)
    fig.tight_layout()


def _band(ax, curves: np.ndarray, color, label: str, linestyle="-") -> None:
    steps = np.arange(curves.shape[1])
    ax.plot(steps, curves.mean(axis=0), color=color, label=label, linestyle=linestyle, linewidth=2)
    if curves.shape[0] > 1:
        low, high = np.quantile(curves, [0.1, 0.9], axis=0)
        ax.fill_between(steps, low, high, color=color, alpha=0.2, linewidth=0)


def draw_entropy_collapse(fig, runs: dict) -> None:
    """Entropy and pi(5) over training, mean and 10-90% band over seeds, one line per setting.

    ``runs``: label -> ``run_over_seeds(grpo_toy_run, ...)`` result (chapter 13).
    """
    left, right = fig.subplots(1, 2, sharex=True)
    for j, (label, run) in enumerate(runs.items()):
        _band(left, run["entropy"], LINE_COLORS[j], label)
        _band(right, run["pi_correct"], LINE_COLORS[j], label)
    left.set_xlabel("GRPO step")
    left.set_ylabel("entropy H(π) (nats)")
    left.set_title("entropy over training", fontsize=10)
    right.set_xlabel("GRPO step")
    right.set_ylabel("π(5)")
    right.set_ylim(0, 1.02)
    right.set_title("π(5) over training", fontsize=10)
    right.legend(fontsize=8)
    fig.tight_layout()


def draw_method_curves(fig, curves: dict) -> None:
    """pi(5) of every method on the toy: mean over seeds with a 10-90% band (chapter 16)."""
    ax = fig.add_subplot(1, 1, 1)
    styles = ["-", "--", "-", "-.", "-", "-"]
    for j, (name, c) in enumerate(curves.items()):
        color = CORRECT_COLOR if name == "GRPO" else LINE_COLORS[j % len(LINE_COLORS)]
        _band(ax, c, color, f"{name} ({c.shape[0]} run{'s' if c.shape[0] > 1 else ''})", styles[j % len(styles)])
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("update step (each RL step samples one group of 8)")
    ax.set_ylabel("π(5)")
    ax.set_title("every method raises π(5) on the toy", fontsize=11)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
