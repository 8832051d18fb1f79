"""Figures and the GRPO playground of Part IV (chapter 15: GRPO on a tiny transformer)."""
from __future__ import annotations

import numpy as np

from .._checks import at_least, checked
from .style import CORRECT_COLOR, OTHER_COLOR, PALETTE


def draw_learning_curves(fig, metrics: dict, evals: dict, title: str = "GRPO lifts held-out accuracy") -> None:
    """Held-out greedy accuracy (every few steps) and mean sampled reward (every step) against the step."""
    ax = fig.add_subplot(1, 1, 1)
    ax.plot(metrics["step"], metrics["reward"], color=OTHER_COLOR, lw=1, label="mean sampled reward (T = 1)")
    ax.plot(evals["step"], evals["accuracy"], "o-", color=CORRECT_COLOR, lw=2, ms=4,
            label="held-out greedy accuracy")
    ax.set(xlabel="GRPO step", ylabel="share correct", ylim=(0, 1), title=title)
    ax.legend(loc="lower right")


@checked(window=at_least(1))
def moving_median(values, window: int = 25) -> np.ndarray:
    """The median of each centred window of ``window`` values (shorter at the ends); NaNs are skipped.

    A median ignores the rare huge values a mean of k3 estimates is pulled up by (chapter 15).
    """
    values = np.asarray(values, dtype=float)
    half = window // 2
    out = np.full(len(values), np.nan)
    for i in range(len(values)):
        chunk = values[max(0, i - half):i + window - half]
        if np.isfinite(chunk).any():
            out[i] = np.nanmedian(chunk)
    return out


def draw_diagnostics(fig, metrics: dict, window: int = 25) -> None:
    """The four numbers practitioners watch, one panel each, against the GRPO step.

    The KL panel adds the moving median over ``window`` steps to the raw per-step values: the k3
    mean of a batch has a heavy right tail, and its spikes would hide the trend.
    """
    panels = [("entropy", "entropy (nats/token)", PALETTE["blue"]),
              ("kl", "KL to start (nats/token)", PALETTE["vermillion"]),
              ("clip_fraction", "clip fraction", PALETTE["orange"]),
              ("zero_variance_share", "share of flat groups", PALETTE["purple"])]
    axes = fig.subplots(2, 2, sharex=True)
    for ax, (key, label, color) in zip(axes.flat, panels):
        if key == "kl":
            ax.plot(metrics["step"], metrics[key], color=color, lw=0.8, alpha=0.45, label="each step")
            ax.plot(metrics["step"], moving_median(metrics[key], window), color=color, lw=2,
                    label=f"moving median ({window} steps)")
            ax.legend(loc="upper left", fontsize=8)
        else:
            ax.plot(metrics["step"], metrics[key], color=color, lw=1)
        ax.set_ylabel(label, fontsize=9)
    for ax in axes[1]:
        ax.set_xlabel("GRPO step")
    fig.suptitle("What to watch: entropy falls, KL to the start climbs ever more slowly, fewer groups are flat")


def draw_seed_comparison(fig, results: dict, floor: float) -> None:
    """Final accuracy per seed for each setting, with each mean and the noise floor around the first."""
    ax = fig.add_subplot(1, 1, 1)
    names = list(results)
    colors = [PALETTE["blue"], PALETTE["orange"], PALETTE["vermillion"], PALETTE["purple"]]
    first_mean = float(np.mean(results[names[0]]))
    ax.axhspan(first_mean - floor, first_mean + floor, color=OTHER_COLOR, alpha=0.25,
               label=f"{names[0]} mean ± noise floor")
    for i, name in enumerate(names):
        values = np.asarray(results[name])
        ax.plot(np.full(len(values), i), values, "o", color=colors[i % len(colors)], ms=7, alpha=0.8)
        ax.hlines(values.mean(), i - 0.25, i + 0.25, color=colors[i % len(colors)], lw=3)
    ax.set(xticks=range(len(names)), xticklabels=names, xlim=(-0.6, len(names) - 0.4),
           ylabel="final held-out accuracy", title="Seeds scatter: compare means against the noise floor")
    ax.legend(loc="lower right")


def draw_run_over_baseline(fig, evals: dict, baseline: dict, label: str) -> None:
    """A playground run's accuracy curve drawn over the chapter's default run."""
    ax = fig.add_subplot(1, 1, 1)
    ax.plot(baseline["step"], baseline["accuracy"], "-", color=OTHER_COLOR, lw=2, label="chapter's default run")
    ax.plot(evals["step"], evals["accuracy"], "o-", color=CORRECT_COLOR, lw=2, ms=3, label=label)
    ax.set(xlabel="GRPO step", ylabel="held-out greedy accuracy", ylim=(0, 1),
           title="Your run against the default")
    ax.legend(loc="lower right", fontsize=9)


def draw_grid(fig, grid: dict, baseline: dict) -> None:
    """Small multiples: one panel per (row value, column value) run of the playground, over the default.

    ``grid`` maps ``(row_label, col_label)`` to a run's ``evals``.
    """
    rows = list(dict.fromkeys(r for r, _ in grid))
    cols = list(dict.fromkeys(c for _, c in grid))
    axes = np.atleast_2d(fig.subplots(len(rows), len(cols), sharex=True, sharey=True, squeeze=False))
    last = max(max(evals["step"]) for evals in grid.values())
    for (r, c), evals in grid.items():
        ax = axes[rows.index(r), cols.index(c)]
        ax.plot(baseline["step"], baseline["accuracy"], color=OTHER_COLOR, lw=1.5)
        ax.plot(evals["step"], evals["accuracy"], color=CORRECT_COLOR, lw=2)
        ax.set_title(f"{r}, {c}", fontsize=9)
        ax.set(ylim=(0, 1), xlim=(0, last))
    for ax in axes[-1]:
        ax.set_xlabel("step", fontsize=9)
    for ax in axes[:, 0]:
        ax.set_ylabel("accuracy", fontsize=9)
    fig.suptitle("Break it: a high learning rate collapses the policy, G = 2 starves it")


def grid_chart(grid: dict, baseline: dict):
    """The grid of stored playground runs as a live chart (chapter 15): two rows of buttons pick a cell,
    (row value, column value) of ``grid`` (``(row_label, col_label)`` to a run's ``evals``, as
    :func:`draw_grid` takes it), and the chart draws that run's held-out accuracy over the chapter's
    run (``baseline``'s evals, its first steps), with the cell's final accuracy printed over the plot.
    The runs were trained when the cell ran; the page redraws from them with no kernel."""
    import altair as alt

    from .charts import HEIGHT, WIDTH, rounded

    rows, cols = list(dict.fromkeys(r for r, _ in grid)), list(dict.fromkeys(c for _, c in grid))
    last = max(max(evals["step"]) for evals in grid.values())
    runs = [{"row": r, "col": c, "step": int(step), "accuracy": rounded(float(accuracy))}
            for (r, c), evals in grid.items() for step, accuracy in zip(evals["step"], evals["accuracy"])]
    chapter = [{"step": int(step), "accuracy": rounded(float(accuracy))}
               for step, accuracy in zip(baseline["step"], baseline["accuracy"]) if step <= last]
    row = alt.param(name="row", value=rows[len(rows) // 2], bind=alt.binding_radio(options=rows, name="learning rate "))
    col = alt.param(name="col", value=cols[1 % len(cols)], bind=alt.binding_radio(options=cols, name="run "))
    x = alt.X("step:Q", title="GRPO step", scale=alt.Scale(domain=[0, last], nice=False))
    y = alt.Y("accuracy:Q", title="held-out greedy accuracy", scale=alt.Scale(domain=[0, 1]))
    picked = "datum.row == row && datum.col == col"
    layers = [
        alt.Chart(alt.Data(values=chapter)).mark_line(color=OTHER_COLOR, strokeWidth=2, aria=False).encode(x=x, y=y),
        alt.Chart(alt.Data(values=runs)).transform_filter(picked).mark_line(
            color=CORRECT_COLOR, strokeWidth=2, point=alt.OverlayMarkDef(color=CORRECT_COLOR)).encode(
            x=x, y=y, tooltip=[alt.Tooltip("step:Q"), alt.Tooltip("accuracy:Q", format=".3f")]),
        alt.Chart(alt.Data(values=runs)).transform_filter(f"{picked} && datum.step == {last}").transform_calculate(
            line=f"'accuracy after {last} steps = ' + format(datum.accuracy, '.3f')").mark_text(
            align="left", x=0, y=-8, fontSize=12, fontWeight="bold", aria=False).encode(text="line:N"),
    ]
    headline = "a high learning rate collapses the policy, G = 2 starves it"
    return alt.layer(*layers).add_params(row, col).properties(
        width=WIDTH, height=HEIGHT,
        title=alt.TitleParams(text=alt.ExprRef("row + ', ' + col"), anchor="start", fontSize=14,
                              subtitle=[headline, f"green: the stored run; grey: the chapter's run, its first {last} steps"],
                              subtitleFontSize=12, offset=22),
        description=f"{headline}. Line chart of held-out greedy accuracy against GRPO step for one stored run of "
                    f"the grid ({len(rows)} learning rates by {len(cols)} runs, picked with two rows of buttons), "
                    "over the chapter's run.",
    ).configure_axis(labelFontSize=12, titleFontSize=12).configure_view(stroke=None)


#: The playground's largest group size and number of inner steps (chapter 15). A click's training time
#: grows about as G for sampling and as G x K for the updates, so the old maxima (G = 16, K = 8) made
#: a click last minutes. The lessons sit below these caps: G = 2 against 8 (flat groups starve the
#: update) and K = 2 to 4 (the clip binds once the policy moves between inner steps).
PLAYGROUND_MAX = {"group_size": 12, "inner_steps": 4}


def grpo_playground(policy, task, base_config, baseline: dict, steps: int = 60):
    """Sliders for G, K (inner steps), epsilon, learning rate, beta and seed, a Train button and a
    progress bar. With K = 1 every ratio is exactly 1 when the loss is computed, so epsilon acts only
    from K = 2 on: the K slider is what lets the clip bite.

    Each click runs ``steps`` GRPO steps of ``base_config`` (with the sliders' values) from ``policy``
    and draws its accuracy curve over ``baseline`` (the chapter's default run's ``evals``).
    """
    from dataclasses import asdict

    import ipywidgets as widgets
    import matplotlib.pyplot as plt

    from ..llm.trainer import GRPOConfig, GRPOTrainer

    sliders = {
        "group_size": widgets.IntSlider(value=base_config.group_size, min=2, max=PLAYGROUND_MAX["group_size"],
                                        description="G"),
        "inner_steps": widgets.IntSlider(value=base_config.inner_steps, min=1, max=PLAYGROUND_MAX["inner_steps"],
                                         description="K"),
        "eps_low": widgets.FloatSlider(value=base_config.eps_low, min=0.05, max=0.5, step=0.05, description="epsilon"),
        "lr": widgets.FloatLogSlider(value=base_config.lr, base=10, min=-4, max=-1.5, step=0.25,
                                     description="lr", readout_format=".1e"),
        "beta": widgets.FloatSlider(value=base_config.beta, min=0.0, max=0.5, step=0.05, description="beta"),
        "seed": widgets.IntSlider(value=0, min=0, max=9, description="seed"),
    }
    for slider in sliders.values():      # nothing recomputes on a move: training starts on Train
        slider.continuous_update = False
    button = widgets.Button(description="Train", button_style="primary")
    out = widgets.Output()

    def train(_):
        values = {k: w.value for k, w in sliders.items()}
        config = GRPOConfig(**{**asdict(base_config), **values, "steps": steps})
        with out:
            out.clear_output(wait=True)
            trainer = GRPOTrainer(policy, task, config).train(progress=True)
            fig = plt.figure(figsize=(6, 3.4))
            label = f"G={values['group_size']}, K={values['inner_steps']}, eps={values['eps_low']:.2f}, " \
                    f"lr={values['lr']:.1e}, " \
                    f"beta={values['beta']:.2f}, seed={values['seed']}"
            draw_run_over_baseline(fig, trainer.evals, baseline, label)
            plt.show()

    button.on_click(train)
    return widgets.VBox([widgets.HBox(list(sliders.values())[:3]),
                         widgets.HBox(list(sliders.values())[3:] + [button]), out])


#: The chapter's one chart (``grid_chart``) draws the runs its notebook trains: no oracle recomputes them
#: without the trainer, so it declares none for tests/test_charts.py.
CHARTS = ()
