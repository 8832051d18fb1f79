"""Chapter 18's charts (rl4llm.viz.sequence_ratios): the product weight's variance that they draw against
its own closed form. Their data at every slider position, the defaults the text reads and the stored
charts are checked with every chart of the book in test_charts.py."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("altair")

from rl4llm.studies.sequence_ratios import chain_sequences, reweighted_moments  # noqa: E402
from rl4llm.viz import sequence_ratios as sc  # noqa: E402


@pytest.mark.parametrize("L,steps", [(1, 2), (3, 4), (6, 2)])
def test_the_product_weights_variance_is_its_closed_form(L, steps):
    """Var = E_old[(w A)^2 |sum_t g_t|^2] - |grad J|^2 for the unbiased product weight w."""
    task = chain_sequences(L, steps, sc.LEAD_LR)
    w = task.probs / task.probs_old
    g = task.token_scores.sum(axis=1)
    second = task.probs_old @ ((w * (task.rewards - task.baseline)) ** 2 * (g ** 2).sum(axis=1))
    grad = task.gradient
    assert np.isclose(sc.chain_values(L, steps, "variance")[0], second - grad @ grad)
    assert np.isclose(sc.chain_values(L, steps, "variance")[0], reweighted_moments(task, "sequence_is")["variance"])


def test_the_prefilter_figure_starts_its_accuracy_axis_at_0():
    """draw_prefilter_arms puts the axis's bottom at 0, above every dot's top: a gap is drawn at its true size."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    arms = {"plain": {"accuracy": np.array([0.30, 0.34, 0.36]), "steps": np.array([46, 46, 46])},
            "pre-filtered (n = 8)": {"accuracy": np.array([0.28, 0.31, 0.33]), "steps": np.array([30, 30, 30])}}
    fig, ax = plt.subplots()
    sc.draw_prefilter_arms(ax, arms)
    bottom, top = ax.get_ylim()
    plt.close(fig)
    assert bottom == 0 and top > 0.36
