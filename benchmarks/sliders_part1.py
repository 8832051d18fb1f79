"""Time every slider of Part I (chapters 1-5): the pure functions each update recomputes.

Each slider's pure function is timed over the slider's range (several repeats per value); the
script prints the median and the worst case per slider. Target: every update well under 20 ms.
Plotting (matplotlib) is not included: it is the same for every figure.

    python benchmarks/sliders_part1.py
"""
from __future__ import annotations

import os
import platform
import time

import numpy as np

from rl4llm import CORRECT, LOGITS, decode_probs, sft_step, softmax, training_curves

REPEATS = 5

SLIDERS = {
    "ch1 temperature (0.05..20)": (lambda T: softmax(LOGITS, T), [{"T": T} for T in np.geomspace(0.05, 20, 12)]),
    "ch2 temperature x top-k x top-p": (
        lambda T, k, p: decode_probs(LOGITS, T, top_k=k, top_p=p),
        [{"T": T, "k": k, "p": p} for T in (0.25, 1.0, 4.0) for k in (1, 2, 5) for p in (0.3, 0.6, 1.0)]),
    "ch4 learning rate (0..5)": (lambda lr: softmax(sft_step(LOGITS, CORRECT, lr)),
                                 [{"lr": lr} for lr in np.linspace(0, 5, 11)]),
    "ch5 learning rate (0.1..5), 25 steps": (lambda lr: training_curves(lr, 25),
                                             [{"lr": lr} for lr in (0.1, 0.5, 1.0, 2.0, 5.0)]),
}


def main() -> None:
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, python {platform.python_version()}, "
          f"numpy {np.__version__}")
    print(f"{'slider':40s} {'median ms':>10s} {'worst ms':>10s}")
    for name, (fn, grid) in SLIDERS.items():
        fn(**grid[0])                                   # warm up
        times = []
        for params in grid:
            for _ in range(REPEATS):
                start = time.perf_counter()
                fn(**params)
                times.append(1e3 * (time.perf_counter() - start))
        print(f"{name:40s} {np.median(times):10.2f} {max(times):10.2f}")


if __name__ == "__main__":
    main()
