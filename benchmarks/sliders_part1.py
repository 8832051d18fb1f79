"""Time every slider chart of Part I (chapters 1-5): the pure functions behind one setting, and the
whole chart (every setting of its grid), which the chapter computes when its cell runs.

    OMP_NUM_THREADS=1 taskset -c 1 python benchmarks/sliders_part1.py
"""
from __future__ import annotations

import numpy as np

from rl4llm import CORRECT, LOGITS, decode_probs, sft_step, softmax, training_curves
from rl4llm.math.two_step import two_spellings
from rl4llm.viz.decoding import decoding_chart
from rl4llm.viz.distribution import distribution_chart
from rl4llm.viz.forward_kl import training_curves_chart
from rl4llm.viz.sequences import PI_0, two_spellings_chart
from rl4llm.viz.sft import sft_step_chart
from sliders_part2 import build_times
from slider_timing import report

SLIDERS = {
    "ch1 temperature (0.05..20)": [lambda T=T: softmax(LOGITS, T) for T in np.geomspace(0.05, 20, 12)],
    "ch2 temperature x top-k x top-p": [
        lambda T=T, k=k, p=p: decode_probs(LOGITS, T, top_k=k, top_p=p)
        for T in (0.25, 1.0, 4.0) for k in (1, 2, 5) for p in (0.3, 0.6, 1.0)],
    # one setting of P(5 | 0): the curves over every pi(0) of the chart
    "ch3 P(5 | 0), the curves over pi(0)": [
        lambda p=p: [two_spellings(q, p) for q in PI_0.values] for p in np.linspace(0, 1, 6)],
    "ch4 learning rate (0..5)": [lambda lr=lr: softmax(sft_step(LOGITS, CORRECT, lr)) for lr in np.linspace(0, 5, 11)],
    # every logit of the two-step policy, SFT and RL, exact gradients
    "ch5 learning rate (0.1..5), 25 steps": [
        lambda lr=lr: training_curves(lr, 25) for lr in (0.1, 0.5, 1.0, 2.0, 5.0)],
}
#: The charts as the chapters build them.
CHARTS = {"ch1 temperature": distribution_chart, "ch2 decoding": decoding_chart, "ch3 two spellings":
          two_spellings_chart, "ch4 SFT step": sft_step_chart, "ch5 training curves": training_curves_chart}

if __name__ == "__main__":
    report(SLIDERS, note=build_times(CHARTS))
