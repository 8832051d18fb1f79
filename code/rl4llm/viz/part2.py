"""Figures of Part II, the RL core (chapters 6-9). Each ``draw_*(fig, **params)`` draws on a given
figure from a tested pure function of the library, so the same function serves the static figure,
the live slider and its kernel-free twin."""
from __future__ import annotations

import functools
import math

import numpy as np
from matplotlib.ticker import MaxNLocator

from ..estimators import (estimator_variance, gradient_by_enumeration, gradient_by_finite_differences,
                          gradient_samples, jhat_study, variance_curve)
from ..gradients import policy_gradient
from ..onpolicy import learning_curve_band, rl_and_sft_steps, seed_study
from ..statistics import t_quantile
from ..toy import CORRECT, LOGITS, REWARDS, VOCAB
from .style import CORRECT_COLOR, OTHER_COLOR, PALETTE, token_colors

#: Defaults of the "a single run proves nothing" study of chapter 6 (G, lr, steps of each run).
SEED_RUN = {"G": 4, "lr": 1.0, "steps": 10}
#: Runs used to measure the reference spread sigma of one run in chapter 6.
REFERENCE_RUNS = 2000


# ----------------------------------------------------------------------------- chapter 6
def _jhat_axes(ax, G: int, p: float, n_groups: int, seed: int) -> None:
    study = jhat_study(G, p, n_groups, seed)
    width = 0.8 / G if G > 1 else 0.2
    ax.bar(study["values"], study["frequencies"], width=width, color=PALETTE["sky"],
           label=f"{n_groups} groups (Monte Carlo)")
    ax.plot(study["values"], study["law"], "o", color=PALETTE["blue"], ms=4 if G > 8 else 6,
            label="exact binomial law")
    x = np.linspace(-0.05, 1.05, 400)
    se = study["standard_error"]
    # the normal density times the spacing 1/G between values, to compare with probabilities
    ax.plot(x, np.exp(-0.5 * ((x - p) / se) ** 2) / (se * math.sqrt(2 * math.pi)) / G,
            color=PALETTE["orange"], label="normal N(J, J(1-J)/G)")
    ax.axvline(p, color="black", ls="--", lw=1)
    ax.set_xlim(-0.05, 1.05 if G < 16 else 0.6)
    ax.set_xlabel("J-hat (fraction correct)")
    ax.set_title(f"G = {G}: SE {se:.3f}")


def draw_jhat(fig, G: int, p: float = 0.2, n_groups: int = 4000, seed: int = 0) -> None:
    """Chapter 6 slider: the law of J-hat at one G, Monte Carlo beside the binomial and the normal."""
    ax = fig.add_subplot(1, 1, 1)
    _jhat_axes(ax, int(G), p, n_groups, seed)
    ax.set_ylabel("probability")
    ax.legend(fontsize=8, loc="upper right")
    fig.tight_layout()


def draw_jhat_panels(fig, Gs=(1, 4, 64), p: float = 0.2, n_groups: int = 4000, seed: int = 0) -> None:
    """Chapter 6: the law of J-hat at several G side by side."""
    axes = fig.subplots(1, len(Gs))
    for ax, G in zip(axes, Gs):
        _jhat_axes(ax, G, p, n_groups, seed)
    axes[0].set_ylabel("probability")
    axes[min(1, len(axes) - 1)].legend(fontsize=7, loc="upper right")   # the G = 4 panel has room
    fig.tight_layout()


@functools.lru_cache(maxsize=8)
def reference_spread(seed: int) -> float:
    """sigma: the std of the final pi(5) over ``REFERENCE_RUNS`` runs of ``SEED_RUN`` (cached)."""
    return seed_study(REFERENCE_RUNS, seed=seed, **SEED_RUN)["std"]


def draw_seeds(fig, n_seeds: int, seed: int = 0) -> None:
    """Chapter 6 slider: n_seeds identical runs, a 95% t interval for their mean, the 1/sqrt(n) law.

    The interval is mean +- t_{0.975, n-1} SE: with few seeds the t quantile is far above 2
    (12.7 at n = 2, 3.18 at n = 4), and "+- 2 SE" would be too narrow.
    """
    n_seeds = int(n_seeds)
    study = seed_study(n_seeds, seed=seed, **SEED_RUN)
    sigma = reference_spread(seed + 1)
    half_width = t_quantile(0.975, n_seeds - 1) * study["standard_error"]
    left, right = fig.subplots(1, 2)
    left.plot(np.arange(1, n_seeds + 1), study["finals"], "o", color=CORRECT_COLOR, ms=4)
    left.axhline(study["mean"], color="black", lw=1)
    left.axhspan(study["mean"] - half_width, study["mean"] + half_width, color=PALETTE["grey"],
                 alpha=0.3, label="95% interval of the mean (t)")
    left.xaxis.set_major_locator(MaxNLocator(integer=True))
    left.set_xlabel("run (seed)")
    left.set_ylabel("final pi(5)")
    left.set_ylim(0.2, 1.0)
    left.legend(fontsize=8, loc="lower right")
    left.set_title(f"{n_seeds} runs: spread {study['std']:.3f}")
    n = np.arange(2, 129)
    right.loglog(n, sigma / np.sqrt(n), color=PALETTE["blue"], label="sigma / sqrt(n)")
    right.loglog([n_seeds], [study["standard_error"]], "o", color=PALETTE["vermillion"], label="these runs")
    right.set_xlabel("number of seeds n")
    right.set_ylabel("standard error of the mean")
    right.set_title("4x the runs, half the error")
    right.legend(fontsize=8)
    fig.tight_layout()


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
    left, right = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1.3, 1]})
    x = np.arange(len(VOCAB))
    for shift, key, label, alpha in ((-0.27, "pi_before", "before", 0.35), (0.0, "pi_rl", "RL step", 0.7),
                                     (0.27, "pi_sft", "SFT step", 1.0)):
        left.bar(x + shift, steps[key], width=0.27, color=token_colors(VOCAB, CORRECT), alpha=alpha,
                 edgecolor="black", lw=0.5, label=label)
    left.set_xticks(x, [f'"{v}"' for v in VOCAB])
    left.set_xlabel("answer (bars: before, RL, SFT)")
    left.set_ylabel("probability")
    left.set_ylim(0, 1)
    left.set_title(f"lr = {lr:g}: pi(5) RL {steps['pi_rl'][CORRECT]:.3f}, SFT {steps['pi_sft'][CORRECT]:.3f}",
                   fontsize=10)
    grid = np.linspace(0, 8, 81)
    curves = rl_and_sft_steps(grid)
    right.plot(grid, curves["pi_rl"][:, CORRECT], color=CORRECT_COLOR, label="RL")
    right.plot(grid, curves["pi_sft"][:, CORRECT], color=CORRECT_COLOR, ls="--", label="SFT")
    right.axvline(lr, color=OTHER_COLOR)
    right.set_xlabel("learning rate")
    right.set_ylabel("pi(5) after one step")
    right.set_title("SFT at lr = RL at 5 lr", fontsize=10)
    right.legend(fontsize=8)
    fig.tight_layout()


# ----------------------------------------------------------------------------- chapter 8
#: Baselines on the horizontal axis of chapter 8's figure.
BASELINE_GRID = np.linspace(-1.0, 12.0, 261)


def draw_baseline(fig, offset: float, baseline: float) -> None:
    """Chapter 8 slider: total variance of (r + offset - b) score(y) against b, at one offset."""
    curve = variance_curve(LOGITS, REWARDS, offset, BASELINE_GRID)
    here = estimator_variance(LOGITS, REWARDS + offset, baseline)
    ax = fig.add_subplot(1, 1, 1)
    ax.semilogy(curve["baselines"], curve["variance"], color=PALETTE["blue"])
    ax.semilogy([0.0], [curve["variance_none"]], "s", color=PALETTE["vermillion"], label="no baseline (b = 0)")
    ax.semilogy([curve["mean"]], [curve["variance_mean"]], "o", color=CORRECT_COLOR, ms=8, label="b = mean reward J")
    ax.semilogy([curve["optimal"]], [curve["variance_optimal"]], "x", color="black", ms=8, label="b* (optimal)")
    ax.semilogy([baseline], [here], "D", color=PALETTE["orange"], label=f"your b = {baseline:g}")
    ax.set_xlabel("baseline b (reward units)")
    ax.set_ylabel("total variance (trace of covariance)")
    ax.set_ylim(0.05, 300)
    ax.set_title(f"Grader {offset:g}/{offset + 1:g}, b = {baseline:g}: {here / curve['variance_mean']:.1f}x "
                 "the mean baseline's variance", fontsize=10)
    ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()


# ----------------------------------------------------------------------------- chapter 9
def draw_learning(fig, G: int, lr: float, steps: int = 30, n_seeds: int = 100, seed: int = 0) -> None:
    """Chapter 9 slider: learning curves of pi(5) over many seeds (median, 10-90% band) and zero-signal groups."""
    G = int(G)
    band = learning_curve_band(G, lr, steps, n_seeds, seed)
    top, bottom = fig.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [2.2, 1]})
    top.fill_between(band["step"], band["low"], band["high"], color=CORRECT_COLOR, alpha=0.2,
                     label="10-90% of runs (their spread)")
    top.plot(band["step"], band["curves"][:5].T, color=CORRECT_COLOR, lw=0.6, alpha=0.6)
    top.plot(band["step"], band["median"], color=CORRECT_COLOR, lw=2.5, label=f"median of {n_seeds} runs")
    top.set_ylim(0, 1)
    top.set_ylabel("pi(5)")
    top.set_title(f"G = {G}, lr = {lr:g}: pi(5) {band['median'][-1]:.2f} after {steps} steps (median)",
                  fontsize=10)
    top.legend(fontsize=8, loc="lower right")
    bottom.bar(band["step"][1:] - 0.5, band["zero_signal_fraction"], width=0.9, color=OTHER_COLOR)
    bottom.set_ylim(0, 1)
    bottom.set_xlabel("step")
    bottom.set_ylabel("zero-signal\nshare")
    fig.tight_layout()
