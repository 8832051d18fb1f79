"""The warm start of chapter 14: a tiny GPT that "solves the task sometimes".

GRPO learns only from groups whose rewards differ, so it needs a policy that is right some of the
time. Teacher-forced SFT on the training split (loss -log pi(answer, EOS | prompt), on the answer
and EOS tokens only) is stopped at the first evaluation where held-out greedy accuracy lands in
[``target_low``, ``target_high``] (checked at every step once the training batch's exact
match shows it is near). The run is deterministic from its config, and its result is
cached on disk (``$RL4LLM_CACHE`` or ``~/.cache/rl4llm``) under a hash of the config, so it is
computed once and recomputed identically wherever the cache is missing.
"""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch

from ._checks import integer_at_least, positive_real, real_in_range
from .model import GPT, GPTConfig
from .tasks import AdditionTask
from .trainer import greedy_accuracy, torch_threads


@dataclass
class WarmStartConfig:
    """The SFT run that makes the warm start (chapter 14)."""
    seed: int = 0
    task_seed: int = 0
    n_eval: int = 500
    model: GPTConfig = field(default_factory=GPTConfig)
    lr: float = 3e-3
    batch_size: int = 128
    max_steps: int = 4000
    eval_every: int = 50      # held-out evaluation every n steps, and at every step once the
    eval_from: float = 0.15   # training batch's teacher-forced exact match reaches eval_from
    target_low: float = 0.25
    target_high: float = 0.35
    num_threads: int = 1      # fixed, so the result is the same on every machine (see trainer.torch_threads)

    def __post_init__(self):
        if isinstance(self.model, dict):
            self.model = GPTConfig(**self.model)
        integer_at_least(self.seed, "seed", 0)
        positive_real(self.lr, "lr")
        integer_at_least(self.batch_size, "batch_size", 1)
        integer_at_least(self.max_steps, "max_steps", 1)
        integer_at_least(self.eval_every, "eval_every", 1)
        real_in_range(self.eval_from, "eval_from", 0.0, 1.0)
        real_in_range(self.target_low, "target_low", 0.0, 1.0)
        real_in_range(self.target_high, "target_high", self.target_low, 1.0)
        integer_at_least(self.num_threads, "num_threads", 1)


@dataclass
class WarmStart:
    """The warm-started model, its held-out greedy accuracy and the SFT steps it took."""
    model: GPT
    accuracy: float
    steps: int


def cache_dir() -> Path:
    """Where warm starts are cached: ``$RL4LLM_CACHE``, else ``~/.cache/rl4llm``."""
    return Path(os.environ.get("RL4LLM_CACHE") or Path.home() / ".cache" / "rl4llm")


def sft_loss(model: GPT, prompt_ids: torch.Tensor, target_ids: torch.Tensor,
             pad_id: int) -> tuple[torch.Tensor, float]:
    """Teacher-forced -mean log pi(y_t | x, y_<t) over the answer and EOS tokens (not the PAD after them).

    Also returns the batch's teacher-forced exact match: the share of rows whose every target token
    is the argmax given the correct prefix, which is exactly the share that greedy decoding gets right
    token for token (a free estimate of greedy accuracy on the batch).
    """
    logits, _ = model(torch.cat([prompt_ids, target_ids[:, :-1]], dim=1))
    logp_all = torch.log_softmax(logits[:, prompt_ids.shape[1] - 1:, :], dim=-1)
    logp = logp_all.gather(2, target_ids[..., None])[..., 0]
    mask = target_ids != pad_id
    with torch.no_grad():
        exact = int(((logp_all.argmax(dim=-1) == target_ids) | ~mask).all(dim=1).sum()) / len(target_ids)
    return -(logp * mask).sum() / mask.sum(), exact


def warm_start(config: WarmStartConfig | None = None, *, use_cache: bool = True) -> WarmStart:
    """SFT until held-out greedy accuracy is in [target_low, target_high] (chapter 14), cached.

    Raises ``RuntimeError`` if an evaluation jumps over the window or ``max_steps`` runs out (lower
    ``lr`` or ``eval_every`` then): the warm start must be "right sometimes", not mostly.
    """
    config = config if config is not None else WarmStartConfig()
    key = hashlib.sha256(json.dumps({**asdict(config), "torch": torch.__version__},
                                    sort_keys=True).encode()).hexdigest()[:16]
    path = cache_dir() / f"warmstart-{key}.pt"
    if use_cache and path.exists():
        saved = torch.load(path, map_location="cpu", weights_only=True)
        model = GPT(config.model)
        model.load_state_dict(saved["model"])
        return WarmStart(model, float(saved["accuracy"]), int(saved["steps"]))
    with torch_threads(config.num_threads):
        result = _run_sft(config)
    if use_cache:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        torch.save({"model": result.model.state_dict(), "accuracy": result.accuracy, "steps": result.steps}, tmp)
        os.replace(tmp, path)
    return result


def _run_sft(config: WarmStartConfig) -> WarmStart:
    task = AdditionTask(config.task_seed, config.n_eval)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(config.seed)
        model = GPT(config.model)
    generator = torch.Generator().manual_seed(config.seed)
    prompts = torch.as_tensor(task.prompt_ids(task.train_pairs))
    targets = torch.as_tensor(task.target_ids(task.train_pairs))
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=0.0)
    for step in range(1, config.max_steps + 1):
        batch = torch.randint(len(prompts), (config.batch_size,), generator=generator)
        loss, batch_exact = sft_loss(model, prompts[batch], targets[batch], task.tokenizer.pad_id)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        if batch_exact >= config.eval_from or step % config.eval_every == 0:
            accuracy = greedy_accuracy(model, task)
            if accuracy > config.target_high:
                raise RuntimeError(f"warm start jumped over the window: held-out accuracy {accuracy:.4f} > "
                                   f"target_high={config.target_high} at step {step}; lower lr or eval_every")
            if accuracy >= config.target_low:
                return WarmStart(model, accuracy, step)
    raise RuntimeError(f"warm start did not reach target_low={config.target_low} in max_steps={config.max_steps}")
