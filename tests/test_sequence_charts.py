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
