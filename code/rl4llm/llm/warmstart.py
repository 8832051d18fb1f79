"""The warm start of chapter 15: a tiny GPT that "solves the task sometimes".

GRPO learns only from groups whose rewards differ, so it needs a policy that is right some of the
time. Teacher-forced SFT on the training split (loss -log pi(answer, EOS | prompt), on the answer
and EOS tokens only) is stopped at the first evaluation where held-out greedy accuracy lands in
[``target_low``, ``target_high``] (checked at every step once the training batch's exact
match shows it is near).

The SFT run is seeded, but its digits are not the same on every CPU: the kernels torch picks for
the instruction set (AVX-512, AVX2, none) sum in different orders, and after a few hundred steps
the weights, the step at which the window is reached and the accuracy differ. So the book ships the
chapter's warm start as a checkpoint (``data/warmstart.pt``, its SHA-256 checked on every load
against ``data/warmstart.pt.sha256``, which the script that writes the checkpoint writes beside it):
the chapter, the tests and the benchmark start from bitwise the same weights on every machine.
Any other configuration is trained here and cached on disk (``$RL4LLM_CACHE`` or
``~/.cache/rl4llm``) under a key that covers everything that changes the result: the config, the
torch version, the CPU capability torch runs with, and the source of the code that trains it.

``python scripts/write_warm_start.py`` retrains the shipped checkpoint and writes its new SHA-256 beside it.
"""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch

from . import model as _model
from . import tasks as _tasks
from . import trainer as _trainer
from . import evaluation as _evaluation
from ..toy import verifier as _verifier
from .._checks import at_least, check_fields, in_range, positive_real, real_in_range
from .model import GPT, GPTConfig
from .tasks import AdditionTask
from .evaluation import greedy_accuracy
from .trainer import torch_threads

#: The chapter's warm start, shipped with the library, and the file beside it that holds its SHA-256.
SHIPPED_CHECKPOINT = Path(__file__).parent / "data" / "warmstart.pt"
SHIPPED_SHA256_FILE = SHIPPED_CHECKPOINT.with_name(SHIPPED_CHECKPOINT.name + ".sha256")


@dataclass
class WarmStartConfig:
    """The SFT run that makes the warm start (chapter 15)."""
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
    num_threads: int = 1      # fixed, so the result does not depend on the core count (trainer.torch_threads)

    def __post_init__(self):
        if isinstance(self.model, dict):
            self.model = GPTConfig(**self.model)
        check_fields(self, {"seed": at_least(0), "lr": positive_real, "batch_size": at_least(1),
                            "max_steps": at_least(1), "eval_every": at_least(1), "eval_from": in_range(0.0, 1.0),
                            "target_low": in_range(0.0, 1.0), "num_threads": at_least(1)}, _target_window)


def _target_window(fields):
    """Relation: the accuracy window is [target_low, target_high] with target_high in [target_low, 1]."""
    real_in_range(fields["target_high"], "target_high", fields["target_low"], 1.0)


@dataclass
class WarmStart:
    """The warm-started model, its held-out greedy accuracy, the SFT steps it took, and where it came
    from: ``"shipped"`` (the checkpoint in the library), ``"cache"`` or ``"trained"`` (just now)."""
    model: GPT
    accuracy: float
    steps: int
    source: str = "trained"


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


def warm_start(config: WarmStartConfig | None = None, *, use_cache: bool = True,
               shipped: bool = True) -> WarmStart:
    """The warm start of ``config`` (default: the chapter's), SFT until held-out greedy accuracy is
    in [target_low, target_high] (chapter 15).

    With ``shipped=True`` (the default) the chapter's config loads the checkpoint shipped with the
    library, the same bits on every machine (``RuntimeError`` if its SHA-256 does not match). Any
    other config, or ``shipped=False``, trains, reading and writing the disk cache when
    ``use_cache``. Raises ``RuntimeError`` if an evaluation jumps over the window or ``max_steps``
    runs out (lower ``lr`` or ``eval_every`` then): the warm start must be "right sometimes".
    """
    config = config if config is not None else WarmStartConfig()
    if shipped:
        saved = load_shipped_checkpoint()
        if saved["config"] == asdict(config):
            return _from_saved(saved, config, "shipped")
    path = cache_dir() / f"warmstart-{cache_key(config)}.pt"
    if use_cache and path.exists():
        return _from_saved(torch.load(path, map_location="cpu", weights_only=True), config, "cache")
    with torch_threads(config.num_threads):
        result = _run_sft(config)
    if use_cache:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".tmp{os.getpid()}")
        _save(result, config, tmp)
        os.replace(tmp, path)
    return result


def cache_key(config: WarmStartConfig) -> str:
    """A hash of all that changes an SFT run's result: the config, the torch version, the CPU
    capability torch dispatches to (``ATEN_CPU_CAPABILITY``), and the source of the modules that
    train and evaluate it."""
    code = hashlib.sha256()
    for module in (_evaluation, _model, _tasks, _trainer, _verifier):
        code.update(Path(module.__file__).read_bytes())
    code.update(Path(__file__).read_bytes())
    key = {"config": asdict(config), "torch": str(torch.__version__),
           "cpu_capability": torch.backends.cpu.get_cpu_capability(), "code": code.hexdigest()}
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]


def load_shipped_checkpoint(path: Path = SHIPPED_CHECKPOINT, sha256_file: Path = SHIPPED_SHA256_FILE) -> dict:
    """The shipped warm start's saved dict (``model``, ``accuracy``, ``steps``, ``config`` and how it
    was made), after checking the file's SHA-256 against the one ``sha256_file`` holds: ``RuntimeError``
    if it differs."""
    digest, expected = hashlib.sha256(Path(path).read_bytes()).hexdigest(), Path(sha256_file).read_text().strip()
    if digest != expected:
        raise RuntimeError(f"the shipped warm start {path} has SHA-256 {digest}, expected {expected} ({sha256_file}): "
                           f"the file is damaged or was rewritten by hand (scripts/write_warm_start.py writes both)")
    return torch.load(path, map_location="cpu", weights_only=True)


def _from_saved(saved: dict, config: WarmStartConfig, source: str) -> WarmStart:
    model = GPT(config.model)
    model.load_state_dict(saved["model"])
    return WarmStart(model, float(saved["accuracy"]), int(saved["steps"]), source)


def _save(result: WarmStart, config: WarmStartConfig, path: Path) -> None:
    torch.save({"model": result.model.state_dict(), "accuracy": result.accuracy, "steps": result.steps,
                "config": asdict(config), "torch": str(torch.__version__),
                "cpu_capability": torch.backends.cpu.get_cpu_capability()}, path)


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
                return WarmStart(model, accuracy, step, "trained")
    raise RuntimeError(f"warm start did not reach target_low={config.target_low} in max_steps={config.max_steps}")


def write_shipped_checkpoint() -> None:
    """Retrain the chapter's warm start, write it to ``SHIPPED_CHECKPOINT`` and its SHA-256 to
    ``SHIPPED_SHA256_FILE``."""
    config = WarmStartConfig()
    result = warm_start(config, use_cache=False, shipped=False)
    SHIPPED_CHECKPOINT.parent.mkdir(parents=True, exist_ok=True)
    _save(result, config, SHIPPED_CHECKPOINT)
    SHIPPED_SHA256_FILE.write_text(hashlib.sha256(SHIPPED_CHECKPOINT.read_bytes()).hexdigest() + "\n")
    print(f"wrote {SHIPPED_CHECKPOINT}: SFT steps {result.steps}, held-out accuracy {result.accuracy:.4f}, "
          f"CPU capability {torch.backends.cpu.get_cpu_capability()}")
    print(f"wrote its SHA-256 to {SHIPPED_SHA256_FILE}")

