"""Time chapter 13's sliders (G, epsilon, learning rate, beta): median and worst update and redraw.

Each slider recomputes ``grpo_slider_run`` (a short seeded GRPO run, settings ``SLIDER_RUN``) over
the slider's range; the target is well under 20 ms per update, and under 100 ms (median) and 200 ms
(worst) for the live control's redraw. Run:
``OMP_NUM_THREADS=1 taskset -c 1 python benchmarks/sliders_part3_grpo.py``.
"""
import ipywidgets as widgets

from rl4llm.toy_grpo import SLIDER_RUN, grpo_slider_run
from rl4llm.viz.part3_grpo import draw_grpo_run
from slider_timing import Redraw, report

#: The frames of chapter 13's kernel-free animations (seven per slider), plus each slider's ends.
RANGES = {
    "G": [2, 4, 6, 8, 12, 16, 32],
    "eps": [0.05, 0.1, 0.15, 0.2, 0.3, 0.5, 0.9],
    "lr": [0.1, 0.2, 0.3, 0.5, 1.0, 2.0, 3.0, 5.0],
    "beta": [0.0, 0.1, 0.25, 0.5, 1.0, 1.5, 2.0],
}
SLIDERS = {f"ch13 {name} over {values}": [lambda name=name, v=v: grpo_slider_run(**{name: v}) for v in values]
           for name, values in RANGES.items()}

#: The notebook's four live controls, each on its own figure of 8 x 3 inches.
WIDGETS = {
    "G": widgets.IntSlider(value=8, min=2, max=32, step=2),
    "eps": widgets.FloatSlider(value=0.2, min=0.05, max=0.9, step=0.05),
    "lr": widgets.FloatLogSlider(value=1.0, base=10, min=-1, max=0.7, step=0.1),
    "beta": widgets.FloatSlider(value=0.0, min=0.0, max=2.0, step=0.1),
}
REDRAWS = {f"ch13 {name} over {values}": Redraw(draw_grpo_run, {name: WIDGETS[name]},
                                                 [{name: v} for v in values], figsize=(8, 3))
           for name, values in RANGES.items()}

if __name__ == "__main__":
    report(SLIDERS, redraws=REDRAWS, note=f"SLIDER_RUN = {SLIDER_RUN}")
