"""Which recipe reaches 0.95 held-out accuracy within a 30-second budget: a sweep counted in steps.

    python benchmarks/budget_recipe.py [--seeds 0 1 2] [--confirm 3 4 5] [--record PATH]
    python benchmarks/budget_recipe.py --budget 30 [--threads 2] [--seeds 3 4 5]   # the chosen recipe, timed
    ... [--trainer fast|plain]   # rl4llm.llm.fast_trainer.FastGRPOTrainer (default) or chapter 15's GRPOTrainer

A run's held-out accuracy after S steps does not depend on how fast or how loaded the machine is (the
trainer is seeded and deterministic at one CPU thread), so the recipe is chosen by steps and timed
apart. Every recipe of ``RECIPES`` runs its own step count S with the learning rate's linear decay
ending exactly at S (``GRPOConfig(steps=S, anneal_lr=True)``: the schedule fits the budget instead of
being cut off by it, as ``grpo_vs_trl.py``'s budget runs, whose decay ends at step 1000, are on a slower
machine), three seeds each, held-out greedy accuracy (500 prompts) every ``EVAL_EVERY`` steps. Each
recipe's S is chosen so that S steps fit in 30 s at its measured step time with a margin (the record
keeps the seconds each run took and the load average beside them: on a shared machine they are upper
bounds). The recipe with the best median final accuracy is then run on fresh seeds (``--confirm``),
since the sweep's own best median is biased upwards by the choice; ``--budget 30`` then runs that recipe
against the wall clock (training stops after 30 s of training time, evaluation excluded, or at S).

The LAST line printed is the record's summary as one JSON object.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import grpo_vs_trl as bench  # noqa: E402
from rl4llm.llm.tasks import AdditionTask  # noqa: E402
from rl4llm.llm.trainer import GRPOConfig, torch_threads  # noqa: E402
from rl4llm.llm.warmstart import warm_start  # noqa: E402

EVAL_EVERY = 50
TRAINER = "fast"      # --trainer: a key of grpo_vs_trl.TRAINERS (the runs before 2026-12-04: "plain")
TARGET = 0.95
#: name -> the config's fields besides the fixed ones (G = 8 unless set, warmup 20, linear decay to 0 at
#: ``steps``, std scaling, flat groups kept, no KL measured, one thread).
RECIPES = {
    "dapo lr 1e-3 32x8 S=600": {"lr": 1e-3, "prompts_per_step": 32, "loss_type": "dapo", "steps": 600},
    "dapo lr 2e-3 32x8 S=600": {"lr": 2e-3, "prompts_per_step": 32, "loss_type": "dapo", "steps": 600},
    "dapo lr 1.5e-3 32x8 S=700": {"lr": 1.5e-3, "prompts_per_step": 32, "loss_type": "dapo", "steps": 700},
    "grpo lr 1.5e-3 32x8 S=700": {"lr": 1.5e-3, "prompts_per_step": 32, "loss_type": "grpo", "steps": 700},
    "dapo lr 2e-3 64x8 S=350": {"lr": 2e-3, "prompts_per_step": 64, "loss_type": "dapo", "steps": 350},
    "dapo lr 3e-3 64x8 S=350": {"lr": 3e-3, "prompts_per_step": 64, "loss_type": "dapo", "steps": 350},
    "dapo lr 2e-3 16x16 S=600": {"lr": 2e-3, "prompts_per_step": 16, "group_size": 16, "loss_type": "dapo",
                                 "steps": 600},
    "dapo lr 1e-3 K=2 32x8 S=400": {"lr": 1e-3, "prompts_per_step": 32, "inner_steps": 2, "loss_type": "dapo",
                                    "steps": 400},
    "dapo lr 1.5e-3 32x8 S=1000": {"lr": 1.5e-3, "prompts_per_step": 32, "loss_type": "dapo", "steps": 1000},
    "dapo lr 1e-3 32x8 S=1000": {"lr": 1e-3, "prompts_per_step": 32, "loss_type": "dapo", "steps": 1000},
    "dapo lr 1.5e-3 32x8 S=1400": {"lr": 1.5e-3, "prompts_per_step": 32, "loss_type": "dapo", "steps": 1400},
    "dapo lr 1e-3 32x8 S=1400": {"lr": 1e-3, "prompts_per_step": 32, "loss_type": "dapo", "steps": 1400},
    "dapo lr 1.2e-3 32x8 S=1400": {"lr": 1.2e-3, "prompts_per_step": 32, "loss_type": "dapo", "steps": 1400},
    "dapo lr 1.5e-3 32x8 drop S=700": {"lr": 1.5e-3, "prompts_per_step": 32, "loss_type": "dapo", "steps": 700,
                                       "drop_zero_variance": True},
    "dapo lr 2e-3 16x8 S=1200": {"lr": 2e-3, "prompts_per_step": 16, "loss_type": "dapo", "steps": 1200},
    "dapo lr 1.5e-3 16x8 S=1200": {"lr": 1.5e-3, "prompts_per_step": 16, "loss_type": "dapo", "steps": 1200},
    "dapo lr 2e-3 32x8 warmup 100 S=700": {"lr": 2e-3, "prompts_per_step": 32, "loss_type": "dapo", "steps": 700,
                                           "warmup_steps": 100},
    "dapo lr 2e-3 32x8 clip 0.5 S=700": {"lr": 2e-3, "prompts_per_step": 32, "loss_type": "dapo", "steps": 700,
                                         "grad_clip": 0.5},
    "dapo lr 1.5e-3 32x8 no std S=700": {"lr": 1.5e-3, "prompts_per_step": 32, "loss_type": "dapo", "steps": 700,
                                         "scale_rewards": False},
    "dapo lr 1.5e-3 32x8 warmup 100 S=700": {"lr": 1.5e-3, "prompts_per_step": 32, "loss_type": "dapo",
                                             "steps": 700, "warmup_steps": 100},
    "dapo lr 1.5e-3 32x8 warmup 5 S=700": {"lr": 1.5e-3, "prompts_per_step": 32, "loss_type": "dapo",
                                           "steps": 700, "warmup_steps": 5},
    "dapo lr 1.5e-3 64x4 S=700": {"lr": 1.5e-3, "prompts_per_step": 64, "group_size": 4, "loss_type": "dapo",
                                  "steps": 700},
    "dapo lr 1.5e-3 24x8 S=900": {"lr": 1.5e-3, "prompts_per_step": 24, "loss_type": "dapo", "steps": 900},
    "dapo lr 1.5e-3 32x8 T=1.2 S=700": {"lr": 1.5e-3, "prompts_per_step": 32, "loss_type": "dapo", "steps": 700,
                                        "temperature": 1.2},
}
RECORD = Path(__file__).parent / "results" / "budget_recipe_2core_cpu.json"


def config(fields: dict, seed: int) -> GRPOConfig:
    return GRPOConfig(**{"group_size": 8, "warmup_steps": 20, "anneal_lr": True, "scale_rewards": True,
                         "drop_zero_variance": False, "log_kl": False, "eval_every": EVAL_EVERY,
                         "num_threads": 1, "device": "cpu", **fields, "seed": seed})


def run(warm, task, name: str, seed: int) -> dict:
    cfg = config(RECIPES[name], seed)
    before = [round(x, 2) for x in os.getloadavg()]
    trainer = bench.TRAINERS[TRAINER](warm.model, task, cfg)
    with torch_threads(1):
        trainer.train(progress=False)
    row = {"recipe": name, **RECIPES[name], "seed": seed, "trainer": TRAINER,
           "final_accuracy": trainer.evals["accuracy"][-1],
           "evals": list(zip(trainer.evals["step"], trainer.evals["accuracy"])),
           "train_seconds": trainer.train_seconds, "ms_per_step": 1000 * trainer.train_seconds / cfg.steps,
           "tokens": int(sum(trainer.metrics["tokens"])), "load_before": before,
           "load_after": [round(x, 2) for x in os.getloadavg()]}
    print(f"  {name} seed {seed}: accuracy {row['final_accuracy']:.3f} after {cfg.steps} steps, "
          f"{row['train_seconds']:.1f} s ({row['ms_per_step']:.1f} ms a step), load {before[0]} -> "
          f"{row['load_after'][0]}", flush=True)
    return row


def timed(warm, task, name: str, seed: int, seconds: float, threads: int) -> dict:
    """The recipe against the wall clock: training stops once ``seconds`` of training time (evaluation
    excluded) have passed, or at its S steps; held-out accuracy then."""
    cfg = config(RECIPES[name] | {"num_threads": threads}, seed)
    before = [round(x, 2) for x in os.getloadavg()]
    trainer = bench.TRAINERS[TRAINER](warm.model, task, cfg)
    trainer.train(progress=False, max_seconds=seconds)
    row = {"recipe": name, "seed": seed, "threads": threads, "trainer": TRAINER, "budget_seconds": seconds,
           "final_accuracy": trainer.evals["accuracy"][-1], "steps": trainer.step_count,
           "train_seconds": trainer.train_seconds, "load_before": before,
           "load_after": [round(x, 2) for x in os.getloadavg()]}
    print(f"  {name}, {threads} thread(s), seed {seed}, {seconds:.0f} s: accuracy {row['final_accuracy']:.3f} after "
          f"{row['steps']} of {cfg.steps} steps ({row['train_seconds']:.1f} s), load {before[0]} -> "
          f"{row['load_after'][0]}", flush=True)
    return row


def table(runs: list) -> dict:
    out = {}
    for name in RECIPES:
        mine = [r for r in runs if r["recipe"] == name]
        if mine:
            acc = [r["final_accuracy"] for r in mine]
            out[name] = {"seeds": [r["seed"] for r in mine], "accuracy_median": statistics.median(acc),
                         "accuracy_min": min(acc), "accuracy_max": max(acc),
                         "ms_per_step_median": statistics.median(r["ms_per_step"] for r in mine)}
    return out


def main():
    global TRAINER
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--confirm", type=int, nargs="*", default=[3, 4, 5])
    parser.add_argument("--recipes", nargs="+", default=list(RECIPES), choices=list(RECIPES))
    parser.add_argument("--record", type=Path, default=RECORD)
    parser.add_argument("--budget", type=float, help="instead of the sweep: the chosen recipe (or --recipes' first) "
                        "for this many training seconds on --seeds, at --threads")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--trainer", choices=list(bench.TRAINERS), default=TRAINER)
    args = parser.parse_args()
    TRAINER = args.trainer
    record = json.loads(args.record.read_text()) if args.record.exists() else {"runs": [], "confirm": []}
    record["machine"] = bench.machine()
    task, warm = AdditionTask(seed=0), warm_start()
    if args.budget:
        name = args.recipes[0] if args.recipes != list(RECIPES) else record["chosen"]
        rows = [timed(warm, task, name, seed, args.budget, args.threads) for seed in args.seeds]
        record.setdefault("budget", []).extend(rows)
        acc = [r["final_accuracy"] for r in rows]
        record.setdefault("budget_summary", []).append(
            {"recipe": name, "threads": args.threads, "trainer": TRAINER, "seconds": args.budget,
             "seeds": args.seeds, "accuracy_median": statistics.median(acc), "accuracy_min": min(acc), "accuracy_max": max(acc),
             "steps_median": statistics.median(r["steps"] for r in rows), "written": time.strftime("%Y-%m-%d %H:%M:%S")})
        args.record.write_text(json.dumps(record, indent=1) + "\n")
        print(json.dumps(record["budget_summary"][-1]))
        return
    done = {(r["recipe"], r["seed"]) for r in record["runs"]}
    for name in args.recipes:
        for seed in args.seeds:
            if (name, seed) not in done:
                record["runs"].append(run(warm, task, name, seed))
                args.record.write_text(json.dumps(record, indent=1) + "\n")
    record["sweep"] = table(record["runs"])
    chosen = max(record["sweep"], key=lambda n: record["sweep"][n]["accuracy_median"])
    record["chosen"] = chosen
    confirmed = {r["seed"] for r in record["confirm"] if r["recipe"] == chosen}
    for seed in args.confirm:
        if seed not in confirmed:
            record["confirm"].append(run(warm, task, chosen, seed))
            args.record.write_text(json.dumps(record, indent=1) + "\n")
    record["summary"] = {"chosen": chosen, "sweep": record["sweep"],
                         "confirm": table([r for r in record["confirm"] if r["recipe"] == chosen]),
                         "written": time.strftime("%Y-%m-%d %H:%M:%S")}
    args.record.write_text(json.dumps(record, indent=1) + "\n")
    print(json.dumps(record["summary"]))


if __name__ == "__main__":
    main()
