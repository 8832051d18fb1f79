"""Chapter 17's live charts: every estimator's exact bias and error over the group size and the length
cap, and the three KL estimators' bias and spread as the policy moves (``rl4llm.viz.charts``).

Each chart stores the library's numbers (``estimator_bias.estimator_moments``,
``kl_penalties.kl_estimator_moments``) at every position of its sliders; the reader's browser redraws
from them with no kernel."""
from __future__ import annotations

from functools import lru_cache
import math

from ..studies.estimator_bias import ADVANTAGES, estimator_moments, one_step_task, two_step_task
from ..studies.kl_penalties import ESTIMATORS, kl_estimator_moments, moved_policy
from .charts import Declared, Slider, bar_chart, grid


#: The one-step toy's group size: every value from 2 (RLOO needs one other answer) to 16.
G_ONE_STEP = Slider("G", "group size G", 2, 16, 1, 8, fmt="d")

#: The two-step toy's group size (every value; 3003 compositions at G = 8) and length cap (every value).
G_TWO_STEP = Slider("G", "group size G", 2, 8, 1, 8, fmt="d")

LENGTH_CAP = Slider("L_max", "length cap L_max", 3, 12, 1, 3, fmt="d")

#: pi(5) of the policy whose KL to the toy the estimators measure: 49 positions.
PI_5 = Slider("p5", "π(5)", 0.02, 0.98, 0.02, 0.5)

AGGREGATIONS = ("grpo", "dapo", "dr_grpo")


@lru_cache(maxsize=None)
def one_step_values(G: int, key: str) -> tuple:
    """``estimator_moments`` of every advantage on the one-step toy: ``relative_bias`` as it is,
    ``mean_squared_error`` divided by |grad J|^2."""
    task = one_step_task()
    scale = float(task.gradient @ task.gradient) if key == "mean_squared_error" else 1.0
    return tuple(estimator_moments(task, G, a)[key] / scale for a in ADVANTAGES)


@lru_cache(maxsize=None)
def aggregation_bias(G: int, L_max: int) -> tuple:
    """|bias| / |grad J| of each aggregation on the two-step toy, with RLOO's advantages."""
    task = two_step_task()
    return tuple(estimator_moments(task, G, "rloo", t, L_max)["relative_bias"] for t in AGGREGATIONS)


@lru_cache(maxsize=None)
def kl_values(p5: float, key: str) -> tuple:
    """Each KL estimator's ``bias`` or standard deviation (``std``) of one sample at pi(5) = ``p5``."""
    m = kl_estimator_moments(moved_policy(p5))
    return tuple(m[k]["bias"] if key == "bias" else math.sqrt(m[k]["variance"]) for k in ESTIMATORS)


def _span(compute, sliders, names) -> tuple[float, float]:
    """The y axis's foot and top: 0 (or 1.15 times the lowest value, if one is negative) and 1.15 times the
    highest value, over every position of the sliders, so every bar at every setting is drawn whole."""
    values = [row[n] for row in grid(compute, sliders, names) for n in names]
    return 1.15 * min(min(values), 0.0), 1.15 * max(values)


def _bars(compute, sliders, names, correct: str, **labels):
    names = list(names)
    low, high = _span(compute, sliders, names)
    return bar_chart(compute, sliders, categories=names, correct=names.index(correct), ymin=low,
                     ymax=high, item="", marked="read out above the bars", **labels)


def estimator_bias_chart():
    """One-step toy: |bias| / |grad J| of each advantage at every G of ``G_ONE_STEP``."""
    return _bars(lambda G: one_step_values(G, "relative_bias"), [G_ONE_STEP], ADVANTAGES, "rloo",
                 xlabel="advantage (one-step toy)", ylabel="|bias| / |∇J|",
                 headline="REINFORCE and RLOO are unbiased at every G (GRPO only at G = 2)", readout="RLOO")


def estimator_mse_chart():
    """One-step toy: mean squared error / |grad J|^2 of each advantage at every G of ``G_ONE_STEP``."""
    return _bars(lambda G: one_step_values(G, "mean_squared_error"), [G_ONE_STEP], ADVANTAGES, "rloo",
                 xlabel="advantage (one-step toy)", ylabel="MSE / |∇J|²",
                 headline="the shrunk group-mean step has the lowest error", readout="RLOO")


def aggregation_bias_chart():
    """Two-step toy: |bias| / |grad J| of each aggregation (RLOO advantages) on the grid G x L_max."""
    return _bars(aggregation_bias, [G_TWO_STEP, LENGTH_CAP], AGGREGATIONS, "dr_grpo",
                 xlabel="loss aggregation (RLOO advantages)", ylabel="|bias| / |∇J|",
                 headline="only dr_grpo stays unbiased", readout="dr_grpo")


def kl_bias_chart():
    """Each KL estimator's exact bias at every pi(5) of ``PI_5`` (pi_ref the toy)."""
    return _bars(lambda p5: kl_values(p5, "bias"), [PI_5], ESTIMATORS, "k3", xlabel="estimator",
                 ylabel="bias (nats)", headline="k1 and k3 are unbiased; k2 is biased at every stored π(5) but π_ref's 0.2",
                 readout="k3's bias")


def kl_std_chart():
    """Each KL estimator's standard deviation of one sample at every pi(5) of ``PI_5``."""
    return _bars(lambda p5: kl_values(p5, "std"), [PI_5], ESTIMATORS, "k3", xlabel="estimator",
                 ylabel="standard deviation of one sample (nats)",
                 headline="k3 is quieter than k1 unless π moved far", readout="k3")


# Every chart of chapter 17, in the order the chapter draws them, and its numbers from the library alone
# (tests/test_charts.py): each estimator's moments, each KL estimator's bias and spread.
_ONE_STEP, _TWO_STEP = one_step_task(), two_step_task()


def _oracle_one_step(G, key, scale=1.0):
    return [estimator_moments(_ONE_STEP, G, a)[key] / scale for a in ADVANTAGES]


def _oracle_kl(p5, key):
    m = kl_estimator_moments(moved_policy(p5))
    return [m[k]["bias"] if key == "bias" else math.sqrt(m[k]["variance"]) for k in ESTIMATORS]


CHARTS = (
    Declared("estimator_bias", estimator_bias_chart, lambda G: _oracle_one_step(G, "relative_bias"), [G_ONE_STEP], ADVANTAGES),
    Declared("estimator_mse", estimator_mse_chart,
             lambda G: _oracle_one_step(G, "mean_squared_error", float(_ONE_STEP.gradient @ _ONE_STEP.gradient)),
             [G_ONE_STEP], ADVANTAGES),
    Declared("aggregation_bias", aggregation_bias_chart,
             lambda G, L_max: [estimator_moments(_TWO_STEP, G, "rloo", t, L_max)["relative_bias"] for t in AGGREGATIONS],
             [G_TWO_STEP, LENGTH_CAP], AGGREGATIONS),
    Declared("kl_bias", kl_bias_chart, lambda p5: _oracle_kl(p5, "bias"), [PI_5], ESTIMATORS),
    Declared("kl_std", kl_std_chart, lambda p5: _oracle_kl(p5, "std"), [PI_5], ESTIMATORS),
)
