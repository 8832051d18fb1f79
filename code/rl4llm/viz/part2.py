"""Figures of Part II, the RL core (chapters 6-9). Each ``draw_*(fig, **params)`` draws on a given
figure from a tested pure function of the library, so the same function serves the static figure,
the figures redrawn at another setting."""
from __future__ import annotations

import functools
import math
from types import SimpleNamespace

import numpy as np
from matplotlib.ticker import MaxNLocator

from ..math.estimators import (estimator_variance, gradient_by_enumeration, gradient_by_finite_differences,
                          gradient_samples, jhat_study, variance_curve)
from ..math.gradients import policy_gradient
from ..studies.onpolicy import SEED_RUN, learning_curve_band, rl_and_sft_steps, seed_study
from ..math.statistics import t_quantile
from ..toy.five_token import CORRECT, LOGITS, REWARDS, VOCAB
from .charts import Slider, line_chart
from .inplace import bars_in_place, kept, relayout
from .style import CORRECT_COLOR, OTHER_COLOR, PALETTE, token_colors

#: Runs used to measure the reference spread sigma of one run in chapter 6 (the chapter's own 4096
#: runs: ``reference_spread(1)`` is the sigma = 0.0951 its text uses).
REFERENCE_RUNS = 4096
#: Groups drawn per figure of the law of J-hat in chapter 6.
JHAT_GROUPS = 20_000


# ----------------------------------------------------------------------------- chapter 6
def _jhat_artists(ax) -> SimpleNamespace:
    """Empty artists of one panel of the law of J-hat (``_set_jhat`` fills them)."""
    law, = ax.plot([], [], "o", color=PALETTE["blue"], label="exact binomial law")
    normal, = ax.plot([], [], color=PALETTE["orange"], label="normal N(J, J(1-J)/G)")
    target = ax.axvline(0.0, color="black", ls="--", lw=1)
    errors = ax.vlines([], [], [], color="black", lw=1.2, label="Monte Carlo ± 2 standard errors")
    ax.set_xlabel("J-hat (fraction correct)")
    return SimpleNamespace(ax=ax, law=law, normal=normal, target=target, errors=errors, bars=None)


def _set_jhat(a: SimpleNamespace, G: int, p: float, n_groups: int, seed: int) -> None:
    """One panel: the Monte Carlo frequencies of J-hat at G (bars, each with +- 2 of its standard
    errors), the binomial law and the normal approximation."""
    study = jhat_study(G, p, n_groups, seed)
    a.bars = bars_in_place(a.ax, a.bars, study["values"], study["frequencies"], 0.8 / G if G > 1 else 0.2,
                           color=PALETTE["sky"])
    a.bars.set_label(f"{n_groups} groups (Monte Carlo)")
    two_se = 2.0 * study["frequency_standard_errors"]
    a.errors.set_segments([[(x, f - e), (x, f + e)] for x, f, e in
                           zip(study["values"], study["frequencies"], two_se)])
    a.law.set_data(study["values"], study["law"])
    a.law.set_markersize(4 if G > 8 else 6)
    x = np.linspace(-0.05, 1.05, 400)
    se = study["standard_error"]
    # the normal density times the spacing 1/G between values, to compare with probabilities
    a.normal.set_data(x, np.exp(-0.5 * ((x - p) / se) ** 2) / (se * math.sqrt(2 * math.pi)) / G)
    a.target.set_xdata([p, p])
    a.ax.set_xlim(-0.05, 1.05 if G < 16 else 0.6)
    a.ax.set_title(f"G = {G}: SE {se:.3f}")


def draw_jhat(fig, G: int, p: float = 0.2, n_groups: int = JHAT_GROUPS, seed: int = 0) -> None:
    """Chapter 6 slider: the law of J-hat at one G, Monte Carlo beside the binomial and the normal."""
    a = kept(fig, _jhat_axes)
    _set_jhat(a, int(G), p, n_groups, seed)
    a.ax.legend(fontsize=8, loc="upper right")
    relayout(fig)


def _jhat_axes(fig) -> SimpleNamespace:
    """Chapter 6's axes for the law of J-hat at one G."""
    a = _jhat_artists(fig.add_subplot(1, 1, 1))
    a.ax.set_ylabel("probability")
    return a


def draw_jhat_panels(fig, Gs=(1, 4, 64), p: float = 0.2, n_groups: int = JHAT_GROUPS, seed: int = 0) -> None:
    """Chapter 6: the law of J-hat at several G side by side."""
    axes = fig.subplots(1, len(Gs))
    for ax, G in zip(axes, Gs):
        _set_jhat(_jhat_artists(ax), G, p, n_groups, seed)
    axes[0].set_ylabel("probability")
    axes[min(1, len(axes) - 1)].legend(fontsize=7, loc="upper right")   # the G = 4 panel has room
    relayout(fig)


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
    study = first_runs(n_seeds, seed)
    sigma = reference_spread(seed + 1)
    half_width = t_quantile(0.975, n_seeds - 1) * study["standard_error"]
    a = kept(fig, _seeds_axes)
    a.finals.set_data(np.arange(1, n_seeds + 1), study["finals"])
    a.mean.set_ydata([study["mean"], study["mean"]])
    a.interval.set_y(study["mean"] - half_width)
    a.interval.set_height((study["mean"] + half_width) - (study["mean"] - half_width))
    a.left.set_title(f"{n_seeds} runs: spread {study['std']:.3f}")
    n = np.arange(2, 129)
    a.law.set_data(n, sigma / np.sqrt(n))
    a.these.set_data([n_seeds], [study["standard_error"]])
    relayout(fig)


def _seeds_axes(fig) -> SimpleNamespace:
    """Chapter 6's seed panels: the runs' final pi(5) with their mean and interval (left), the standard
    error against the number of seeds on log axes (right); empty until ``draw_seeds`` sets them."""
    left, right = fig.subplots(1, 2)
    finals, = left.plot([], [], "o", color=CORRECT_COLOR, ms=4)
    mean = left.axhline(0.0, color="black", lw=1)
    interval = left.axhspan(0.0, 0.0, color=PALETTE["grey"], alpha=0.3, label="95% interval of the mean (t)")
    left.xaxis.set_major_locator(MaxNLocator(integer=True))
    left.set_xlabel("run (seed)")
    left.set_ylabel("final pi(5)")
    left.set_ylim(0.2, 1.0)
    left.legend(fontsize=8, loc="lower right")
    law, = right.loglog([], [], color=PALETTE["blue"], label="sigma / sqrt(n)")
    these, = right.loglog([], [], "o", color=PALETTE["vermillion"], label="these runs")
    right.set_xlabel("number of seeds n")
    right.set_ylabel("standard error of the mean")
    right.set_title("4x the runs, half the error")
    right.legend(fontsize=8)
    return SimpleNamespace(left=left, finals=finals, mean=mean, interval=interval, law=law, these=these)


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
    left, bars, marker = kept(fig, _steps_axes)
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


# ----------------------------------------------------------------------------- chapter 8
#: Baselines on the horizontal axis of chapter 8's figure.
BASELINE_GRID = np.linspace(-1.0, 12.0, 261)


def draw_baseline(fig, offset: float, baseline: float) -> None:
    """Chapter 8 slider: total variance of (r + offset - b) score(y) against b, at one offset."""
    curve = variance_curve(LOGITS, REWARDS, offset, BASELINE_GRID)
    here = estimator_variance(LOGITS, REWARDS + offset, baseline)
    a = kept(fig, _baseline_axes)
    a.curve.set_data(curve["baselines"], curve["variance"])
    a.none.set_data([0.0], [curve["variance_none"]])
    a.mean.set_data([curve["mean"]], [curve["variance_mean"]])
    a.optimal.set_data([curve["optimal"]], [curve["variance_optimal"]])
    a.yours.set_data([baseline], [here])
    a.yours.set_label(f"your b = {baseline:g}")
    a.ax.set_title(f"Grader {offset:g}/{offset + 1:g}, b = {baseline:g}: {here / curve['variance_mean']:.1f}x "
                   "the mean baseline's variance", fontsize=10)
    a.ax.legend(fontsize=8, loc="upper left")
    relayout(fig)


def _baseline_axes(fig) -> SimpleNamespace:
    """Chapter 8's log axes: the variance curve and the marks of four baselines, empty until
    ``draw_baseline`` sets them."""
    ax = fig.add_subplot(1, 1, 1)
    a = SimpleNamespace(ax=ax, curve=ax.semilogy([], [], color=PALETTE["blue"])[0],
                        none=ax.semilogy([], [], "s", color=PALETTE["vermillion"], label="no baseline (b = 0)")[0],
                        mean=ax.semilogy([], [], "o", color=CORRECT_COLOR, ms=8, label="b = mean reward J")[0],
                        optimal=ax.semilogy([], [], "x", color="black", ms=8, label="b* (optimal)")[0],
                        yours=ax.semilogy([], [], "D", color=PALETTE["orange"])[0])
    ax.set_xlabel("baseline b (reward units)")
    ax.set_ylabel("total variance (trace of covariance)")
    ax.set_ylim(0.05, 300)
    return a


# ----------------------------------------------------------------------------- chapter 9
def draw_learning(fig, G: int, lr: float, steps: int = 30, n_seeds: int = 100, seed: int = 0) -> None:
    """Chapter 9 slider: learning curves of pi(5) over many seeds (median, 10-90% band) and zero-signal groups."""
    G = int(G)
    band = learning_curve_band(G, lr, steps, n_seeds, seed)
    a = kept(fig, _learning_axes, steps=steps, n_seeds=n_seeds)
    a.band.set_data(band["step"], band["low"], band["high"])
    for line, curve in zip(a.runs, band["curves"]):
        line.set_data(band["step"], curve)
    a.median.set_data(band["step"], band["median"])
    a.top.set_title(f"G = {G}, lr = {lr:g}: pi(5) {band['median'][-1]:.2f} after {steps} steps (median)",
                    fontsize=10)
    for bar, share in zip(a.zero_signal, band["zero_signal_fraction"]):
        bar.set_height(share)
    relayout(fig)


def _learning_axes(fig, steps: int, n_seeds: int) -> SimpleNamespace:
    """Chapter 9's panels for ``steps`` steps of ``n_seeds`` runs: the band, five runs and the median of
    pi(5) (top), the share of zero-signal groups per step (bottom); empty until ``draw_learning``."""
    top, bottom = fig.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [2.2, 1]})
    band = top.fill_between([], [], [], color=CORRECT_COLOR, alpha=0.2, label="10-90% of runs (their spread)")
    runs = top.plot(np.zeros((0, min(5, n_seeds))), color=CORRECT_COLOR, lw=0.6, alpha=0.6)
    median, = top.plot([], [], color=CORRECT_COLOR, lw=2.5, label=f"median of {n_seeds} runs")
    top.set_ylim(0, 1)
    top.set_ylabel("pi(5)")
    top.legend(fontsize=8, loc="lower right")
    zero_signal = bottom.bar(np.arange(1, steps + 1) - 0.5, np.zeros(steps), width=0.9, color=OTHER_COLOR)
    bottom.set_ylim(0, 1)
    bottom.set_xlabel("step")
    bottom.set_ylabel("zero-signal\nshare")
    return SimpleNamespace(top=top, band=band, runs=runs, median=median, zero_signal=zero_signal)


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



# ----------------------------------------------------------------------------- chapter 6, 8, 9 live charts
#: Chapter 6's group size: every G from 1 to 64, opening at G = 4.
JHAT_G = Slider("G", "G", 1, 64, 1, 4, fmt="d")
#: Chapter 6's number of seeds: every n from 2 to 128, opening at 8.
N_SEEDS = Slider("n_seeds", "seeds", 2, 128, 1, 8, fmt="d")


def jhat_chart(p: float = 0.2, n_groups: int = JHAT_GROUPS, seed: int = 0):
    """Chapter 6: the Monte Carlo shares of J-hat (``jhat_study``) with +- 2 standard errors beside its
    exact binomial law, for every G of ``JHAT_G``; the standard error and P(J-hat = 0) printed."""
    def law(G):
        study = jhat_study(G, p, n_groups, seed)
        return study["values"], [study["frequencies"], study["law"], 2.0 * study["frequency_standard_errors"]]

    def notes(G):
        study = jhat_study(G, p, n_groups, seed)
        return {"SE of J-hat": study["standard_error"], "P(J-hat = 0)": study["law"][0]}

    share = f"Monte Carlo share ({n_groups} groups)"
    return line_chart(law, [JHAT_G], x=None, notes=notes, series=[share, "exact binomial law"],
                      errors={share: "± 2 standard errors"}, styles=["points", "dotted"],
                      colors=[PALETTE["sky"], PALETTE["blue"]], xdomain=[-0.05, 1.05],
                      xlabel="J-hat (fraction correct)", ylabel="probability",
                      headline="the lumps merge into a bell around 0.2")


def first_runs(n_seeds: int, seed: int = 0) -> dict:
    """The first ``n_seeds`` runs of ONE study of ``N_SEEDS.stop`` runs (``seed_study``), as ``seed_study``
    summarises them: more seeds add runs to the same ones, never draw a fresh set (chapter 6's chart
    and figure)."""
    finals = _seed_pool(seed)[:int(n_seeds)]
    std = float(finals.std(ddof=1))
    return {"finals": finals, "mean": float(finals.mean()), "std": std, "standard_error": std / np.sqrt(len(finals))}


@functools.lru_cache(maxsize=4)
def _seed_pool(seed: int) -> np.ndarray:
    finals = seed_study(int(N_SEEDS.stop), seed=seed, **SEED_RUN)["finals"]
    finals.setflags(write=False)
    return finals


def seeds_chart(seed: int = 0):
    """Chapter 6: the final pi(5) of the first n runs of one study (``first_runs``), their mean and its
    95% t interval (mean +- t_{0.975, n-1} SE), for every n of ``N_SEEDS``; the spread and the standard
    error printed."""
    def rows(n_seeds):
        s = first_runs(n_seeds, seed)
        half = t_quantile(0.975, n_seeds - 1) * s["standard_error"]
        level = np.full(n_seeds, np.nan)        # a level line needs its two ends only
        level[[0, -1]] = 1.0
        return np.arange(1, n_seeds + 1), [s["finals"], s["mean"] * level, (s["mean"] - half) * level,
                                           (s["mean"] + half) * level]

    def notes(n_seeds):
        s = first_runs(n_seeds, seed)
        return {"spread": s["std"], "SE of the mean": s["standard_error"], "t": t_quantile(0.975, n_seeds - 1)}

    return line_chart(rows, [N_SEEDS], x=None, notes=notes, ydomain=[0.2, 1.0],
                      series=["final π(5) of a run", "their mean", "mean − t·SE", "mean + t·SE"],
                      styles=["points", "solid", "dashed", "dashed"],
                      colors=[CORRECT_COLOR, "black", PALETTE["grey"], PALETTE["grey"]],
                      xlabel="run (seed)", ylabel="final π(5)",
                      headline="more seeds narrow the mean's interval, not the runs' spread")


def seeds_error_chart(seed: int = 0):
    """Chapter 6, the figure's right panel: the standard error of the mean of the first n runs of the
    same study as ``seeds_chart`` against n, beside sigma / sqrt(n) (sigma: ``reference_spread(seed + 1)``,
    4096 other runs), on log axes; the slider's n marked."""
    n = N_SEEDS.values
    sigma = reference_spread(seed + 1)
    errors = [first_runs(int(k), seed)["standard_error"] for k in n]
    return line_chart(lambda: [sigma / np.sqrt(n), errors], [], x=n, marker=N_SEEDS, log_x=True, log_y=True,
                      series=["σ/√n", "SE of the first n runs"], styles=["solid", "points"],
                      colors=[PALETTE["blue"], PALETTE["vermillion"]], ydomain=[0.005, 0.1],
                      xlabel="number of seeds n", ylabel="standard error of the mean",
                      headline="4x the runs, half the error")


#: Chapter 8's grader offset (rewards offset / offset + 1): 0 to 10 in steps of 0.25, opening at 10.
OFFSET = Slider("offset", "offset", 0.0, 10.0, 0.25, 10.0)
#: Chapter 8's baseline b (the marker): -1 to 11 in steps of 0.1 (as the live slider had), opening at 0.
BASELINE = Slider("b", "b", -1.0, 11.0, 0.1, 0.0, fmt=".1f")


def baseline_points() -> np.ndarray:
    """The b of chapter 8's chart: the slider's positions, and the mean reward J and the optimum b* of
    every grader offset, so that the chart's J and b* markers sit exactly where they are."""
    marks = [variance_curve(LOGITS, REWARDS, offset, [0.0])[key] for offset in OFFSET.values
             for key in ("mean", "optimal")]
    return np.unique(np.round(np.r_[BASELINE.values, marks], 10))


def baseline_chart():
    """Chapter 8: the total variance of (r + offset - b) score(y) against b (``variance_curve``) as a
    multiple of the mean baseline's, for every offset of ``OFFSET``; the mean reward J and the optimal
    b* of that grader marked on the curve, and the slider's b marked."""
    b = baseline_points()

    def curve(offset):
        c = variance_curve(LOGITS, REWARDS, offset, b)
        ratio = c["variance"] / c["variance_mean"]
        at_mean, at_optimal = (np.where(np.isclose(b, c[key], rtol=0, atol=1e-9), ratio, np.nan)
                               for key in ("mean", "optimal"))
        return [ratio, at_mean, at_optimal]

    def notes(offset):
        c = variance_curve(LOGITS, REWARDS, offset, b)
        return {"mean reward J": c["mean"], "best b*": c["optimal"]}

    return line_chart(curve, [OFFSET], x=b, marker=BASELINE, notes=notes, log_y=True,
                      ydomain=[0.5, 3000], series=["variance ÷ the mean baseline's", "b = mean reward J",
                                                   "b = b* (optimal)"],
                      styles=["solid", "ring", "points"], colors=[PALETTE["blue"], CORRECT_COLOR, "black"],
                      readout=["variance ÷ the mean baseline's"],
                      xlabel="baseline b (reward units)", ylabel="total variance ÷ that at b = J",
                      headline="the valley sits at the grader's mean reward", fmt=".3f")


#: Chapter 9's group size (every G from 1 to 32) and learning rate (0.25 to 4 in steps of 0.125: the
#: live slider had 16 positions), opening at G = 8, lr = 1.
LEARNING_G = Slider("G", "G", 1, 32, 1, 8, fmt="d")
LEARNING_LR = Slider("lr", "lr", 0.25, 4.0, 0.125, 1.0, fmt=".3f")
#: Steps and runs of each setting of chapter 9's chart.
LEARNING_STEPS, LEARNING_SEEDS = 30, 100
#: What chapter 9's chart draws of each setting's ``learning_curve_band``, per step.
LEARNING_FIELDS = ("median", "low", "high", "zero_signal_fraction")


def learning_band(G: int, lr: float) -> dict:
    """``learning_curve_band`` at one setting of chapter 9's chart (its steps, runs and seed 0), with
    the zero-signal share of step t at step t (none at step 0)."""
    band = learning_curve_band(G, lr, LEARNING_STEPS, LEARNING_SEEDS, 0)
    return {**band, "zero_signal_fraction": np.concatenate([[np.nan], band["zero_signal_fraction"]])}


def learning_chart():
    """Chapter 9: the median of pi(5) over 100 runs, its 10-90% band and the share of zero-signal groups
    per step (``learning_band``), for every G x lr of ``LEARNING_G`` x ``LEARNING_LR``; the median after
    10 and 30 steps and the band's width after 5 printed."""
    bands = {}

    def band(G, lr):
        bands[G, lr] = bands.get((G, lr)) or learning_band(G, lr)
        return [bands[G, lr][f] for f in LEARNING_FIELDS]

    def notes(G, lr):
        b = bands.get((G, lr)) or learning_band(G, lr)
        return {"median at step 10": b["median"][10], "at 30": b["median"][30],
                "10-90% width at step 5": b["high"][5] - b["low"][5]}

    # 3 decimals: a thousandth of the y axis, far under the band's Monte Carlo spread; the 992 settings'
    # curves are most of the page's weight, which stays under the 1.5 MB gzipped budget this way
    return line_chart(band, [LEARNING_G, LEARNING_LR], x=np.arange(LEARNING_STEPS + 1), notes=notes,
                      ydomain=[0, 1], decimals=3, fmt=".3f",      # printed as stored: 3 decimals
                      series=[f"median of {LEARNING_SEEDS} runs", "10% of runs", "90% of runs", "zero-signal share"],
                      styles=["solid", "dotted", "dotted", "dashed"],
                      colors=[CORRECT_COLOR, CORRECT_COLOR, CORRECT_COLOR, PALETTE["grey"]],
                      xlabel="step", ylabel="π(5); share of groups",
                      headline="a larger G narrows the band; a larger lr learns sooner")
