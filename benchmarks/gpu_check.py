"""The GPU checks of issues 33 and 36, in one prepared run on a CUDA GPU (about 8 minutes on an H200).

    python benchmarks/gpu_check.py --out DIR

Each part runs in its own process under its own time limit, so that one part's failure keeps the others' figures:

1. ``recipe_gpu.py``: chapter 19's five one-GPU recipes, their training side through TRL's own step (peak bytes and
   seconds against the recipes' counts), into ``DIR/recipe_gpu.json``;
2. chapter 15's 300-step GRPO run from the shipped warm start on CUDA: held-out accuracy and training seconds;
3. ``grpo_vs_trl.py --device cuda --parts best speed profile budget`` into ``DIR/grpo_vs_trl_gpu.json``. The GPU
   does not sweep: the record starts with the CPU record's sweep, so ``best`` re-runs, on the GPU, the recipes the
   CPU sweep chose for each side (time to 0.64), and ``budget`` the book's (30 s of training).

Refuses to run without CUDA: CPU figures come from the benchmarks themselves.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent


def part(title: str, argv: list[str], seconds: int) -> None:
    """One part in its own Python process, stopped after ``seconds``."""
    print(f"=== {title} ===", flush=True)
    try:
        subprocess.run([sys.executable, *argv], timeout=seconds, check=False)
    except subprocess.TimeoutExpired:
        print(f"=== {title}: stopped after {seconds} s ===", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    import torch
    if not torch.cuda.is_available():
        sys.exit("gpu_check.py needs a CUDA device; on a CPU run the benchmarks themselves")
    print(f"device: {torch.cuda.get_device_name(0)}, torch {torch.__version__}", flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    part("chapter 19's one-GPU recipes, training side", [str(HERE / "recipe_gpu.py"), "--record",
                                                         str(args.out / "recipe_gpu.json")], 240)
    part("chapter 15's run on CUDA", ["-c", (
        "import time; from rl4llm.llm.tasks import AdditionTask; from rl4llm.llm.trainer import GRPOConfig, "
        "GRPOTrainer; from rl4llm.llm.warmstart import warm_start; warm = warm_start(); "
        "config = GRPOConfig(seed=0, steps=300, eval_every=25, anneal_lr=True, drop_zero_variance=True, "
        "device='cuda'); t = time.perf_counter(); trainer = GRPOTrainer(warm.model, AdditionTask(), config)"
        ".train(progress=False); print(f\"chapter 15's run on CUDA: held-out accuracy "
        "{trainer.evals['accuracy'][0]:.4f} -> {trainer.evals['accuracy'][-1]:.4f} after 300 steps; training "
        "{trainer.train_seconds:.1f} s, wall {time.perf_counter() - t:.1f} s\")")], 45)
    record = args.out / "grpo_vs_trl_gpu.json"
    cpu = json.loads((HERE / "results" / "grpo_vs_trl_2core_cpu.json").read_text())
    record.write_text(json.dumps({"sweep": cpu["sweep"], "sweep_measured_on": "the CPU record "
                                  "(grpo_vs_trl_2core_cpu.json): the GPU did not sweep"}) + "\n")
    part("rl4llm against TRL on CUDA", [str(HERE / "grpo_vs_trl.py"), "--device", "cuda", "--parts", "best",
                                        "speed", "profile", "budget", "--seeds", "0", "1", "2", "--pairs", "2",
                                        "--budget", "30", "--record", str(record)], 285)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
