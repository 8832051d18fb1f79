"""What each speed option buys the trainer's step, measured one by one at the benchmark's speed recipe.

    python benchmarks/step_options.py [--steps 30] [--rounds 3] [--options baseline ...] [--record PATH] [--device cuda]

``step_floor.py`` says how far the step (about 35 ms at 32 prompts x G = 8, dapo, one thread) is from
what its matrix products and its operator dispatch cost (about 10 ms): the rest is elementwise kernels,
attention at tiny sizes, autograd's bookkeeping and Python. This script measures the candidates the
issue lists, each in a fresh process, the options taken in turn within each round so that a shared
machine's load falls on all of them alike:

- ``baseline``: the trainer as chapter 15 shows it (at K = 1 the loss differentiates the sampling
  pass itself, whose caches grow by ``cat``);
- ``batched-loss``: sampling without gradients (preallocated caches written in place, no ``cat``) and
  then one batched forward over the sampled tokens for the loss (prompts once, their cache copied to
  the G rows): the old log-probs come from the sampler, as at K > 1;
- ``compile``, ``compile-static``: ``torch.compile`` (inductor, on CPU) of the policy's forward, with
  dynamic shapes and with ``dynamic=False``; the first steps' compilation time is reported apart;
- ``two-threads``: the same step on two intra-op threads (a 2-core machine's second core);
- ``64-prompts``: twice the prompts a step (fewer, larger kernels): tokens a second, not ms a step,
  is the comparable figure;
- ``flat-skip``: :class:`rl4llm.llm.fast_trainer.FastGRPOTrainer` with ``share_prefixes=False``: sampling without
  gradients, then the loss's forward and backward over the informative groups only;
- ``shared-prefixes``: the same trainer as the benchmarks run it: also identical prefixes computed once, in the
  sampler and in the loss's pass (:mod:`rl4llm.llm.prefix_sharing`).

Each process runs ``--warmup`` steps (compilation included), then ``--steps`` timed steps, and reports
the median step, sampled tokens a second and the first steps' seconds. The LAST line printed is the
summary as one JSON object; ``--record`` keeps every round.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

OPTIONS = ("baseline", "batched-loss", "compile", "compile-static", "two-threads", "64-prompts", "flat-skip",
           "shared-prefixes")
RECORD = Path(__file__).parent / "results" / "step_options_2core_cpu.json"


def measure(option: str, steps: int, warmup: int, device: str = "cpu") -> dict:
    """One option in this process: warm-up seconds, then the median of ``steps`` timed steps."""
    import torch

    sys.path.insert(0, str(Path(__file__).parent))
    import grpo_vs_trl as bench
    from rl4llm.llm.fast_trainer import FastGRPOTrainer
    from rl4llm.llm.tasks import AdditionTask
    from rl4llm.llm.trainer import GRPOTrainer, torch_threads
    from rl4llm.llm.warmstart import warm_start

    bench.DEVICE = device
    cell = dict(bench.SPEED_RECIPE) | ({"prompts_per_step": 64} if option == "64-prompts" else {})
    config = bench.recipe(**cell, seed=0)
    if option == "batched-loss":
        GRPOTrainer.reuses_sampling_pass = property(lambda self: False)
    if option in ("flat-skip", "shared-prefixes"):
        trainer = FastGRPOTrainer(warm_start().model, AdditionTask(seed=0), config,
                                  share_prefixes=option == "shared-prefixes")
    else:
        trainer = GRPOTrainer(warm_start().model, AdditionTask(seed=0), config)
    if option.startswith("compile"):
        trainer.policy.forward = torch.compile(trainer.policy.forward, dynamic=None if option == "compile" else False)
    threads = 2 if option == "two-threads" else 1
    with torch_threads(threads):
        start = time.perf_counter()
        for _ in range(warmup):
            trainer.step()
        warmup_seconds = time.perf_counter() - start
        times, tokens = [], []
        for _ in range(steps):
            start = time.perf_counter()
            row = trainer.step()
            if device == "cuda":
                torch.cuda.synchronize()
            times.append(time.perf_counter() - start)
            tokens.append(row["tokens"])
    return {"option": option, "device": device, "threads": threads, "prompts_per_step": cell["prompts_per_step"],
            "warmup_steps": warmup, "warmup_seconds": warmup_seconds, "median_ms": 1000 * statistics.median(times),
            "min_ms": 1000 * min(times), "tokens_per_second": sum(tokens) / sum(times),
            "load": [round(x, 2) for x in os.getloadavg()]}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--options", nargs="+", default=list(OPTIONS), choices=OPTIONS)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--record", type=Path, default=RECORD)
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--one", choices=OPTIONS, help=argparse.SUPPRESS)     # a child process's option
    args = parser.parse_args()
    if args.one:
        print(json.dumps(measure(args.one, args.steps, args.warmup, args.device)))
        return
    rows = []
    for r in range(args.rounds):
        for option in args.options:
            out = subprocess.run([sys.executable, __file__, "--one", option, "--steps", str(args.steps),
                                  "--warmup", str(args.warmup), "--device", args.device], capture_output=True, text=True, check=True)
            row = json.loads(out.stdout.strip().splitlines()[-1]) | {"round": r}
            rows.append(row)
            print(f"  round {r} {option:<15} {row['median_ms']:6.1f} ms a step, {row['tokens_per_second']:8.0f} "
                  f"tokens/s, warm-up {row['warmup_seconds']:.1f} s, load {row['load'][0]}", flush=True)
    base = statistics.median(r["tokens_per_second"] for r in rows if r["option"] == "baseline") \
        if "baseline" in args.options else None
    summary = {}
    for option in args.options:
        mine = [r for r in rows if r["option"] == option]
        tps = statistics.median(r["tokens_per_second"] for r in mine)
        summary[option] = {"median_ms": statistics.median(r["median_ms"] for r in mine), "tokens_per_second": tps,
                           "speedup_in_tokens_per_second": tps / base if base else None,
                           "warmup_seconds": statistics.median(r["warmup_seconds"] for r in mine)}
    import torch
    record = {"machine": {"cpu_cores": os.cpu_count(), "cpu_capability": torch.backends.cpu.get_cpu_capability(),
                          "torch": torch.__version__, "device": args.device,
                          "gpu": torch.cuda.get_device_name(0) if args.device == "cuda" else None}, "steps": args.steps, "warmup": args.warmup,
              "rows": rows, "summary": summary}
    args.record.write_text(json.dumps(record, indent=1) + "\n")
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
