"""How long one click of chapter 15's GRPO playground trains, on one CPU thread.

    python benchmarks/playground_timing.py [--steps 300]

One click runs ``steps`` GRPO steps of the chapter's settings from the shipped warm start (what
``rl4llm.viz.tiny_transformer.grpo_playground`` does, without the drawing), here at K = 1 and K = 4 inner
steps, and prints the wall time of each (evaluation included, as the reader waits for it) and the
machine's load, since a busy machine makes every figure larger. The chapter aims at about 15 s at
K = 1.
"""
from __future__ import annotations

import argparse
import os
import platform
import time

import torch

from rl4llm.llm.tasks import AdditionTask
from rl4llm.llm.trainer import GRPOConfig, GRPOTrainer
from rl4llm.llm.warmstart import warm_start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    args = parser.parse_args()
    warm, task = warm_start(), AdditionTask()
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, torch {torch.__version__} "
          f"({torch.backends.cpu.get_cpu_capability()}), load average {os.getloadavg()[0]:.2f}")
    for K in (1, 4):
        config = GRPOConfig(seed=0, steps=args.steps, eval_every=10, anneal_lr=True, drop_zero_variance=True,
                            inner_steps=K, num_threads=1, device="cpu")
        start = time.perf_counter()
        trainer = GRPOTrainer(warm.model, task, config).train(progress=False)
        print(f"K = {K}: one click of {args.steps} steps took {time.perf_counter() - start:.1f} s "
              f"(training {trainer.train_seconds:.1f} s), held-out accuracy {trainer.evals['accuracy'][-1]:.3f}")


if __name__ == "__main__":
    main()
