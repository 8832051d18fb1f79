"""Figures for Part III, chapters 10-12: importance sampling, PPO's clip, GAE.

Each ``draw_*(fig, **params)`` plots the numbers of one pure library function on a given figure,
so the same function serves the static figure, the live slider and its kernel-free twin.
"""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from ..credit import EXAMPLE_REWARDS, EXAMPLE_VALUES, advantage_table
from ..reuse import (TOY_GROUP, TOY_GROUP_ADVANTAGES, clipped_objective, clipped_objective_grad, drift_case,
                     drift_variance_ratio, ppo_inner_steps)
from ..toy import CORRECT, LOGITS, VOCAB
from .inplace import bars_in_place, kept, relayout
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
    a = kept(fig, _drift_axes)
    width = 0.4 * min(np.min(np.diff(d["is_values"]), initial=1.0), np.min(np.diff(d["on_values"]), initial=1.0))
    a.fresh = bars_in_place(a.law, a.fresh, d["on_values"] - width / 2, d["on_probs"], width,
                            color=PALETTE["blue"], label="G fresh draws from π_new")
    a.stale = bars_in_place(a.law, a.stale, d["is_values"] + width / 2, d["is_probs"], width,
                            color=PALETTE["orange"], label="G stale draws from π_old, × ratio")
    a.target.set_xdata([d["J"], d["J"]])
    a.target.set_label(f"target J = π_new(5) = {d['J']:.2f}")
    a.law.set_xlim(-0.1, max(1.05, min(d["is_values"][-1], 3 * d["ratio"] / G + 0.5)))
    a.law.set_title(f"G = {G}: P(no 5 among the stale draws) = {d['p_no_correct']:.3f}")
    a.law.legend(loc="upper right", fontsize=8)
    a.here.set_data([drift], [d["is_variance"] / d["on_variance"]])
    a.var.set_title(f"ratio {d['ratio']:.1f}: {d['is_variance'] / d['on_variance']:.1f}× the variance")
    relayout(fig)


def _drift_axes(fig) -> SimpleNamespace:
    """Chapter 10's panels: the two laws of J-hat and the target (left, bars drawn by ``draw_drift``),
    the variance ratio against pi_new(5) with the slider's point (right)."""
    law, var = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1.6, 1]})
    target = law.axvline(0.0, color=CORRECT_COLOR, linewidth=2)
    law.set_ylim(0, 1.0)
    law.set_xlabel("estimate Ĵ of J (reward per answer)")
    law.set_ylabel("probability")
    grid = np.linspace(0.05, 0.95, 37)
    var.plot(grid, drift_variance_ratio(grid), color=PALETTE["orange"])
    here, = var.plot([], [], "o", color=PALETTE["vermillion"])
    var.axhline(1.0, color="black", linestyle=":", linewidth=1)
    var.set_yscale("log")
    var.set_xlabel("π_new(5)  (π_old(5) = 0.05)")
    var.set_ylabel("variance, stale ÷ fresh")
    return SimpleNamespace(law=law, var=var, target=target, fresh=None, stale=None, here=here)


# --------------------------------------------------------------------------- chapter 11
def draw_clip(fig, eps: float = 0.2) -> None:
    """Chapter 11's epsilon slider: the clipped objective and its gradient in rho, A > 0 and A < 0."""
    rho, columns = kept(fig, _clip_axes)
    for A, clipped, grad, bands in columns:
        adv = np.full_like(rho, A)
        clipped.set_ydata(clipped_objective(rho, adv, eps))
        grad.set_ydata(clipped_objective_grad(rho, adv, eps))
        for band in bands:
            band.set_x(1 - eps)
            band.set_width((1 + eps) - (1 - eps))
    fig.suptitle(f"ε = {eps:.2f}: the clip caps only the move the advantage asks for", fontsize=12)
    relayout(fig)


def _clip_axes(fig):
    """Chapter 11's 2 x 2 panels: objective (top) and gradient (bottom) in rho for a good and a bad
    answer; the clipped curves and the band [1 - eps, 1 + eps] are set by ``draw_clip``."""
    rho = np.linspace(0.0, 2.5, 501)
    axes = fig.subplots(2, 2, sharex=True)
    columns = []
    for col, (A, name) in enumerate([(GOOD_ADVANTAGE, "good"), (BAD_ADVANTAGE, "bad")]):
        top, bottom = axes[0, col], axes[1, col]
        top.plot(rho, rho * A, color="black", linestyle=":", linewidth=1, label="unclipped ρA")
        clipped, = top.plot(rho, np.zeros_like(rho), color=PALETTE["blue"], linewidth=2, label="clipped")
        grad, = bottom.plot(rho, np.zeros_like(rho), color=PALETTE["vermillion"], linewidth=2)
        bands = [ax.axvspan(1.0, 1.0, color=PALETTE["grey"], alpha=0.2, linewidth=0) for ax in (top, bottom)]
        top.set_title(f"A = {A:+.1f} ({name}): flat {'above 1 + ε' if A > 0 else 'below 1 − ε'}")
        top.set_ylabel("objective")
        bottom.set_ylabel("d objective / dρ")
        bottom.set_xlabel("ratio ρ = π(y) / π_old(y)")
        bottom.set_ylim(min(BAD_ADVANTAGE, 0) - 0.1, GOOD_ADVANTAGE + 0.1)
        top.legend(loc="upper left" if A > 0 else "lower left", fontsize=8)
        columns.append((A, clipped, grad, bands))
    return rho, columns


def draw_inner_steps(fig, K: int = 12, eps: float = 0.2) -> None:
    """Chapter 11's K and epsilon sliders: K clipped ascent steps on one toy group of 8 answers."""
    out = ppo_inner_steps(LOGITS, TOY_GROUP, TOY_GROUP_ADVANTAGES, eps, INNER_LR, K)
    steps = np.arange(K + 1)
    a = kept(fig, _inner_steps_axes)
    a.kl.set_data(steps, out["kl"])
    a.clip.set_data(steps, out["clip_fraction"])
    a.p5.set_data(steps, out["probs"][:, CORRECT])
    a.p4.set_data(steps, out["probs"][:, VOCAB.index("4")])
    a.kl.axes.set_title(f"KL after {K} steps: {out['kl'][-1]:.4f}")
    a.clip.axes.set_title(f"clip binds on {out['clip_fraction'][-1]:.0%}")
    a.p5.axes.set_title(f"π(5) after {K} steps: {out['probs'][-1, CORRECT]:.4f}")
    fig.suptitle(f"ε = {eps:.2f}, lr = {INNER_LR}: one group, reused for K = {K} steps", fontsize=12)
    relayout(fig)


def _inner_steps_axes(fig) -> SimpleNamespace:
    """Chapter 11's three panels over the inner steps: KL, clip fraction, pi(5) and pi(4) (empty lines)."""
    ax_kl, ax_clip, ax_p = fig.subplots(1, 3)
    kl, = ax_kl.plot([], [], "o-", color=PALETTE["blue"], markersize=3)
    ax_kl.set_ylabel("KL(π_old ‖ π_k)  (nats)")
    clip, = ax_clip.step([], [], where="post", color=PALETTE["vermillion"])
    ax_clip.set_ylim(-0.05, 1.05)
    ax_clip.set_ylabel("clip fraction")
    p5, = ax_p.plot([], [], "o-", color=CORRECT_COLOR, markersize=3, label="π(5)")
    p4, = ax_p.plot([], [], "o-", color=PALETTE["grey"], markersize=3, label="π(4)")
    ax_p.set_ylim(0, 0.6)
    ax_p.set_ylabel("probability")
    ax_p.legend(fontsize=8)
    for ax in (ax_kl, ax_clip, ax_p):
        ax.set_xlabel("inner step k")
    return SimpleNamespace(kl=kl, clip=clip, p5=p5, p4=p4)


# --------------------------------------------------------------------------- chapter 12
def draw_gae(fig, lam: float = 0.5, gamma: float = 1.0) -> None:
    """Chapter 12's lambda and gamma sliders: the credit of each step, and the whole table."""
    table = advantage_table(EXAMPLE_REWARDS, EXAMPLE_VALUES, gamma, lams=(0.0, lam, 1.0))
    a = kept(fig, _gae_axes)
    labels = ["λ = 0 (TD)", f"λ = {lam:.2f}", "λ = 1 (Monte Carlo)"]
    for bars, label, advantages in zip(a.bars, labels, table["advantages"]):
        bars.set_label(label)
        for bar, advantage in zip(bars, advantages):
            bar.set_height(advantage)
    a.bar.set_title(f"γ = {gamma:.2f}, λ = {lam:.2f}: step 0 gets {table['advantages'][1][0]:.3f}")
    a.bar.legend(fontsize=8, loc="upper left")
    rows = [("r_t", EXAMPLE_REWARDS), ("V(s_t)", EXAMPLE_VALUES), ("δ_t", table["delta"]),
            ("G_t − V(s_t)", table["monte_carlo"])]
    rows += [(f"Â_t, {label.split(' (')[0]}", adv) for label, adv in zip(labels, table["advantages"])]
    for row, (name, values) in enumerate(rows, start=1):
        a.table[row, -1].get_text().set_text(name)
        for t, value in enumerate(values):
            a.table[row, t].get_text().set_text(f"{value:.3f}")
    relayout(fig)


def _gae_axes(fig) -> SimpleNamespace:
    """Chapter 12's panels: bars of the advantage per step for three lambdas (left) and the table of
    every quantity per step (right), both empty until ``draw_gae`` fills them."""
    T = EXAMPLE_REWARDS.size
    ax_bar, ax_tab = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1.2, 1]})
    x = np.arange(T)
    bars = [ax_bar.bar(x + (j - 1) * 0.27, np.zeros(T), width=0.27, color=color)
            for j, color in enumerate([PALETTE["sky"], PALETTE["blue"], PALETTE["orange"]])]
    ax_bar.set_xticks(x, [f"step {t}" for t in range(T)])
    ax_bar.set_ylim(-0.7, 1.0)
    ax_bar.axhline(0.0, color="black", linewidth=0.8)
    ax_bar.set_ylabel("advantage Â_t")
    ax_tab.axis("off")
    rows = 7                            # r, V, delta, G - V and the advantages at three lambdas
    tab = ax_tab.table(cellText=[[""] * T] * rows, rowLabels=[""] * rows, colLabels=[f"t = {t}" for t in range(T)],
                       loc="center", cellLoc="center")
    tab.auto_set_font_size(False)
    tab.set_fontsize(9)
    tab.scale(1.0, 1.3)
    ax_tab.set_title("the whole table")
    return SimpleNamespace(bar=ax_bar, bars=bars, table=tab)
