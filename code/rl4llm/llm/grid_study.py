"""Chapter 15's grid: the learning rate against the group size G and the inner steps K, one seed a cell,
each difference read against the noise floor of two single runs.

:func:`grid_sweep` trains the nine cells from one warm start; :func:`grid_differences` names the
differences the chapter reads, and :func:`grid_claims` states what it says about them, each as a
boolean the chapter prints (and the book's tests check) beside the numbers.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from .model import GPT
from .tasks import AdditionTask
from .trainer import GRPOConfig, GRPOTrainer

#: The grid's columns: the group size and the inner steps, everything else as the chapter's run.
GRID_COLUMNS = {"G=2": {"group_size": 2}, "G=8": {}, "G=8, K=4": {"inner_steps": 4}}
#: Its rows (the middle one is chapter 15's learning rate) and the length of each run.
GRID_LRS = (3e-4, 1e-3, 1e-2)
GRID_STEPS = 60


def lr_label(lr: float) -> str:
    """A row's name: ``lr=1e-03``."""
    return f"lr={lr:.0e}"


def grid_sweep(policy: GPT, task: AdditionTask, config: GRPOConfig, *, lrs=GRID_LRS, columns=GRID_COLUMNS,
               steps: int = GRID_STEPS, eval_every: int = 10) -> tuple[dict, dict]:
    """One run of ``steps`` steps per (learning rate, column) from ``policy``: ``config`` with that
    learning rate and the column's overrides (chapter 15). Returns ``(runs, clip)``, both keyed by
    ``(lr_label(lr), column)``: each run's ``evals`` and its largest clip fraction over the steps."""
    runs, clip = {}, {}
    for lr in lrs:
        for column, overrides in columns.items():
            trainer = GRPOTrainer(policy, task, replace(config, lr=lr, steps=steps, eval_every=eval_every,
                                                        **overrides))
            runs[(lr_label(lr), column)] = trainer.train(progress=False).evals
            clip[(lr_label(lr), column)] = np.nanmax(trainer.metrics["clip_fraction"])
    return runs, clip


def grid_differences(runs: dict, warm_accuracy: float) -> dict[str, tuple[float, float]]:
    """The pairs of final accuracies chapter 15 compares, by name: G=8 against G=2 and K=4 against K=1 at
    the two smaller learning rates, and each cell against the warm start where it ends near or below it."""
    final = {key: evals["accuracy"][-1] for key, evals in runs.items()}
    lrs = list(dict.fromkeys(lr for lr, _ in runs))
    columns = list(dict.fromkeys(column for _, column in runs))
    differences = {f"{lr}: G=8 minus G=2": (final[(lr, "G=8")], final[(lr, "G=2")]) for lr in lrs[:2]}
    differences |= {f"{lr}: K=4 minus K=1": (final[(lr, "G=8, K=4")], final[(lr, "G=8")]) for lr in lrs[:2]}
    differences |= {f"{lr}: G=2 minus the warm start": (final[(lr, "G=2")], warm_accuracy) for lr in lrs[:2]}
    differences |= {f"{lrs[-1]}: {c} minus the warm start": (final[(lrs[-1], c)], warm_accuracy) for c in columns}
    return differences


def grid_claims(runs: dict, clip: dict, warm_accuracy: float, floor: float) -> dict[str, bool]:
    """What chapter 15 says about its grid (rows 3e-4, 1e-3, 1e-2), each statement with its truth value;
    ``floor`` is the noise floor of two single runs."""
    final = {key: evals["accuracy"][-1] for key, evals in runs.items()}
    differences = grid_differences(runs, warm_accuracy)
    beyond = lambda name: abs(np.subtract(*differences[name])) > floor     # noqa: E731
    small, large, columns = ("lr=3e-04", "lr=1e-03"), "lr=1e-02", list(dict.fromkeys(c for _, c in runs))
    return {
        "at lr 1e-3, G=8 ends above G=2 by more than the floor":
            final[("lr=1e-03", "G=8")] > final[("lr=1e-03", "G=2")] and beyond("lr=1e-03: G=8 minus G=2"),
        "at lr 3e-4, G=8 ends above G=2, but within the floor":
            final[("lr=3e-04", "G=8")] > final[("lr=3e-04", "G=2")] and not beyond("lr=3e-04: G=8 minus G=2"),
        "at lr 3e-4 and 1e-3, G=2 ends within the floor of the warm start":
            all(not beyond(f"{lr}: G=2 minus the warm start") for lr in small),
        f"at lr 1e-2 every column ends below the warm start ({warm_accuracy:.4f}) by more than the floor":
            all(final[(large, c)] < warm_accuracy and beyond(f"{large}: {c} minus the warm start") for c in columns),
        "at lr 3e-4 and 1e-3, K=4 ends above K=1 after the same 60 steps, by more than the floor":
            all(final[(lr, "G=8, K=4")] > final[(lr, "G=8")] and beyond(f"{lr}: K=4 minus K=1") for lr in small),
        "with K=1 the clip never binds; with K=4 it binds at every learning rate":
            all(clip[(lr, c)] == 0 for lr in (*small, large) for c in ("G=2", "G=8"))
            and all(clip[(lr, "G=8, K=4")] > 0 for lr in (*small, large)),
    }
