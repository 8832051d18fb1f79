"""Chapter 18's live charts: each weighting's exact variance and each clip's share of zeroed tokens on the
digit chain as its length and the policy's lead grow, DAPO's cost per kept group, and the chance that k
answers all miss as training sharpens the policy (``rl4llm.viz.charts``); and the static figure of the
tiny transformer's entropy over steps under each entropy knob.

Each chart stores the library's numbers (``sequence_ratios.reweighted_moments``,
``dynamic_sampling.draws_per_kept_group``, ``pass_at_k.pass_at_k``) at every position of its sliders;
the reader's browser redraws from them with no kernel."""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from .. import grpo_toy_run, run_over_seeds
from ..math.pass_at_k import pass_at_k
from ..studies.dynamic_sampling import draws_per_kept_group
from ..studies.sequence_ratios import (CHAIN_MAX_EXACT, CISPO_MAX, GSPO_EPS, LEAD_LR, TOKEN_EPS, WEIGHTINGS,
                                       chain_sequences, reweighted_moments)
from .charts import Declared, Slider, bar_chart, grid, line_chart
from .style import LINE_COLORS


#: The digit chain's length (every value that enumerates) and how many exact steps pi is ahead of pi_old.
LENGTH = Slider("L", "length L (tokens)", 1, CHAIN_MAX_EXACT, 1, CHAIN_MAX_EXACT, fmt="d")

LEAD = Slider("steps", "steps pi is ahead", 0, 4, 1, 2, fmt="d")

#: Each weighting's label on the charts (short enough for a 390 px screen).
WEIGHTING_LABELS = ("product", "token", "GSPO", "PPO", "GSPO clip", "CISPO")

#: The clips whose zeroed share the chapter compares: (label, weighting, eps_low, eps_high): PPO's token
#: clip at 0.2, GSPO's sequence clip at its paper's narrow widths and at PPO's wide one, CISPO's cap
#: (``CISPO_MAX``, one-sided: no eps_low). A label holds no dot (Vega would read it as a nested field).
CLIPS = (("PPO token", "token_clip") + TOKEN_EPS, ("GSPO narrow", "gspo_clip") + GSPO_EPS,
         ("GSPO wide", "gspo_clip") + TOKEN_EPS, ("CISPO", "cispo", None, CISPO_MAX))

#: DAPO's group size (every value) and the pass@k chart's training step.
GROUP = Slider("G", "group size G", 2, 16, 1, 8, fmt="d")

P_RIGHT = np.round(np.arange(1, 50) / 50, 2)


@lru_cache(maxsize=None)
def chain_values(L: int, steps: int, key: str) -> tuple:
    """``reweighted_moments(...)[key]`` of every weighting on the chain of L tokens, pi ``steps`` ahead."""
    task = chain_sequences(L, steps, LEAD_LR)
    return tuple(reweighted_moments(task, w)[key] for w in WEIGHTINGS)


@lru_cache(maxsize=None)
def clip_shares(L: int, steps: int) -> tuple:
    """The exact share of zeroed tokens under each clip of ``CLIPS``."""
    task = chain_sequences(L, steps, LEAD_LR)
    return tuple(reweighted_moments(task, w, low, high)["zero_share"] for _, w, low, high in CLIPS)


def _top(compute, sliders, names) -> float:
    return 1.15 * max(row[n] for row in grid(compute, sliders, names) for n in names)


def variance_chart():
    """Each weighting's exact variance (trace) of one answer's estimate, on the grid L x lead."""
    compute = lambda L, steps: chain_values(L, steps, "variance")      # noqa: E731
    return bar_chart(compute, [LENGTH, LEAD], categories=WEIGHTING_LABELS, correct=0,
                     ymax=_top(compute, [LENGTH, LEAD], WEIGHTING_LABELS), xlabel="weighting",
                     ylabel="variance of one answer's estimate",
                     headline="the product weight's variance grows with L once π is ahead",
                     readout="product", item="", marked="read out above the bars")


def clip_chart():
    """The exact share of tokens with zero gradient under each clip, on the grid L x lead."""
    names = [label for label, *_ in CLIPS]
    return bar_chart(clip_shares, [LENGTH, LEAD], categories=names, correct=3, ymax=1.15, xlabel="clip",
                     ylabel="share of tokens with zero gradient",
                     headline="CISPO zeroes no token; once π is ahead, GSPO's tight clip the most", readout="CISPO",
                     item="", marked="read out above the bars")


def cost_chart():
    """Groups drawn per informative group kept, 1 / (1 - p^G - (1 - p)^G), over P(right) = p, at every G."""
    def compute(G):
        return [[draws_per_kept_group([p, 1 - p], [1, 0], G) for p in P_RIGHT]]
    return line_chart(compute, [GROUP], x=P_RIGHT, series=["groups drawn per kept group"], xlabel="P(right answer) p",
                      ylabel="groups drawn per kept group", headline="refilling costs most at p near 0 or 1",
                      log_y=True, ydomain=[1, 30])


def miss_at_k(p_right: np.ndarray, t: int, ks) -> list:
    """1 - pass@k = (1 - p)^k at step ``t``, the mean over seeds (``p_right``: (seeds, steps + 1)), per k."""
    return [float(1.0 - pass_at_k(p_right[:, t], int(k)).mean()) for k in ks]


def log_miss_at_k(p_right: np.ndarray, t: int, ks) -> list:
    """log10 of ``miss_at_k``, taken before the chart rounds its data to 6 decimals, so that a chance of
    7e-12 is stored as -11.14, not as 0; the mean of (1 - p)^k is formed directly, since 1 - pass@k of a
    pass@k within 1e-12 of 1 keeps only a few digits."""
    return [float(np.log10(np.mean((1.0 - p_right[:, t]) ** int(k)))) for k in ks]


def pass_at_k_chart(curves: dict, ks) -> object:
    """The chance that k answers all miss, 1 - pass@k, over k for each setting's policies (``curves``: name
    to an array (seeds, steps + 1) of pi(5)), the mean over seeds at every training step (a slider over every
    step). Both axes are logarithmic: y is log10 of the chance, computed before the chart stores its data
    (a stored chance would be rounded to 6 decimals, and every value below 5e-7 would read 0). On that
    axis it keeps falling where pass@k itself sits above 0.999."""
    steps = next(iter(curves.values())).shape[1] - 1
    step = Slider("t", "training step", 0, steps, 1, steps, fmt="d")
    return line_chart(lambda t: [log_miss_at_k(p, t, ks) for p in curves.values()], [step], x=np.asarray(ks),
                      series=list(curves), xlabel="k (answers drawn)", ylabel="log10 P(all k answers wrong)",
                      headline="sharpening lowers the chance of k misses at every k", log_x=True,
                      ydomain=[LOG_MISS_FLOOR, 0], styles=["solid", "dashed", "dotted"][:len(curves)], fmt=".2f")


# Every chart of chapter 18, and its numbers from the library alone (tests/test_charts.py).
def _oracle_chain(L, steps, key, clips=None):
    task = chain_sequences(L, steps, LEAD_LR)
    if clips is None:
        return [reweighted_moments(task, w)[key] for w in WEIGHTINGS]
    return [reweighted_moments(task, w, low, high)[key] for _, w, low, high in clips]


#: The chapter's trained toys (40 seeds of three settings) and the ks of its pass@k chart.
PASS_SETTINGS = {"eps 0.2": {}, "clip-higher 0.28": {"eps_high": 0.28}, "entropy bonus 0.1": {"entropy_coef": 0.1}}
PASS_KS = [1, 2, 4, 8, 16]
#: The bottom of the miss chart's y axis (log10): below every setting's mean at k = 16 and step 8 (5.8e-14).
LOG_MISS_FLOOR = -14


@lru_cache(maxsize=None)
def pass_curves() -> dict:
    """pi(5) over the training steps of each setting's 40 runs (the pass@k chart's policies)."""
    return {name: run_over_seeds(grpo_toy_run, range(40), G=8, K=4, lr=0.5, steps=8, **extra)["pi_correct"]
            for name, extra in PASS_SETTINGS.items()}


CHARTS = (
    Declared("variance", variance_chart, lambda L, steps: _oracle_chain(L, steps, "variance"), [LENGTH, LEAD],
             WEIGHTING_LABELS),
    Declared("clip", clip_chart, lambda L, steps: _oracle_chain(L, steps, "zero_share", CLIPS), [LENGTH, LEAD],
             [label for label, *_ in CLIPS]),
    Declared("cost", cost_chart, lambda G: (P_RIGHT, [[draws_per_kept_group([p, 1 - p], [1, 0], G) for p in P_RIGHT]]),
             [GROUP]),
    Declared("pass_at_k", lambda: pass_at_k_chart(pass_curves(), PASS_KS),
             lambda t: (PASS_KS, [[np.log10(np.mean((1 - p[:, t]) ** k)) for k in PASS_KS] for p in pass_curves().values()]),
             [Slider("t", "training step", 0, 8, 1, 8, fmt="d")]),
)


def draw_pass_at_k_over_prompts(ax, ks, estimates: dict, exact_ks, exact: dict) -> None:
    """pass@k of a prompt set against k (log x) for each policy (chapter 18): ``estimates`` maps a name to an
    array (draws, 2, len(ks)) of (mean, standard error over prompts) from n samples per prompt, one row per
    seed or draw, drawn as the mean over rows with a band of +- 2 standard errors (the rows' spread and the
    prompts' SE combined); ``exact`` maps the same names to (rows, len(exact_ks)) exact values, their mean
    dashed, to k far beyond n."""
    for colour, (name, rows) in zip(LINE_COLORS, estimates.items()):
        mean = rows[:, 0].mean(axis=0)
        spread = rows[:, 0].std(axis=0, ddof=1) / np.sqrt(len(rows))
        band = 2 * np.sqrt(spread ** 2 + (rows[:, 1] ** 2).mean(axis=0) / len(rows))
        ax.plot(ks, mean, color=colour, marker="o", markersize=3, label=f"{name}, from samples (± 2 SE)")
        ax.fill_between(ks, mean - band, mean + band, color=colour, alpha=0.25)
        ax.plot(exact_ks, exact[name].mean(axis=0), color=colour, linestyle="--", linewidth=1,
                label=f"{name}, exact")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("k (answers drawn per prompt)")
    ax.set_ylabel("pass@k, mean over held-out prompts")
    ax.set_ylim(0, 1)
    ax.legend(fontsize=8, loc="lower right")


def entropy_figure(regimes: dict, title: str):
    """The tiny transformer under each entropy setting, one column per training regime (``regimes``: a
    column title to ``entropy_runs``'s records): the entropy per outer step (top) and the held-out accuracy
    at each evaluation (bottom), the mean over seeds with a band of +- 2 standard errors."""
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    fig, axes = plt.subplots(2, len(regimes), figsize=(7.2, 5.6), squeeze=False)
    for column, (label, runs) in enumerate(regimes.items()):
        for (name, run), colour, style in zip(runs.items(), LINE_COLORS, ["-", "--", ":", "-.", "-", "--"]):
            h = run["entropy"]
            for ax, values, x in ((axes[0, column], h, np.arange(1, h.shape[1] + 1)),
                                  (axes[1, column], run["accuracy"], run["eval_steps"])):
                mean, band = values.mean(axis=0), 2 * values.std(axis=0, ddof=1) / np.sqrt(len(values))
                ax.plot(x, mean, color=colour, linestyle=style, label=name)
                ax.fill_between(x, mean - band, mean + band, color=colour, alpha=0.15)
        axes[0, column].set_title(label, fontsize=9)
        axes[1, column].set_xlabel("outer step")
        axes[1, column].set_ylim(-0.02, 0.45)
        for ax in axes[:, column]:
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    for row, label in enumerate(("entropy per token (nats)", "held-out accuracy")):
        axes[row, 0].set_ylabel(label)
    axes[1, -1].legend(fontsize=7, loc="upper right")             # the collapsed accuracy leaves it empty
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


def draw_prefilter_arms(ax, arms: dict) -> None:
    """The pre-filter study's arms at equal answers sampled (chapter 18; ``prefilter_study``'s ``arms``): each
    seed's final held-out greedy accuracy as a dot, the arm's median as a bar, and under its name the steps
    (the range over seeds) its answers bought. The accuracy axis starts at 0, so that a gap between arms is
    seen at its true size."""
    labels = []
    for x, (colour, (name, arm)) in enumerate(zip(LINE_COLORS, arms.items())):
        acc, steps = arm["accuracy"], arm["steps"]
        ax.scatter(np.full(len(acc), x) + np.linspace(-0.08, 0.08, len(acc)), acc, color=colour, s=24, zorder=3)
        ax.hlines(np.median(acc), x - 0.25, x + 0.25, color=colour, linewidth=2)
        span = f"{steps.min()}" if steps.min() == steps.max() else f"{steps.min()}-{steps.max()}"
        labels.append(name.replace(" (", "\n(") + f"\n{span} steps")
    ax.set_xticks(range(len(arms)), labels, fontsize=8)
    ax.set_xlim(-0.5, len(arms) - 0.5)
    ax.set_ylabel("held-out greedy accuracy")
    ax.set_ylim(0, None)
