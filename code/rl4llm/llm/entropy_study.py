"""Entropy over training steps on the tiny transformer, per entropy knob and seed (chapter 18).

Short runs of :class:`rl4llm.llm.trainer.GRPOTrainer` from one warm start, one per (setting, seed), each
setting an :class:`rl4llm.llm.entropy.EntropyControl`: the per-step entropy the trainer logs (TRL's
``entropy``: the masked mean on the loss batch, under the sampling policy) and the held-out greedy
accuracy at each evaluation.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from .._checks import checked, instance_of, seed_list
from .entropy import EntropyControl
from .model import GPT
from .tasks import AdditionTask
from .trainer import GRPOConfig, GRPOTrainer, runs_bar


def _settings(settings, name):
    """Rule: a dict of names to EntropyControl."""
    if not isinstance(settings, dict) or not settings:
        raise ValueError(f"{name} must be a non-empty dict of names to EntropyControl, got {settings!r}")
    for key, control in settings.items():
        instance_of(EntropyControl)(control, f"{name}[{key!r}]")
    return settings


@checked(policy=instance_of(GPT), task=instance_of(AdditionTask), base=instance_of(GRPOConfig),
         settings=_settings, seeds=seed_list(2, " (a spread needs two runs)"))
def entropy_runs(policy: GPT, task: AdditionTask, base: GRPOConfig, settings: dict, seeds, *,
                 progress: bool = True) -> dict:
    """Train ``base`` (its seed replaced by each of ``seeds``) with each setting's entropy strategy. Returns
    ``{name: {"entropy": (seeds, steps) array, "accuracy": (seeds, evaluations) held-out
    accuracy at the outer steps "eval_steps" (the first is the start, the last the end), "entropy_coef": (seeds,)
    the coefficient at the end}}``. ``progress`` shows one bar over the runs."""
    out = {}
    with runs_bar(len(settings) * len(seeds), progress) as bar:
        for name, control in settings.items():
            runs = []
            for seed in seeds:
                runs.append(GRPOTrainer(policy, task, replace(base, seed=seed), entropy=control).train(progress=False))
                bar.update()
            out[name] = {"entropy": np.array([run.metrics["entropy"] for run in runs]),
                         "accuracy": np.array([run.evals["accuracy"] for run in runs]),
                         "eval_steps": np.array(runs[0].evals["step"]),
                         "entropy_coef": np.array([run.entropy.coef for run in runs])}
    return out
