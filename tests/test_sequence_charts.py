"""Chapter 18's charts (rl4llm.viz.sequence_charts): every stored number against the library (and the
product weight's variance against its own closed form), every slider position, the defaults the text
reads, and the notebook's stored charts against the ones built today."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("altair")

from rl4llm import draws_per_kept_group, grpo_toy_run, pass_at_k, run_over_seeds  # noqa: E402
from rl4llm.sequence_ratios import chain_sequences, reweighted_moments  # noqa: E402
from rl4llm.viz import charts  # noqa: E402
from rl4llm.viz import sequence_charts as sc  # noqa: E402

NOTEBOOK = Path(__file__).resolve().parents[1] / "book" / "18_sequence_ratios.ipynb"


def test_grid_charts_hold_the_librarys_numbers_at_every_length_and_lead():
    for build, sliders, compute, names in sc.CHARTS.values():
        rows = charts.chart_rows(build().to_dict())
        assert [(int(r["L"]), int(r["steps"])) for r in rows] == [(L, k) for L in range(1, 7) for k in range(5)]
        for r in rows:
            assert np.allclose([r[n] for n in names], compute(int(r["L"]), int(r["steps"])), atol=1e-6, rtol=0)


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


def test_the_cost_chart_at_every_group_size():
    rows = charts.chart_rows(sc.cost_chart().to_dict())
    assert sorted({int(r["G"]) for r in rows}) == list(range(2, 17)) and len(sc.P_RIGHT) == 49
    for r in rows:
        assert np.isclose(r["s0"], draws_per_kept_group([r["x"], 1 - r["x"]], [1, 0], int(r["G"])), rtol=1e-6)


def test_the_pass_at_k_chart_is_the_seed_mean_at_every_step():
    curves = {"a": np.array([[0.2, 0.5, 0.9], [0.2, 0.3, 0.4]]), "b": np.array([[0.2, 0.2, 0.2], [0.2, 0.6, 0.7]])}
    rows = charts.chart_rows(sc.pass_at_k_chart(curves, [1, 4, 16]).to_dict())
    assert sorted({int(r["t"]) for r in rows}) == [0, 1, 2]
    for r in rows:
        for i, p in enumerate(curves.values()):
            assert np.isclose(r[f"s{i}"], pass_at_k(p[:, int(r["t"])], int(r["x"])).mean(), atol=1e-6)


def test_defaults_are_where_the_text_reads():
    assert (sc.LENGTH.default, sc.LEAD.default, sc.GROUP.default) == (6, 2, 8)
    assert list(sc.LENGTH.values) == [1, 2, 3, 4, 5, 6] and list(sc.LEAD.values) == [0, 1, 2, 3, 4]


def test_the_stored_charts_are_the_ones_built_today():
    cells = json.loads(NOTEBOOK.read_text(encoding="utf-8"))["cells"]
    stored = [o["data"][charts.MIME_TYPE] for c in cells if c["cell_type"] == "code"
              for o in c.get("outputs", []) if charts.MIME_TYPE in o.get("data", {})]
    settings = {"eps 0.2": {}, "clip-higher 0.28": {"eps_high": 0.28}, "entropy bonus 0.1": {"entropy_coef": 0.1}}
    curves = {name: run_over_seeds(grpo_toy_run, range(40), G=8, K=4, lr=0.5, steps=8, **extra)["pi_correct"]
              for name, extra in settings.items()}
    built = [sc.variance_chart(), sc.clip_chart(), sc.cost_chart(), sc.pass_at_k_chart(curves, [1, 2, 4, 8, 16, 32])]
    assert stored == [json.loads(json.dumps(b.to_dict())) for b in built]
