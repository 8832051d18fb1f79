"""Shared timing for the slider benchmarks (``sliders_part*.py``).

Two times per slider, each as the median and the worst over the slider's range:

- update: a zero-argument call of the pure library function behind the slider, at one setting,
  timed ``repeats`` times (after one warm-up call); budget 20 ms;
- redraw: the live control end to end (``rl4llm.viz.live``, on the notebook's figure size): from
  setting one widget's value (the ipywidgets observer redraws synchronously) to the new PNG in the
  control's image, every move of a walk through the slider's settings, twice; budget 100 ms median,
  200 ms worst. The garbage of earlier sliders is collected before each walk.

Run it pinned to one core, e.g. ``OMP_NUM_THREADS=1 taskset -c 1 python benchmarks/sliders_part1.py``.
"""
from __future__ import annotations

import gc
import itertools
import os
import platform
import time
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

BUDGET_MS = 20.0
REDRAW_BUDGET_MS = {"median": 100.0, "worst": 200.0}


@dataclass
class Redraw:
    """A live control to time: ``live(draw, sliders, figsize)``, moved through ``settings`` (each a
    dict slider name -> value; every widget whose value changes is one move)."""
    draw: Callable
    sliders: dict
    settings: Sequence[dict]
    figsize: tuple | None = None


def grid(**values) -> list[dict]:
    """Every combination of the given slider values, the last name changing fastest."""
    return [dict(zip(values, combo)) for combo in itertools.product(*values.values())]


def redraw_times(redraw: Redraw, passes: int = 2) -> list[float]:
    """Milliseconds from setting a widget's value to the control's new PNG, for every move."""
    from rl4llm.viz import apply_style, live

    apply_style()
    control = live(redraw.draw, redraw.sliders, figsize=redraw.figsize)
    image = control.children[1]
    gc.collect()
    times = []
    for setting in list(redraw.settings) * passes:
        for name, value in setting.items():
            widget = redraw.sliders[name]
            if widget.value == value:
                continue
            before = image.value
            start = time.perf_counter()
            widget.value = value
            png = image.value
            times.append(1e3 * (time.perf_counter() - start))
            assert png is not before and bytes(png[:4]) == b"\x89PNG", f"{name} = {value}: no new PNG"
    return times


def report(sliders: dict[str, Sequence[Callable[[], object]]], repeats: int = 5, note: str = "",
           redraws: dict[str, Redraw] | None = None) -> None:
    """Time every update (and, where ``redraws`` has the slider, every redraw) of every slider and
    print median / worst milliseconds per slider against the budgets."""
    import matplotlib
    matplotlib.use("Agg")
    redraws = redraws or {}
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores (this process may use "
          f"{len(os.sched_getaffinity(0))}), python {platform.python_version()}, numpy {np.__version__}, "
          f"matplotlib {matplotlib.__version__}, load average {os.getloadavg()[0]:.2f}" + (f"; {note}" if note else ""))
    print(f"{'slider':<45}{'updates':>8}{'median ms':>11}{'worst ms':>10}  under {BUDGET_MS:g}?"
          f"{'moves':>7}{'redraw median':>15}{'worst':>8}  under {REDRAW_BUDGET_MS['median']:g}/"
          f"{REDRAW_BUDGET_MS['worst']:g}?")
    for name, updates in sliders.items():
        updates[0]()                                    # warm-up
        times = []
        for update in updates:
            for _ in range(repeats):
                start = time.perf_counter()
                update()
                times.append(1e3 * (time.perf_counter() - start))
        line = (f"{name:<45}{len(updates):>8}{np.median(times):>11.2f}{max(times):>10.2f}  "
                f"{'yes' if max(times) < BUDGET_MS else 'NO':<9}")
        if name in redraws:
            drawn = redraw_times(redraws[name])
            median, worst = np.median(drawn), max(drawn)
            fits = median < REDRAW_BUDGET_MS["median"] and worst < REDRAW_BUDGET_MS["worst"]
            line += f"{len(drawn):>6}{median:>15.1f}{worst:>8.1f}  {'yes' if fits else 'NO'}"
        print(line)
    print(f"load average after: {os.getloadavg()[0]:.2f}")
