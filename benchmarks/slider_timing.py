"""Shared timing for the slider benchmarks (``sliders_part*.py``).

A slider's update is a zero-argument call of the pure library function behind it, at one setting
of the slider. Every update is timed ``repeats`` times (after one warm-up call); the report gives,
per slider, the median and the worst of all those times, against the book's budget of 20 ms.
Drawing (matplotlib) is not timed: it is the same for every figure.
"""
from __future__ import annotations

import os
import platform
import time
from typing import Callable, Sequence

import numpy as np

BUDGET_MS = 20.0


def report(sliders: dict[str, Sequence[Callable[[], object]]], repeats: int = 5, note: str = "") -> None:
    """Time every update of every slider and print median / worst milliseconds per slider."""
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores, python {platform.python_version()}, "
          f"numpy {np.__version__}, load average {os.getloadavg()[0]:.2f}" + (f"; {note}" if note else ""))
    print(f"{'slider':<45}{'updates':>8}{'median ms':>11}{'worst ms':>10}  under {BUDGET_MS:g} ms?")
    for name, updates in sliders.items():
        updates[0]()                                    # warm-up
        times = []
        for update in updates:
            for _ in range(repeats):
                start = time.perf_counter()
                update()
                times.append(1e3 * (time.perf_counter() - start))
        worst = max(times)
        print(f"{name:<45}{len(updates):>8}{np.median(times):>11.2f}{worst:>10.2f}  "
              f"{'yes' if worst < BUDGET_MS else 'NO'}")
