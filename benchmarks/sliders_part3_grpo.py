"""Time chapter 13's slider functions (G, epsilon, learning rate, beta): median and worst case.

Each slider recomputes ``grpo_slider_run`` (a short seeded GRPO run, settings ``SLIDER_RUN``)
over the slider's range; the target is well under 20 ms per update. Only the computation is
timed, not the drawing. Run: ``python benchmarks/sliders_part3_grpo.py``.
"""
import os
import platform
import statistics
import time

from rl4llm.toy_grpo import SLIDER_RUN, grpo_slider_run

SLIDERS = {
    "G": [2, 4, 8, 16, 32],
    "eps": [0.05, 0.1, 0.2, 0.5, 0.9],
    "lr": [0.1, 0.3, 1.0, 3.0, 5.0],
    "beta": [0.0, 0.1, 0.5, 1.0, 2.0],
}
REPEATS = 5


def main() -> None:
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
          f"python {platform.python_version()}; SLIDER_RUN = {SLIDER_RUN}")
    grpo_slider_run()  # warm-up
    for name, values in SLIDERS.items():
        times = []
        for value in values:
            for _ in range(REPEATS):
                start = time.perf_counter()
                grpo_slider_run(**{name: value})
                times.append((time.perf_counter() - start) * 1e3)
        print(f"slider {name:<5}: median {statistics.median(times):6.1f} ms, worst {max(times):6.1f} ms "
              f"({len(times)} updates over {values})")


if __name__ == "__main__":
    main()
