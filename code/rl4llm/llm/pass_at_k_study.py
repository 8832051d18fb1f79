"""pass@k over many prompts, and prompt pre-filtering by pass rate, on the tiny GPT (chapter 18).

pass@k of a prompt set is the mean over its prompts j of 1 - (1 - p_j)^k, p_j the chance that one
sampled answer to prompt j is right. Two routes measure it here:

- from samples: ``right_counts`` draws n answers per prompt and counts the right ones, c_j; the mean of
  Chen et al.'s unbiased 1 - C(n - c_j, k) / C(n, k) over prompts estimates pass@k for every k <= n
  (:func:`rl4llm.math.pass_at_k.pass_at_k_over_prompts`);
- exactly: on the addition task the verifier accepts few completions of at most ``max_new_tokens``
  tokens (the sum's digits after 0 or more leading zeros, then EOS, or no EOS when the digits fill every
  token), so ``exact_pass_rates`` sums their probabilities under the model, p_j, with no sampling at all,
  and pass@k follows for every k, far beyond n.

Pre-filtering (DAPO's and ScaleRL's zero-variance filtering done once, offline): ``prefilter`` samples n
answers of every training prompt under the warm start and keeps the prompts whose pass rate c_j / n is
neither 0 nor 1, as a task whose training split holds only those (``restricted_task``; the trainer is
untouched). ``prefilter_study`` trains it beside the plain run, the run that drops flat groups, and DAPO's
dynamic sampling (drop and refill, the trainer's ``refill_batches``), the runs on every prompt given as many
answers as the pre-filter and its steps cost.
"""
from __future__ import annotations

import copy
import math
import time
from dataclasses import dataclass, replace

import numpy as np
import torch

from .._checks import at_least, checked, in_range, seed_list
from .model import GPT, completion_logprobs, sample
from .tasks import MAX_COMPLETION_LEN, PROMPT_LEN, AdditionTask
from .trainer import GRPOConfig, GRPOTrainer, runs_bar, torch_threads


def _prompt_pairs(pairs, name: str) -> np.ndarray:
    """Rule: operand pairs shaped (N, 2), N >= 1 (the task's own check runs on them too)."""
    arr = np.asarray(pairs)
    if arr.ndim != 2 or arr.shape[1] != 2 or len(arr) == 0:
        raise ValueError(f"{name} must be operand pairs shaped (N, 2) with N >= 1, got shape {arr.shape}")
    return arr


_TEMPERATURE = in_range(0.0, math.inf, low_open=True, high_open=True)


@torch.no_grad()
@checked(pairs=_prompt_pairs, n=at_least(1), seed=at_least(0), temperature=_TEMPERATURE,
         max_new_tokens=at_least(1))
def right_counts(model: GPT, task: AdditionTask, pairs, n: int, *, seed: int, temperature: float = 1.0,
                 max_new_tokens: int = MAX_COMPLETION_LEN) -> np.ndarray:
    """c_j: how many of ``n`` answers sampled from ``model`` (at ``temperature``, seeded) for prompt j of
    ``pairs`` the verifier accepts (chapter 18). One CPU thread, so the draw is the same at any core count."""
    device = next(model.parameters()).device
    tok = task.tokenizer
    with torch_threads(1):
        rollout = sample(model, torch.as_tensor(task.prompt_ids(pairs), device=device), group_size=n,
                         max_new_tokens=max_new_tokens, eos_id=tok.eos_id, pad_id=tok.pad_id,
                         temperature=temperature, generator=torch.Generator(device=device).manual_seed(seed))
    rewards = task.rewards(np.repeat(pairs, n, axis=0), rollout.completions.cpu().numpy())
    return rewards.reshape(len(pairs), n).sum(axis=1).astype(np.int64)


def accepted_completions(total: int, max_new_tokens: int, task: AdditionTask) -> list[list[int]]:
    """Every completion of at most ``max_new_tokens`` tokens the verifier accepts for the sum ``total``,
    as token ids: the digits of ``total`` after z = 0, 1, ... leading zeros, then EOS, or without EOS when
    the digits take every one of the ``max_new_tokens`` tokens (the sampler stops there)."""
    tok, digits = task.tokenizer, str(total)
    return [tok.encode("0" * z + digits) + ([tok.eos_id] if z + len(digits) < max_new_tokens else [])
            for z in range(max_new_tokens - len(digits) + 1)]


@torch.no_grad()
@checked(pairs=_prompt_pairs, temperature=_TEMPERATURE, max_new_tokens=at_least(1))
def exact_pass_rates(model: GPT, task: AdditionTask, pairs, *, temperature: float = 1.0,
                     max_new_tokens: int = MAX_COMPLETION_LEN) -> np.ndarray:
    """p_j exactly: the probability that one answer sampled from ``model`` at ``temperature`` (at most
    ``max_new_tokens`` tokens) to prompt j of ``pairs`` is right, the sum over ``accepted_completions`` of
    prod_t pi(y_t | x, y_<t), from one teacher-forced pass (chapter 18)."""
    device = next(model.parameters()).device
    tok = task.tokenizer
    rows, owner, lengths = [], [], []
    for j, (prompt, total) in enumerate(zip(task.prompt_ids(pairs).tolist(), pairs.sum(axis=1).tolist())):
        for completion in accepted_completions(total, max_new_tokens, task):
            rows.append(prompt + completion + [tok.pad_id] * (max_new_tokens - len(completion)))
            owner.append(j)
            lengths.append(len(completion))
    with torch_threads(1):
        logp, _ = completion_logprobs(model, torch.as_tensor(rows, device=device), PROMPT_LEN, temperature)
    mask = np.arange(max_new_tokens)[None, :] < np.array(lengths)[:, None]
    chance = np.exp((logp.cpu().double().numpy() * mask).sum(axis=1))
    return np.bincount(owner, weights=chance, minlength=len(pairs))


def _training_prompts(args):
    """Relation: ``index`` picks training prompts of ``task``: a boolean mask over them, or indices into them."""
    index, n = np.asarray(args["index"]), len(args["task"].train_pairs)
    mask = index.dtype == bool and index.shape == (n,)
    indices = index.ndim == 1 and np.issubdtype(index.dtype, np.integer) and (index.size == 0 or (
        index.min() >= 0 and index.max() < n))
    if not (mask or indices):
        raise ValueError(f"index must be a boolean mask over the task's {n} training prompts or indices in "
                         f"[0, {n - 1}], got dtype {index.dtype} shape {index.shape}")
    args["index"] = index


@checked(_training_prompts)
def restricted_task(task: AdditionTask, index) -> AdditionTask:
    """A copy of ``task`` whose training split is ``task.train_pairs[index]`` (a boolean mask or indices);
    the held-out split is the same (chapter 18). The trainer draws its prompts from it as from any task. A
    checkpoint records only the task's seed and ``n_eval``, so a trainer loaded from one trains on the
    whole split again."""
    kept = copy.copy(task)
    kept.train_pairs, kept.train_prompt_ids = task.train_pairs[index], task.train_prompt_ids[index]
    return kept


@dataclass
class PreFilter:
    """A pre-filter's outcome: the ``task`` holding the kept training prompts, every pool prompt's right
    answers ``counts`` among ``n``, the ``kept`` mask (0 < c < n), the ``answers_sampled`` (n per pool
    prompt) and the pass's wall time in ``seconds``."""
    task: AdditionTask
    counts: np.ndarray
    n: int
    kept: np.ndarray
    answers_sampled: int
    seconds: float


@checked(n=at_least(2), seed=at_least(0))
def prefilter(model: GPT, task: AdditionTask, n: int, *, seed: int = 0) -> PreFilter:
    """Zero-variance prompt filtering, once, offline (chapter 18): sample ``n`` answers of every training
    prompt of ``task`` from ``model``, keep those with 0 < c_j < n (a group of n of them was not flat)."""
    start = time.perf_counter()
    counts = right_counts(model, task, task.train_pairs, n, seed=seed)
    kept = (counts > 0) & (counts < n)
    return PreFilter(restricted_task(task, kept), counts, n, kept, n * len(counts), time.perf_counter() - start)


def answers_per_step(config: GRPOConfig) -> int:
    """Answers one outer step samples: ``prompts_per_step`` groups of ``group_size``."""
    return config.prompts_per_step * config.group_size


#: The arms of :func:`prefilter_study`: each one's overrides of the base config and whether it trains on
#: the pre-filtered prompts. Dynamic sampling may draw 9 rounds beyond a step's first: verl's DAPO example's
#: ``max_num_gen_batches=10``.
PREFILTER_ARMS = {"plain": ({"drop_zero_variance": False}, False),
                  "drop flat groups": ({"drop_zero_variance": True}, False),
                  "pre-filtered": ({"drop_zero_variance": False}, True),
                  "dynamic sampling (refill)": ({"drop_zero_variance": True, "refill_batches": 9}, False)}


@checked(n_filter=at_least(2), seeds=seed_list(2, " (a spread needs two runs)"), filter_seed=at_least(0))
def prefilter_study(policy: GPT, task: AdditionTask, config: GRPOConfig, *, n_filter: int, seeds,
                    filter_seed: int = 0, progress: bool = True) -> dict:
    """The pre-filter beside the plain run, the run that drops flat groups and dynamic sampling, over ``seeds``
    (chapter 18).

    The pre-filter samples ``n_filter`` answers of each training prompt of ``task`` under ``policy`` (the
    warm start), once; the pre-filtered arm then trains ``config.steps`` steps on the kept prompts. The
    plain arm (every group in the loss) and the drop arm (flat groups left out of the loss: DAPO's filter
    without its refill) train on every prompt for ``config.steps`` plus the ceil(pre-filter's answers /
    answers a step) steps those answers would have bought, so they sample at least as many answers as the
    pre-filtered arm. The dynamic-sampling arm (drop and refill, :data:`PREFILTER_ARMS`) spends more answers
    a step, so it trains until it has sampled as many answers as the plain arm (``train(max_answers=...)``):
    fewer steps, and less than one step's rounds of answers beyond the plain arm's. Returns ``{"prefilter":
    PreFilter, "arms": {name: {"steps", "answers" (per seed; the pre-filter's answers counted in its arm),
    "accuracy" (final held-out greedy, per seed), "seconds" (training wall time, per seed; the pre-filter's
    pass counted in its arm), "flat_first", "flat_last" (mean share of flat groups among the groups sampled
    over the first and the last 5 steps, per seed), "rounds" (mean rounds of prompts a step, per seed),
    "policies"}}}``. ``progress`` shows one bar over the runs.
    """
    pre = prefilter(policy, task, n_filter, seed=filter_seed)
    extra = math.ceil(pre.answers_sampled / answers_per_step(config))
    budget = (config.steps + extra) * answers_per_step(config)          # the plain arm's answers
    arms = {}
    with runs_bar(len(PREFILTER_ARMS) * len(seeds), progress) as bar:
        for name, (overrides, filtered) in PREFILTER_ARMS.items():
            steps = config.steps if filtered else config.steps + extra
            max_answers = budget if overrides.get("refill_batches") else None
            runs = []
            for seed in seeds:
                trainer = GRPOTrainer(policy, pre.task if filtered else task,
                                      replace(config, **overrides, steps=steps, seed=seed, eval_every=steps))
                runs.append(trainer.train(progress=False, max_answers=max_answers))
                bar.update()
            flat = [run.metrics["frac_reward_zero_std"] for run in runs]
            arms[name] = {"steps": np.array([run.step_count for run in runs]),
                          "answers": np.array([sum(run.metrics["answers"]) for run in runs])
                          + (pre.answers_sampled if filtered else 0),
                          "rounds": np.array([np.mean(run.metrics["num_gen_batches"]) for run in runs]),
                          "accuracy": np.array([run.evals["accuracy"][-1] for run in runs]),
                          "seconds": np.array([run.train_seconds + (pre.seconds if filtered else 0.0) for run in runs]),
                          "flat_first": np.array([np.mean(f[:5]) for f in flat]),
                          "flat_last": np.array([np.mean(f[-5:]) for f in flat]),
                          "policies": [run.policy for run in runs]}
    return {"prefilter": pre, "arms": arms}
