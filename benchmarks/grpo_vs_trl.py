"""rl4llm's GRPO trainer against TRL's GRPOTrainer, both swept over the same grid, on chapter 15's task.

    python benchmarks/grpo_vs_trl.py [--parts sweep best speed profile budget] [--record PATH] [--device cpu]
                                     [--trainer fast|plain]

Both sides start from the shipped warm start (bitwise the same on every machine), train the same
tiny GPT-2-shaped model (its weights copied into transformers' GPT2LMHeadModel for TRL) with the
same verifier, on one CPU thread each, one process at a time, and are measured by the same clock:
training wall time per step (sampling, scoring, loss, backward, optimizer), with held-out greedy
accuracy (500 prompts, never trained on in either order) every ``EVAL_EVERY`` steps outside it.
Process CPU time is recorded beside wall time, and the load average (``os.getloadavg``) before and
after every run, because the machine is shared. rl4llm's side is
:class:`rl4llm.llm.fast_trainer.FastGRPOTrainer` (the loss's pass over the informative groups only, and identical
prefixes computed once, ``share_prefixes``, the default since 2026-12-06: the plain trainer's update to float
rounding); ``--trainer plain`` runs chapter 15's
:class:`~rl4llm.llm.trainer.GRPOTrainer`, the side of every record written before 2026-12-04.

What is the same on both sides, by construction:

- **prompts**: the trainer's shuffled epochs (:func:`rl4llm.llm.trainer.prompt_indices`: each epoch a
  seeded permutation of the training prompts cut into steps, an incomplete last step dropped, as
  TRL's ``RepeatSampler`` does); TRL gets the same sequence as its dataset with
  ``shuffle_dataset=False``, and every TRL run checks that the prompts its reward function saw at
  each step are the trainer's (``paired_prompts``). The runs of a seed are therefore paired: the
  same prompts at the same step (the sampled completions differ: each library has its own sampler);
- **learning rate**: the trainer's schedule (:func:`rl4llm.llm.trainer.lr_factor`: warmup factor
  (u + 1) / W at update u, times a linear decay to 0 at ``MAX_STEPS``) is TRL's scheduler too;
- **optimizer**: torch's fused AdamW on both (TRL's own default ``adamw_torch_fused``);
- everything else ``rl4llm.trl.knobs.trl_config_kwargs`` maps (G = 8, eps 0.2, no KL, std scaling,
  flat groups kept, gradient clip 1, fp32, no activation checkpointing). What still differs: TRL's
  advantages divide by the sample std plus 1e-4, the book's by the population std plus 1e-8.

Parts (``--parts``; each adds its results to the record, a JSON file, and rows already there are kept):

sweep    every recipe of ``GRID`` (learning rate x prompts per step x loss type, G = 8) on both
         sides, three seeds each, to ``TARGET`` held-out accuracy or ``STEP_CAP`` steps: training
         seconds and sampled tokens to the target.
best     each side's best recipe (the smallest median seconds to the target among recipes that
         reach it on every seed), both re-run with their seeds interleaved (rl4llm seed 0, TRL seed 0,
         rl4llm seed 1, ...) so that load falls on both alike: seconds and tokens to the target.
speed    implementation speed only, at one recipe for both (``SPEED_RECIPE``): first one untimed run of
         ``SPEED_WARMUP_STEPS`` steps a side (a process's first steps pay one-time costs, such as the first
         call of each kernel at each shape, which would otherwise fall on whichever side runs first), then
         interleaved pairs of ``--speed-steps`` training steps, rl4llm then TRL, same seed and prompts;
         sampled tokens per second of each and their ratio per pair.
profile  the per-step profile at ``SPEED_RECIPE`` (32 x 8, dapo), interleaved: the same four phases
         on both sides (rollout = sampling, scoring and advantages; forward and loss; backward;
         gradient clip and optimizer step) and the rest.
trainer-profile  rl4llm's profile with the library of ``--before`` (a git revision) and with this one,
         each in its own process, alternately: the trainer's speed-up, phase by phase.
budget   rl4llm's best recipe for ``--budget`` seconds of training (three seeds): held-out accuracy.
budget-sweep  every recipe of ``GRID`` for ``--budget`` seconds on rl4llm, three seeds each: the recipe
         with the best median accuracy, then that recipe on three fresh seeds (``CONFIRM_SEEDS``), whose
         accuracy is the one reported, since the sweep's own best median is biased upwards by the choice.

The LAST line printed is the record's summary as one JSON object.
"""
from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import platform
import statistics
import subprocess
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import torch

from rl4llm.llm.evaluation import greedy_accuracy
from rl4llm.llm.model import from_gpt2
from rl4llm.llm.tasks import AdditionTask
from rl4llm.llm.fast_trainer import FastGRPOTrainer
from rl4llm.llm.trainer import GRPOConfig, GRPOTrainer, torch_threads
from rl4llm.trl.knobs import trl_config_kwargs
from rl4llm.trl.run import trl_grpo_trainer
from rl4llm.llm.warmstart import warm_start


TARGET = 0.64
EVAL_EVERY = 10
MAX_STEPS = 1000        # the learning rate decays linearly to 0 at this step, on both sides
STEP_CAP = 400          # a sweep run still below TARGET after this many steps stops: "not reached"
PATIENCE = 100          # ... and so does one whose best held-out accuracy has not risen for this many steps
GRID = {"lr": (2e-3, 1e-3, 3e-4), "prompts_per_step": (32, 64), "loss_type": ("dapo", "grpo")}
SEEDS = (0, 1, 2)
SPEED_WARMUP_STEPS = 10   # speed's untimed first run a side (before 2026-12-06 there was none)
CONFIRM_SEEDS = (3, 4, 5)   # budget-sweep: the chosen recipe's seeds, never used to choose it
SPEED_RECIPE = {"lr": 3e-4, "prompts_per_step": 32, "loss_type": "dapo"}
PHASES = ("rollout", "forward_and_loss", "backward", "optimizer", "other")
DEVICE = "cpu"          # --device sets it
THREADS = 1
#: rl4llm's side: the fast trainer (:mod:`rl4llm.llm.fast_trainer`, the default since 2026-12-04) or chapter 15's
#: plain one (``--trainer plain``; every earlier record's runs).
TRAINERS = {"fast": FastGRPOTrainer, "plain": GRPOTrainer}
TRAINER = "fast"
RECORD = Path(__file__).parent / "results" / "grpo_vs_trl_2core_cpu.json"


def recipe(lr: float, prompts_per_step: int, loss_type: str, seed: int) -> GRPOConfig:
    """One cell of the grid as the book's config; TRL runs ``trl_kwargs`` of the same config."""
    return GRPOConfig(seed=seed, steps=MAX_STEPS, prompts_per_step=prompts_per_step, group_size=8, lr=lr,
                      warmup_steps=20, anneal_lr=True, loss_type=loss_type, scale_rewards=True,
                      drop_zero_variance=False, log_kl=False, eval_every=EVAL_EVERY, num_threads=THREADS,
                      device=DEVICE)


def trl_kwargs(config: GRPOConfig) -> dict:
    """``trl_config_kwargs`` of the config, with TRL's fused AdamW and the prompts in the dataset's order."""
    return trl_config_kwargs(config) | {"optim": "adamw_torch_fused", "shuffle_dataset": False}


def load() -> list:
    """The 1, 5 and 15 minute load averages, rounded."""
    return [round(x, 2) for x in os.getloadavg()]


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def summary(values) -> dict:
    """Median, min and max (None when any value is None: a seed did not reach the target)."""
    values = list(values)
    if not values or any(v is None for v in values):
        return {"median": None, "min": None, "max": None}
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


class StepLog:
    """Cumulative wall and CPU seconds and sampled tokens after every step, and the evaluations."""

    def __init__(self):
        self.wall, self.cpu, self.tokens = [0.0], [0.0], [0]
        self.evals = []                              # (step, accuracy)
        self._wall = self._cpu = None

    def start(self):
        self._wall, self._cpu = time.perf_counter(), time.process_time()

    def stop(self, tokens: int):
        self.wall.append(self.wall[-1] + time.perf_counter() - self._wall)
        self.cpu.append(self.cpu[-1] + time.process_time() - self._cpu)
        self.tokens.append(tokens)

    def evaluate(self, step: int, accuracy: float) -> float:
        self.evals.append((step, accuracy))
        return accuracy

    def stalled(self) -> bool:
        """No new best held-out accuracy over the last PATIENCE steps (the run has collapsed or plateaued)."""
        best_step = max(self.evals, key=lambda e: (e[1], -e[0]))[0]
        return self.evals[-1][0] - best_step >= PATIENCE

    def result(self) -> dict:
        """Seconds (wall, CPU), tokens and steps to the first evaluation at or above TARGET."""
        hit = next((s for s, a in self.evals if a >= TARGET), None)
        steps = len(self.wall) - 1
        at = (lambda series: series[hit] if hit is not None else None)
        return {"reached": hit is not None, "steps_to_target": hit, "seconds_to_target": at(self.wall),
                "cpu_seconds_to_target": at(self.cpu), "tokens_to_target": at(self.tokens),
                "steps": steps, "train_seconds": self.wall[-1], "cpu_seconds": self.cpu[-1],
                "tokens": self.tokens[-1], "tokens_per_second": self.tokens[-1] / self.wall[-1] if steps else None,
                "final_accuracy": self.evals[-1][1], "evals": self.evals}


# ---- rl4llm ------------------------------------------------------------------------------------
def run_rl4llm(warm, task, config: GRPOConfig, *, steps: int, to_target: bool = True,
               budget: float | None = None) -> dict:
    """Up to ``steps`` steps (stopping at TARGET when ``to_target``, or after ``budget`` seconds)."""
    trainer, log = TRAINERS[TRAINER](warm.model, task, config), StepLog()
    with torch_threads(config.num_threads):
        log.evaluate(0, trainer.evaluate())
        while trainer.step_count < steps:
            log.start()
            row = trainer.step()
            log.stop(log.tokens[-1] + row["tokens"])
            out_of_time = budget is not None and log.wall[-1] >= budget
            if trainer.step_count % EVAL_EVERY == 0 or out_of_time:
                accuracy = log.evaluate(trainer.step_count, trainer.evaluate())
                if to_target and (accuracy >= TARGET or log.stalled()):
                    break
            if out_of_time:
                break
    return log.result()


# ---- TRL ---------------------------------------------------------------------------------------
def trl_trainer(warm, task, config: GRPOConfig, workdir: str, callbacks=(), counter=None, seen=None):
    """TRL's GRPOTrainer at the config's recipe, the trainer's prompt order and learning-rate schedule.

    ``seen`` (a list) receives the prompts of every step as TRL's reward function gets them.
    """
    from datasets import Dataset

    from rl4llm.llm.trainer import lr_factor, prompt_indices

    trainer = trl_grpo_trainer(warm.model, task, trl_kwargs(config), output_dir=workdir, callbacks=list(callbacks),
                               counter=counter, logging_steps=10_000)
    order = np.concatenate([prompt_indices(len(task.train_pairs), config.prompts_per_step, config.seed, s)
                            for s in range(config.steps)])
    trainer.train_dataset = Dataset.from_dict({"prompt": task.prompts(task.train_pairs[order])})

    def create_scheduler(num_training_steps, optimizer=None):
        if trainer.lr_scheduler is None:
            trainer.lr_scheduler = torch.optim.lr_scheduler.LambdaLR(
                optimizer or trainer.optimizer,
                lambda u: lr_factor(u // config.inner_steps, config.warmup_steps, config.steps, config.anneal_lr))
        return trainer.lr_scheduler
    trainer.create_scheduler = create_scheduler
    if seen is not None:
        reward, G = trainer.reward_funcs[0], config.group_size

        def recording_reward(prompts, **kwargs):
            seen.append(list(prompts[::G]))
            return reward(prompts=prompts, **kwargs)
        trainer.reward_funcs[0] = recording_reward
    return trainer


def paired_prompts(task, config: GRPOConfig, seen: list) -> bool:
    """Whether TRL's prompts at every step were the book trainer's."""
    from rl4llm.llm.trainer import prompt_indices
    return all(prompts == task.prompts(task.train_pairs[prompt_indices(len(task.train_pairs),
                                                                       config.prompts_per_step, config.seed, s)])
               for s, prompts in enumerate(seen))


def run_trl(warm, task, config: GRPOConfig, *, steps: int, to_target: bool = True) -> dict:
    from transformers import TrainerCallback

    counter, seen, log = {"tokens": 0}, [], StepLog()

    class Clock(TrainerCallback):
        def on_train_begin(self, args, state, control, model=None, **kw):
            log.evaluate(0, greedy_accuracy(from_gpt2(model), task))

        def on_step_begin(self, args, state, control, **kw):
            log.start()

        def on_step_end(self, args, state, control, model=None, **kw):
            log.stop(counter["tokens"])
            step = state.global_step
            if step % EVAL_EVERY == 0:
                accuracy = log.evaluate(step, greedy_accuracy(from_gpt2(model), task))
                if to_target and (accuracy >= TARGET or log.stalled()):
                    control.should_training_stop = True
            if step >= steps:
                control.should_training_stop = True

    with tempfile.TemporaryDirectory() as workdir, torch_threads(config.num_threads), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trl_trainer(warm, task, config, workdir, [Clock()], counter, seen).train()
    return log.result() | {"paired_prompts": paired_prompts(task, config, seen)}


SIDES = {"rl4llm": run_rl4llm, "trl": run_trl}


def timed_run(side: str, warm, task, cell: dict, seed: int, **kwargs) -> dict:
    """One run of ``side`` at a grid cell and seed, with the load before and after."""
    before, up = load(), uptime()
    result = SIDES[side](warm, task, recipe(**cell, seed=seed), **kwargs)
    row = {"side": side, **cell, "seed": seed, **result, "load_before": before, "load_after": load(),
           "uptime_before": up}
    print(f"  {side:<6} {cell} seed {seed}: {row['steps']} steps, {row['train_seconds']:.1f} s, accuracy "
          f"{row['final_accuracy']:.3f}, to {TARGET}: {row['seconds_to_target'] and round(row['seconds_to_target'], 2)}"
          f" s, load {before[0]:.2f} -> {row['load_after'][0]:.2f}", flush=True)
    return row


# ---- the per-step profile -------------------------------------------------------------------------
def now() -> np.ndarray:
    """(wall, process CPU) seconds: a profile keeps both, since on a shared machine wall time includes waiting."""
    return np.array([time.perf_counter(), time.process_time()])


@contextlib.contextmanager
def phase_timers(targets: dict, clock: dict):
    """Wrap ``{(owner, attribute): phase}`` so that each call adds its (wall, CPU) time to ``clock[phase]``."""
    saved = {}
    for (owner, attribute), phase in targets.items():
        original = getattr(owner, attribute)
        saved[(owner, attribute)] = original

        def timed(*args, _original=original, _phase=phase, **kwargs):
            start = now()
            try:
                return _original(*args, **kwargs)
            finally:
                clock[_phase] = clock[_phase] + now() - start
        setattr(owner, attribute, timed)
    try:
        yield
    finally:
        for (owner, attribute), original in saved.items():
            setattr(owner, attribute, original)


def per_step(clock: dict, total: np.ndarray, steps: int) -> dict:
    """Milliseconds per step of each phase, wall and CPU; "other" is the step's time outside the four."""
    clock = clock | {"other": total - sum(clock[p] for p in PHASES if p != "other"), "total": total}
    return {kind: {phase: 1000 * float(t[i]) / steps for phase, t in clock.items()}
            for i, kind in enumerate(("wall_ms", "cpu_ms"))}


def profile_rl4llm(warm, task, config: GRPOConfig, steps: int, warmup: int = 5) -> dict:
    """Milliseconds per step in each phase, over ``steps`` steps after ``warmup`` steps."""
    import rl4llm.llm.fast_trainer as fast
    import rl4llm.llm.trainer as module
    trainer = TRAINERS[TRAINER](warm.model, task, config)
    clock = {phase: np.zeros(2) for phase in PHASES}
    with torch_threads(config.num_threads):
        for _ in range(warmup):
            trainer.step()
        # the plain rollout (the fast trainer's runs the loss's forward pass after it: timed as that)
        targets = {(GRPOTrainer, "rollout"): "rollout", (module, "completion_logprobs"): "forward_and_loss",
                   (fast, "completion_logprobs"): "forward_and_loss", (fast, "tree_completion_logprobs"): "forward_and_loss",
                   (module.grpo_loss, "unchecked"): "forward_and_loss", (trainer.optimizer, "step"): "optimizer",
                   (torch.autograd, "backward"): "backward", (torch.nn.utils, "clip_grad_norm_"): "optimizer"}
        with phase_timers(targets, clock):
            start = now()
            for _ in range(steps):
                trainer.step()
            total = now() - start
    return per_step(clock, total, steps)


def profile_trl(warm, task, config: GRPOConfig, steps: int, warmup: int = 5) -> dict:
    """Milliseconds per step in each phase of TRL's step, over ``steps`` steps after ``warmup`` steps."""
    from transformers import TrainerCallback

    timed = {phase: np.zeros(2) for phase in PHASES}
    clock = {phase: np.zeros(2) for phase in PHASES}
    state = {"start": None, "total": np.zeros(2), "before": None, "optimizer": None}

    class Phases(TrainerCallback):
        def on_step_begin(self, args, st, control, **kw):
            state["start"], state["before"] = now(), dict(timed)

        def on_pre_optimizer_step(self, args, st, control, **kw):
            state["optimizer"] = now()

        def on_optimizer_step(self, args, st, control, **kw):
            timed["optimizer"] = timed["optimizer"] + now() - state["optimizer"]

        def on_step_end(self, args, st, control, **kw):
            if st.global_step > warmup:
                state["total"] = state["total"] + now() - state["start"]
                for phase in PHASES:
                    clock[phase] = clock[phase] + timed[phase] - state["before"][phase]
            if st.global_step >= warmup + steps:
                control.should_training_stop = True

    with tempfile.TemporaryDirectory() as workdir, torch_threads(config.num_threads), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trainer = trl_trainer(warm, task, config, workdir, [Phases()])
        targets = {(trainer, "_generate_and_score_completions"): "rollout",
                   (trainer, "compute_loss"): "forward_and_loss", (torch.autograd, "backward"): "backward",
                   (trainer, "_clip_grad_norm"): "optimizer"}
        with phase_timers(targets, timed):
            trainer.train()
    return per_step(clock, state["total"], steps)


# ---- the parts -----------------------------------------------------------------------------------
def cells():
    return [dict(zip(GRID, values)) for values in itertools.product(*GRID.values())]


def key(row: dict) -> tuple:
    return (row["side"],) + tuple(row[k] for k in GRID) + (row["seed"],)


def sweep(record, warm, task, sides):
    """Every cell of GRID on ``sides``, SEEDS each, skipping the runs the record holds."""
    done = {key(r) for r in record["sweep"]}
    for seed, cell, side in itertools.product(SEEDS, cells(), sides):
        if (side,) + tuple(cell.values()) + (seed,) not in done:
            record["sweep"].append(timed_run(side, warm, task, cell, seed, steps=STEP_CAP))
            save(record)


def grid_table(rows: list) -> list:
    """One line per (side, cell): seconds, CPU seconds and tokens to the target over the seeds."""
    table = []
    for side, cell in itertools.product(SIDES, cells()):
        runs = [r for r in rows if r["side"] == side and all(r[k] == v for k, v in cell.items())]
        if runs:
            table.append({"side": side, **cell, "seeds": [r["seed"] for r in runs],
                          "reached_on_every_seed": all(r["reached"] for r in runs) and len(runs) == len(SEEDS),
                          **{f"{q}_to_target": summary(r[f"{q}_to_target"] for r in runs)
                             for q in ("seconds", "cpu_seconds", "tokens", "steps")},
                          "tokens_per_second": summary(r["tokens_per_second"] for r in runs),
                          "mean_load_before": statistics.mean(r["load_before"][0] for r in runs)})
    return table


def best_cell(table: list, side: str) -> dict | None:
    """The side's recipe with the smallest median seconds to the target, among those reaching it on every seed."""
    ok = [row for row in table if row["side"] == side and row["reached_on_every_seed"]]
    return min(ok, key=lambda row: row["seconds_to_target"]["median"]) if ok else None


def best(record, warm, task):
    """Both sides' best recipes, re-run with seeds interleaved."""
    table = grid_table(record["sweep"])
    chosen = {side: best_cell(table, side) for side in SIDES}
    runs = {side: [] for side in SIDES}
    for seed, side in itertools.product(SEEDS, SIDES):
        cell = {k: chosen[side][k] for k in GRID}
        runs[side].append(timed_run(side, warm, task, cell, seed, steps=STEP_CAP))
    record["best"] = {side: {"recipe": {k: chosen[side][k] for k in GRID}, "runs": runs[side]} for side in SIDES}
    save(record)


def speed(record, warm, task, steps: int, pairs: int):
    """Implementation speed at SPEED_RECIPE: ``pairs`` interleaved (rl4llm, TRL) runs of ``steps`` steps."""
    for side, run in SIDES.items():      # untimed: the process's one-time costs, alike for both sides
        run(warm, task, recipe(**SPEED_RECIPE, seed=SEEDS[0]), steps=SPEED_WARMUP_STEPS, to_target=False)
    rounds = []
    for i in range(pairs):
        row = {}
        for side in SIDES:
            row[side] = timed_run(side, warm, task, SPEED_RECIPE, SEEDS[i % len(SEEDS)], steps=steps, to_target=False)
        row["ratio"] = row["rl4llm"]["tokens_per_second"] / row["trl"]["tokens_per_second"]
        rounds.append(row)
    record["speed"] = {"recipe": SPEED_RECIPE, "steps": steps, "warmup_steps": SPEED_WARMUP_STEPS, "pairs": rounds}
    save(record)


def profile(record, warm, task, steps: int, pairs: int):
    """The per-step profile at SPEED_RECIPE, rl4llm and TRL alternately, ``pairs`` times."""
    config = recipe(**SPEED_RECIPE, seed=0)
    rounds = []
    for _ in range(pairs):
        row = {}
        for side, fn in (("rl4llm", profile_rl4llm), ("trl", profile_trl)):
            before = load()
            row[side] = fn(warm, task, config, steps) | {"load_before": before, "load_after": load()}
            print(f"  profile {side:<6} CPU ms " + "  ".join(f"{k} {v:.1f}" for k, v in row[side]["cpu_ms"].items())
                  + f"  (wall total {row[side]['wall_ms']['total']:.1f}), load {before[0]:.2f}", flush=True)
        rounds.append(row)
    record["profile"] = {"recipe": SPEED_RECIPE, "steps": steps, "pairs": rounds}
    save(record)


def trainer_profile(record, before: str, steps: int, pairs: int):
    """rl4llm's per-step profile at SPEED_RECIPE with the library of git revision ``before`` and with this
    checkout's, each in its own process, alternately, ``pairs`` times (the same profile function; the
    older library is unpacked with ``git archive`` into a temporary directory put first on the path)."""
    import shutil
    import sys
    root = Path(__file__).resolve().parent.parent
    code = (f"import json, sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); import grpo_vs_trl as b; "
            f"from rl4llm.llm.tasks import AdditionTask; from rl4llm.llm.warmstart import warm_start; "
            f"print(json.dumps(b.profile_rl4llm(warm_start(), AdditionTask(seed=0), "
            f"b.recipe(**b.SPEED_RECIPE, seed=0), {steps})))")
    workdir = tempfile.mkdtemp()
    try:
        archive = subprocess.run(["git", "-C", str(root), "archive", before, "code/rl4llm"], capture_output=True,
                                 check=True).stdout
        subprocess.run(["tar", "-x", "-C", workdir], input=archive, check=True)
        rounds = []
        for _ in range(pairs):
            row = {}
            for name, path in (("before", f"{workdir}/code"), ("after", str(root / "code"))):
                loads = load()
                out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                                     env={**os.environ, "PYTHONPATH": path}).stdout
                row[name] = json.loads(out.strip().splitlines()[-1]) | {"load_before": loads, "load_after": load()}
                print(f"  trainer profile {name:<6} CPU ms " + "  ".join(
                    f"{k} {v:.1f}" for k, v in row[name]["cpu_ms"].items()) + f", load {loads[0]:.2f}", flush=True)
            rounds.append(row)
    finally:
        shutil.rmtree(workdir)
    record["trainer_profile"] = {"before": before, "recipe": SPEED_RECIPE, "steps": steps, "pairs": rounds}
    save(record)


def budget(record, warm, task, seconds: float):
    """rl4llm's best recipe for ``seconds`` of training, every seed."""
    table = grid_table(record["sweep"])
    cell = {k: best_cell(table, "rl4llm")[k] for k in GRID}
    runs = [timed_run("rl4llm", warm, task, cell, seed, steps=10 ** 6, to_target=False, budget=seconds)
            for seed in SEEDS]
    record["budget"] = {"seconds": seconds, "recipe": cell, "runs": runs,
                        "step_budget_ended_first": any(r["steps"] >= 10 ** 6 for r in runs)}
    save(record)


def budget_sweep(record, warm, task, seconds: float):
    """Every GRID cell for ``seconds`` of training on SEEDS; the best median accuracy's cell (the first in GRID's
    order among equal medians) on CONFIRM_SEEDS."""
    runs = [timed_run("rl4llm", warm, task, cell, seed, steps=10 ** 6, to_target=False, budget=seconds)
            for cell in cells() for seed in SEEDS]
    record["budget_sweep"] = {"seconds": seconds, "runs": runs}
    table = budget_table(record["budget_sweep"])
    chosen = {k: max(table, key=lambda row: row["accuracy"]["median"])[k] for k in GRID}
    record["budget_sweep"]["recipe"] = chosen
    record["budget_sweep"]["confirm"] = [timed_run("rl4llm", warm, task, chosen, seed, steps=10 ** 6, to_target=False,
                                                   budget=seconds) for seed in CONFIRM_SEEDS]
    save(record)


def budget_table(part: dict) -> list:
    """One line per cell of a budget sweep: held-out accuracy and steps run over its seeds."""
    table = []
    for cell in cells():
        runs = [r for r in part["runs"] if all(r[k] == v for k, v in cell.items())]
        table.append({**cell, "accuracy": summary(r["final_accuracy"] for r in runs),
                      "steps": summary(r["steps"] for r in runs)})
    return table


def save(record):
    """The record as JSON, and its summary as Markdown tables beside it (same name, ``.md``)."""
    record["summary"] = summarise(record)
    RECORD.parent.mkdir(parents=True, exist_ok=True)
    RECORD.write_text(json.dumps(record, indent=1) + "\n")
    RECORD.with_suffix(".md").write_text(markdown(record) + "\n")


def spread(s: dict, digits: int = 1) -> str:
    """"median (min-max)", or "not reached" when a seed missed."""
    if s["median"] is None:
        return "not reached"
    return f"{s['median']:.{digits}f} ({s['min']:.{digits}f}-{s['max']:.{digits}f})"


def markdown(record) -> str:
    """The summary's tables: the grid, the best recipes re-run, the profiles, the speed pairs and the
    budget, with the machine and its load."""
    m, summ = record["machine"], record["summary"]
    lines = [f"# rl4llm against TRL ({m['platform']}, {m['cpu_cores']} cores, {m['cpu_capability']}, torch "
             f"{m['torch']}, TRL {m['trl']}, {m['torch_threads']} CPU thread{'s' * (m['torch_threads'] > 1)} a side"
             f"{', on ' + m['gpu'] if m.get('gpu') else ''})", "",
             f"Written by `python benchmarks/grpo_vs_trl.py`; every run in `{RECORD.name}`, with the load "
             f"average before and after it. Target: held-out greedy accuracy {TARGET}.", "",
             "## The grid (seconds and tokens to the target: median (min-max) over the seeds run)", "",
             *([f"Measured on {record['sweep_measured_on']}.", ""] if "sweep_measured_on" in record else []),
             "| side | lr | prompts | loss | seeds | wall s | CPU s | tokens | load |", "|---" * 9 + "|"]
    for row in summ["grid"]:
        lines.append(f"| {row['side']} | {row['lr']:g} | {row['prompts_per_step']} | {row['loss_type']} | "
                     f"{','.join(map(str, row['seeds']))} | {spread(row['seconds_to_target'])} | "
                     f"{spread(row['cpu_seconds_to_target'])} | {spread(row['tokens_to_target'], 0)} | "
                     f"{row['mean_load_before']:.1f} |")
    if "best" in summ:
        b = summ["best"]
        lines += ["", "## Each side's best recipe, re-run with the seeds interleaved (to the target: median (min-max))", "",
                  "| side | lr | prompts | loss | wall s | CPU s | tokens | steps |", "|---" * 8 + "|"]
        for side in SIDES:
            r = b[side]
            lines.append(f"| {side} | {r['recipe']['lr']:g} | {r['recipe']['prompts_per_step']} | "
                         f"{r['recipe']['loss_type']} | {spread(r['seconds_to_target'])} | "
                         f"{spread(r['cpu_seconds_to_target'])} | {spread(r['tokens_to_target'], 0)} | "
                         f"{spread(r['steps_to_target'], 0)} |")
        lines += ["", f"Time to the target: {b['time_to_target_ratio']:.2f}x less for rl4llm (medians); "
                      f"seed ranges apart: {b['seed_ranges_apart']}."]
    for name, key in (("rl4llm and TRL", "profile_ms_per_step"),
                      ("the trainer before and after this change", "trainer_profile_ms_per_step")):
        if key in summ:
            lines += ["", f"## Per-step profile, {name} (ms a step, median over the pairs; CPU, then wall)", "",
                      "| | " + " | ".join(PHASES + ("total",)) + " |", "|---" * (len(PHASES) + 2) + "|"]
            for side, prof in summ[key].items():
                for kind in ("cpu_ms", "wall_ms"):
                    lines.append(f"| {side} {kind[:-3]} | " + " | ".join(f"{prof[kind][p]:.1f}"
                                                                      for p in PHASES + ("total",)) + " |")
    if "speed" in summ:
        sp = summ["speed"]
        lines += ["", "## Implementation speed at one recipe (sampled tokens a second, interleaved pairs)", "",
                  f"rl4llm {spread(sp['rl4llm_tokens_per_second'], 0)}, TRL {spread(sp['trl_tokens_per_second'], 0)}, "
                  f"ratio {spread(sp['tokens_per_second_ratio'], 2)}"]
    if "budget" in summ:
        bu = summ["budget"]
        lines += ["", f"## rl4llm's best recipe for {bu['seconds']:g} s of training (held-out greedy accuracy over the seeds)",
                  "", f"{spread(bu['accuracy'], 3)}, after {spread(bu['steps'], 0)} steps (the learning rate decays "
                      f"linearly to 0 at step {record['constants']['max_steps']}, and a step after it changes nothing)"]
    if "budget_sweep" in summ:
        bs = summ["budget_sweep"]
        lines += ["", f"## Every recipe for {bs['seconds']:g} s of rl4llm training (held-out greedy accuracy, seeds "
                      f"{', '.join(map(str, SEEDS))})", "", "| lr | prompts | loss | accuracy | steps |", "|---" * 5 + "|"]
        for row in bs["grid"]:
            lines.append(f"| {row['lr']:g} | {row['prompts_per_step']} | {row['loss_type']} | "
                         f"{spread(row['accuracy'], 3)} | {spread(row['steps'], 0)} |")
        if "confirm" in bs:
            r = bs["recipe"]
            lines += ["", f"Chosen: lr {r['lr']:g} x {r['prompts_per_step']} prompts x {r['loss_type']}; on fresh seeds "
                          f"{', '.join(map(str, CONFIRM_SEEDS))}: {spread(bs['confirm']['accuracy'], 3)} after "
                          f"{spread(bs['confirm']['steps'], 0)} steps."]
    return "\n".join(lines)


def summarise(record) -> dict:
    """The headline figures from whichever parts the record holds."""
    out = {"grid": grid_table(record["sweep"])}
    if "best" in record:
        b = record["best"]
        r, t = ([run["seconds_to_target"] for run in b[s]["runs"]] for s in ("rl4llm", "trl"))
        out["best"] = {s: {"recipe": b[s]["recipe"], **{f"{q}_to_target": summary(run[f"{q}_to_target"]
                                                                                   for run in b[s]["runs"])
                                                       for q in ("seconds", "cpu_seconds", "tokens", "steps")}}
                       for s in SIDES}
        if None not in r + t:
            out["best"]["time_to_target_ratio"] = statistics.median(t) / statistics.median(r)
            out["best"]["seed_ranges_apart"] = max(r) < min(t)
    if "speed" in record:
        ratios = [p["ratio"] for p in record["speed"]["pairs"]]
        out["speed"] = {"tokens_per_second_ratio": summary(ratios),
                        **{f"{s}_tokens_per_second": summary(p[s]["tokens_per_second"]
                                                             for p in record["speed"]["pairs"]) for s in SIDES}}
    if "profile" in record:
        out["profile_ms_per_step"] = {s: {kind: {ph: statistics.median(p[s][kind][ph]
                                                                        for p in record["profile"]["pairs"])
                                                 for ph in PHASES + ("total",)} for kind in ("wall_ms", "cpu_ms")}
                                      for s in SIDES}
    if "trainer_profile" in record:
        out["trainer_profile_ms_per_step"] = {
            name: {kind: {ph: statistics.median(p[name][kind][ph] for p in record["trainer_profile"]["pairs"])
                          for ph in PHASES + ("total",)} for kind in ("wall_ms", "cpu_ms")}
            for name in ("before", "after")}
    if "budget" in record:
        out["budget"] = {"seconds": record["budget"]["seconds"],
                         "accuracy": summary(r["final_accuracy"] for r in record["budget"]["runs"]),
                         "steps": summary(r["steps"] for r in record["budget"]["runs"])}
    if "budget_sweep" in record:
        bs = record["budget_sweep"]
        out["budget_sweep"] = {"seconds": bs["seconds"], "grid": budget_table(bs)}
        if "confirm" in bs:
            out["budget_sweep"] |= {"recipe": bs["recipe"], "confirm": {
                "accuracy": summary(r["final_accuracy"] for r in bs["confirm"]),
                "steps": summary(r["steps"] for r in bs["confirm"])}}
    return out


def machine() -> dict:
    import transformers
    import trl
    return {"cpu_cores": os.cpu_count(), "torch_threads": THREADS, "platform": platform.platform(),
            "cpu_capability": torch.backends.cpu.get_cpu_capability(), "python": platform.python_version(),
            "torch": torch.__version__, "transformers": transformers.__version__, "trl": trl.__version__,
            "device": DEVICE, "gpu": torch.cuda.get_device_name(0) if DEVICE == "cuda" else None}


def main():
    global DEVICE, RECORD, SEEDS, THREADS, TRAINER
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--parts", nargs="+", default=["sweep", "best", "speed", "profile", "budget"],
                        choices=["sweep", "best", "speed", "profile", "trainer-profile", "budget", "budget-sweep"])
    parser.add_argument("--before", default="HEAD", help="git revision whose library trainer-profile compares")
    parser.add_argument("--seeds", type=int, nargs="+", default=list(SEEDS))
    parser.add_argument("--sides", nargs="+", default=list(SIDES), choices=list(SIDES), help="for the sweep")
    parser.add_argument("--speed-steps", type=int, default=60)
    parser.add_argument("--pairs", type=int, default=3, help="interleaved pairs in speed and profile")
    parser.add_argument("--profile-steps", type=int, default=20)
    parser.add_argument("--budget", type=float, default=30.0, help="rl4llm training seconds in budget")
    parser.add_argument("--record", type=Path, default=RECORD)
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--threads", type=int, default=THREADS,
                        help="CPU threads a side (the record's runs: 1; write other counts to another --record)")
    parser.add_argument("--trainer", choices=list(TRAINERS), default=TRAINER,
                        help="rl4llm's side: the fast trainer or chapter 15's plain one")
    args = parser.parse_args()
    DEVICE, RECORD, SEEDS, THREADS, TRAINER = args.device, args.record, tuple(args.seeds), args.threads, args.trainer
    record = json.loads(RECORD.read_text()) if RECORD.exists() else {}
    record = {"sweep": [], **record, "machine": machine(),
              "constants": {"target": TARGET, "eval_every": EVAL_EVERY, "max_steps": MAX_STEPS,
                            "step_cap": STEP_CAP, "grid": GRID, "seeds": SEEDS, "speed_recipe": SPEED_RECIPE,
                            "group_size": 8, "warmup_steps": 20, "trainer": TRAINER}}
    task, warm = AdditionTask(seed=0), warm_start()
    print(f"warm start: held-out greedy accuracy {warm.accuracy:.4f}; {uptime()}", flush=True)
    if "sweep" in args.parts:
        sweep(record, warm, task, args.sides)
    if "best" in args.parts:
        best(record, warm, task)
    if "speed" in args.parts:
        speed(record, warm, task, args.speed_steps, args.pairs)
    if "profile" in args.parts:
        profile(record, warm, task, args.profile_steps, args.pairs)
    if "trainer-profile" in args.parts:
        trainer_profile(record, args.before, args.profile_steps, args.pairs)
    if "budget" in args.parts:
        budget(record, warm, task, args.budget)
    if "budget-sweep" in args.parts:
        budget_sweep(record, warm, task, args.budget)
    save(record)
    print(json.dumps(record["summary"]))


if __name__ == "__main__":
    main()
