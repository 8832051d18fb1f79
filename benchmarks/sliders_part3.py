"""Time the pure function behind every slider of chapters 10-12 over the slider's range.

Each slider update must recompute its numbers in well under 20 ms, and the live control must redraw
in under 100 ms (median) and 200 ms (worst); ``slider_timing.report`` prints the median and the worst
update and redraw per slider, and the machine it ran on.

    OMP_NUM_THREADS=1 taskset -c 1 python benchmarks/sliders_part3.py
"""
from __future__ import annotations

import ipywidgets as widgets
import numpy as np

from rl4llm import (LOGITS, TOY_GROUP, TOY_GROUP_ADVANTAGES, advantage_table, clipped_objective,
                    clipped_objective_grad, drift_case, drift_variance_ratio, ppo_inner_steps)
from rl4llm.credit import EXAMPLE_REWARDS, EXAMPLE_VALUES
from rl4llm.viz.part3 import INNER_LR, draw_clip, draw_drift, draw_gae, draw_inner_steps
from slider_timing import Redraw, grid, report

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

# the notebooks' live controls (same widgets, same figure sizes), moved over the same ranges
REDRAWS = {
    "ch10 drift x G (drift_case + curve)": Redraw(
        draw_drift, {"drift": widgets.FloatSlider(value=0.5, min=0.05, max=0.95, step=0.05),
                     "G": widgets.IntSlider(value=8, min=1, max=32, step=1)},
        grid(drift=(0.05, 0.35, 0.65, 0.95), G=(1, 4, 13, 32)), figsize=(9, 3.6)),
    "ch11 eps (clipped_objective, _grad)": Redraw(
        draw_clip, {"eps": widgets.FloatSlider(value=0.2, min=0.05, max=0.5, step=0.05)},
        grid(eps=np.arange(0.05, 0.501, 0.05)), figsize=(8, 5)),
    "ch11 K x eps (ppo_inner_steps)": Redraw(
        draw_inner_steps, {"K": widgets.IntSlider(value=12, min=1, max=24, step=1),
                           "eps": widgets.FloatSlider(value=0.2, min=0.05, max=0.5, step=0.05)},
        grid(K=(1, 6, 12, 24), eps=(0.05, 0.2, 0.5)), figsize=(10, 3.4)),
    "ch12 lambda x gamma (advantage_table)": Redraw(
        draw_gae, {"lam": widgets.FloatSlider(value=0.5, min=0.0, max=1.0, step=0.05),
                   "gamma": widgets.FloatSlider(value=1.0, min=0.05, max=1.0, step=0.05)},
        grid(lam=(0.0, 0.3, 0.7, 1.0), gamma=(0.05, 0.5, 1.0)), figsize=(10, 3.6)),
}


if __name__ == "__main__":
    report(SLIDERS, redraws=REDRAWS)
