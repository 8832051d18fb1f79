"""Time the pure function behind every slider of chapters 10-12 over the slider's range.

Each slider update must recompute its numbers in well under 20 ms; ``slider_timing.report``
prints the median and the worst update per slider, and the machine it ran on.

    python benchmarks/sliders_part3.py
"""
from __future__ import annotations

import numpy as np

from rl4llm import (LOGITS, TOY_GROUP, TOY_GROUP_ADVANTAGES, advantage_table, clipped_objective,
                    clipped_objective_grad, drift_case, drift_variance_ratio, ppo_inner_steps)
from rl4llm.credit import EXAMPLE_REWARDS, EXAMPLE_VALUES
from rl4llm.viz.part3 import INNER_LR
from slider_timing import report

RHO = np.linspace(0.0, 2.5, 501)


def drift_update(drift: float, G: int) -> None:
    """Chapter 10: the laws for (drift, G) plus the variance-ratio curve the figure draws."""
    drift_case(drift, G)
    drift_variance_ratio(np.linspace(0.05, 0.95, 37))


def clip_update(eps: float) -> None:
    """Chapter 11: objective and gradient over the rho grid, for A > 0 and A < 0."""
    for A in (0.8, -0.2):
        adv = np.full_like(RHO, A)
        clipped_objective(RHO, adv, eps)
        clipped_objective_grad(RHO, adv, eps)


SLIDERS = {
    "ch10 drift x G (drift_case + curve)": [
        (lambda d=d, g=g: drift_update(d, g)) for d in np.arange(0.05, 0.951, 0.1) for g in range(1, 33, 3)],
    "ch11 eps (clipped_objective, _grad)": [
        (lambda e=e: clip_update(e)) for e in np.arange(0.05, 0.501, 0.05)],
    "ch11 K x eps (ppo_inner_steps)": [
        (lambda k=k, e=e: ppo_inner_steps(LOGITS, TOY_GROUP, TOY_GROUP_ADVANTAGES, e, INNER_LR, k))
        for k in range(1, 25) for e in (0.05, 0.2, 0.5)],
    "ch12 lambda x gamma (advantage_table)": [
        (lambda lam=lam, g=g: advantage_table(EXAMPLE_REWARDS, EXAMPLE_VALUES, g, (0.0, lam, 1.0)))
        for lam in np.arange(0.0, 1.001, 0.1) for g in np.arange(0.05, 1.001, 0.1)],
}


if __name__ == "__main__":
    report(SLIDERS)
