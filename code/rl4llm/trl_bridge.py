"""From this book's trainer to TRL's: the knobs as TRL ``GRPOConfig`` fields, and the same loss (chapter 15).

Written against trl 1.16.0 and transformers 5.x. ``trl``, ``transformers``, ``datasets`` and
``tokenizers`` are imported inside the functions that need them, so ``import rl4llm`` does not
import them.

- :func:`trl_config_kwargs` maps an :class:`rl4llm.trainer.GRPOConfig` to keyword arguments of
  ``trl.GRPOConfig``; :func:`knob_table` lays the mapping out beside TRL's own defaults.
- :func:`char_tokenizer_for_transformers` and :func:`trl_policy` are the plumbing TRL needs around
  our character tokenizer and tiny GPT (the benchmark ``benchmarks/grpo_vs_trl.py`` uses them).
- :func:`loss_batch`, :func:`rl4llm_loss`, :func:`trl_loss` and :func:`compare_losses` compute the
  GRPO loss of one hand-made batch twice, with :func:`rl4llm.grpo.grpo_loss` and with TRL 1.16's
  ``GRPOTrainer._compute_loss``, and compare values and gradients (:func:`trl_loss_trainer` and
  :func:`trl_loss_inputs` also serve ``scripts/grpo_trl.py``, which runs the same check on several
  processes).
- :func:`adam_step_with_trl_advantages` measures what TRL's smaller advantages do to the book's
  AdamW steps (next to nothing: Adam divides a constant gradient scale out).
- :func:`completion_reward`, :func:`trl_grpo_trainer`, :func:`accuracy_clock` and
  :func:`train_with_trl` run TRL's ``GRPOTrainer`` on the book's addition task from the book's model,
  measured like the book's trainer (chapter 15's run, ``scripts/grpo_trl.py`` and the benchmark).

Differences by design, which the mapping cannot remove (chapter 15 shows each):

- advantages: TRL divides by the group's sample std (``ddof=1``) plus ``1e-4``; the book by the
  population std (``ddof=0``) plus ``1e-8``. ``group_advantages(r, ddof=1, eps=1e-4)`` is TRL's.
- the book's warmup multiplies the learning rate by ``(u + 1) / W`` at update ``u``, TRL's by
  ``u / W``; with ``anneal_lr`` the book multiplies warmup and decay, TRL decays from the end of the
  warmup. The schedules agree after the warmup when ``anneal_lr`` is off.
- ``drop_zero_variance`` (DAPO's dynamic sampling, reduced to dropping flat groups) has no TRL field.
"""
from __future__ import annotations

import contextlib
import math
import tempfile
import time
import warnings
from dataclasses import dataclass, replace

import numpy as np
import torch

from ._checks import finite_real, integer_at_least
from .grpo import group_advantages, grpo_loss
from .loss_types import LOSS_TYPES, loss_type_names
from .model import GPT, _is_conv1d, completion_logprobs, to_gpt2
from .tasks import MAX_COMPLETION_LEN, AdditionTask, CharTokenizer, addition_prompt
from .trainer import GRPOConfig, GRPOTrainer, chapter14_config

#: Book knob -> (TRL ``GRPOConfig`` field, or None when TRL has none; the chapter that explains it).
KNOBS = {
    "group_size": ("num_generations", 13),
    "prompts_per_step": ("per_device_train_batch_size", 14),
    "inner_steps": ("num_iterations", 13),
    "eps_low": ("epsilon", 11),
    "eps_high": ("epsilon_high", 13),
    "beta": ("beta", 13),
    "loss_type": ("loss_type", 13),
    "importance_sampling_level": ("importance_sampling_level", 15),
    "scale_rewards": ("scale_rewards", 13),
    "temperature": ("temperature", 2),
    "max_new_tokens": ("max_completion_length", 14),
    "lr": ("learning_rate", 14),
    "warmup_steps": ("warmup_steps", 14),
    "anneal_lr": ("lr_scheduler_type", 14),
    "weight_decay": ("weight_decay", 14),
    "grad_clip": ("max_grad_norm", 14),
    "steps": ("max_steps", 14),
    "seed": ("seed", 14),
    "device": ("use_cpu", 14),
    "drop_zero_variance": (None, 14),
    "eval_every": (None, 14),
    "log_kl": (None, 14),
    "num_threads": (None, 14),
}

#: TRL fields the book has no knob for, set to what the book's trainer does (chapter 15 says why).
FIXED = {
    "bf16": False,                       # TRL resolves None to True: bf16 autocast, even on CPU
    "activation_checkpointing": False,   # TRL default True (as gradient_checkpointing, renamed in transformers 5)
    "use_bias_correction_kl": False,     # TRL default True: k3 times the ratio (a reverse-KL gradient)
    "gradient_accumulation_steps": 1,    # the book takes one gradient step on the whole batch
    "steps_per_generation": 1,
    "optim": "adamw_torch",              # the book's torch AdamW (TRL's default is its fused variant)
}


def trl_config_kwargs(config: GRPOConfig, *, allow_unsupported: bool = False, num_processes: int = 1) -> dict:
    """Keyword arguments for ``trl.GRPOConfig`` that run the book's GRPO step (chapter 15).

    TRL counts completions where the book counts prompts, and optimizer steps where the book counts
    outer steps, so per_device_train_batch_size = prompts_per_step x G / num_processes,
    max_steps = steps x K and warmup_steps = warmup_steps x K (the book's scheduler steps once per
    outer step). With ``num_processes`` data-parallel processes (``accelerate launch`` or
    ``torchrun``) each process holds its share of the completions, so the step still sees
    prompts_per_step x G of them; that product must divide evenly by ``num_processes``. The std of
    ``scale_rewards=True`` becomes ``"group"``, ``False`` becomes ``"none"``; ``eps_high=None``
    becomes ``epsilon_high = eps_low`` explicitly; :data:`FIXED` is added. ``device="cpu"`` sets
    ``use_cpu=True``. ``eval_every``, ``log_kl`` and ``num_threads`` are the book trainer's own
    bookkeeping and have no TRL counterpart.

    ``drop_zero_variance=True`` raises ValueError, since TRL cannot leave flat groups out of the
    loss batch, unless ``allow_unsupported=True``: then the knob is dropped and flat groups stay in
    the batch with zero advantages (they still count in the token normalisers and the KL term).
    """
    if not isinstance(config, GRPOConfig):
        raise ValueError(f"config must be an rl4llm.trainer.GRPOConfig, got {type(config).__name__}")
    num_processes = integer_at_least(num_processes, "num_processes", 1)
    if (config.prompts_per_step * config.group_size) % num_processes:
        raise ValueError(f"num_processes must divide prompts_per_step x group_size = "
                         f"{config.prompts_per_step * config.group_size}, got {num_processes}")
    if config.drop_zero_variance and not allow_unsupported:
        raise ValueError("drop_zero_variance=True (DAPO's dynamic sampling) has no TRL GRPOConfig field; pass "
                         "allow_unsupported=True to map the rest and keep flat groups in the batch")
    K = config.inner_steps
    kwargs = {
        "num_generations": config.group_size,
        "per_device_train_batch_size": config.prompts_per_step * config.group_size // num_processes,
        "num_iterations": K,
        "epsilon": config.eps_low,
        "epsilon_high": config.eps_low if config.eps_high is None else config.eps_high,
        "beta": config.beta,
        "loss_type": config.loss_type,
        "importance_sampling_level": config.importance_sampling_level,
        "scale_rewards": "group" if config.scale_rewards else "none",
        "temperature": config.temperature,
        "max_completion_length": config.max_new_tokens,
        "learning_rate": config.lr,
        "warmup_steps": config.warmup_steps * K,
        "lr_scheduler_type": "linear" if config.anneal_lr else "constant_with_warmup",
        "weight_decay": config.weight_decay,
        "max_grad_norm": config.grad_clip,
        "max_steps": config.steps * K,
        "seed": config.seed,
        **FIXED,
    }
    if config.device == "cpu":
        kwargs["use_cpu"] = True
    return kwargs


def trl_defaults(fields) -> dict:
    """TRL 1.16's value of each of ``fields`` in a ``trl.GRPOConfig`` built with no arguments.

    Read after TRL's own ``__post_init__`` (so ``bf16`` shows what ``None`` becomes). ``use_cpu=True``
    is the only argument passed, because a CPU-only machine refuses bf16 without it; ``use_cpu``
    itself is reported as its declared default.
    """
    from dataclasses import fields as dataclass_fields

    from trl import GRPOConfig as TRLConfig

    with _quiet(), tempfile.TemporaryDirectory() as tmp:
        defaults = TRLConfig(output_dir=tmp, use_cpu=True)
    out = {}
    for name in fields:
        if not hasattr(defaults, name):
            raise ValueError(f"fields must name trl.GRPOConfig fields; {name!r} is not one")
        value = getattr(defaults, name) if name != "use_cpu" else \
            next(f.default for f in dataclass_fields(TRLConfig) if f.name == "use_cpu")
        out[name] = getattr(value, "value", value)    # enums (optim, lr_scheduler_type) as their strings
    return out


def knob_table(config: GRPOConfig | None = None) -> list[dict]:
    """One row per book knob and per :data:`FIXED` field: the mapping next to TRL's default (chapter 15).

    Each row: ``knob`` (the book's name, "" for a fixed field), ``book`` (its value in ``config``),
    ``trl_field``, ``trl_value`` (what :func:`trl_config_kwargs` sets; None when it leaves the field
    at TRL's default), ``trl_default`` and ``chapter`` (None for fixed fields). A knob with no TRL
    field has ``None`` in the TRL columns.
    ``drop_zero_variance`` is mapped with ``allow_unsupported=True`` so the table always builds.
    The default ``config`` is chapter 14's run, :func:`rl4llm.trainer.chapter14_config`.
    """
    config = chapter14_config() if config is None else config
    kwargs = trl_config_kwargs(config, allow_unsupported=True)
    fields = [field for field, _ in KNOBS.values() if field] + list(FIXED)
    defaults = trl_defaults(fields)
    rows = [{"knob": knob, "book": getattr(config, knob), "trl_field": field,
             "trl_value": kwargs.get(field) if field else None,
             "trl_default": defaults[field] if field else None, "chapter": chapter}
            for knob, (field, chapter) in KNOBS.items()]
    rows += [{"knob": "", "book": None, "trl_field": field, "trl_value": value, "trl_default": defaults[field],
              "chapter": None} for field, value in FIXED.items()]
    return rows


# ---- TRL's advantages under the book's AdamW ----------------------------------------------------
class _TRLAdvantageTrainer(GRPOTrainer):
    """The book's trainer with TRL's advantages, (r - mean) / (sample std + 1e-4); all else the same."""

    def rollout(self):
        batch = super().rollout()
        advantages = group_advantages(batch.rewards, scale=self.config.scale_rewards, ddof=1, eps=1e-4)
        return replace(batch, advantages=advantages.view(-1)[batch.keep])


def adam_step_with_trl_advantages(model: GPT, task: AdditionTask, config: GRPOConfig,
                                  steps: int = 20) -> dict:
    """How far ``steps`` outer steps move the weights with TRL's advantages, against the book's (ch. 15).

    Two runs of the book's trainer from ``model`` with ``config`` (same seed, same prompts, same
    sampling stream): one with the book's advantages, one with TRL's (sample std plus 1e-4, smaller
    by sqrt((G - 1) / G) in every mixed group of 0/1 rewards). Returns ``book`` and ``trl``, the
    Euclidean norm of each run's weight change, their ``ratio`` (TRL / book) and
    ``advantage_ratio``, sqrt((G - 1) / G). AdamW divides each gradient entry by the root of its
    running mean square, so a constant factor on the whole gradient cancels (up to AdamW's eps of
    1e-8 and the gradient clip): with ``beta = 0`` the ratio is close to 1, not to the advantage ratio.
    """
    steps = integer_at_least(steps, "steps", 1)
    moved = {}
    for name, cls in (("book", GRPOTrainer), ("trl", _TRLAdvantageTrainer)):
        trainer = cls(model, task, config).train(steps, progress=False)
        start = {k: v.to(trainer.device) for k, v in model.state_dict().items()}
        moved[name] = float(torch.sqrt(sum(((p.detach() - start[k]) ** 2).sum()
                                           for k, p in trainer.policy.named_parameters())))
    G = config.group_size
    return {**moved, "ratio": moved["trl"] / moved["book"], "advantage_ratio": math.sqrt((G - 1) / G)}


# ---- plumbing: our tokenizer and model as transformers objects ----------------------------------
def char_tokenizer_for_transformers(tokenizer: CharTokenizer):
    """Our character tokenizer as a transformers ``PreTrainedTokenizerFast`` (TRL needs one).

    Same ids as ``tokenizer``: one token per character, ``<eos>`` and ``<pad>`` one token each.
    """
    if not isinstance(tokenizer, CharTokenizer):
        raise ValueError(f"tokenizer must be an rl4llm CharTokenizer, got {type(tokenizer).__name__}")
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {token: i for i, token in enumerate(tokenizer.vocab)}
    backend = Tokenizer(models.WordLevel(vocab, unk_token="<pad>"))
    backend.pre_tokenizer = pre_tokenizers.Split(Regex("<eos>|<pad>|."), behavior="isolated")
    backend.decoder = decoders.Fuse()
    return PreTrainedTokenizerFast(tokenizer_object=backend, eos_token="<eos>", pad_token="<pad>")


def trl_policy(model: GPT, tokenizer: CharTokenizer, directory: str | None = None):
    """``model`` as a ``GPT2LMHeadModel`` ready for TRL's ``GRPOTrainer`` (chapter 15).

    :func:`rl4llm.model.to_gpt2` with our EOS and PAD ids, and the generation config pointed at
    them too (GPT-2's default id 50256 is outside this vocabulary; TRL stops sampling at every EOS
    id the generation config declares), no BOS. With ``directory``, the model is also saved there
    and its ``_name_or_path`` set to it: with ``beta > 0`` TRL builds its frozen reference model by
    loading ``_name_or_path``, which an in-memory model does not have. Under several processes
    every process must pass the same ``directory``: only rank 0 writes it.
    """
    if not isinstance(tokenizer, CharTokenizer):
        raise ValueError(f"tokenizer must be an rl4llm CharTokenizer, got {type(tokenizer).__name__}")
    if model.config.vocab_size != len(tokenizer):
        raise ValueError(f"model must have the tokenizer's vocab_size {len(tokenizer)}, got {model.config.vocab_size}")
    hf = to_gpt2(model, eos_id=tokenizer.eos_id, pad_id=tokenizer.pad_id).train()
    hf.generation_config.eos_token_id = tokenizer.eos_id
    hf.generation_config.pad_token_id = tokenizer.pad_id
    hf.generation_config.bos_token_id = None
    if directory is not None:
        with _quiet():
            hf.save_pretrained(directory)       # under torch.distributed only rank 0 writes
        if torch.distributed.is_available() and torch.distributed.is_initialized():
            torch.distributed.barrier()         # so the others wait, and read the same directory
        hf.config._name_or_path = str(directory)
    return hf


@contextlib.contextmanager
def _quiet():
    """Silence transformers/TRL warnings, log lines and progress bars inside the block."""
    from transformers.utils import logging as hf_logging

    verbosity, bars = hf_logging.get_verbosity(), hf_logging.is_progress_bar_enabled()
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        hf_logging.set_verbosity(verbosity)
        if bars:
            hf_logging.enable_progress_bar()


# ---- a real TRL run on the book's task ------------------------------------------------------------
def completion_reward(task: AdditionTask, counter: dict | None = None):
    """A TRL reward function: the book's verifier on the sampled ids up to the first EOS (chapter 15).

    TRL hands a reward function the decoded completions with special tokens dropped, so a PAD or EOS
    sampled inside an answer would vanish from the text; this one reads ``completion_ids`` instead.
    With ``counter``, ``counter["tokens"]`` grows by the number of sampled tokens (EOS included).
    """
    if not isinstance(task, AdditionTask):
        raise ValueError(f"task must be an rl4llm AdditionTask, got {type(task).__name__}")
    eos, pad = task.tokenizer.eos_id, task.tokenizer.pad_id

    def reward(prompts, completion_ids, **kwargs):
        rows = [ids[:ids.index(eos) + 1] if eos in ids else list(ids) for ids in completion_ids]
        if counter is not None:
            counter["tokens"] = counter.get("tokens", 0) + sum(len(r) for r in rows)
        width = max(len(r) for r in rows)
        padded = np.array([r + [pad] * (width - len(r)) for r in rows])
        pairs = np.array([[int(p[:2]), int(p[3:5])] for p in prompts])
        return task.rewards(pairs, padded).tolist()
    return reward


def trl_grpo_trainer(model: GPT, task: AdditionTask, trl_kwargs: dict, *,
                     output_dir: str, callbacks=(), counter: dict | None = None,
                     logging_steps: int = 1):
    """A ``trl.GRPOTrainer`` on the addition task, from ``model`` (chapter 15).

    The policy is :func:`trl_policy` of ``model``, the dataset every training prompt,
    the reward :func:`completion_reward`, the tokenizer
    :func:`char_tokenizer_for_transformers`; ``trl_kwargs`` (for instance
    :func:`trl_config_kwargs` of a book config) go to ``trl.GRPOConfig`` with no
    checkpoints, no report service and a log line every ``logging_steps`` steps in
    ``trainer.state.log_history``. Launched under ``accelerate`` or ``torchrun``, the
    same call builds one trainer per process and TRL splits each batch between them.
    """
    from datasets import Dataset
    from transformers import PrinterCallback
    from trl import GRPOConfig as TRLConfig
    from trl import GRPOTrainer as TRLTrainer

    if not isinstance(task, AdditionTask):
        raise ValueError(f"task must be an rl4llm AdditionTask, got {type(task).__name__}")
    if not isinstance(trl_kwargs, dict):
        raise ValueError(f"trl_kwargs must be a dict of trl.GRPOConfig fields, "
                         f"got {type(trl_kwargs).__name__}")
    logging_steps = integer_at_least(logging_steps, "logging_steps", 1)
    tok = task.tokenizer
    args = TRLConfig(output_dir=str(output_dir), logging_steps=logging_steps,
                     save_strategy="no", report_to="none", dataloader_pin_memory=False,
                     disable_tqdm=True, **trl_kwargs)
    prompts = Dataset.from_dict({"prompt": task.prompts(task.train_pairs)})
    trainer = TRLTrainer(model=trl_policy(model, tok), args=args, train_dataset=prompts,
                         reward_funcs=completion_reward(task, counter),
                         processing_class=char_tokenizer_for_transformers(tok),
                         callbacks=list(callbacks))
    # with tqdm off, this callback prints every log line; they stay in log_history
    trainer.remove_callback(PrinterCallback)
    return trainer


def accuracy_clock(task: AdditionTask, eval_every: int, *, main_process_only: bool = True):
    """A ``TrainerCallback`` that times training and measures held-out accuracy (chapter 15).

    ``clock.seconds`` adds up the wall time from each step's start to its end (sampling, scoring,
    loss, backward, optimizer), evaluation excluded. ``clock.evals`` (``step``, ``accuracy``,
    ``train_seconds``) gets :func:`rl4llm.evaluation.greedy_accuracy` of the policy before the first
    step, every ``eval_every`` steps and after the last, the same measure as the book's trainer.
    Under several processes only the main one evaluates when ``main_process_only``.
    """
    from transformers import TrainerCallback

    from .evaluation import greedy_accuracy
    from .model import from_gpt2

    eval_every = integer_at_least(eval_every, "eval_every", 1)

    class AccuracyClock(TrainerCallback):
        def __init__(self):
            self.seconds, self._start = 0.0, None
            self.evals = {"step": [], "accuracy": [], "train_seconds": []}

        def _evaluate(self, state, model):
            if main_process_only and not state.is_world_process_zero:
                return
            accuracy = greedy_accuracy(from_gpt2(model), task)
            for key, value in (("step", state.global_step), ("accuracy", accuracy), ("train_seconds", self.seconds)):
                self.evals[key].append(value)

        def on_train_begin(self, args, state, control, model=None, **kwargs):
            self._evaluate(state, model)

        def on_step_begin(self, args, state, control, **kwargs):
            self._start = time.perf_counter()

        def on_step_end(self, args, state, control, model=None, **kwargs):
            self.seconds += time.perf_counter() - self._start
            if state.global_step % eval_every == 0:
                self._evaluate(state, model)

        def on_train_end(self, args, state, control, model=None, **kwargs):
            if not self.evals["step"] or self.evals["step"][-1] != state.global_step:
                self._evaluate(state, model)

    return AccuracyClock()


@dataclass
class TRLRun:
    """What :func:`train_with_trl` returns: the curve, TRL's own log, and the trained policy."""
    evals: dict             # step, accuracy, train_seconds (as GRPOTrainer.evals of the book's trainer)
    log_history: list       # TRL's log lines, one dict per logged step (reward, loss, entropy, ...)
    train_seconds: float    # training wall time, evaluation excluded
    sampled_tokens: int     # completion tokens sampled, EOS included
    policy: GPT             # the trained weights, back in the book's GPT


def train_with_trl(model: GPT, task: AdditionTask, trl_kwargs: dict, *, eval_every: int = 10,
                   num_threads: int = 1) -> TRLRun:
    """Train ``model`` on ``task`` with TRL's ``GRPOTrainer`` in this process (chapter 15).

    :func:`trl_grpo_trainer` with :func:`accuracy_clock`, on ``num_threads`` CPU threads, in a
    temporary output directory, TRL's warnings and progress bars silenced. ``model`` itself is not
    changed. For the book's recipe pass ``trl_config_kwargs(config)``.
    """
    from .model import from_gpt2
    from .trainer import torch_threads

    num_threads = integer_at_least(num_threads, "num_threads", 1)
    clock, counter = accuracy_clock(task, eval_every), {"tokens": 0}
    with _quiet(), tempfile.TemporaryDirectory() as workdir, torch_threads(num_threads):
        trainer = trl_grpo_trainer(model, task, trl_kwargs, output_dir=workdir, callbacks=[clock], counter=counter)
        trainer.train()
    return TRLRun(evals=clock.evals, log_history=list(trainer.state.log_history), train_seconds=clock.seconds,
                  sampled_tokens=counter["tokens"], policy=from_gpt2(trainer.model).eval())


# ---- the same loss on the same batch -------------------------------------------------------------
@dataclass
class LossBatch:
    """A hand-made GRPO batch (chapter 15): N prompts x G completions, everything a loss needs.

    ``tokens`` (B, P + T): prompt then completion, EOS then PAD after it; ``mask`` (B, T): 1 up to
    and including EOS; ``advantages`` (B,); ``old_logp`` and ``ref_logp`` (B, T): log pi_old and
    log pi_ref of each completion token (0 where masked).
    """
    tokens: torch.Tensor
    prompt_len: int
    mask: torch.Tensor
    advantages: torch.Tensor
    old_logp: torch.Tensor
    ref_logp: torch.Tensor

    @property
    def prompts(self) -> torch.Tensor:
        return self.tokens[:, :self.prompt_len]

    @property
    def completions(self) -> torch.Tensor:
        return self.tokens[:, self.prompt_len:]


def loss_batch(model: GPT, config: GRPOConfig, *, seed: int = 0, perturbation: float = 0.3) -> LossBatch:
    """A batch of ``config.prompts_per_step`` addition prompts x ``config.group_size`` completions.

    Completions are random digits of random length 1..4 ending in EOS, padded with PAD; rewards are
    random 0/1 per completion and advantages come from :func:`rl4llm.grpo.group_advantages` (with
    ``config.scale_rewards``). The old and reference log-probs are the model's own at
    ``config.temperature`` plus independent N(0, ``perturbation``^2) noise per token, so the ratio is
    not 1 and the clip binds on some tokens. Seeded by ``seed`` alone.
    """
    seed = integer_at_least(seed, "seed", 0)
    perturbation = finite_real(perturbation, "perturbation")
    if perturbation < 0:
        raise ValueError(f"perturbation must be a finite number >= 0, got {perturbation!r}")
    tok = CharTokenizer()
    if model.config.vocab_size != len(tok):
        raise ValueError(f"model must have vocab_size {len(tok)} (the addition tokenizer's), "
                         f"got {model.config.vocab_size}")
    gen = torch.Generator().manual_seed(seed)
    N, G, T = config.prompts_per_step, config.group_size, MAX_COMPLETION_LEN
    operands = torch.randint(0, 100, (N, 2), generator=gen).tolist()
    prompts = torch.tensor([tok.encode(addition_prompt(a, b)) for a, b in operands]).repeat_interleave(G, dim=0)
    lengths = torch.randint(1, T + 1, (N * G, 1), generator=gen)
    position = torch.arange(T)[None, :]
    completions = torch.randint(0, 10, (N * G, T), generator=gen)
    completions = torch.where(position == lengths - 1, tok.eos_id, completions)
    completions = torch.where(position >= lengths, tok.pad_id, completions)
    mask = (position < lengths).float()
    rewards = torch.randint(0, 2, (N, G), generator=gen).float()
    advantages = group_advantages(rewards, scale=config.scale_rewards).view(-1)
    tokens = torch.cat([prompts, completions], dim=1)
    with torch.no_grad():
        logp, _ = completion_logprobs(model, tokens, prompts.shape[1], config.temperature)
    old_logp, ref_logp = ((logp + perturbation * torch.randn(N * G, T, generator=gen)) * mask for _ in range(2))
    return LossBatch(tokens, prompts.shape[1], mask, advantages, old_logp, ref_logp)


def rl4llm_loss(model: GPT, batch: LossBatch, config: GRPOConfig) -> tuple[float, dict, dict]:
    """The book's loss on ``batch``: :func:`rl4llm.grpo.grpo_loss` on :func:`completion_logprobs`.

    Settings from ``config`` (its :meth:`~rl4llm.trainer.GRPOConfig.loss_options`: eps_low, eps_high,
    beta, loss_type, max_new_tokens as dr_grpo's constant, importance_sampling_level; and temperature). Returns ``(loss, grads, stats)``: the loss as a float, the gradient of each
    parameter by name (``model``'s grads are left as they were), and ``grpo_loss``'s diagnostics.
    """
    params = dict(model.named_parameters())
    logp, _ = completion_logprobs(model, batch.tokens, batch.prompt_len, config.temperature)
    loss, stats = grpo_loss(logp, batch.old_logp, batch.advantages, batch.mask, ref_logp=batch.ref_logp,
                            **config.loss_options())
    grads = torch.autograd.grad(loss, list(params.values()))
    return float(loss.detach()), dict(zip(params, grads)), stats


def trl_loss_trainer(model: GPT, batch: LossBatch, config: GRPOConfig, directory: str, *,
                     num_processes: int = 1):
    """A real ``trl.GRPOTrainer`` ready to compute the loss of ``batch`` (chapter 15).

    Built from :func:`trl_config_kwargs` (``num_processes`` as there) on the CPU, its outputs and
    the policy (from which TRL loads its reference model) saved under ``directory``; no download.
    The model is in training mode and gradient accumulation is 1, as in the book's step.
    """
    from datasets import Dataset
    from trl import GRPOConfig as TRLConfig
    from trl import GRPOTrainer as TRLTrainer

    tok = CharTokenizer()
    hf = trl_policy(model, tok, directory=f"{directory}/policy")
    kwargs = {**trl_config_kwargs(config, num_processes=num_processes), "use_cpu": True}
    args = TRLConfig(**kwargs, output_dir=str(directory), report_to="none", save_strategy="no",
                     disable_tqdm=True)
    prompts = tok.decode_batch(batch.prompts.tolist())
    trainer = TRLTrainer(model=hf, reward_funcs=lambda completions, **kw: [0.0] * len(completions),
                         args=args, train_dataset=Dataset.from_dict({"prompt": prompts}),
                         processing_class=char_tokenizer_for_transformers(tok))
    trainer.current_gradient_accumulation_steps = args.gradient_accumulation_steps
    trainer.model.train()
    return trainer


def trl_loss_inputs(batch: LossBatch, rows: slice = slice(None),
                    num_items_in_batch=None) -> dict:
    """What TRL's sampling step would give ``_compute_loss``, for ``batch[rows]``.

    Prompt and completion ids and masks, advantages, ``old_per_token_logps``,
    ``ref_per_token_logps``, and ``num_items_in_batch``: the masked token count of the
    whole generation batch (over every process), which the ``dapo`` normaliser divides
    by. It defaults to the count of ``batch[rows]``, right for one process.
    """
    mask = batch.mask[rows]
    if num_items_in_batch is None:
        num_items_in_batch = mask.sum()
    return {"prompt_ids": batch.prompts[rows],
            "prompt_mask": torch.ones_like(batch.prompts[rows]),
            "completion_ids": batch.completions[rows], "completion_mask": mask.long(),
            "advantages": batch.advantages[rows],
            "old_per_token_logps": batch.old_logp[rows],
            "ref_per_token_logps": batch.ref_logp[rows],
            "num_items_in_batch": num_items_in_batch}


def book_layout(model: GPT, hf_tensors: dict) -> dict:
    """GPT-2-named tensors (``transformer.h.0.attn.c_attn.weight``, ...) renamed and reshaped as
    ``model``'s parameters (GPT-2's Conv1D weights are stored transposed; chapter 15)."""
    names = [name for name, _ in model.named_parameters()]
    return {name: hf_tensors["transformer." + name].t() if _is_conv1d(name)
            else hf_tensors["transformer." + name] for name in names}


def trl_loss(model: GPT, batch: LossBatch, config: GRPOConfig) -> tuple[float, dict]:
    """TRL 1.16's loss on ``batch``: ``GRPOTrainer._compute_loss`` on ``to_gpt2``.

    A real trainer (:func:`trl_loss_trainer`) is handed the inputs its own sampling step
    would build (:func:`trl_loss_inputs`); its loss is differentiated with autograd.
    Returns ``(loss, grads)``, grads named and shaped as ``model``'s parameters.
    """
    with _quiet(), tempfile.TemporaryDirectory() as tmp:
        trainer = trl_loss_trainer(model, batch, config, tmp)
        loss = trainer._compute_loss(trainer.model, trl_loss_inputs(batch))
    params = dict(trainer.model.named_parameters())
    grads = torch.autograd.grad(loss, list(params.values()))
    return float(loss.detach()), book_layout(model, dict(zip(params, grads)))


def compare_losses(model: GPT, config: GRPOConfig, loss_types=tuple(LOSS_TYPES), *, seed: int = 0,
                   perturbation: float = 0.3) -> list[dict]:
    """The same loss on the same batch, ours and TRL's, for each of ``loss_types`` (chapter 15).

    One :func:`loss_batch` (``seed``, ``perturbation``) for all; ``config`` with its ``loss_type``
    replaced by each in turn. Each row: ``loss_type``, ``rl4llm`` and ``trl`` (the two loss values),
    ``difference`` (trl - rl4llm), ``max_grad_difference`` (largest absolute difference over every
    parameter's gradient), ``grad_norm`` (of ours, for scale) and ``clip_fraction`` (of ours).
    """
    from dataclasses import replace

    loss_types = loss_type_names(loss_types)
    batch = loss_batch(model, config, seed=seed, perturbation=perturbation)
    rows = []
    for loss_type in loss_types:
        cfg = replace(config, loss_type=loss_type)
        ours, our_grads, stats = rl4llm_loss(model, batch, cfg)
        theirs, their_grads = trl_loss(model, batch, cfg)
        rows.append({"loss_type": loss_type, "rl4llm": ours, "trl": theirs, "difference": theirs - ours,
                     "max_grad_difference": max(float((their_grads[n] - g).abs().max()) for n, g in our_grads.items()),
                     "grad_norm": math.sqrt(sum(float(g.pow(2).sum()) for g in our_grads.values())),
                     "clip_fraction": stats["clip_fraction"]})
    return rows
