"""Figures for Part III, chapters 10-12: importance sampling, PPO's clip, GAE.

Each ``draw_*(fig, **params)`` plots the numbers of one pure library function on a given figure,
so the same function serves the static figure, the live slider and its kernel-free twin.
"""
from __future__ import annotations

import numpy as np

from ..credit import EXAMPLE_REWARDS, EXAMPLE_VALUES, advantage_table
from ..reuse import (TOY_GROUP, TOY_GROUP_ADVANTAGES, clipped_objective, clipped_objective_grad, drift_case,
                     drift_variance_ratio, ppo_inner_steps)
from ..toy import CORRECT, LOGITS, VOCAB
from .style import CORRECT_COLOR, PALETTE

#: Chapter 11's example advantages: a good answer (the 5) and a bad one (the 4).
GOOD_ADVANTAGE, BAD_ADVANTAGE = 0.8, -0.2
#: Learning rate of chapter 11's inner steps on the toy group.
INNER_LR = 0.5


# --------------------------------------------------------------------------- chapter 10
def draw_drift(fig, drift: float = 0.5, G: int = 8) -> None:
    """Chapter 10's drift slider: the law of J-hat from G stale draws (reweighted) vs G fresh ones.

    pi_old(5) = 0.05 is fixed; ``drift`` is pi_new(5), the target J.
    """
    d = drift_case(drift, G)
    ax_law, ax_var = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1.6, 1]})
    width = 0.4 * min(np.min(np.diff(d["is_values"]), initial=1.0), np.min(np.diff(d["on_values"]), initial=1.0))
    ax_law.bar(d["on_values"] - width / 2, d["on_probs"], width=width, color=PALETTE["blue"],
               label="G fresh draws from π_new")
    ax_law.bar(d["is_values"] + width / 2, d["is_probs"], width=width, color=PALETTE["orange"],
               label="G stale draws from π_old, × ratio")
    ax_law.axvline(d["J"], color=CORRECT_COLOR, linewidth=2, label=f"target J = π_new(5) = {d['J']:.2f}")
    ax_law.set_xlim(-0.1, max(1.05, min(d["is_values"][-1], 3 * d["ratio"] / G + 0.5)))
    ax_law.set_ylim(0, 1.0)
    ax_law.set_xlabel("estimate Ĵ of J (reward per answer)")
    ax_law.set_ylabel("probability")
    ax_law.set_title(f"G = {G}: P(no 5 among the stale draws) = {d['p_no_correct']:.3f}")
    ax_law.legend(loc="upper right", fontsize=8)

    grid = np.linspace(0.05, 0.95, 37)
    ax_var.plot(grid, drift_variance_ratio(grid), color=PALETTE["orange"])
    ax_var.plot([drift], [d["is_variance"] / d["on_variance"]], "o", color=PALETTE["vermillion"])
    ax_var.axhline(1.0, color="black", linestyle=":", linewidth=1)
    ax_var.set_yscale("log")
    ax_var.set_xlabel("π_new(5)  (π_old(5) = 0.05)")
    ax_var.set_ylabel("variance, stale ÷ fresh")
    ax_var.set_title(f"ratio {d['ratio']:.1f}: {d['is_variance'] / d['on_variance']:.1f}× the variance")
    fig.tight_layout()


# --------------------------------------------------------------------------- chapter 11
def draw_clip(fig, eps: float = 0.2) -> None:
    """Chapter 11's epsilon slider: the clipped objective and its gradient in rho, A > 0 and A < 0."""
    rho = np.linspace(0.0, 2.5, 501)
    axes = fig.subplots(2, 2, sharex=True)
    for col, (A, name) in enumerate([(GOOD_ADVANTAGE, "good answer"), (BAD_ADVANTAGE, "bad answer")]):
        adv = np.full_like(rho, A)
        top, bottom = axes[0, col], axes[1, col]
        top.plot(rho, rho * A, color="black", linestyle=":", linewidth=1, label="unclipped ρA")
        top.plot(rho, clipped_objective(rho, adv, eps), color=PALETTE["blue"], linewidth=2, label="clipped")
        bottom.plot(rho, clipped_objective_grad(rho, adv, eps), color=PALETTE["vermillion"], linewidth=2)
        for ax in (top, bottom):
            ax.axvspan(1 - eps, 1 + eps, color=PALETTE["grey"], alpha=0.2, linewidth=0)
        top.set_title(f"{name}, A = {A:+.1f}: flat {'above 1 + ε' if A > 0 else 'below 1 − ε'}")
        top.set_ylabel("objective")
        bottom.set_ylabel("d objective / dρ")
        bottom.set_xlabel("ratio ρ = π(y) / π_old(y)")
        bottom.set_ylim(min(BAD_ADVANTAGE, 0) - 0.1, GOOD_ADVANTAGE + 0.1)
        top.legend(loc="upper left" if A > 0 else "lower left", fontsize=8)
    fig.suptitle(f"ε = {eps:.2f}: the clip caps only the move the advantage asks for", fontsize=12)
    fig.tight_layout()


def draw_inner_steps(fig, K: int = 12, eps: float = 0.2) -> None:
    """Chapter 11's K and epsilon sliders: K clipped ascent steps on one toy group of 8 answers."""
    out = ppo_inner_steps(LOGITS, TOY_GROUP, TOY_GROUP_ADVANTAGES, eps, INNER_LR, K)
    steps = np.arange(K + 1)
    ax_kl, ax_clip, ax_p = fig.subplots(1, 3)
    ax_kl.plot(steps, out["kl"], "o-", color=PALETTE["blue"], markersize=3)
    ax_kl.set_ylabel("KL(π_old ‖ π_k)  (nats)")
    ax_kl.set_title(f"KL after {K} steps: {out['kl'][-1]:.4f}")
    ax_clip.step(steps, out["clip_fraction"], where="post", color=PALETTE["vermillion"])
    ax_clip.set_ylim(-0.05, 1.05)
    ax_clip.set_ylabel("clip fraction")
    ax_clip.set_title(f"clip binds on {out['clip_fraction'][-1]:.0%}")
    ax_p.plot(steps, out["probs"][:, CORRECT], "o-", color=CORRECT_COLOR, markersize=3, label="π(5)")
    ax_p.plot(steps, out["probs"][:, VOCAB.index("4")], "o-", color=PALETTE["grey"], markersize=3, label="π(4)")
    ax_p.set_ylim(0, 0.6)
    ax_p.set_ylabel("probability")
    ax_p.set_title("the policy on the reused group")
    ax_p.legend(fontsize=8)
    for ax in (ax_kl, ax_clip, ax_p):
        ax.set_xlabel("inner step k")
    fig.suptitle(f"ε = {eps:.2f}, lr = {INNER_LR}: one group, reused for K = {K} steps", fontsize=12)
    fig.tight_layout()


# --------------------------------------------------------------------------- chapter 12
def draw_gae(fig, lam: float = 0.5, gamma: float = 1.0) -> None:
    """Chapter 12's lambda and gamma sliders: the credit of each step, and the whole table."""
    table = advantage_table(EXAMPLE_REWARDS, EXAMPLE_VALUES, gamma, lams=(0.0, lam, 1.0))
    T = EXAMPLE_REWARDS.size
    ax_bar, ax_tab = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1.2, 1]})
    labels = ["λ = 0 (TD)", f"λ = {lam:.2f}", "λ = 1 (Monte Carlo)"]
    colors = [PALETTE["sky"], PALETTE["blue"], PALETTE["orange"]]
    x = np.arange(T)
    for j, (label, color) in enumerate(zip(labels, colors)):
        ax_bar.bar(x + (j - 1) * 0.27, table["advantages"][j], width=0.27, color=color, label=label)
    ax_bar.set_xticks(x, [f"step {t}" for t in range(T)])
    ax_bar.set_ylim(-0.7, 1.0)
    ax_bar.axhline(0.0, color="black", linewidth=0.8)
    ax_bar.set_ylabel("advantage Â_t")
    ax_bar.set_title(f"γ = {gamma:.2f}, λ = {lam:.2f}: step 0 gets {table['advantages'][1][0]:.3f}")
    ax_bar.legend(fontsize=8, loc="upper left")

    rows = [("r_t", EXAMPLE_REWARDS), ("V(s_t)", EXAMPLE_VALUES), ("δ_t", table["delta"]),
            ("G_t − V(s_t)", table["monte_carlo"])]
    rows += [(f"Â_t, {label.split(' (')[0]}", adv) for label, adv in zip(labels, table["advantages"])]
    ax_tab.axis("off")
    cells = [[f"{v:.3f}" for v in values] for _, values in rows]
    tab = ax_tab.table(cellText=cells, rowLabels=[name for name, _ in rows],
                       colLabels=[f"t = {t}" for t in range(T)], loc="center", cellLoc="center")
    tab.auto_set_font_size(False)
    tab.set_fontsize(9)
    tab.scale(1.0, 1.3)
    ax_tab.set_title("the whole table")
    fig.tight_layout()
