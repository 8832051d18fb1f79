"""Time chapter 13's slider functions (G, epsilon, learning rate, beta): median and worst update.

Each slider recomputes ``grpo_slider_run`` (a short seeded GRPO run, settings ``SLIDER_RUN``) over
the slider's range; the target is well under 20 ms per update. Run:
``python benchmarks/sliders_part3_grpo.py``.
"""
from rl4llm.toy_grpo import SLIDER_RUN, grpo_slider_run
from slider_timing import report

#: The frames of chapter 13's kernel-free animations (seven per slider), plus each slider's ends.
RANGES = {
    "G": [2, 4, 6, 8, 12, 16, 32],
    "eps": [0.05, 0.1, 0.15, 0.2, 0.3, 0.5, 0.9],
    "lr": [0.1, 0.2, 0.3, 0.5, 1.0, 2.0, 3.0, 5.0],
    "beta": [0.0, 0.1, 0.25, 0.5, 1.0, 1.5, 2.0],
}
SLIDERS = {f"ch13 {name} over {values}": [lambda name=name, v=v: grpo_slider_run(**{name: v}) for v in values]
           for name, values in RANGES.items()}

if __name__ == "__main__":
    report(SLIDERS, note=f"SLIDER_RUN = {SLIDER_RUN}")
