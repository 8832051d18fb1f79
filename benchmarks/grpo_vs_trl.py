"""rl4llm's GRPO trainer against TRL's GRPOTrainer, on equal terms, on the task of chapter 15.

    python benchmarks/grpo_vs_trl.py [--seeds 0 1 2] [--budget 60] [--threads N] [--max-steps 1000] [--device cpu]

Both sides start from the same warm start (the checkpoint shipped with rl4llm, bitwise the same on
every machine), the same tiny GPT-2-shaped model (about 100k parameters; its weights are copied into
transformers' GPT2LMHeadModel for TRL), the same fixed-width prompts and the same verifier.
Held-out greedy accuracy (500 prompts, never trained on in either order) is measured by the same
function for both every ``EVAL_EVERY`` steps, outside both clocks: a clock runs only from the start
to the end of each training step (sampling, scoring, loss, backward, optimizer). Every figure is
given for each seed, with the median and min-max over seeds. Four comparisons:

(a) **each tuned**: seconds of training to 0.64 held-out accuracy, each trainer with its own recipe:
    TRL as tuned for this task (32 prompts x 8, lr 3e-4, 20 warmup steps, fp32, no activation
    checkpointing, its other defaults: ``loss_type="dapo"``, sample std, flat groups kept, linear
    decay over ``--max-steps``); rl4llm with the chapter's (64 x 8, lr 1e-3, ``grpo``, population
    std, flat groups dropped, linear decay over ``--max-steps``).
(b) **the same recipe**: TRL's tuned recipe for both, translated for rl4llm by
    ``rl4llm.trl_knobs.trl_config_kwargs`` (same prompts x G, lr, warmup and decay, ``dapo``, std
    scaling, flat groups kept, fp32, torch AdamW): sampled tokens per second and seconds to 0.64. What
    still differs: TRL's std is the sample std plus 1e-4, the book's the population std plus 1e-8.
(c) tokens per second for both over the same window, from the warm start to the target, in (a).
(d) rl4llm's accuracy after ``--budget`` seconds of training, with a step budget so large that the
    time budget always ends first (checked: ``rl4llm_step_budget_ended_first`` must be false).

Then one profiled run per trainer at the same recipe splits the time of a step into sampling (with
scoring and advantages), forward + loss, backward, optimizer, and the rest (Python and framework
overhead). The LAST line printed is one JSON object with every figure and the machine.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import statistics
import tempfile
import time
import warnings
from dataclasses import asdict, replace

import numpy as np
import torch

from rl4llm.evaluation import greedy_accuracy
from rl4llm.model import from_gpt2
from rl4llm.tasks import MAX_COMPLETION_LEN, AdditionTask
from rl4llm.trainer import GRPOConfig, GRPOTrainer, torch_threads
from rl4llm.trl_knobs import trl_config_kwargs
from rl4llm.trl_run import trl_grpo_trainer
from rl4llm.warmstart import warm_start

TARGET = 0.64
EVAL_EVERY = 10
PHASES = ("sampling", "forward_and_loss", "backward", "optimizer", "other")


DEVICE = "cpu"      # --device sets it: "cpu" or "cuda"


def rl4llm_tuned(seed: int, threads: int, steps: int) -> GRPOConfig:
    """rl4llm's own recipe: the chapter's settings, decaying over ``steps``."""
    return GRPOConfig(seed=seed, steps=steps, prompts_per_step=64, group_size=8, lr=1e-3, warmup_steps=20,
                      anneal_lr=True, drop_zero_variance=True, log_kl=False, eval_every=EVAL_EVERY,
                      num_threads=threads, device=DEVICE)


def same_recipe(seed: int, threads: int, steps: int) -> GRPOConfig:
    """TRL's tuned recipe, as an rl4llm config (translated back to TRL by ``trl_config_kwargs``)."""
    return GRPOConfig(seed=seed, steps=steps, prompts_per_step=32, group_size=8, lr=3e-4, warmup_steps=20,
                      anneal_lr=True, loss_type="dapo", scale_rewards=True, drop_zero_variance=False,
                      log_kl=False, eval_every=EVAL_EVERY, num_threads=threads, device=DEVICE)


def trl_tuned_kwargs(seed: int, steps: int) -> dict:
    """TRL as tuned for this task: its defaults but for batch, lr, warmup, fp32, no checkpointing."""
    return {"per_device_train_batch_size": 32 * 8, "num_generations": 8, "learning_rate": 3e-4,
            "warmup_steps": 20, "max_steps": steps, "bf16": False, "activation_checkpointing": False,
            "seed": seed, "use_cpu": DEVICE == "cpu", "temperature": 1.0,
            "max_completion_length": MAX_COMPLETION_LEN}


def summary(values: list) -> dict:
    """Median, min and max of the values that are not None (None if any is None: a seed missed)."""
    if not values or any(v is None for v in values):
        return {"median": None, "min": None, "max": None}
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def at_target(evals: dict, tokens_before: list) -> tuple:
    """(training seconds, sampled tokens) at the first evaluation at or above TARGET, or (None, None)."""
    for step, accuracy, seconds in zip(evals["step"], evals["accuracy"], evals["train_seconds"]):
        if accuracy >= TARGET:
            return seconds, tokens_before[step]
    return None, None


# ---- rl4llm ------------------------------------------------------------------------------------
def run_rl4llm(warm, task, config: GRPOConfig, *, stop_at_target: bool, budget: float | None = None) -> dict:
    trainer = GRPOTrainer(warm.model, task, config)
    with torch_threads(config.num_threads):
        trainer.evaluate()
        while trainer.step_count < config.steps:
            trainer.step()
            if trainer.step_count % EVAL_EVERY == 0 or trainer.step_count == config.steps:
                if trainer.evaluate() >= TARGET and stop_at_target:
                    break
            if budget is not None and trainer.train_seconds >= budget:
                trainer.evaluate()
                break
    tokens = np.concatenate([[0], np.cumsum(trainer.metrics["tokens"])]).tolist()
    seconds, window_tokens = at_target(trainer.evals, tokens)
    label = f"rl4llm seed {config.seed} ({'budget' if budget else 'to target'})"
    print(f"  {label}: {trainer.step_count} steps, {trainer.train_seconds:.1f} s, accuracy "
          f"{trainer.evals['accuracy'][-1]:.3f}, to {TARGET}: {seconds and round(seconds, 2)} s", flush=True)
    return {"seconds_to_target": seconds, "final_accuracy": trainer.evals["accuracy"][-1],
            "steps": trainer.step_count, "train_seconds": trainer.train_seconds,
            "tokens_per_second": tokens[-1] / trainer.train_seconds,
            "window_tokens_per_second": window_tokens / seconds if seconds else None}


@contextlib.contextmanager
def phase_timers(targets: dict, clock: dict):
    """Wrap ``{(owner, attribute): phase}`` so that each call adds its wall time to ``clock[phase]``."""
    saved = {}
    for (owner, attribute), phase in targets.items():
        original = getattr(owner, attribute)
        saved[(owner, attribute)] = original

        def timed(*args, _original=original, _phase=phase, **kwargs):
            start = time.perf_counter()
            try:
                return _original(*args, **kwargs)
            finally:
                clock[_phase] += time.perf_counter() - start
        setattr(owner, attribute, timed)
    try:
        yield
    finally:
        for (owner, attribute), original in saved.items():
            setattr(owner, attribute, original)


def profile_rl4llm(warm, task, config: GRPOConfig, steps: int) -> dict:
    """Milliseconds per step in each phase, over ``steps`` steps after 5 warm-up steps."""
    import rl4llm.trainer as module
    trainer = GRPOTrainer(warm.model, task, config)
    clock = dict.fromkeys(PHASES, 0.0)
    with torch_threads(config.num_threads):
        for _ in range(5):
            trainer.step()
        start = time.perf_counter()
        with phase_timers({(module, "sample"): "sampling", (module, "completion_logprobs"): "forward_and_loss",
                           (module, "grpo_loss"): "forward_and_loss", (torch.autograd, "backward"): "backward",
                           (trainer.optimizer, "step"): "optimizer"}, clock):
            for _ in range(steps):
                trainer.step()
        total = time.perf_counter() - start
    clock["other"] = total - sum(clock.values())
    return {phase: 1000 * seconds / steps for phase, seconds in clock.items()} | {"total": 1000 * total / steps}


# ---- TRL -----------------------------------------------------------------------------------------
def trl_trainer(warm, task, trl_kwargs: dict, counter: dict, callbacks: list, workdir: str):
    """TRL's GRPOTrainer on the task from the warm start (rl4llm.trl_run), logging off."""
    return trl_grpo_trainer(warm.model, task, trl_kwargs, output_dir=workdir, callbacks=callbacks,
                            counter=counter, logging_steps=10_000)


def run_trl(warm, task, trl_kwargs: dict, threads: int, label: str) -> dict:
    from transformers import TrainerCallback

    counter = {"tokens": 0}

    class Clock(TrainerCallback):
        """Training wall time without evaluation; held-out accuracy every EVAL_EVERY steps; stop at TARGET."""

        def __init__(self):
            self.seconds, self._start = 0.0, None
            self.evals, self.tokens_before = {"step": [], "accuracy": [], "train_seconds": []}, {}

        def _evaluate(self, step, model):
            accuracy = greedy_accuracy(from_gpt2(model), task)
            for k, v in (("step", step), ("accuracy", accuracy), ("train_seconds", self.seconds)):
                self.evals[k].append(v)
            self.tokens_before[step] = counter["tokens"]
            return accuracy

        def on_train_begin(self, args, state, control, model=None, **kw):
            self._evaluate(0, model)

        def on_step_begin(self, args, state, control, **kw):
            self._start = time.perf_counter()

        def on_step_end(self, args, state, control, model=None, **kw):
            self.seconds += time.perf_counter() - self._start
            if state.global_step % EVAL_EVERY == 0 and self._evaluate(state.global_step, model) >= TARGET:
                control.should_training_stop = True

    clock = Clock()
    with tempfile.TemporaryDirectory() as workdir, torch_threads(threads), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trl_trainer(warm, task, trl_kwargs, counter, [clock], workdir).train()
    seconds, window_tokens = at_target(clock.evals, clock.tokens_before)
    steps = clock.evals["step"][-1]
    print(f"  TRL {label} seed {trl_kwargs['seed']}: {steps} steps, {clock.seconds:.1f} s, accuracy "
          f"{clock.evals['accuracy'][-1]:.3f}, to {TARGET}: {seconds and round(seconds, 2)} s", flush=True)
    return {"seconds_to_target": seconds, "final_accuracy": clock.evals["accuracy"][-1], "steps": steps,
            "train_seconds": clock.seconds, "tokens_per_second": counter["tokens"] / clock.seconds,
            "window_tokens_per_second": window_tokens / seconds if seconds else None}


def profile_trl(warm, task, trl_kwargs: dict, threads: int, steps: int) -> dict:
    """Milliseconds per step in each phase of TRL's step, over ``steps`` steps after 5 warm-up steps."""
    from transformers import TrainerCallback

    clock = dict.fromkeys(PHASES, 0.0)
    state = {"start": None, "total": 0.0, "opt": None}

    class Phases(TrainerCallback):
        def on_step_begin(self, args, st, control, **kw):
            state["start"] = time.perf_counter()

        def on_pre_optimizer_step(self, args, st, control, **kw):
            state["opt"] = time.perf_counter()

        def on_optimizer_step(self, args, st, control, **kw):
            if st.global_step >= 5:
                clock["optimizer"] += time.perf_counter() - state["opt"]

        def on_step_end(self, args, st, control, **kw):
            if st.global_step > 5:
                state["total"] += time.perf_counter() - state["start"]

    kwargs = {**trl_kwargs, "max_steps": steps + 5}
    with tempfile.TemporaryDirectory() as workdir, torch_threads(threads), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trainer = trl_trainer(warm, task, kwargs, {"tokens": 0}, [Phases()], workdir)
        timed = dict.fromkeys(PHASES, 0.0)
        targets = {(trainer, "_generate_and_score_completions"): "sampling",
                   (trainer, "compute_loss"): "forward_and_loss", (torch.autograd, "backward"): "backward"}
        with phase_timers(targets, timed):
            original_step = trainer.training_step

            def training_step(*args, **kw):
                before = dict(timed)
                out = original_step(*args, **kw)
                if trainer.state.global_step >= 5:
                    for phase in ("sampling", "forward_and_loss", "backward"):
                        clock[phase] += timed[phase] - before[phase]
                return out
            trainer.training_step = training_step
            trainer.train()
    clock["other"] = state["total"] - sum(clock.values())
    return {phase: 1000 * seconds / steps for phase, seconds in clock.items()} | {"total": 1000 * state["total"] / steps}


# ---- the four comparisons -------------------------------------------------------------------------
def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--budget", type=float, default=60.0, help="rl4llm training seconds for (d)")
    parser.add_argument("--threads", type=int, default=os.cpu_count(), help="CPU threads for both trainers")
    parser.add_argument("--max-steps", type=int, default=1000, help="step budget of (a) and (b) (lr decays over it)")
    parser.add_argument("--profile-steps", type=int, default=20)
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu", help="where both trainers run")
    args = parser.parse_args()
    global DEVICE
    DEVICE = args.device
    if len(args.seeds) < 1:
        parser.error("--seeds needs at least one seed")

    import transformers
    import trl

    task, warm = AdditionTask(seed=0), warm_start()
    print(f"warm start ({warm.source}): held-out greedy accuracy {warm.accuracy:.4f}, "
          f"{warm.model.num_parameters()} parameters; load average {os.getloadavg()[0]:.2f}", flush=True)
    load_before = os.getloadavg()
    S = args.seeds
    print("(a) each tuned, to the target", flush=True)
    a_ours = [run_rl4llm(warm, task, rl4llm_tuned(s, args.threads, args.max_steps), stop_at_target=True) for s in S]
    a_trl = [run_trl(warm, task, trl_tuned_kwargs(s, args.max_steps), args.threads, "tuned") for s in S]
    print("(b) the same recipe, to the target", flush=True)
    b_ours = [run_rl4llm(warm, task, same_recipe(s, args.threads, args.max_steps), stop_at_target=True) for s in S]
    b_trl = [run_trl(warm, task, trl_config_kwargs(same_recipe(s, args.threads, args.max_steps)), args.threads,
                     "same recipe") for s in S]
    print(f"(d) rl4llm, {args.budget:g} s of training", flush=True)
    big = 1_000_000
    d_ours = [run_rl4llm(warm, task, rl4llm_tuned(s, args.threads, big), stop_at_target=False, budget=args.budget)
              for s in S]
    print("profile: milliseconds per step, same recipe", flush=True)
    prof_ours = profile_rl4llm(warm, task, same_recipe(0, args.threads, big), args.profile_steps)
    prof_trl = profile_trl(warm, task, trl_config_kwargs(same_recipe(0, args.threads, big)), args.threads,
                           args.profile_steps)
    for name, prof in (("rl4llm", prof_ours), ("TRL", prof_trl)):
        print(f"  {name:<7}" + "  ".join(f"{k} {v:.1f}" for k, v in prof.items()), flush=True)

    per_seed = lambda runs, key: {str(s): r[key] for s, r in zip(S, runs)}
    med = lambda runs, key: summary([r[key] for r in runs])["median"]
    result = {
        "target_accuracy": TARGET, "seeds": S, "eval_every_steps": EVAL_EVERY,
        # (a)
        "rl4llm_seconds_to_target": med(a_ours, "seconds_to_target"),
        "trl_seconds_to_target": med(a_trl, "seconds_to_target"),
        "rl4llm_seconds_to_target_per_seed": per_seed(a_ours, "seconds_to_target"),
        "trl_seconds_to_target_per_seed": per_seed(a_trl, "seconds_to_target"),
        "rl4llm_seconds_to_target_range": summary([r["seconds_to_target"] for r in a_ours]),
        "trl_seconds_to_target_range": summary([r["seconds_to_target"] for r in a_trl]),
        # (b)
        "same_recipe_rl4llm_tokens_per_second": med(b_ours, "tokens_per_second"),
        "same_recipe_trl_tokens_per_second": med(b_trl, "tokens_per_second"),
        "same_recipe_rl4llm_tokens_per_second_per_seed": per_seed(b_ours, "tokens_per_second"),
        "same_recipe_trl_tokens_per_second_per_seed": per_seed(b_trl, "tokens_per_second"),
        "same_recipe_rl4llm_seconds_to_target": med(b_ours, "seconds_to_target"),
        "same_recipe_trl_seconds_to_target": med(b_trl, "seconds_to_target"),
        "same_recipe_rl4llm_seconds_to_target_per_seed": per_seed(b_ours, "seconds_to_target"),
        "same_recipe_trl_seconds_to_target_per_seed": per_seed(b_trl, "seconds_to_target"),
        # (c)
        "rl4llm_tokens_per_second": med(a_ours, "window_tokens_per_second"),
        "trl_tokens_per_second": med(a_trl, "window_tokens_per_second"),
        "rl4llm_tokens_per_second_per_seed": per_seed(a_ours, "window_tokens_per_second"),
        "trl_tokens_per_second_per_seed": per_seed(a_trl, "window_tokens_per_second"),
        # (d)
        "rl4llm_budget_seconds": args.budget,
        "rl4llm_accuracy_at_60s": med(d_ours, "final_accuracy"),
        "rl4llm_accuracy_at_60s_per_seed": per_seed(d_ours, "final_accuracy"),
        "rl4llm_accuracy_at_60s_range": summary([r["final_accuracy"] for r in d_ours]),
        "rl4llm_steps_in_budget_per_seed": per_seed(d_ours, "steps"),
        "rl4llm_step_budget_ended_first": any(r["steps"] >= big for r in d_ours),
        "profile_ms_per_step": {"rl4llm": prof_ours, "trl": prof_trl},
        "recipes": {"rl4llm_tuned": asdict(rl4llm_tuned(0, args.threads, args.max_steps)),
                    "trl_tuned": trl_tuned_kwargs(0, args.max_steps),
                    "same_recipe": trl_config_kwargs(same_recipe(0, args.threads, args.max_steps))},
        "warm_start_accuracy": warm.accuracy,
        "machine": {"cpu_cores": os.cpu_count(), "torch_threads": args.threads, "platform": platform.platform(),
                    "processor": platform.processor(), "cpu_capability": torch.backends.cpu.get_cpu_capability(),
                    "python": platform.python_version(), "torch": torch.__version__,
                    "transformers": transformers.__version__, "trl": trl.__version__,
                    "cuda": torch.cuda.is_available(), "load_average_before": load_before,
                    "load_average_after": os.getloadavg()},
    }
    a_r, a_t = result["rl4llm_seconds_to_target_per_seed"], result["trl_seconds_to_target_per_seed"]
    if None not in a_r.values() and None not in a_t.values():
        result["speedup_to_target"] = result["trl_seconds_to_target"] / result["rl4llm_seconds_to_target"]
        result["every_rl4llm_seed_faster_than_every_trl_seed"] = max(a_r.values()) < min(a_t.values())
    if result["same_recipe_trl_tokens_per_second"]:
        result["same_recipe_tokens_per_second_ratio"] = (result["same_recipe_rl4llm_tokens_per_second"]
                                                         / result["same_recipe_trl_tokens_per_second"])
    print(json.dumps(result))


if __name__ == "__main__":
    main()
