"""How far one trainer step is from this CPU's limits (issue 36): the arithmetic floor and the dispatch floor.

    python benchmarks/step_floor.py [--steps 20] [--record benchmarks/results/step_floor_2core_cpu.json]
                                    [--trainer fast|plain]   # FastGRPOTrainer (default) or chapter 15's

At ``grpo_vs_trl.py``'s speed recipe (32 prompts x G = 8, dapo, one CPU thread), after 5 warm-up steps:

step       the trainer's own step, wall time a step (median of ``--steps``), and its sampled tokens.
flops      the FLOPs of one step as torch's ``FlopCounterMode`` counts them on a real step (matrix
           products and attention, forward and backward), by operator.
kernels    every matrix product the step runs (``aten::mm``, ``addmm``, ``bmm``: the profiler's input
           shapes and calls a step), each timed alone at its own shape, one thread, in a tight loop:
           the time the step's arithmetic needs at the shapes it has (the arithmetic floor at these
           shapes), and the same FLOPs at the peak of a large square product (the arithmetic floor of
           this CPU, which small shapes cannot reach).
dispatch   the step's operator calls a step (the profiler's count of top-level aten calls) times the cost
           of one call with no work and no Python in between (``--dispatch-calls`` additions of
           one-element tensors in one TorchScript loop): the framework-overhead floor.

The record says how far the measured step is from each floor and what is left once both are paid:
Python, the autograd graph's bookkeeping, and the kernels' own overhead beyond a tight loop's.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile
from torch.utils.flop_counter import FlopCounterMode

sys.path.insert(0, str(Path(__file__).parent))
import grpo_vs_trl as bench  # noqa: E402
from rl4llm.llm.tasks import AdditionTask  # noqa: E402
from rl4llm.llm.trainer import GRPOTrainer, torch_threads  # noqa: E402
from rl4llm.llm.warmstart import warm_start  # noqa: E402

RECORD = Path(__file__).parent / "results" / "step_floor_2core_cpu.json"
MATMULS = ("aten::mm", "aten::addmm", "aten::bmm")
PEAK_SIZE = 512


def trainer(kind: str = "fast") -> GRPOTrainer:
    """``grpo_vs_trl.TRAINERS[kind]`` at the speed recipe (the records before 2026-12-04: ``"plain"``)."""
    return bench.TRAINERS[kind](warm_start().model, AdditionTask(seed=0), bench.recipe(**bench.SPEED_RECIPE, seed=0))


def seconds_per_call(fn, min_seconds: float = 0.2) -> float:
    """The median over 5 rounds of the seconds a call of ``fn`` takes, each round at least ``min_seconds``."""
    fn()
    calls = 1
    while True:
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        elapsed = time.perf_counter() - start
        if elapsed >= min_seconds / 5:
            break
        calls *= 2
    rounds = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        rounds.append((time.perf_counter() - start) / calls)
    return statistics.median(rounds)


def step_times(t: GRPOTrainer, steps: int) -> dict:
    walls, tokens = [], []
    for _ in range(steps):
        start = time.perf_counter()
        row = t.step()
        walls.append(time.perf_counter() - start)
        tokens.append(row["tokens"])
    return {"median_ms": 1000 * statistics.median(walls), "min_ms": 1000 * min(walls),
            "max_ms": 1000 * max(walls), "tokens_per_step": statistics.median(tokens)}


def step_flops(t: GRPOTrainer, steps: int) -> dict:
    counter = FlopCounterMode(display=False)
    with counter:
        for _ in range(steps):
            t.step()
    by_op = {str(op): n / steps for op, n in counter.get_flop_counts()["Global"].items()}
    return {"total": counter.get_total_flops() / steps, "by_operator": by_op}


def step_kernels(t: GRPOTrainer, steps: int) -> tuple[dict, int]:
    """(each matrix product's shapes -> calls a step, top-level operator calls a step)."""
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        for _ in range(steps):
            t.step()
    shapes = defaultdict(float)
    for e in prof.key_averages(group_by_input_shape=True):
        if e.key in MATMULS:
            shapes[(e.key, json.dumps(e.input_shapes))] += e.count / steps
    top_level = sum(1 for e in prof.events() if e.key.startswith("aten::") and e.cpu_parent is None) / steps
    return dict(shapes), top_level


def matmul_call(op: str, input_shapes: list):
    """A callable running ``op`` once on random tensors of ``input_shapes``, and its FLOPs."""
    tensors = [torch.randn(s) for s in input_shapes if s]
    if op == "aten::addmm":
        bias, a, b = tensors[:3]
        flops = 2 * a.shape[0] * a.shape[1] * b.shape[1]
        return (lambda: torch.addmm(bias, a, b)), flops
    a, b = tensors[:2]
    if op == "aten::bmm":
        return (lambda: torch.bmm(a, b)), 2 * a.shape[0] * a.shape[1] * a.shape[2] * b.shape[2]
    return (lambda: torch.mm(a, b)), 2 * a.shape[0] * a.shape[1] * b.shape[1]


def dispatch_seconds(calls: int) -> float:
    """Seconds per operator call with no Python between calls: ``calls`` one-element additions in one
    TorchScript loop (the dispatcher and a trivial kernel, nothing else)."""
    @torch.jit.script
    def adds(x: torch.Tensor, n: int) -> torch.Tensor:
        y = x
        for _ in range(n):
            y = torch.add(y, x)
        return y
    x = torch.zeros(1)
    return seconds_per_call(lambda: adds(x, calls)) / calls


def machine() -> dict:
    return {"cpu_cores": os.cpu_count(), "torch_threads": 1, "platform": platform.platform(),
            "cpu_capability": torch.backends.cpu.get_cpu_capability(), "python": platform.python_version(),
            "torch": torch.__version__, "load_average": [round(v, 2) for v in os.getloadavg()]}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--dispatch-calls", type=int, default=10_000)
    parser.add_argument("--record", type=Path, default=RECORD)
    parser.add_argument("--trainer", choices=list(bench.TRAINERS), default="fast")
    args = parser.parse_args()
    with torch_threads(1):
        t = trainer(args.trainer)
        for _ in range(5):
            t.step()
        step = step_times(t, args.steps)
        flops = step_flops(t, 3)
        shapes, top_level = step_kernels(t, 3)
        a, b = torch.randn(PEAK_SIZE, PEAK_SIZE), torch.randn(PEAK_SIZE, PEAK_SIZE)
        peak = 2 * PEAK_SIZE ** 3 / seconds_per_call(lambda: a @ b)
        kernels, matmul_seconds, matmul_flops = [], 0.0, 0.0
        for (op, shape_json), calls in sorted(shapes.items(), key=lambda kv: -kv[1]):
            fn, f = matmul_call(op, json.loads(shape_json))
            s = seconds_per_call(fn, 0.05)
            kernels.append({"op": op, "shapes": json.loads(shape_json), "calls_per_step": calls,
                            "us_per_call": 1e6 * s, "gflops": f / s / 1e9})
            matmul_seconds += calls * s
            matmul_flops += calls * f
        per_call = dispatch_seconds(args.dispatch_calls)
    attention_flops = flops["total"] - matmul_flops
    at_shapes = matmul_seconds + attention_flops / (matmul_flops / matmul_seconds)
    floors = {"arithmetic_at_peak_ms": 1000 * flops["total"] / peak,
              "arithmetic_at_the_step_shapes_ms": 1000 * at_shapes,
              "dispatch_ms": 1000 * top_level * per_call}
    floors["both_ms"] = floors["arithmetic_at_the_step_shapes_ms"] + floors["dispatch_ms"]
    record = {"machine": machine(), "recipe": bench.SPEED_RECIPE, "trainer": args.trainer, "step": step,
              "flops_per_step": flops, "peak_gflops_single_thread": peak / 1e9,
              "matmul": {"flops_per_step": matmul_flops, "ms_per_step_alone": 1000 * matmul_seconds,
                         "gflops_at_the_step_shapes": matmul_flops / matmul_seconds / 1e9, "kernels": kernels},
              "dispatch": {"top_level_ops_per_step": top_level, "us_per_op": 1e6 * per_call},
              "floors": floors,
              "step_over_floor": {k: step["median_ms"] / v for k, v in floors.items()}}
    args.record.parent.mkdir(parents=True, exist_ok=True)
    args.record.write_text(json.dumps(record, indent=1))
    print(f"machine: {record['machine']}")
    print(f"step: {step['median_ms']:.1f} ms (min {step['min_ms']:.1f}, max {step['max_ms']:.1f}), "
          f"{step['tokens_per_step']:.0f} sampled tokens")
    print(f"FLOPs a step: {flops['total'] / 1e6:.1f} M ({', '.join(f'{k} {v / 1e6:.1f} M' for k, v in flops['by_operator'].items())})")
    print(f"single-thread matmul: {peak / 1e9:.1f} GFLOP/s at {PEAK_SIZE}^3; "
          f"{record['matmul']['gflops_at_the_step_shapes']:.1f} GFLOP/s at the step's {len(kernels)} shapes "
          f"({sum(k['calls_per_step'] for k in kernels):.0f} products a step, {1000 * matmul_seconds:.2f} ms alone)")
    print(f"dispatch: {top_level:.0f} top-level operator calls a step x {1e6 * per_call:.2f} us = "
          f"{floors['dispatch_ms']:.2f} ms")
    for name, value in floors.items():
        print(f"floor {name}: {value:.2f} ms; the step is {step['median_ms'] / value:.1f}x it")
    print(f"record: {args.record}")


if __name__ == "__main__":
    main()
