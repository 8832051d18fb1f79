"""Time every slider of Part I (chapters 1-5) over its range: median and worst update and redraw.

    OMP_NUM_THREADS=1 taskset -c 1 python benchmarks/sliders_part1.py
"""
from __future__ import annotations

import ipywidgets as widgets
import numpy as np

from rl4llm import CORRECT, LOGITS, decode_probs, sft_step, softmax, training_curves
from rl4llm.two_strings import two_spellings
from rl4llm.viz.part1 import (draw_decoding, draw_distribution, draw_sft_step, draw_training_curves,
                              draw_two_spellings)
from slider_timing import Redraw, grid, report

SLIDERS = {
    "ch1 temperature (0.05..20)": [lambda T=T: softmax(LOGITS, T) for T in np.geomspace(0.05, 20, 12)],
    "ch2 temperature x top-k x top-p": [
        lambda T=T, k=k, p=p: decode_probs(LOGITS, T, top_k=k, top_p=p)
        for T in (0.25, 1.0, 4.0) for k in (1, 2, 5) for p in (0.3, 0.6, 1.0)],
    # each update also recomputes the figure's curve over 101 values of pi(0)
    "ch3 pi(0) x P(5 | 0), with its curve": [
        lambda q=q, p=p: [two_spellings(q, p)] + [two_spellings(g, p) for g in np.linspace(0, 1, 101)]
        for q in np.linspace(0, 1, 5) for p in np.linspace(0, 1, 5)],
    "ch4 learning rate (0..5)": [lambda lr=lr: softmax(sft_step(LOGITS, CORRECT, lr)) for lr in np.linspace(0, 5, 11)],
    # every logit of the two-step policy, SFT and RL, exact gradients
    "ch5 learning rate (0.1..5), 25 steps": [
        lambda lr=lr: training_curves(lr, 25) for lr in (0.1, 0.5, 1.0, 2.0, 5.0)],
}

# the notebooks' live controls (same widgets, same figure sizes), moved over the same ranges
REDRAWS = {
    "ch1 temperature (0.05..20)": Redraw(
        draw_distribution, {"temperature": widgets.FloatLogSlider(value=1.0, base=10, min=-1.3, max=1.3, step=0.05)},
        grid(temperature=[10 ** e for e in np.arange(-1.3, 1.31, 0.2)])),
    "ch2 temperature x top-k x top-p": Redraw(
        draw_decoding, {"temperature": widgets.FloatLogSlider(value=1.0, base=10, min=-1.3, max=1.7, step=0.05),
                        "top_k": widgets.IntSlider(value=5, min=1, max=5),
                        "top_p": widgets.FloatSlider(value=1.0, min=0.05, max=1.0, step=0.05)},
        grid(temperature=(0.25, 1.0, 4.0), top_k=(1, 2, 5), top_p=(0.3, 0.6, 1.0))),
    "ch3 pi(0) x P(5 | 0), with its curve": Redraw(
        draw_two_spellings, {"pi_0": widgets.FloatSlider(value=0.1, min=0.0, max=1.0, step=0.05),
                             "p_5_after_0": widgets.FloatSlider(value=0.2, min=0.0, max=1.0, step=0.05)},
        grid(pi_0=np.linspace(0, 1, 5), p_5_after_0=np.linspace(0, 1, 5)), figsize=(8, 3.4)),
    "ch4 learning rate (0..5)": Redraw(
        draw_sft_step, {"lr": widgets.FloatSlider(value=1.0, min=0.0, max=5.0, step=0.1)},
        grid(lr=np.linspace(0, 5, 11))),
    "ch5 learning rate (0.1..5), 25 steps": Redraw(
        draw_training_curves, {"lr": widgets.FloatSlider(value=1.0, min=0.1, max=5.0, step=0.1)},
        grid(lr=(0.1, 0.5, 1.5, 2.0, 3.0, 4.0, 5.0)), figsize=(8, 3.4)),
}

if __name__ == "__main__":
    report(SLIDERS, redraws=REDRAWS)
