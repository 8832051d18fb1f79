"""rl4llm's GRPO trainer against TRL's GRPOTrainer on the same task, model and warm start.

    python benchmarks/grpo_vs_trl.py [--seeds 0 1 2] [--budget 60] [--threads N (default: all cores)] [--trl-max-steps 1000]

Both sides start from the same warm start (chapter 14: held-out greedy accuracy about 0.3), the same
tiny GPT-2-shaped model (2 layers, width 64, 4 heads, about 100k parameters; the weights are copied
into transformers' GPT2LMHeadModel for TRL), the same fixed-width prompts and the same verifier.
Held-out greedy accuracy (500 prompts) is measured by the same function for both, and evaluation
time is excluded from both clocks. Printed, in order:

- rl4llm, for each seed: held-out accuracy against training wall time, up to ``--budget`` seconds;
- TRL (tuned as section 8 of the design notes describes: 32 prompts x 8, lr 3e-4, 20 warmup steps,
  fp32, no gradient checkpointing), until it reaches the target accuracy or ``--trl-max-steps``;
- as the LAST line, one JSON object with the figures (medians over seeds, per-seed values, and the
  machine: cores, torch threads, versions, load average).

Sampled tokens per second count completion tokens (EOS included, padding excluded) over training
wall time (sampling and learning together).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
import warnings

import numpy as np
import torch

from rl4llm.model import from_gpt2
from rl4llm.tasks import MAX_COMPLETION_LEN, AdditionTask
from rl4llm.trainer import GRPOConfig, GRPOTrainer, greedy_accuracy, torch_threads
from rl4llm.trl_bridge import char_tokenizer_for_transformers, trl_policy
from rl4llm.warmstart import warm_start

TARGET = 0.64


def rl4llm_config(seed: int, threads: int) -> GRPOConfig:
    """The settings the benchmark runs rl4llm with (the chapter's, sized for a 60 s budget)."""
    return GRPOConfig(seed=seed, steps=1000, prompts_per_step=64, group_size=8, lr=1e-3, warmup_steps=20,
                      anneal_lr=True, drop_zero_variance=True, log_kl=False, eval_every=25,
                      num_threads=threads, device="cpu")


def seconds_to(evals: dict, target: float):
    """Training seconds at the first evaluation at or above ``target`` (None if never reached)."""
    for accuracy, seconds in zip(evals["accuracy"], evals["train_seconds"]):
        if accuracy >= target:
            return seconds
    return None


def run_rl4llm(warm, task, seed: int, budget: float, threads: int) -> dict:
    trainer = GRPOTrainer(warm.model, task, rl4llm_config(seed, threads))
    trainer.train(progress=False, max_seconds=budget)
    e, m = trainer.evals, trainer.metrics
    for step, accuracy, seconds in zip(e["step"], e["accuracy"], e["train_seconds"]):
        print(f"  rl4llm seed {seed}: step {step:5d}  {seconds:6.1f} s  accuracy {accuracy:.4f}", flush=True)
    return {"seconds_to_target": seconds_to(e, TARGET), "accuracy_at_budget": e["accuracy"][-1],
            "steps": trainer.step_count, "train_seconds": trainer.train_seconds,
            "tokens_per_second": sum(m["tokens"]) / trainer.train_seconds,
            "step_ms_median": 1000 * statistics.median(m["seconds"])}


def run_trl(warm, task, seed: int, max_steps: int, threads: int) -> dict:
    from datasets import Dataset
    from transformers import TrainerCallback
    from trl import GRPOConfig as TRLConfig
    from trl import GRPOTrainer as TRLTrainer

    tok = task.tokenizer
    hf_tokenizer = char_tokenizer_for_transformers(tok)
    model = trl_policy(warm.model, tok)
    dataset = Dataset.from_dict({"prompt": task.prompts(task.train_pairs),
                                 "answer": [str(a + b) for a, b in task.train_pairs.tolist()]})
    sampled = {"tokens": 0}

    def reward(prompts, completion_ids, **kwargs):
        """The verifier on the sampled ids up to the first EOS (TRL's decoded text drops special tokens)."""
        rows = [ids[:ids.index(tok.eos_id) + 1] if tok.eos_id in ids else ids for ids in completion_ids]
        sampled["tokens"] += sum(len(r) for r in rows)
        width = max(len(r) for r in rows)
        padded = np.array([r + [tok.pad_id] * (width - len(r)) for r in rows])
        pairs = np.array([[int(p[:2]), int(p[3:5])] for p in prompts])
        return task.rewards(pairs, padded).tolist()

    class Clock(TrainerCallback):
        """Training wall time without evaluation; held-out accuracy every 25 steps; stop at TARGET."""

        def __init__(self):
            self.train_seconds, self.evals, self._start = 0.0, {"step": [], "accuracy": [], "train_seconds": []}, None

        def _evaluate(self, step, model):
            accuracy = greedy_accuracy(from_gpt2(model), task)
            for k, v in (("step", step), ("accuracy", accuracy), ("train_seconds", self.train_seconds)):
                self.evals[k].append(v)
            print(f"  TRL seed {seed}: step {step:5d}  {self.train_seconds:6.1f} s  accuracy {accuracy:.4f}", flush=True)
            return accuracy

        def on_train_begin(self, args, state, control, model=None, **kw):
            self._evaluate(0, model)

        def on_step_begin(self, args, state, control, **kw):
            self._start = time.perf_counter()

        def on_step_end(self, args, state, control, model=None, **kw):
            self.train_seconds += time.perf_counter() - self._start
            if state.global_step % 25 == 0 and self._evaluate(state.global_step, model) >= TARGET:
                control.should_training_stop = True

    args = TRLConfig(output_dir="/tmp/trl_grpo_bench", per_device_train_batch_size=32 * 8, num_generations=8,
                     max_completion_length=MAX_COMPLETION_LEN, learning_rate=3e-4, warmup_steps=20,
                     max_steps=max_steps, bf16=False, gradient_checkpointing=False, use_cpu=True, seed=seed,
                     logging_steps=10_000, save_strategy="no", report_to="none", temperature=1.0,
                     dataloader_pin_memory=False, disable_tqdm=True)
    clock = Clock()
    trainer = TRLTrainer(model=model, reward_funcs=reward, args=args, train_dataset=dataset,
                         processing_class=hf_tokenizer, callbacks=[clock])
    with torch_threads(threads), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trainer.train()
    return {"seconds_to_target": seconds_to(clock.evals, TARGET), "final_accuracy": clock.evals["accuracy"][-1],
            "steps": clock.evals["step"][-1], "train_seconds": clock.train_seconds,
            "tokens_per_second": sampled["tokens"] / clock.train_seconds}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--budget", type=float, default=60.0, help="rl4llm training seconds per seed")
    parser.add_argument("--threads", type=int, default=os.cpu_count(),
                        help="CPU threads for both trainers (default: every core; on a busy machine use 1, since "
                             "threads that share cores with other processes are far slower)")
    parser.add_argument("--trl-seed", type=int, default=0)
    parser.add_argument("--trl-max-steps", type=int, default=1000)
    parser.add_argument("--skip-trl", action="store_true")
    args = parser.parse_args()

    import transformers
    import trl

    task = AdditionTask(seed=0)
    warm = warm_start()
    print(f"warm start: held-out greedy accuracy {warm.accuracy:.4f} after {warm.steps} SFT steps, "
          f"{warm.model.num_parameters()} parameters", flush=True)
    load_before = os.getloadavg()
    ours = {seed: run_rl4llm(warm, task, seed, args.budget, args.threads) for seed in args.seeds}
    theirs = None if args.skip_trl else run_trl(warm, task, args.trl_seed, args.trl_max_steps, args.threads)
    at_budget = [ours[s]["accuracy_at_budget"] for s in args.seeds]
    to_target = [ours[s]["seconds_to_target"] for s in args.seeds]
    reached = [t for t in to_target if t is not None]
    result = {
        "target_accuracy": TARGET,
        "rl4llm_seconds_to_target": statistics.median(reached) if len(reached) == len(to_target) else None,
        "rl4llm_seconds_to_target_per_seed": dict(zip(map(str, args.seeds), to_target)),
        "rl4llm_seconds_to_target_worst": max(reached) if len(reached) == len(to_target) else None,
        "trl_seconds_to_target": theirs and theirs["seconds_to_target"],
        "trl_seed": args.trl_seed,
        "rl4llm_budget_seconds": args.budget,
        "rl4llm_accuracy_at_60s": statistics.median(at_budget),
        "rl4llm_accuracy_at_60s_per_seed": dict(zip(map(str, args.seeds), at_budget)),
        "rl4llm_accuracy_at_60s_worst": min(at_budget),
        "rl4llm_steps_per_seed": {str(s): ours[s]["steps"] for s in args.seeds},
        "rl4llm_step_ms_median": statistics.median(ours[s]["step_ms_median"] for s in args.seeds),
        "rl4llm_tokens_per_second": statistics.median(ours[s]["tokens_per_second"] for s in args.seeds),
        "trl_tokens_per_second": theirs and theirs["tokens_per_second"],
        "trl_steps": theirs and theirs["steps"],
        "trl_final_accuracy": theirs and theirs["final_accuracy"],
        "warm_start_accuracy": warm.accuracy,
        "rl4llm_config": {k: v for k, v in rl4llm_config(0, args.threads).__dict__.items() if k != "seed"},
        "machine": {"cpu_cores": os.cpu_count(), "torch_threads": args.threads, "platform": platform.platform(),
                    "processor": platform.processor(), "python": platform.python_version(),
                    "torch": torch.__version__, "transformers": transformers.__version__, "trl": trl.__version__,
                    "cuda": torch.cuda.is_available(), "load_average_before": load_before,
                    "load_average_after": os.getloadavg()},
    }
    if theirs and theirs["seconds_to_target"] and result["rl4llm_seconds_to_target"]:
        result["speedup_to_target"] = theirs["seconds_to_target"] / result["rl4llm_seconds_to_target"]
    if theirs:
        result["tokens_per_second_ratio"] = result["rl4llm_tokens_per_second"] / theirs["tokens_per_second"]
    print(json.dumps(result))


if __name__ == "__main__":
    main()
