"""Chapter 6's figures and charts: Sampling is acting: estimating J by Monte Carlo
(``book/06_monte_carlo.ipynb``)."""
from __future__ import annotations

import functools
import math
from types import SimpleNamespace

from matplotlib.ticker import MaxNLocator
import numpy as np

from ..math.estimators import jhat_study
from ..math.statistics import t_quantile
from ..studies.onpolicy import SEED_RUN, seed_study
from .charts import Declared, Slider, line_chart
from .style import CORRECT_COLOR, PALETTE, relayout


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
    return SimpleNamespace(ax=ax, law=law, normal=normal, target=target, errors=errors)


def _set_jhat(a: SimpleNamespace, G: int, p: float, n_groups: int, seed: int) -> None:
    """One panel: the Monte Carlo frequencies of J-hat at G (bars, each with +- 2 of its standard
    errors), the binomial law and the normal approximation."""
    study = jhat_study(G, p, n_groups, seed)
    a.ax.bar(study["values"], study["frequencies"], width=0.8 / G if G > 1 else 0.2, color=PALETTE["sky"],
             label=f"{n_groups} groups (Monte Carlo)")
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
    a = _jhat_axes(fig)
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
    a = _seeds_axes(fig)
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


# The chapter's charts, and their numbers from the library alone (tests/test_charts.py). They replaced
# IntSliders 1..64 (G) and 2..128 (seeds).
@functools.lru_cache(maxsize=1)
def _oracle_pool():
    """Chapter 6's one study: 128 runs; the chart at n shows its first n (never a fresh set of n)."""
    return seed_study(128, seed=0, G=4, lr=1.0, steps=10)["finals"]


def _oracle_first(n_seeds):
    finals = _oracle_pool()[:n_seeds]
    return finals, finals.mean(), finals.std(ddof=1) / math.sqrt(n_seeds)


def _oracle_seeds(n_seeds):
    finals, mean, se = _oracle_first(n_seeds)
    half = t_quantile(0.975, n_seeds - 1) * se
    ends = np.full(n_seeds, np.nan)
    ends[[0, -1]] = 1.0                                   # the mean and the interval: their two ends
    return np.arange(1, n_seeds + 1), [finals, mean * ends, (mean - half) * ends, (mean + half) * ends]


def _oracle_seed_errors():
    n = np.arange(2, 129)
    sigma = seed_study(4096, seed=1, G=4, lr=1.0, steps=10)["std"]
    return n, [sigma / np.sqrt(n), [_oracle_first(int(k))[2] for k in n]]


def _oracle_jhat(G):
    study = jhat_study(G, 0.2, 20_000, 0)
    return study["values"], [study["frequencies"], study["law"], 2 * study["frequency_standard_errors"]]


CHARTS = (Declared("jhat", jhat_chart, _oracle_jhat, [JHAT_G], replaced={"G": 64}),
          Declared("seeds", seeds_chart, _oracle_seeds, [N_SEEDS], replaced={"n_seeds": 127}),
          Declared("seed_errors", seeds_error_chart, _oracle_seed_errors, [], marker=N_SEEDS,
                   replaced={"n_seeds": 127}))
