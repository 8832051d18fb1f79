"""The live charts of chapter 19 (the arithmetic of a real run): what fits on a GPU, the batch's memory,
a step's seconds and how the three schedules overlap them. Every number drawn is ``rl4llm.math.memory`` or
``rl4llm.math.step_time`` at a point of the charts' grid; the settings they share are defined once here."""
from __future__ import annotations

import math

import numpy as np

from ..math.memory import QWEN25_1_5B, activation_bytes_per_token, memory_budget, shape_options
from ..math.step_time import (H100_SXM, NVLINK_ONE_WAY, SCHEDULES, generation_seconds, schedule, training_seconds,
                              weight_sync_seconds)
from ..studies.run_schedules import KV_AT_7B, RUN, kv_bytes, schedule_walls, step_seconds
from .charts import Declared, Slider, line_chart
from .style import PALETTE


#: Chapter 19: when and where ``benchmarks/recipe_gpu.py`` measured the recipes' training side, and the versions it
#: ran (the fields of ``benchmarks/results/recipe_gpu_h200.json`` besides its runs, which
#: ``rl4llm.trl.recipes.H200_TRAINING`` holds), kept here so that the chapter runs without the benchmarks folder.
H200_RECORD = {"date": "2026-12-04", "device": "NVIDIA H200", "torch": "2.11.0+cu130", "transformers": "5.24.0",
               "trl": "1.16.0"}

#: One colour per run of :data:`rl4llm.llm.run_reading.RUNS`.
RUN_COLORS = {"healthy": PALETTE["blue"], "learning rate too high": PALETTE["vermillion"],
              "every group flat": PALETTE["black"]}


def draw_metrics(fig, runs: dict, panels, title: str, *, log_from: dict | None = None,
                 lines: dict | None = None) -> None:
    """One panel per ``(metric, axis label)`` of ``panels``, side by side, against the GRPO step: every
    seed of every run of ``runs`` (``{name: [trainer, ...]}``), one colour per run, a legend below.
    ``log_from`` (``{metric: lowest value}``) draws those panels on a log axis from that value up (values below
    it, or not positive, fall under the axis); ``lines`` (``{metric: (value, label)}``) draws a dotted
    horizontal line on that panel, named in the legend (chapter 19: the healthy seeds' highest KL)."""
    log_from, lines = log_from or {}, lines or {}
    axes = fig.subplots(1, len(panels), sharex=True)
    for ax, (key, label) in zip(axes, panels):
        for name, trainers in runs.items():
            for i, trainer in enumerate(trainers):
                ax.plot(trainer.metrics["step"], trainer.metrics[key], color=RUN_COLORS[name], lw=1.2, alpha=0.8,
                        ls="--" if name == "every group flat" else "-", label=name if i == 0 else None)
        if key in log_from:
            ax.set_yscale("log")
            ax.set_ylim(bottom=log_from[key])
        if key in lines:
            value, line_label = lines[key]
            ax.axhline(value, color=PALETTE["grey"], ls=":", lw=1.5, label=line_label)
        ax.set(xlabel="GRPO step", ylabel=label)
    named = {}                                       # each name once: the runs', then any line's
    for ax in axes:
        for handle, name in zip(*ax.get_legend_handles_labels()):
            named.setdefault(name, handle)
    axes[0].legend(named.values(), named.keys(), loc="upper center", bbox_to_anchor=(len(panels) / 2 + 0.2, -0.25),
                   ncol=len(named), fontsize=9)
    fig.suptitle(title)
    fig.subplots_adjust(wspace=0.4, bottom=0.3)


GB = 1e9

#: The parts that depend on the model only (the model state), and those that depend on the batch.
STATIC = ("weights", "gradients", "master_weights", "optimizer_state", "reference")

GPUS = Slider("n_gpus", "GPUs", 1, 16, 1, 8, fmt="d")

STAGE = Slider("stage", "ZeRO stage", 0, 3, 1, 3, fmt="d")   # opens sharded: at stage 0 the GPUs change nothing

GROUP = Slider("G", "G", 2, 32, 1, 8, fmt="d")

COMPLETION = Slider("completion", "completion tokens", 512, 16384, 512, 4096, fmt="d")

#: Up to 36B: above it fewer and fewer sequences fit beside the bf16 weights on an 80 GB sampler (one at 39B, none
#: at 40B, where the weights alone fill it).
MODEL_SIZE = Slider("billions", "billions of parameters", 1, 36, 1, 7, fmt="d")

GROUPS = np.arange(2, 66, 2)

ROLLOUT_GPUS = Slider("rollout_gpus", "sampler GPUs of 16", 1, 15, 1, 8, fmt="d")

STAGE_NAMES = ("none", "zero1", "zero2", "zero3")


def tiny_gpt_params() -> int:
    """Chapter 15's tiny GPT's parameter count, from its config."""
    from ..llm.model import GPT, GPTConfig
    return sum(p.numel() for p in GPT(GPTConfig()).parameters())


def model_sizes(low: float, high: float, points: int = 25, *, extra=()) -> np.ndarray:
    """``points`` sizes spaced evenly in log between ``low`` and ``high``, with ``extra`` sizes added."""
    return np.unique(np.concatenate([np.logspace(np.log10(low), np.log10(high), points), np.asarray(extra, float)]))


def model_state_gb(n_params, n_gpus: int, stage: int, reference: bool = True) -> float:
    """GB of one GPU's share of the model state under ZeRO ``stage`` (the static parts of ``memory_budget``)."""
    budget = memory_budget(float(n_params), n_gpus=n_gpus, sharding=STAGE_NAMES[stage], reference=reference)
    return sum(budget[p] for p in STATIC) / GB


def fits_chart(sizes, tiny: int):
    """GB per GPU of the model state against the model's size (``sizes``, parameters; drawn in billions),
    for each number of GPUs and ZeRO stage."""
    def compute(n_gpus, stage):
        return [[model_state_gb(n, n_gpus, stage) for n in sizes],
                [model_state_gb(n, n_gpus, stage, reference=False) for n in sizes],
                [H100_SXM["memory_bytes"] / GB] * len(sizes)]

    def notes(n_gpus, stage):
        return {"7B": model_state_gb(7e9, n_gpus, stage), "70B": model_state_gb(70e9, n_gpus, stage),
                "tiny GPT (MB)": 1e3 * model_state_gb(tiny, n_gpus, stage)}
    return line_chart(compute, [GPUS, STAGE], x=np.asarray(sizes) / 1e9,
                      series=["with a bf16 reference", "no reference", "one H100 (80 GB)"],
                      xlabel="billions of parameters", ylabel="GB per GPU (model state)", log_x=True, log_y=True,
                      headline="Past a few billion parameters the state must be sharded", notes=notes,
                      styles=["solid", "dashed", "dotted"],
                      colors=[PALETTE["blue"], PALETTE["orange"], PALETTE["black"]], fmt=".2f")


#: Chapter 19's batch: one prompt's group of G completions at once on a GPU, Qwen2.5-1.5B's shape and its
#: activation bytes per layer and token (SwiGLU, grouped-query, flash attention).
BATCH = {"prompts": 1, "prompt_length": 512, "logits_chunk": 1024, **shape_options(QWEN25_1_5B),
         "activation_bytes": activation_bytes_per_token(QWEN25_1_5B)}


def batch_gb(G: int, completion: int) -> list[float]:
    """GB of the batch's parts on one GPU: activations without and with checkpointing, the fp32 logits
    all at once and 1024 tokens at a time, and the KV cache of the group."""
    base = {k: v for k, v in BATCH.items() if k != "logits_chunk"}

    def part(name, **options):
        return memory_budget(QWEN25_1_5B.n_params, group_size=G, completion_length=completion, **base,
                             **options)[name] / GB
    return [part("activations"), part("activations", activation_checkpointing=True), part("logits"),
            part("logits", logits_chunk=BATCH["logits_chunk"]), part("kv_cache")]


BATCH_SERIES = ["activations", "checkpointed", "logits", "chunked", "KV cache"]


#: The decimals the batch, time and schedule charts store: their tooltips show one, their smallest value is 0.04
#: (the 1B model's weight sync, in seconds), and the page must stay under its weight budget (tests/test_browser.py).
CHART_DECIMALS = 3


def batch_charts():
    """The batch's parts against the completion length, a slider for G and a marker on the length: one
    chart for the activations (plain and checkpointed), one for the logits (fp32, all at once and 1024
    tokens at a time) and the KV cache."""
    lengths = COMPLETION.values

    def compute(G):
        return np.array([batch_gb(G, int(T)) for T in lengths]).T
    common = {"x": lengths, "marker": COMPLETION, "xlabel": "completion tokens", "ylabel": "GB on one GPU",
              "log_y": True, "fmt": ".1f", "decimals": CHART_DECIMALS}
    activations = line_chart(lambda G: compute(G)[:2], [GROUP], series=BATCH_SERIES[:2],
                             headline="Activations of one group of Qwen2.5-1.5B", styles=["solid", "dashed"],
                             colors=[PALETTE["blue"], PALETTE["blue"]], **common)
    logits = line_chart(lambda G: compute(G)[2:], [GROUP], series=BATCH_SERIES[2:],
                        headline="Its fp32 logits (chunked: 1024 tokens at a time) and KV cache",
                        styles=["solid", "dashed", "dotted"],
                        colors=[PALETTE["vermillion"], PALETTE["vermillion"], PALETTE["black"]], **common)
    return activations, logits


def time_chart(completion: int = 4096):
    """A step's rollout, training and weight-sync seconds against G, with 8 GPUs each, a slider for the
    model's size."""
    half = RUN["gpus"] // 2

    def compute(billions):
        rows = [step_seconds(billions * 1e9, int(G), completion, half, half) for G in GROUPS]
        return [[r[k] for r in rows] for k in ("rollout", "train", "sync")]
    return line_chart(compute, [MODEL_SIZE], x=GROUPS,
                      series=["rollout (8 GPUs)", "training (8 GPUs)", "weight sync (50 GB/s)"],
                      xlabel="G (completions per prompt)", ylabel="seconds per step", log_y=True,
                      headline="Training grows with G faster than sampling",
                      colors=[PALETTE["vermillion"], PALETTE["blue"], PALETTE["orange"]], fmt=".1f",
                      decimals=CHART_DECIMALS)


def schedule_chart(n_params: float = 7e9):
    """Wall seconds of a step against the number of sampling GPUs of 16 under the three schedules, a
    slider for G and a marker on the split."""
    splits = ROLLOUT_GPUS.values

    def compute(G):
        walls = [schedule_walls(n_params, int(r), G=G) for r in splits]
        return [[w[m]["wall"] for w in walls] for m in SCHEDULES]
    return line_chart(compute, [GROUP], x=splits, marker=ROLLOUT_GPUS,
                      series=["sync", "1-step-off", "async"],
                      xlabel="GPUs of 16 that sample (the rest train)", ylabel="wall seconds per step",
                      headline="Overlap wins when the split matches the work",
                      styles=["solid", "dashed", "dotted"],
                      colors=[PALETTE["blue"], PALETTE["orange"], PALETTE["vermillion"]], fmt=".1f",
                      decimals=CHART_DECIMALS)


# Every chart of chapter 19, and its numbers from the library alone (tests/test_charts.py): the model state's
# parts; the sizes of the fits chart, 25 from chapter 15's GPT to 1e11, 7B and 70B.
_STATE = ("weights", "gradients", "master_weights", "optimizer_state", "reference")


def _oracle_sizes():
    return np.unique(np.r_[np.logspace(np.log10(tiny_gpt_params()), 11, 25), 7e9, 70e9])


def _oracle_state_gb(n, n_gpus, stage, reference=True):
    b = memory_budget(float(n), n_gpus=n_gpus, sharding=("none", "zero1", "zero2", "zero3")[stage], reference=reference)
    return sum(b[p] for p in _STATE) / 1e9


def _oracle_fits(n_gpus, stage):
    sizes = _oracle_sizes()
    return sizes / 1e9, [[_oracle_state_gb(n, n_gpus, stage) for n in sizes],
                         [_oracle_state_gb(n, n_gpus, stage, reference=False) for n in sizes],
                         [H100_SXM["memory_bytes"] / 1e9] * len(sizes)]


def _oracle_batch(G, parts):
    """Qwen2.5-1.5B's group of G: activations (plain, checkpointed), fp32 logits (whole, 1024 at a time), KV."""
    def gb(T, part, **options):
        return memory_budget(QWEN25_1_5B.n_params, prompts=1, group_size=G, prompt_length=512,
                             completion_length=int(T), **shape_options(QWEN25_1_5B),
                             activation_bytes=91192, **options)[part] / 1e9          # 59.37 h, derived in test_memory
    T = COMPLETION.values
    every = [[gb(t, "activations") for t in T], [gb(t, "activations", activation_checkpointing=True) for t in T],
             [gb(t, "logits") for t in T], [gb(t, "logits", logits_chunk=1024) for t in T],
             [gb(t, "kv_cache") for t in T]]
    return T, every[parts]


def _oracle_step(n, G, samplers, trainers, completion=4096):
    """Rollout, training and sync seconds of 64 prompts of 512 tokens, G each, 40% of an H100's bf16 peak;
    the busiest sampler decodes its share at 60% of the bandwidth, reading a KV cache of 57,344 bytes a token
    at 7B (Qwen2.5-7B's shape) scaled with n, in waves of what 80 GB holds beside the weights."""
    F, sequences = 0.4 * H100_SXM["bf16_flops"], 64 * G
    return (generation_seconds(n, math.ceil(sequences / samplers), 512, completion, flops_per_second=F,
                               bandwidth=0.6 * H100_SXM["memory_bandwidth"], kv_bytes_per_token=round(57344 * n / 7e9),
                               memory_bytes=80e9),
            training_seconds(n, sequences * (512 + completion), F, gpus=trainers), weight_sync_seconds(n, 50e9))


def _oracle_walls(G):
    """Wall seconds of 7B's step: all 16 GPUs in turn (the weights over NVLink), then each split apart."""
    rollout, train, _ = _oracle_step(7e9, G, 16, 16)
    together = schedule(rollout, train, weight_sync_seconds(7e9, NVLINK_ONE_WAY), "synchronous")
    splits = ROLLOUT_GPUS.values
    apart = [[schedule(*_oracle_step(7e9, G, int(r), 16 - int(r)), m)["wall"] for r in splits] for m in SCHEDULES[1:]]
    return splits, [[together["wall"]] * len(splits)] + apart


CHARTS = (
    Declared("fits", lambda: fits_chart(_oracle_sizes(), tiny_gpt_params()), _oracle_fits, [GPUS, STAGE]),
    Declared("activations", lambda: batch_charts()[0], lambda G: _oracle_batch(G, slice(0, 2)), [GROUP],
             marker=COMPLETION, decimals=CHART_DECIMALS),
    Declared("logits", lambda: batch_charts()[1], lambda G: _oracle_batch(G, slice(2, 5)), [GROUP], marker=COMPLETION,
             decimals=CHART_DECIMALS),
    Declared("time", time_chart,
             lambda billions: (GROUPS, np.array([_oracle_step(billions * 1e9, int(G), 8, 8) for G in GROUPS]).T),
             [MODEL_SIZE], decimals=CHART_DECIMALS),
    Declared("schedule", schedule_chart, _oracle_walls, [GROUP], marker=ROLLOUT_GPUS, decimals=CHART_DECIMALS),
)
