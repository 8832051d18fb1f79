"""The GRPO trainer of chapter 15: the text's loop, for real, on the tiny GPT.

One outer step (:meth:`GRPOTrainer.step`) is the text's loop body in two halves, each a method the
chapter shows beside the pseudocode:

:meth:`GRPOTrainer.rollout` -> :class:`Batch`
    1. pick ``prompts_per_step`` training prompts;
    2. freeze pi_old and sample G completions of each (:func:`rl4llm.model.sample`, no gradient):
       the sampler records log pi_old of every drawn token, which is all GRPO needs of pi_old;
    3. score them with the verifier (:meth:`rl4llm.tasks.AdditionTask.rewards`);
    4. group advantages A_i = (r_i - mean) / (std + eps) (:func:`rl4llm.grpo.group_advantages`),
       and optionally drop the flat groups (all rewards equal: zero advantage, nothing to learn).
:meth:`GRPOTrainer.update` -> stats
    5. K inner steps of AdamW on :func:`rl4llm.grpo.grpo_loss` (clipped ratio, optional beta k3 KL
       to the frozen warm start), each with gradient clipping.

Hyperparameters live in :class:`GRPOConfig`, CleanRL-style. The trainer is seeded and
deterministic on a given CPU, logs the diagnostics practitioners watch, and saves checkpoints from
which a resumed run reproduces the uninterrupted one exactly. Held-out evaluation lives in
:mod:`rl4llm.evaluation`.
"""
from __future__ import annotations

import copy
import math
import os
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass

import numpy as np
import torch

from ._checks import (at_least, check_fields, clip_range, eps_pair, in_range, integer_at_least, one_of,
                      positive_real)
from .grpo import IMPORTANCE_SAMPLING_LEVELS, group_advantages, grpo_loss
from .loss_types import LOSS_TYPES
from .evaluation import greedy_accuracy
from .model import GPT, GPTConfig, Rollout, completion_logprobs, sample
from .tasks import MAX_COMPLETION_LEN, PROMPT_LEN, AdditionTask


@dataclass
class GRPOConfig:
    """Every knob of a GRPO run (chapter 15). Defaults: the chapter's CPU run."""
    seed: int = 0
    steps: int = 200                # outer steps: sample, score, K inner updates
    prompts_per_step: int = 64      # prompts per outer step
    group_size: int = 8             # G, completions per prompt
    inner_steps: int = 1            # K, gradient steps on each sampled batch
    lr: float = 1e-3
    warmup_steps: int = 20          # linear warmup of the learning rate over this many outer steps (the K
                                    # updates of one outer step share its lr), then constant
    anneal_lr: bool = False         # after warmup, decay the learning rate linearly to 0 at outer step `steps`
    weight_decay: float = 0.0
    grad_clip: float = 1.0          # max global gradient norm
    eps_low: float = 0.2            # clip range [1 - eps_low, 1 + eps_high]
    eps_high: float | None = None   # None: eps_low
    beta: float = 0.0               # weight of the k3 KL to the frozen warm start
    loss_type: str = "grpo"         # aggregation, see rl4llm.grpo.grpo_loss
    scale_rewards: bool = True      # divide by the group std (False: Dr. GRPO's r - mean)
    drop_zero_variance: bool = False  # leave groups with equal rewards out of the loss batch
    temperature: float = 1.0
    max_new_tokens: int = MAX_COMPLETION_LEN
    eval_every: int = 25            # held-out greedy accuracy every n outer steps (and at the ends)
    log_kl: bool = True             # measure the KL to the warm start every step (costs a forward pass)
    device: str = "auto"            # "auto": CUDA when available, else CPU
    num_threads: int = 1            # CPU threads while training (results are reproducible at a fixed count)

    importance_sampling_level: str = "token"   # "sequence": GSPO's one ratio per sequence, see grpo_loss

    def __post_init__(self):
        check_fields(self, CONFIG_RULES, clip_range())

    def loss_options(self) -> dict:
        """The keywords of :func:`rl4llm.grpo.grpo_loss` this run trains with (eps_high filled in)."""
        eps_low, eps_high = eps_pair(self.eps_low, self.eps_high)
        return {"eps_low": eps_low, "eps_high": eps_high, "beta": self.beta, "loss_type": self.loss_type,
                "max_completion_length": self.max_new_tokens,
                "importance_sampling_level": self.importance_sampling_level}


def _group_size(G, name):
    if isinstance(G, bool) or not isinstance(G, int) or G < 2:
        raise ValueError(f"{name} (G) must be an integer >= 2 (a group of one has no spread to learn from), "
                         f"got {G!r}")
    return G


def _max_new_tokens(n, name):
    if isinstance(n, bool) or not isinstance(n, int) or n < MAX_COMPLETION_LEN:
        raise ValueError(f"{name} must be an integer >= {MAX_COMPLETION_LEN} (the longest answer, "
                         f"'198' and EOS), got {n!r}")
    return n


def _device(device, name):
    if device not in ("auto", "cpu", "cuda") and not str(device).startswith("cuda:"):
        raise ValueError(f"{name} must be 'auto', 'cpu' or 'cuda[:i]', got {device!r}")
    return device


#: Each knob of :class:`GRPOConfig` and its valid range, checked when a config is made.
CONFIG_RULES = {
    "seed": at_least(0), "steps": at_least(0), "prompts_per_step": at_least(1), "group_size": _group_size,
    "inner_steps": at_least(1), "lr": positive_real, "warmup_steps": at_least(0),
    "weight_decay": in_range(0.0, math.inf, high_open=True), "grad_clip": positive_real,
    "beta": in_range(0.0, math.inf, high_open=True), "loss_type": one_of(LOSS_TYPES),
    "temperature": in_range(0.0, math.inf, low_open=True, high_open=True), "max_new_tokens": _max_new_tokens,
    "eval_every": at_least(1), "num_threads": at_least(1), "device": _device,
    "importance_sampling_level": one_of(IMPORTANCE_SAMPLING_LEVELS),
}


def chapter15_config() -> GRPOConfig:
    """The configuration of chapter 15's run, defined once: chapter 15 trains with it and chapter 16's
    knob table shows it. It differs from the defaults of :class:`GRPOConfig` in three knobs: 300
    steps, the learning rate annealed to 0 after warmup, and flat groups left out of the loss batch."""
    return GRPOConfig(seed=0, steps=300, eval_every=25, anneal_lr=True, drop_zero_variance=True)


@contextmanager
def torch_threads(n: int):
    """Run a block with ``n`` intra-op CPU threads, then restore the previous count.

    The backward pass sums over the batch in an order that depends on the thread count, so a run
    is bitwise reproducible only at a fixed count: every training run fixes its own.
    """
    previous = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


def resolve_device(device: str) -> torch.device:
    """``"auto"`` is CUDA when available, else CPU."""
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


@dataclass
class Batch:
    """What one rollout hands to the update (chapter 15): the sampled batch, scored, with advantages.

    ``rollout`` holds every sampled completion; ``rewards`` (N, G) their verifier scores. ``keep`` marks
    the rows the loss sees (all, or only the informative groups' when flat groups are dropped);
    ``advantages`` are those rows' advantages, and ``ref_logp`` their log-probs under the frozen
    reference (None when neither ``beta`` nor ``log_kl`` needs it).
    """
    rollout: Rollout
    rewards: torch.Tensor
    informative: torch.Tensor
    keep: torch.Tensor
    advantages: torch.Tensor
    ref_logp: torch.Tensor | None

    @property
    def tokens(self) -> torch.Tensor:
        return self.rollout.tokens[self.keep]

    @property
    def old_logp(self) -> torch.Tensor:
        return self.rollout.logp[self.keep]

    @property
    def mask(self) -> torch.Tensor:
        return self.rollout.mask[self.keep]


#: What :meth:`GRPOTrainer.update` reports, and every metric logged per outer step.
UPDATE_METRICS = ("loss", "grad_norm", "clip_fraction", "ratio", "entropy", "kl")
METRICS = ("step", "reward", "entropy", "kl", "clip_fraction", "ratio", "completion_length",
           "zero_variance_share", "loss", "grad_norm", "tokens", "seconds")


class GRPOTrainer:
    """GRPO from a warm-started policy (chapter 15). ``train()`` runs ``config.steps`` outer steps.

    ``metrics`` holds one value per outer step for each of: ``step``, ``reward`` (mean sampled
    reward), ``entropy`` (mean per-token entropy of the policy on the loss batch), ``kl`` (mean k3 KL
    to the warm start on the loss batch; NaN when not measured), ``clip_fraction`` (mean over the K
    inner steps; each step's K values are in ``clip_fraction_per_inner_step``),
    ``ratio``, ``completion_length``, ``zero_variance_share``, ``loss``, ``grad_norm``, ``tokens``
    (sampled tokens) and ``seconds`` (wall time of the step). ``evals`` holds ``step``,
    ``accuracy`` (held-out greedy) and ``train_seconds`` (training wall time so far, evaluation
    excluded), at step 0, every ``eval_every`` steps and at the end.
    """

    METRICS = METRICS

    def __init__(self, policy: GPT, task: AdditionTask, config: GRPOConfig | None = None):
        self.config = cfg = config if config is not None else GRPOConfig()
        if PROMPT_LEN + cfg.max_new_tokens > policy.config.block_size:
            raise ValueError(f"max_new_tokens must be at most {policy.config.block_size - PROMPT_LEN} for this "
                             f"model: a {PROMPT_LEN}-token prompt plus max_new_tokens must fit its block_size="
                             f"{policy.config.block_size}, got max_new_tokens={cfg.max_new_tokens}")
        self.task = task
        self.device = resolve_device(cfg.device)
        self.policy = copy.deepcopy(policy).to(self.device)       # trained; the caller's model is left as it was
        self.reference = copy.deepcopy(self.policy).requires_grad_(False)   # pi_ref: the frozen warm start
        self.optimizer = torch.optim.AdamW(self.policy.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay,
                                           foreach=True)
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(self.optimizer, self._lr_factor)
        self.loss_options = cfg.loss_options()
        self.prompt_generator = torch.Generator().manual_seed(cfg.seed)
        self.sample_generator = torch.Generator(device=self.device).manual_seed(cfg.seed + 1)
        self.train_prompts = torch.as_tensor(task.train_prompt_ids, device=self.device)
        self.step_count = 0
        self.train_seconds = 0.0
        self.metrics = {k: [] for k in self.METRICS}
        self.clip_fraction_per_inner_step: list[list[float]] = []     # one list of K values per outer step
        self.evals = {"step": [], "accuracy": [], "train_seconds": []}

    def _lr_factor(self, updates: int) -> float:
        """lr multiplier after ``updates`` scheduler steps: linear warmup, then 1 or a linear decay to 0."""
        cfg = self.config
        factor = min(1.0, (updates + 1) / cfg.warmup_steps) if cfg.warmup_steps else 1.0
        if cfg.anneal_lr:
            factor *= max(0.0, 1.0 - updates / max(cfg.steps, 1))
        return factor

    def evaluate(self) -> float:
        accuracy = greedy_accuracy(self.policy, self.task)
        for key, value in (("step", self.step_count), ("accuracy", accuracy), ("train_seconds", self.train_seconds)):
            self.evals[key].append(value)
        return accuracy

    def rollout(self) -> Batch:
        """Steps 1-4 of the text's loop: prompts, G samples of each, rewards, advantages."""
        cfg, task, tok = self.config, self.task, self.task.tokenizer
        G = cfg.group_size
        chosen = torch.randint(len(task.train_pairs), (cfg.prompts_per_step,),
                               generator=self.prompt_generator)
        prompts = self.train_prompts[chosen.to(self.device)]
        try:    # pi_old = freeze(pi_theta): no gradients; the sampler records log pi_old
            rollout = sample(self.policy, prompts, group_size=G,
                             max_new_tokens=cfg.max_new_tokens, temperature=cfg.temperature,
                             eos_id=tok.eos_id, pad_id=tok.pad_id,
                             generator=self.sample_generator)
        except FloatingPointError as err:
            raise FloatingPointError(f"GRPO step {self.step_count + 1} (sampling): {err}; "
                                     f"training stopped") from err
        pairs = np.repeat(task.train_pairs[chosen.numpy()], G, axis=0)
        scores = task.rewards(pairs, rollout.completions.cpu().numpy())
        rewards = torch.as_tensor(scores, dtype=torch.float32, device=self.device)
        rewards = rewards.view(-1, G)
        advantages = group_advantages(rewards, scale=cfg.scale_rewards).view(-1)
        informative = (rewards.amax(dim=1) > rewards.amin(dim=1)).repeat_interleave(G)
        keep = informative if cfg.drop_zero_variance else torch.ones_like(informative)
        ref_logp = None
        if (cfg.beta > 0 or cfg.log_kl) and bool(keep.any()):
            with torch.no_grad():
                ref_logp, _ = completion_logprobs(self.reference, rollout.tokens[keep],
                                                  rollout.prompt_len, cfg.temperature, G)
        return Batch(rollout, rewards, informative, keep, advantages[keep], ref_logp)

    def update(self, batch: Batch) -> dict:
        """Step 5: K clipped inner steps on the same batch. Returns the diagnostics: the K steps' mean
        loss, gradient norm, clip fraction and ratio; entropy and KL before the first step."""
        if not len(batch.tokens):     # every group was flat and dropped: nothing to learn from
            return dict.fromkeys(UPDATE_METRICS, math.nan) | {"clip_fraction_per_inner_step": []}
        inner = [self.inner_step(batch, k) for k in range(self.config.inner_steps)]
        self.scheduler.step()
        means = {key: float(np.mean([s[key] for s in inner]))
                 for key in ("loss", "grad_norm", "clip_fraction", "ratio")}
        return means | {"entropy": inner[0]["entropy"], "kl": inner[0]["kl"],
                        "clip_fraction_per_inner_step": [s["clip_fraction"] for s in inner]}

    def inner_step(self, batch: Batch, k: int) -> dict:
        """Inner step k: AdamW on ``grpo_loss`` (options checked once, by the config), gradient clipped."""
        cfg, mask = self.config, batch.mask
        logp, entropy = completion_logprobs(self.policy, batch.tokens, batch.rollout.prompt_len,
                                            cfg.temperature, cfg.group_size)          # (N, T) each
        loss, stats = grpo_loss.unchecked(logp, batch.old_logp, batch.advantages, mask,
                                          ref_logp=batch.ref_logp, **self.loss_options)
        self._check_finite(loss, "loss", k)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(self.policy.parameters(), cfg.grad_clip)
        self._check_finite(grad_norm, "gradient norm", k)
        self.optimizer.step()
        return {"loss": float(loss.detach()), "grad_norm": float(grad_norm),
                "clip_fraction": stats["clip_fraction"], "ratio": stats["mean_ratio"],
                "entropy": float((entropy * mask).sum() / mask.sum()),
                "kl": stats["mean_kl"] if batch.ref_logp is not None else math.nan}

    def step(self) -> dict:
        """One outer GRPO step: ``update(rollout())``, timed and logged. Returns its metrics."""
        start = time.perf_counter()
        batch = self.rollout()
        stats = self.update(batch)
        self.step_count += 1
        elapsed = time.perf_counter() - start
        self.train_seconds += elapsed
        measured = {"step": self.step_count, "reward": float(batch.rewards.mean()),
                    "completion_length": float(batch.rollout.mask.sum(dim=1).mean()),
                    "zero_variance_share": float(1.0 - batch.informative.float().mean()),
                    "tokens": int(batch.rollout.mask.sum()), "seconds": elapsed}
        row = {key: measured[key] if key in measured else stats[key] for key in METRICS}
        for key, value in row.items():
            self.metrics[key].append(value)
        self.clip_fraction_per_inner_step.append(stats["clip_fraction_per_inner_step"])
        return row

    def _check_finite(self, value: torch.Tensor, quantity: str, inner_step: int) -> None:
        if not bool(torch.isfinite(value)):
            raise FloatingPointError(f"GRPO step {self.step_count + 1} (inner step {inner_step + 1}): the "
                                     f"{quantity} is {float(value.detach())}; training stopped before the update")

    def train(self, steps: int | None = None, *, progress: bool = True, checkpoint_path: str | None = None,
              checkpoint_every: int | None = None, max_seconds: float | None = None) -> "GRPOTrainer":
        """Run ``steps`` more outer steps (default: those left to ``config.steps``, so a resumed run ends
        where the uninterrupted one does), evaluating every ``eval_every``.

        ``max_seconds`` stops earlier, once ``train_seconds`` (training wall time, evaluation excluded)
        reaches it; the last step is then evaluated (the benchmark's "accuracy after 60 s").

        With ``checkpoint_path`` a checkpoint is written every ``checkpoint_every`` steps and at the
        end; a step that produces a NaN or inf raises ``FloatingPointError`` before any checkpoint
        of that state is written.
        """
        from tqdm.auto import tqdm

        steps = max(self.config.steps - self.step_count, 0) if steps is None else integer_at_least(steps, "steps", 0)
        if checkpoint_every is not None:
            integer_at_least(checkpoint_every, "checkpoint_every", 1)
        if max_seconds is not None:
            positive_real(max_seconds, "max_seconds")
        with torch_threads(self.config.num_threads), \
                tqdm(total=steps, desc="GRPO", disable=not progress, leave=True) as bar:
            if not self.evals["step"]:
                self.evaluate()
            for i in range(steps):
                row = self.step()
                out_of_time = max_seconds is not None and self.train_seconds >= max_seconds
                if (self.step_count % self.config.eval_every == 0 or i == steps - 1 or out_of_time) \
                        and self.evals["step"][-1] != self.step_count:
                    self.evaluate()
                bar.set_postfix(reward=f"{row['reward']:.3f}", acc=f"{self.evals['accuracy'][-1]:.3f}")
                bar.update()
                if checkpoint_path and (i == steps - 1 or out_of_time
                                        or (checkpoint_every and self.step_count % checkpoint_every == 0)):
                    self.save(checkpoint_path)
                if out_of_time:
                    break
        return self

    # ---- checkpoints -------------------------------------------------------------------------
    def state_dict(self) -> dict:
        return {"config": asdict(self.config), "model_config": asdict(self.policy.config),
                "task": {"seed": self.task.seed, "n_eval": self.task.n_eval},
                "policy": self.policy.state_dict(), "reference": self.reference.state_dict(),
                "optimizer": self.optimizer.state_dict(), "scheduler": self.scheduler.state_dict(),
                "prompt_generator": self.prompt_generator.get_state(),
                "sample_generator": self.sample_generator.get_state(),
                "sample_generator_device": self.device.type,
                # the global generators: the trainer draws from its own two, but a caller's code may not
                "torch_rng_state": torch.get_rng_state(),
                "cuda_rng_states": torch.cuda.get_rng_state_all() if self.device.type == "cuda" else [],
                "step_count": self.step_count, "train_seconds": self.train_seconds,
                "metrics": self.metrics, "evals": self.evals,
                "clip_fraction_per_inner_step": self.clip_fraction_per_inner_step}

    def save(self, path: str) -> None:
        """Write a checkpoint atomically; refuses (FloatingPointError) if any weight is NaN or inf."""
        for name, p in self.policy.named_parameters():
            if not bool(torch.isfinite(p).all()):
                raise FloatingPointError(f"refusing to save a checkpoint at step {self.step_count}: "
                                         f"parameter {name} is not finite")
        tmp = f"{path}.tmp"
        torch.save(self.state_dict(), tmp)
        os.replace(tmp, path)

    @classmethod
    def load(cls, path: str, device: str | None = None) -> "GRPOTrainer":
        """Rebuild a trainer from ``save`` on ``device`` (default: the saved config's), any device.

        Restored: weights, the frozen reference, AdamW's moments and step counts, the learning-rate
        schedule's position, both of the trainer's generators (prompts, sampling), the global torch
        generators (CPU, and CUDA on a CUDA device), the step count and every logged metric. On the
        device type it was saved from, continuing it therefore reproduces the uninterrupted run
        bitwise: on a CPU always (at the config's fixed thread count), on CUDA when torch runs its
        deterministic kernels (``torch.use_deterministic_algorithms(True)`` with
        ``CUBLAS_WORKSPACE_CONFIG=:4096:8``), since by default some CUDA kernels, such as the
        ``index_add`` behind the gradient of ``repeat_interleave``, add in a varying order and two
        uninterrupted CUDA runs can already differ in their last bits. CPU and CUDA random
        generators are different algorithms, so a run moved between them cannot continue the same
        sampling stream: its sampler is then reseeded from (seed, step) and the continuation is a
        valid run, not the same one.
        """
        state = torch.load(path, map_location="cpu", weights_only=True)
        config = GRPOConfig(**{**state["config"], **({"device": device} if device else {})})
        policy = GPT(GPTConfig(**state["model_config"]))
        policy.load_state_dict(state["policy"])
        trainer = cls(policy, AdditionTask(**state["task"]), config)
        trainer.reference.load_state_dict(state["reference"])
        trainer.optimizer.load_state_dict(state["optimizer"])
        trainer.scheduler.load_state_dict(state["scheduler"])
        trainer.prompt_generator.set_state(state["prompt_generator"])
        if state.get("sample_generator_device", "cpu") == trainer.device.type:
            trainer.sample_generator.set_state(state["sample_generator"])
        else:
            trainer.sample_generator.manual_seed(config.seed + 1 + 1_000_003 * state["step_count"])
        if "torch_rng_state" in state:       # checkpoints written before these were saved lack them
            torch.set_rng_state(state["torch_rng_state"])
            cuda_states = state["cuda_rng_states"]
            if trainer.device.type == "cuda" and len(cuda_states) == torch.cuda.device_count():
                torch.cuda.set_rng_state_all(cuda_states)
        trainer.step_count, trainer.train_seconds = state["step_count"], state["train_seconds"]
        trainer.metrics, trainer.evals = state["metrics"], state["evals"]
        trainer.clip_fraction_per_inner_step = state["clip_fraction_per_inner_step"]
        return trainer


# ---- "a single run proves nothing" ------------------------------------------------------------
def compare_over_seeds(policy: GPT, task: AdditionTask, base: GRPOConfig, settings: dict[str, dict],
                       seeds) -> dict[str, np.ndarray]:
    """Final held-out greedy accuracy of each setting over ``seeds`` (chapter 15).

    ``settings`` maps a name to overrides of ``base`` (e.g. ``{"std": {}, "no std": {"scale_rewards":
    False}}``); every run starts from ``policy`` and differs from the others only in its overrides
    and seed. Returns ``{name: array of final accuracies, one per seed}``.
    """
    seeds = [integer_at_least(s, "seeds", 0) for s in seeds]
    if len(seeds) < 2:
        raise ValueError(f"seeds must hold at least 2 seeds (a spread needs two runs), got {seeds!r}")
    results = {}
    for name, overrides in settings.items():
        finals = [GRPOTrainer(policy, task, GRPOConfig(**{**asdict(base), **overrides, "seed": seed}))
                  .train(progress=False).evals["accuracy"][-1] for seed in seeds]
        results[name] = np.array(finals)
    return results
