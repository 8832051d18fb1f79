"""A real TRL run on the book's addition task, measured like the book's trainer (chapter 16).

:func:`completion_reward` is the book's verifier as a TRL reward function, :func:`trl_grpo_trainer`
builds ``trl.GRPOTrainer`` from the book's model, :class:`AccuracyClock` times training and measures
held-out accuracy, and :func:`train_with_trl` runs all three in this process (chapter 16's run,
``scripts/grpo_trl.py`` and ``benchmarks/grpo_vs_trl.py``). Importing this module imports
transformers.
"""
from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass

import numpy as np
from transformers import TrainerCallback

from .._checks import at_least, checked, instance_of, integer_at_least
from ..llm.evaluation import greedy_accuracy
from .adapters import char_tokenizer_for_transformers, quiet, trl_policy
from ..llm.model import GPT, from_gpt2
from ..llm.tasks import AdditionTask
from ..llm.trainer import torch_threads


@checked(task=instance_of(AdditionTask))
def completion_reward(task: AdditionTask, counter: dict | None = None):
    """A TRL reward function: the book's verifier on the sampled ids up to the first EOS (chapter 16).

    TRL hands a reward function the decoded completions with special tokens dropped, so a PAD or EOS
    sampled inside an answer would vanish from the text; this one reads ``completion_ids`` instead.
    With ``counter``, ``counter["tokens"]`` grows by the number of sampled tokens (EOS included).
    """
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
    """A ``trl.GRPOTrainer`` on the addition task, from ``model`` (chapter 16).

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


class AccuracyClock(TrainerCallback):
    """A ``TrainerCallback`` that times training and measures held-out accuracy (chapter 16).

    ``seconds`` adds up the wall time from each step's start to its end (sampling, scoring, loss,
    backward, optimizer), evaluation excluded. ``evals`` (``step``, ``accuracy``, ``train_seconds``)
    gets :func:`rl4llm.llm.evaluation.greedy_accuracy` of the policy before the first step, every
    ``eval_every`` steps and after the last, the same measure as the book's trainer. Under several
    processes only the main one evaluates when ``main_process_only``.
    """

    @checked(eval_every=at_least(1))
    def __init__(self, task: AdditionTask, eval_every: int, *, main_process_only: bool = True):
        self.task, self.main_process_only = task, main_process_only
        self.eval_every = eval_every
        self.seconds, self._start = 0.0, None
        self.evals = {"step": [], "accuracy": [], "train_seconds": []}

    def _evaluate(self, state, model):
        if self.main_process_only and not state.is_world_process_zero:
            return
        accuracy = greedy_accuracy(from_gpt2(model), self.task)
        for key, value in (("step", state.global_step), ("accuracy", accuracy), ("train_seconds", self.seconds)):
            self.evals[key].append(value)

    def on_train_begin(self, args, state, control, model=None, **kwargs):
        self._evaluate(state, model)

    def on_step_begin(self, args, state, control, **kwargs):
        self._start = time.perf_counter()

    def on_step_end(self, args, state, control, model=None, **kwargs):
        self.seconds += time.perf_counter() - self._start
        if state.global_step % self.eval_every == 0:
            self._evaluate(state, model)

    def on_train_end(self, args, state, control, model=None, **kwargs):
        if not self.evals["step"] or self.evals["step"][-1] != state.global_step:
            self._evaluate(state, model)


@dataclass
class TRLRun:
    """What :func:`train_with_trl` returns: the curve, TRL's own log, and the trained policy."""
    evals: dict             # step, accuracy, train_seconds (as GRPOTrainer.evals of the book's trainer)
    log_history: list       # TRL's log lines, one dict per logged step (reward, loss, entropy, ...)
    train_seconds: float    # training wall time, evaluation excluded
    sampled_tokens: int     # completion tokens sampled, EOS included
    policy: GPT             # the trained weights, back in the book's GPT


@checked(num_threads=at_least(1))
def train_with_trl(model: GPT, task: AdditionTask, trl_kwargs: dict, *, eval_every: int = 10,
                   num_threads: int = 1) -> TRLRun:
    """Train ``model`` on ``task`` with TRL's ``GRPOTrainer`` in this process (chapter 16).

    :func:`trl_grpo_trainer` with an :class:`AccuracyClock`, on ``num_threads`` CPU threads, in a
    temporary output directory, TRL's warnings and progress bars silenced. ``model`` itself is not
    changed. For the book's recipe pass ``trl_config_kwargs(config)``.
    """
    clock, counter = AccuracyClock(task, eval_every), {"tokens": 0}
    with quiet(), tempfile.TemporaryDirectory() as workdir, torch_threads(num_threads):
        trainer = trl_grpo_trainer(model, task, trl_kwargs, output_dir=workdir, callbacks=[clock], counter=counter)
        trainer.train()
    return TRLRun(evals=clock.evals, log_history=list(trainer.state.log_history), train_seconds=clock.seconds,
                  sampled_tokens=counter["tokens"], policy=from_gpt2(trainer.model).eval())
