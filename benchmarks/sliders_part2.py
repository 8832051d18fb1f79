"""Time every slider of Part II (chapters 6-9): the pure functions each update recomputes.

Each slider's pure function is timed over the slider's range (several repeats per value); the
script prints the median and the worst case per slider. Target: every update well under 20 ms.
Plotting (matplotlib) is not included: it is the same for every figure and is not ours to speed up.

    python benchmarks/sliders_part2.py
"""
from __future__ import annotations

import time

import numpy as np

from rl4llm import LOGITS, REWARDS, estimator_variance
from rl4llm.estimators import jhat_study, variance_curve
from rl4llm.onpolicy import learning_curve_band, rl_and_sft_steps, seed_study
from rl4llm.viz.part2 import BASELINE_GRID, REFERENCE_RUNS, SEED_RUN, reference_spread
from slider_timing import report


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


if __name__ == "__main__":
    start = time.perf_counter()
    reference_spread(1)
    report(SLIDERS, note=f"ch6 reference spread sigma ({REFERENCE_RUNS} runs, once per notebook, cached): "
                         f"{1e3 * (time.perf_counter() - start):.1f} ms")
