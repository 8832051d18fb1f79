"""Chapter 15's figures and the benchmark's, on a CUDA GPU, in one prepared run (under 5 minutes).

    python benchmarks/gpu_check.py

Prints, on the first CUDA device: the chapter's 300-step GRPO run from the shipped warm start (its
held-out accuracy and training seconds), then ``benchmarks/grpo_vs_trl.py --device cuda --parts speed
profile budget`` with two seeds and a 30 s budget, whose last line is the benchmark's JSON. Refuses to run without
CUDA: CPU figures come from the benchmark itself. Not run yet: no GPU was lent to the sessions that
wrote it.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

import torch

from rl4llm.llm.tasks import AdditionTask
from rl4llm.llm.trainer import GRPOConfig, GRPOTrainer
from rl4llm.llm.warmstart import warm_start


def main() -> None:
    if not torch.cuda.is_available():
        sys.exit("gpu_check.py needs a CUDA device; on a CPU run benchmarks/grpo_vs_trl.py")
    print(f"device: {torch.cuda.get_device_name(0)}, torch {torch.__version__}", flush=True)
    warm, task = warm_start(), AdditionTask()
    config = GRPOConfig(seed=0, steps=300, eval_every=25, anneal_lr=True, drop_zero_variance=True, device="cuda")
    start = time.perf_counter()
    trainer = GRPOTrainer(warm.model, task, config).train(progress=False)
    print(f"chapter 15's run on CUDA: held-out accuracy {trainer.evals['accuracy'][0]:.4f} -> "
          f"{trainer.evals['accuracy'][-1]:.4f} after 300 steps; training {trainer.train_seconds:.1f} s, "
          f"wall {time.perf_counter() - start:.1f} s", flush=True)
    sys.path.insert(0, str(Path(__file__).parent))
    import grpo_vs_trl
    sys.argv = ["grpo_vs_trl.py", "--device", "cuda", "--parts", "speed", "profile", "budget", "--seeds", "0", "1",
                "--budget", "30"]
    grpo_vs_trl.main()


if __name__ == "__main__":
    main()
