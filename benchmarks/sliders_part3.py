"""Time the library call behind every point of the charts of chapters 10-12, over each chart's grid.

The charts (``rl4llm.viz.importance_sampling``, ``trust_region_ppo``, ``critic_gae``) compute these numbers at every position of their sliders when the
cell runs and redraw in the browser from them (``benchmarks/chart_redraw.py`` times the redraw); each
point here must take well under 20 ms, so that a chart's grid costs seconds of the chapter's run.
``slider_timing.report`` prints the median and the worst per chart, and the machine it ran on.

    OMP_NUM_THREADS=1 taskset -c 1 python benchmarks/sliders_part3.py
"""
from __future__ import annotations

import itertools

from rl4llm.viz.critic_gae import GAE, gae_curves
from rl4llm.viz.importance_sampling import DRIFT, drift_law, drift_notes
from rl4llm.viz.trust_region_ppo import CLIP_EPS, clip_curves, inner_step_curves
from slider_timing import report


def points(compute, *sliders):
    """One timed call of ``compute`` per point of the sliders' grid."""
    return [(lambda p=p: compute(**p)) for p in ({s.name: s.cast(v) for s, v in zip(sliders, values)}
                                                 for values in itertools.product(*(s.values for s in sliders)))]


SLIDERS = {
    "ch10 drift x G (drift_law + drift_notes)": points(lambda **p: (drift_law(**p), drift_notes(**p)), *DRIFT),
    "ch11 eps (clip_curves)": points(clip_curves, CLIP_EPS),
    "ch11 eps, K marks a step (inner_step_curves)": points(inner_step_curves, CLIP_EPS),
    "ch12 lambda x gamma (gae_curves)": points(gae_curves, *GAE),
}


if __name__ == "__main__":
    report(SLIDERS)
