"""Time every slider of Part I (chapters 1-5) over its range: median and worst update.

    python benchmarks/sliders_part1.py
"""
from __future__ import annotations

import numpy as np

from rl4llm import CORRECT, LOGITS, decode_probs, sft_step, softmax, training_curves
from rl4llm.two_strings import two_spellings
from slider_timing import report

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

if __name__ == "__main__":
    report(SLIDERS)
