"""Chapter 14's figures and charts: GRPO's choices: aggregation, the standard deviation, the KL and entropy
(``book/14_grpo_choices.ipynb``)."""
from __future__ import annotations

from matplotlib.colors import to_rgb
import numpy as np

from .charts import Declared
from .grpo_toy import GRPO_SLIDERS, grpo_run_chart, oracle_grpo_run
from .style import LINE_COLORS


def draw_aggregation(fig, weights: dict, labels, lengths) -> None:
    """Per-token weight w_i = -d loss / d logp_it that each loss_type gives each answer (chapter 14).

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


def draw_entropy_collapse(fig, runs: dict) -> None:
    """Entropy and pi(5) over training: every seed as a thin line, their mean as a thick one.

    ``runs``: label -> ``run_over_seeds(grpo_toy_run, ...)`` result (chapter 14). Each seed is
    drawn because such runs can be bimodal (some seeds escape a stuck start, others never do), and
    a mean or a band would then sit where no run is.
    """
    left, right = fig.subplots(1, 2, sharex=True)
    for j, (label, run) in enumerate(runs.items()):
        for ax, key in ((left, "entropy"), (right, "pi_correct")):
            curves = run[key]
            steps = np.arange(curves.shape[1])
            light = tuple(0.5 * np.array(to_rgb(LINE_COLORS[j])) + 0.5)   # no alpha: a small PNG
            ax.plot(steps, curves.T, color=light, linewidth=0.8, antialiased=False)
            ax.plot(steps, curves.mean(axis=0), color=LINE_COLORS[j], linewidth=2.2,
                    label=f"{label} (mean of {curves.shape[0]})")
    left.set_xlabel("GRPO step")
    left.set_ylabel("entropy H(π) (nats)")
    left.set_title("entropy over training", fontsize=10)
    right.set_xlabel("GRPO step")
    right.set_ylabel("π(5)")
    right.set_ylim(0, 1.02)
    right.set_title("π(5) over training (thin: one seed each)", fontsize=10)
    right.legend(fontsize=7.5)
    fig.tight_layout()


#: The chapter's chart: chapter 13's GRPO run over the KL coefficient beta (tests/test_charts.py); it replaced a
#: FloatSlider 0..2 step 0.1.
CHARTS = (Declared("beta", lambda: grpo_run_chart("beta"), oracle_grpo_run, [GRPO_SLIDERS["beta"]],
                   replaced={"beta": 21}),)
