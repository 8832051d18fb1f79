"""Chapter 13's figures and charts: GRPO, assembled on the toy (``book/13_grpo_toy.ipynb``)."""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from .._checks import at_least, checked, one_of
from ..math.statistics import noise_floor
from ..studies.toy_grpo import SLIDER_RUN, grpo_slider_run
from .charts import Declared, Slider, line_chart
from .style import CORRECT_COLOR, PALETTE, relayout


def draw_grpo_run(fig, G: int = 8, eps: float = 0.2, lr: float = 1.0, beta: float = 0.0) -> None:
    """Chapter 13's slider figure: one short seeded GRPO run (``grpo_slider_run``).

    Left: pi(5) per step. Right: the diagnostics practitioners watch: entropy, KL(pi || pi_ref)
    and the clip fraction of the last inner step (the first inner step has rho = 1, so its clip
    fraction is always 0 and an average over the K inner steps would halve the signal at K = 2).
    """
    run = grpo_slider_run(G=G, eps=eps, lr=lr, beta=beta)
    steps = np.arange(run["pi_correct"].size)
    left, pi, entropy, kl, clip = _grpo_run_axes(fig)
    pi.set_data(steps, run["pi_correct"])
    entropy.set_data(steps, run["entropy"])
    kl.set_data(steps, run["kl_ref"])
    clip.set_data(steps[1:], run["inner_clip_fraction"][:, -1])
    left.set_title(f"G={G}, ε={eps:g}, lr={lr:g}, β={beta:g}: π(5) → {run['pi_correct'][-1]:.2f}", fontsize=10)
    relayout(fig)


def _grpo_run_axes(fig):
    """Chapter 13's panels, empty until ``draw_grpo_run`` sets their lines: pi(5) per step (left), the
    diagnostics (right)."""
    left, right = fig.subplots(1, 2)
    pi, = left.plot([], [], color=CORRECT_COLOR, linewidth=2)
    left.set_ylim(0, 1.02)
    left.set_xlabel("GRPO step (one group each)")
    left.set_ylabel("π(5)")
    entropy, = right.plot([], [], label="entropy H(π) (nats)", color=PALETTE["blue"])
    kl, = right.plot([], [], label="KL(π ‖ π_ref) (nats)", color=PALETTE["vermillion"])
    clip, = right.plot([], [], label="clip fraction, last inner step", color=PALETTE["black"], linestyle="--")
    right.set_ylim(0, 2.6)
    right.set_xlabel("GRPO step")
    right.set_ylabel("nats / fraction")
    right.set_title("diagnostics", fontsize=10)
    right.legend(fontsize=8, loc="upper right")
    return left, pi, entropy, kl, clip


def _slider_values(values, name: str) -> list:
    """Rule: at least one slider value."""
    values = list(values)
    if not values:
        raise ValueError(f"{name} must hold at least one slider value")
    return values


def _per_seed_results(results, name: str) -> dict:
    """Rule: a non-empty dict, row label -> a 1-D array of at least 2 finite per-seed results."""
    if not isinstance(results, dict) or not results:
        raise ValueError(f"{name} must be a non-empty dict: row label -> per-seed results")
    rows = {}
    for label, values in results.items():
        x = np.asarray(values, dtype=float)
        if x.ndim != 1 or x.size < 2 or not np.all(np.isfinite(x)):
            raise ValueError(f"{name}[{label!r}] must be a 1-D array of at least 2 finite per-seed results")
        rows[label] = x
    return rows


def _versus_names_rows(args) -> None:
    """Relation: ``versus`` maps row labels of ``results`` to row labels."""
    for label, other in (args["versus"] or {}).items():
        if label not in args["results"] or other not in args["results"]:
            raise ValueError(f"versus must map row labels of results to row labels, got {label!r} -> {other!r}")


@checked(name=one_of(("G", "eps", "lr", "beta")), values=_slider_values)
def sweep_summary(name: str, values) -> str:
    """A Markdown table of ``grpo_slider_run`` over a few of one slider's values: the numbers the text
    quotes beside its chart (chapters 13 and 14).

    One column per value of the slider ``name`` (``"G"``, ``"eps"``, ``"lr"`` or ``"beta"``), the
    others at their defaults; rows: pi(5) after 3 steps and at the end of the run, KL(pi || pi_ref)
    at the end, the mean clip fraction of the last inner step, and the number of flat groups.
    """
    runs = [grpo_slider_run(**{name: v}) for v in values]
    last = runs[0]["pi_correct"].size - 1
    rows = {
        "π(5) after 3 steps": [f"{r['pi_correct'][3]:.2f}" for r in runs],
        f"π(5) after {last} steps": [f"{r['pi_correct'][-1]:.2f}" for r in runs],
        f"KL(π ‖ π_ref) after {last} steps": [f"{r['kl_ref'][-1]:.2f}" for r in runs],
        "clip fraction, last inner step (mean)": [f"{r['inner_clip_fraction'][:, -1].mean():.2f}" for r in runs],
        "flat groups (no signal)": [f"{int(r['zero_std'].sum())}" for r in runs],
    }
    lines = [f"| {name} | " + " | ".join(f"{v:g}" for v in values) + " |",
             "|---" * (len(values) + 1) + "|"]
    lines += [f"| {label} | " + " | ".join(cells) + " |" for label, cells in rows.items()]
    return "\n".join(lines) + "\n"


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


@checked(_versus_names_rows, results=_per_seed_results, digits=at_least(0))
def seed_table(results: dict, versus: dict | None = None, digits: int = 4) -> str:
    """A Markdown table of per-seed results, with a noise-floor verdict per comparison (chapters 13 and 14).

    Short headers keep the ten columns narrow: n (seeds), mean, sd, min, max, vs, diff., floor,
    verdict. ``results``: row label -> 1-D array with one result per seed. Each row shows the
    number of seeds, the mean, the standard deviation over seeds (ddof 1: the spread of runs, not
    the uncertainty of the mean), the min and the max. ``versus``: row label -> the label of the row
    it is compared with; such a row also shows that label, the difference of means, the noise floor
    t * sqrt(s_a^2/n_a + s_b^2/n_b) (Welch, 5%, ``rl4llm.math.statistics.noise_floor``) and the verdict:
    "real" if the difference exceeds the floor, else "within noise".
    """
    rows, versus = results, versus or {}
    f = f"{{:.{digits}f}}"
    lines = ["| setting | n | mean | sd | min | max | vs | diff. | floor | verdict |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for label, x in rows.items():
        cells = [label, str(x.size), f.format(x.mean()), f.format(x.std(ddof=1)), f.format(x.min()),
                 f.format(x.max())]
        if label in versus:
            y = rows[versus[label]]
            difference, floor = x.mean() - y.mean(), noise_floor(x, y)
            cells += [versus[label], f"{difference:+.{digits}f}", f.format(floor),
                      "real" if abs(difference) > floor else "within noise"]
        else:
            cells += ["", "", "", ""]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------- live charts (chapters 13 and 14)
#: The four sliders of chapters 13 (G, eps, lr) and 14 (beta), each on its own chart: every G from 2 to 32,
#: epsilon from 0.05 to 0.9 in steps of 0.025, the learning rate from 0.1 to 5 in steps of 0.1, beta from 0 to
#: 2 in steps of 0.05.
GRPO_SLIDERS = {
    "G": Slider("G", "G", 2, 32, 1, 8, fmt="d"),
    "eps": Slider("eps", "ε", 0.05, 0.9, 0.025, 0.2, fmt=".3f"),
    "lr": Slider("lr", "lr", 0.1, 5.0, 0.1, 1.0, fmt=".1f"),
    "beta": Slider("beta", "β", 0.0, 2.0, 0.05, 0.0),
}

#: The series of a run, in the chart's order.
GRPO_SERIES = ["π(5)", "entropy H(π) (nats)", "KL(π ‖ π_ref) (nats)", "clip fraction, last inner step"]

#: The curves and the notes of a chart read the same run: each run once.
_slider_run = lru_cache(maxsize=None)(grpo_slider_run)


def grpo_run_curves(**setting) -> np.ndarray:
    """The sliders' curves (chapters 13 and 14) over the steps of ``grpo_slider_run(**setting)``: pi(5), the
    entropy, KL(pi || pi_ref) and the clip fraction of the last inner step (none at step 0, before any update)."""
    run = _slider_run(**setting)
    return np.array([run["pi_correct"], run["entropy"], run["kl_ref"],
                     np.concatenate([[np.nan], run["inner_clip_fraction"][:, -1]])])


def grpo_run_notes(**setting) -> dict:
    """The numbers over each slider chart (chapters 13 and 14): pi(5) after the run, and how many of its
    groups were flat."""
    run = _slider_run(**setting)
    return {f"π(5) after {run['zero_std'].size} steps": float(run["pi_correct"][-1]),
            "flat groups": float(run["zero_std"].sum())}


@checked(name=one_of(tuple(GRPO_SLIDERS)))
def grpo_run_chart(name: str):
    """Chapters 13 and 14: one short seeded GRPO run (``grpo_slider_run``) at every position of the slider ``name``
    (a key of ``GRPO_SLIDERS``), the other three at their defaults."""
    steps = np.arange(SLIDER_RUN["steps"] + 1, dtype=float)
    return line_chart(grpo_run_curves, [GRPO_SLIDERS[name]], x=steps, series=GRPO_SERIES, notes=grpo_run_notes,
                      xlabel="GRPO step (one group each)", ylabel="probability / nats / fraction",
                      headline=f"one seeded run, K = {SLIDER_RUN['K']}",
                      colors=[CORRECT_COLOR, PALETTE["blue"], PALETTE["vermillion"], PALETTE["black"]],
                      styles=["solid", "dashed", "solid", "dotted"], ydomain=[0, 2.6])


# The chapter's charts, and their numbers from the library alone (tests/test_charts.py); they replaced G 2..32
# step 2, eps 0.05..0.9 step 0.05 and lr 10^-1..10^0.7 step 0.1 (18 positions).
def oracle_grpo_run(**setting):
    """A GRPO run on the toy at ``setting``, as chapters 13 and 14's charts draw it."""
    run = grpo_slider_run(**setting)
    return np.arange(11), [run["pi_correct"], run["entropy"], run["kl_ref"],
                           np.r_[np.nan, run["inner_clip_fraction"][:, -1]]]


CHARTS = tuple(Declared(name, lambda name=name: grpo_run_chart(name), oracle_grpo_run, [GRPO_SLIDERS[name]],
                        replaced={name: widget}) for name, widget in (("G", 16), ("eps", 18), ("lr", 18)))
