"""Time every slider chart of Part II (chapters 6-9): the pure functions behind one setting, and the
whole chart (every setting of its grid), which the chapter computes when its cell runs.

Each chart's pure function is timed at settings across its sliders' ranges (several repeats each), then
each chart is built once; the script prints the median and the worst update, and the build time with
the grid's size. The browser redraws the built chart with no kernel (``benchmarks/chart_redraw.py``).

    OMP_NUM_THREADS=1 taskset -c 1 python benchmarks/sliders_part2.py
"""
from __future__ import annotations

import time

from rl4llm import LOGITS, REWARDS
from rl4llm.math.estimators import jhat_study, variance_curve
from rl4llm.studies.onpolicy import SEED_RUN, rl_and_sft_steps, seed_study
from rl4llm.viz.baselines import BASELINE, baseline_chart
from rl4llm.viz.monte_carlo import JHAT_GROUPS, jhat_chart, seeds_chart
from rl4llm.viz.on_policy_loop import learning_band, learning_chart
from rl4llm.viz.score_function import STEP_LR, steps_chart
from slider_timing import report

SLIDERS = {
    "ch6 G (1..64)": [lambda G=G: jhat_study(G, 0.2, JHAT_GROUPS, 0) for G in (1, 2, 4, 8, 16, 32, 64)],
    "ch6 number of seeds (2..128)": [lambda n=n: seed_study(n, seed=0, **SEED_RUN) for n in (2, 4, 8, 16, 32, 64, 128)],
    "ch7 learning rate (0..8), the whole curve": [lambda: rl_and_sft_steps(STEP_LR.values)],
    "ch8 offset (0..10), the curve over b": [
        lambda o=o: variance_curve(LOGITS, REWARDS, o, BASELINE.values) for o in (0.0, 5.0, 10.0)],
    "ch9 G (1..32) x learning rate (0.25..4)": [
        lambda G=G, lr=lr: learning_band(G, lr) for G in (1, 2, 8, 16, 32) for lr in (0.25, 1.0, 4.0)],
}
#: The charts as the chapters build them.
CHARTS = {"ch6 J-hat": jhat_chart, "ch6 seeds": seeds_chart, "ch7 one step": steps_chart,
          "ch8 baseline": baseline_chart, "ch9 learning curves": learning_chart}


def build_times(charts=CHARTS) -> str:
    """Each chart built once: seconds and the number of rows it stores."""
    out = []
    for name, build in charts.items():
        start = time.perf_counter()
        spec = build().to_dict()
        out.append(f"{name} {time.perf_counter() - start:.1f} s ({spec['data']['values'].count(chr(10))} rows)")
    return "chart builds: " + ", ".join(out)


if __name__ == "__main__":
    report(SLIDERS, note=build_times())
