"""Figures for Part III, chapters 10-12: importance sampling, PPO's clip, GAE.

Each ``draw_*(fig, **params)`` plots the numbers of one pure library function on a given figure,
so the same function serves the static figure, the figures redrawn at another setting.
"""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from .. import (CORRECT, LOGITS, TOY_GROUP, TOY_GROUP_ADVANTAGES, VOCAB, advantage_table, clipped_objective,
                clipped_objective_grad, drift_case, drift_variance_ratio, ppo_inner_steps)
from ..math.credit import EXAMPLE_REWARDS, EXAMPLE_VALUES
from .charts import Slider, line_chart
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


# --------------------------------------------------------------------------- live charts (chapters 10-12)
# Each slider figure as a chart that redraws in the reader's browser (rl4llm.viz.charts): the curves are
# the library's numbers on the sliders' whole grid, computed here.

#: Chapter 10: pi_new(5) from 0.05 to 0.95 (the live slider's range) in steps of 0.025; every G from 1 to 32.
DRIFT = (Slider("drift", "π_new(5)", 0.05, 0.95, 0.025, 0.5, fmt=".3f"), Slider("G", "G", 1, 32, 1, 8, fmt="d"))
#: Chapter 10's x axis: how many 5s a group of G draws holds (0 to the largest G).
FIVES = np.arange(DRIFT[1].stop + 1, dtype=float)
#: Chapter 11's clip: epsilon from 0.05 to 0.5 in steps of 0.01, opening at 0.2.
CLIP_EPS = Slider("eps", "ε", 0.05, 0.5, 0.01, 0.2)
#: Chapter 11's ratio axis: 0 to 2.5 in steps of 0.02.
RHO = np.round(np.linspace(0.0, 2.5, 126), 10)
#: Chapter 11's inner steps: K (every value from 1 to 24, a marker on the run of 24 steps) and epsilon.
INNER_K = Slider("K", "K", 1, 24, 1, 12, fmt="d")
INNER_STEPS = np.arange(INNER_K.stop + 1, dtype=float)
#: Chapter 12: lambda from 0 to 1 and gamma upward from 0.05 to 1, both in steps of 0.025.
GAE = (Slider("lam", "λ", 0.0, 1.0, 0.025, 0.5, fmt=".3f"), Slider("gamma", "γ", 0.05, 1.0, 0.025, 1.0, fmt=".3f"))


def drift_law(drift: float, G: int) -> np.ndarray:
    """Chapter 10's curves: the probability that a group of G draws holds k fives (k on ``FIVES``),
    fresh from pi_new and stale from pi_old (``drift_case``; 0 above G)."""
    d = drift_case(drift, G)
    rows = np.zeros((2, FIVES.size))
    rows[0, :G + 1], rows[1, :G + 1] = d["on_probs"], d["is_probs"]
    return rows


def drift_notes(drift: float, G: int) -> dict:
    """Chapter 10's numbers over the chart: what each stale 5 adds to J-hat, the chance of none, the
    variance multiple (``drift_case``, ``drift_variance_ratio``)."""
    d = drift_case(drift, G)
    return {"stale 5 adds ρ(5)/G": float(d["is_values"][1]), "P(no stale 5)": float(d["p_no_correct"]),
            "variance stale ÷ fresh": float(drift_variance_ratio([drift])[0])}


def drift_chart():
    """Chapter 10: how many 5s G fresh draws (from pi_new) and G stale ones (from pi_old, pi_old(5) = 0.05)
    hold, on the whole grid of ``DRIFT``, with the stale estimate's worth per 5 and its variance multiple."""
    return line_chart(drift_law, DRIFT, x=FIVES, series=["G fresh draws from π_new", "G stale draws from π_old"],
                      xlabel="number of 5s among the G draws", ylabel="probability", notes=drift_notes,
                      headline="stale draws rarely hold a 5, and each counts ρ(5)/G",
                      colors=[PALETTE["blue"], PALETTE["orange"]], styles=["solid", "dashed"], ydomain=[0, 1])


def clip_curves(eps: float) -> np.ndarray:
    """Chapter 11's curves over ``RHO``: the clipped objective and its slope in rho, for the good and the
    bad answer (``clipped_objective``, ``clipped_objective_grad``)."""
    rows = []
    for A in (GOOD_ADVANTAGE, BAD_ADVANTAGE):
        adv = np.full_like(RHO, A)
        rows += [clipped_objective(RHO, adv, eps), clipped_objective_grad(RHO, adv, eps)]
    return np.array(rows)


def clip_chart():
    """Chapter 11: PPO's clipped objective and its slope in rho for A = +0.8 and A = -0.2, for every
    epsilon of ``CLIP_EPS``."""
    return line_chart(clip_curves, [CLIP_EPS], x=RHO,
                      series=[f"objective, A = {GOOD_ADVANTAGE:+.1f}", f"slope, A = {GOOD_ADVANTAGE:+.1f}",
                              f"objective, A = {BAD_ADVANTAGE:+.1f}", f"slope, A = {BAD_ADVANTAGE:+.1f}"],
                      xlabel="ratio ρ = π(y) / π_old(y)", ylabel="objective; its slope d/dρ",
                      headline="flat (slope 0) only on the side A pushes",
                      colors=[PALETTE["blue"], PALETTE["blue"], PALETTE["vermillion"], PALETTE["vermillion"]],
                      styles=["solid", "dashed", "solid", "dashed"], ydomain=[-0.6, 1.0])


def inner_step_curves(eps: float) -> np.ndarray:
    """Chapter 11's curves over ``INNER_STEPS``: KL(pi_old || pi_k), the clip fraction, pi(5) and pi(4)
    over 24 clipped steps on the toy group (``ppo_inner_steps``; its first K steps are the run of K)."""
    out = ppo_inner_steps(LOGITS, TOY_GROUP, TOY_GROUP_ADVANTAGES, eps, INNER_LR, INNER_K.stop)
    return np.array([out["kl"], out["clip_fraction"], out["probs"][:, CORRECT], out["probs"][:, VOCAB.index("4")]])


def inner_steps_chart():
    """Chapter 11: K clipped inner steps on one toy group, for every epsilon of ``CLIP_EPS``; the K
    slider marks step K and reads the run there."""
    return line_chart(inner_step_curves, [CLIP_EPS], x=INNER_STEPS, marker=INNER_K,
                      series=["KL(π_old ‖ π_k) (nats)", "clip fraction", "π(5)", "π(4)"],
                      xlabel="inner step k", ylabel="nats / fraction / probability",
                      headline=f"one group reused, lr = {INNER_LR}: the KL never stops",
                      colors=[PALETTE["blue"], PALETTE["vermillion"], CORRECT_COLOR, PALETTE["grey"]],
                      styles=["solid", "dashed", "solid", "dotted"], ydomain=[0, 1], readout_per_line=2)


def gae_curves(lam: float, gamma: float) -> np.ndarray:
    """Chapter 12's curves over the example's steps: the advantage at lambda = 0, the slider's lambda and
    lambda = 1 (``advantage_table``)."""
    return advantage_table(EXAMPLE_REWARDS, EXAMPLE_VALUES, gamma, lams=(0.0, lam, 1.0))["advantages"]


def gae_chart():
    """Chapter 12: the credit GAE gives each step of the example episode, on the whole grid of ``GAE``."""
    steps = np.arange(EXAMPLE_REWARDS.size, dtype=float)
    return line_chart(gae_curves, GAE, x=steps, series=["λ = 0 (TD error)", "λ at the slider", "λ = 1 (Monte Carlo)"],
                      xlabel="step t of the episode", ylabel="advantage Â_t",
                      notes=lambda lam, gamma: {"step 0 gets": float(gae_curves(lam, gamma)[1, 0])},
                      headline="λ slides the early steps' credit from TD to Monte Carlo",
                      colors=[PALETTE["sky"], PALETTE["blue"], PALETTE["orange"]],
                      styles=["dotted", "solid", "dashed"], ydomain=[-0.7, 1.0])
