"""Where one outer step of the trainer spends its time, operator by operator (torch's profiler).

    python benchmarks/step_ops.py [--steps 10] [--rows 25] [--trainer fast|plain]

The speed recipe of ``grpo_vs_trl.py`` (32 prompts x G = 8, dapo, one CPU thread), 5 steps to warm
up, then ``--steps`` steps under ``torch.profiler``: each operator's own CPU time (children
excluded), its share of the total and its calls a step, largest first. The phase-level profile is
``grpo_vs_trl.py --parts profile``; this one says which kernels a faster trainer would have to beat
(``attention_kernels.py`` times the alternatives to the largest).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, str(Path(__file__).parent))
import grpo_vs_trl as bench  # noqa: E402
from rl4llm.llm.tasks import AdditionTask  # noqa: E402
from rl4llm.llm.trainer import torch_threads  # noqa: E402
from rl4llm.llm.warmstart import warm_start  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--rows", type=int, default=25)
    parser.add_argument("--trainer", choices=list(bench.TRAINERS), default="fast",
                        help="FastGRPOTrainer, or chapter 15's plain GRPOTrainer (the records before 2026-12-04)")
    args = parser.parse_args()
    trainer = bench.TRAINERS[args.trainer](warm_start().model, AdditionTask(seed=0),
                                           bench.recipe(**bench.SPEED_RECIPE, seed=0))
    with torch_threads(1):
        for _ in range(5):
            trainer.step()
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            for _ in range(args.steps):
                trainer.step()
    events = sorted(prof.key_averages(), key=lambda e: e.self_cpu_time_total, reverse=True)
    total = sum(e.self_cpu_time_total for e in events)
    print(f"{args.steps} steps of {bench.SPEED_RECIPE}: {total / 1000 / args.steps:.1f} ms a step of operator time "
          f"(the profiler's own overhead included)")
    print(f"{'operator':<64} {'ms a step':>9} {'share':>6} {'calls a step':>12}")
    for e in events[:args.rows]:
        print(f"{e.key[:64]:<64} {e.self_cpu_time_total / 1000 / args.steps:>9.2f} "
              f"{e.self_cpu_time_total / total:>6.1%} {e.count / args.steps:>12.1f}")


if __name__ == "__main__":
    main()
