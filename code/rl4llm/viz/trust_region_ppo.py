"""Chapter 11's figures and charts: How near is near: trust regions and PPO's clip
(``book/11_trust_region_ppo.ipynb``)."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from .. import (CORRECT, LOGITS, TOY_GROUP, TOY_GROUP_ADVANTAGES, VOCAB, clipped_objective, clipped_objective_grad,
                ppo_inner_steps)
from .charts import Declared, Slider, line_chart
from .style import CORRECT_COLOR, PALETTE, relayout


#: Chapter 11's example advantages: a good answer (the 5) and a bad one (the 4).
GOOD_ADVANTAGE, BAD_ADVANTAGE = 0.8, -0.2

#: Learning rate of chapter 11's inner steps on the toy group.
INNER_LR = 0.5


# --------------------------------------------------------------------------- chapter 11
def draw_clip(fig, eps: float = 0.2) -> None:
    """Chapter 11's epsilon slider: the clipped objective and its gradient in rho, A > 0 and A < 0."""
    rho, columns = _clip_axes(fig)
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
    a = _inner_steps_axes(fig)
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


#: Chapter 11's clip: epsilon from 0.05 to 0.5 in steps of 0.01, opening at 0.2.
CLIP_EPS = Slider("eps", "ε", 0.05, 0.5, 0.01, 0.2)

#: Chapter 11's ratio axis: 0 to 2.5 in steps of 0.02.
RHO = np.round(np.linspace(0.0, 2.5, 126), 10)

#: Chapter 11's inner steps: K (every value from 1 to 24, a marker on the run of 24 steps) and epsilon.
INNER_K = Slider("K", "K", 1, 24, 1, 12, fmt="d")

INNER_STEPS = np.arange(INNER_K.stop + 1, dtype=float)


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


# The chapter's charts, and their numbers from the library alone (tests/test_charts.py); they replaced
# eps 0.05..0.5 step 0.05 and K 1..24.
def _oracle_clip(eps):
    rho = np.round(np.linspace(0.0, 2.5, 126), 10)      # the x the chart stores: 0.82 itself, not 0.8200000000000001
    return rho, [f(rho, np.full_like(rho, A), eps) for A in (0.8, -0.2) for f in (clipped_objective,
                                                                                  clipped_objective_grad)]


def _oracle_inner(eps):
    out = ppo_inner_steps(LOGITS, TOY_GROUP, TOY_GROUP_ADVANTAGES, eps, 0.5, 24)
    return np.arange(25), [out["kl"], out["clip_fraction"], out["probs"][:, CORRECT], out["probs"][:, 1]]


CHARTS = (Declared("clip", clip_chart, _oracle_clip, [CLIP_EPS], replaced={"eps": 10}),
          Declared("inner", inner_steps_chart, _oracle_inner, [CLIP_EPS], marker=INNER_K,
                   replaced={"eps": 10, "K": 24}))
