"""Time chapter 13's chart points (G, epsilon, learning rate, beta): median and worst per slider.

Each of chapter 13's charts runs ``grpo_slider_run`` (a short seeded GRPO run, settings ``SLIDER_RUN``)
at every position of its slider when the cell runs (``rl4llm.viz.grpo_toy.GRPO_SLIDERS``); the chart
then redraws in the browser from those runs (``benchmarks/chart_redraw.py``). Run:
``OMP_NUM_THREADS=1 taskset -c 1 python benchmarks/sliders_part3_grpo.py``.
"""
from rl4llm.studies.toy_grpo import SLIDER_RUN, grpo_slider_run
from rl4llm.viz.grpo_toy import GRPO_SLIDERS
from slider_timing import report

SLIDERS = {f"ch13 {name}: {s.positions} positions": [lambda name=name, v=v: grpo_slider_run(**{name: s.cast(v)})
                                                     for v in s.values]
           for name, s in GRPO_SLIDERS.items()}

if __name__ == "__main__":
    report(SLIDERS, note=f"SLIDER_RUN = {SLIDER_RUN}")
