"""Chapter 19's figures: logged metrics of a healthy run and two broken ones, side by side."""
from __future__ import annotations

from .style import PALETTE

#: One colour per run of :data:`rl4llm.llm.run_reading.RUNS`.
RUN_COLORS = {"healthy": PALETTE["blue"], "learning rate too high": PALETTE["vermillion"],
              "every group flat": PALETTE["black"]}


def draw_metrics(fig, runs: dict, panels, title: str) -> None:
    """One panel per ``(metric, axis label)`` of ``panels``, side by side, against the GRPO step: every
    seed of every run of ``runs`` (``{name: [trainer, ...]}``), one colour per run, a legend below."""
    axes = fig.subplots(1, len(panels), sharex=True)
    for ax, (key, label) in zip(axes, panels):
        for name, trainers in runs.items():
            for i, trainer in enumerate(trainers):
                ax.plot(trainer.metrics["step"], trainer.metrics[key], color=RUN_COLORS[name], lw=1.2, alpha=0.8,
                        ls="--" if name == "every group flat" else "-", label=name if i == 0 else None)
        ax.set(xlabel="GRPO step", ylabel=label)
    axes[0].legend(loc="upper center", bbox_to_anchor=(len(panels) / 2 + 0.2, -0.25), ncol=len(runs), fontsize=9)
    fig.suptitle(title)
    fig.subplots_adjust(wspace=0.4, bottom=0.3)
