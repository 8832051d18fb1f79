"""Time every slider of Part II (chapters 6-9): the pure functions each update recomputes, and the redraw.

Each slider's pure function is timed over the slider's range (several repeats per value), and so is
the live control's redraw end to end (``slider_timing``); the script prints the median and the worst
case per slider. Targets: every update well under 20 ms, redraws under 100 ms (median), 200 ms (worst).

    OMP_NUM_THREADS=1 taskset -c 1 python benchmarks/sliders_part2.py
"""
from __future__ import annotations

import time

import ipywidgets as widgets
import numpy as np

from rl4llm import LOGITS, REWARDS, estimator_variance
from rl4llm.estimators import jhat_study, variance_curve
from rl4llm.onpolicy import learning_curve_band, rl_and_sft_steps, seed_study
from rl4llm.viz.part2 import (BASELINE_GRID, REFERENCE_RUNS, SEED_RUN, draw_baseline, draw_jhat, draw_learning,
                              draw_seeds, draw_steps, reference_spread)
from slider_timing import Redraw, grid, report


def ch6_G(G):
    return jhat_study(G)


def ch6_seeds(n_seeds):
    reference_spread(1)     # computed once, then cached (the first call is timed separately below)
    return seed_study(n_seeds, **SEED_RUN)


def ch7_lr(lr):
    rl_and_sft_steps(lr)
    return rl_and_sft_steps(np.linspace(0, 8, 81))


def ch8_offset_baseline(offset, baseline):
    variance_curve(LOGITS, REWARDS, offset, BASELINE_GRID)
    return estimator_variance(LOGITS, REWARDS + offset, baseline)


def ch9_G_lr(G, lr):
    return learning_curve_band(G, lr)


SLIDERS = {
    "ch6 G (1..64)": [lambda G=G: ch6_G(G) for G in (1, 2, 4, 8, 16, 32, 64)],
    "ch6 number of seeds (2..128)": [lambda n=n: ch6_seeds(n) for n in (2, 4, 8, 16, 32, 64, 128)],
    "ch7 learning rate (0..8)": [lambda lr=lr: ch7_lr(lr) for lr in (0.0, 0.5, 1.0, 2.0, 5.0, 8.0)],
    "ch8 offset (0..10) x baseline b (-1..11)": [
        lambda o=o, b=b: ch8_offset_baseline(o, b) for o in (0.0, 5.0, 10.0) for b in (-1.0, 0.2, 10.2, 11.0)],
    "ch9 G (2..32) x learning rate (0.25..4)": [
        lambda G=G, lr=lr: ch9_G_lr(G, lr) for G in (2, 4, 8, 16, 32) for lr in (0.25, 1.0, 4.0)],
}

# the notebooks' live controls (same widgets, same figure sizes), moved over the same ranges
REDRAWS = {
    "ch6 G (1..64)": Redraw(draw_jhat, {"G": widgets.IntSlider(value=4, min=1, max=64, step=1)},
                            grid(G=(1, 2, 4, 8, 16, 32, 64))),
    "ch6 number of seeds (2..128)": Redraw(
        draw_seeds, {"n_seeds": widgets.IntSlider(value=8, min=2, max=128, step=1)},
        grid(n_seeds=(2, 4, 8, 16, 32, 64, 128)), figsize=(10, 3.6)),
    "ch7 learning rate (0..8)": Redraw(
        draw_steps, {"lr": widgets.FloatSlider(value=1.0, min=0.0, max=8.0, step=0.25)},
        grid(lr=(0.0, 0.5, 1.0, 2.0, 5.0, 8.0)), figsize=(10, 3.6)),
    "ch8 offset (0..10) x baseline b (-1..11)": Redraw(
        draw_baseline, {"offset": widgets.FloatSlider(value=10.0, min=0.0, max=10.0, step=0.5),
                        "baseline": widgets.FloatSlider(value=0.0, min=-1.0, max=11.0, step=0.1)},
        grid(offset=(0.0, 5.0, 10.0), baseline=(-1.0, 0.2, 10.2, 11.0)), figsize=(8, 3.8)),
    "ch9 G (2..32) x learning rate (0.25..4)": Redraw(
        draw_learning, {"G": widgets.IntSlider(value=8, min=1, max=32, step=1),
                        "lr": widgets.FloatSlider(value=1.0, min=0.25, max=4.0, step=0.25)},
        grid(G=(2, 4, 8, 16, 32), lr=(0.25, 1.0, 4.0)), figsize=(8, 4.6)),
}


if __name__ == "__main__":
    start = time.perf_counter()
    reference_spread(1)
    report(SLIDERS, redraws=REDRAWS,
           note=f"ch6 reference spread sigma ({REFERENCE_RUNS} runs, once per notebook, cached): "
                f"{1e3 * (time.perf_counter() - start):.1f} ms")
