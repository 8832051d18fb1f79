"""Chapter 16's charts (rl4llm.viz.estimator_charts): their data are the library's numbers at every point
of the grid, every discrete slider holds every value and the continuous one at least 25 positions, each
opens where the text reads it, and the stored charts are the ones the library builds today."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("altair")

from rl4llm.estimator_bias import estimator_moments, one_step_task, two_step_task  # noqa: E402
from rl4llm.kl_leashes import kl_estimator_moments, moved_policy  # noqa: E402
from rl4llm.viz import charts  # noqa: E402
from rl4llm.viz.charts import chart_rows, chart_sliders  # noqa: E402
from rl4llm.viz.estimator_charts import CHARTS  # noqa: E402

BOOK = Path(__file__).resolve().parents[1] / "book"
ONE, TWO = one_step_task(), two_step_task()


def _independent(name, row):
    """The chart's numbers at one row, straight from estimator_moments and kl_estimator_moments."""
    if name in ("estimator_bias", "estimator_mse"):
        key = "relative_bias" if name == "estimator_bias" else "mean_squared_error"
        scale = 1.0 if name == "estimator_bias" else float(ONE.gradient @ ONE.gradient)
        return [estimator_moments(ONE, int(row["G"]), a)[key] / scale for a in CHARTS[name][3]]
    if name == "aggregation_bias":
        return [estimator_moments(TWO, int(row["G"]), "rloo", t, int(row["L_max"]))["relative_bias"]
                for t in CHARTS[name][3]]
    m = kl_estimator_moments(moved_policy(row["p5"]))
    return [m[k]["bias"] if name == "kl_bias" else np.sqrt(m[k]["variance"]) for k in CHARTS[name][3]]


@pytest.mark.parametrize("name", list(CHARTS))
def test_the_charts_data_are_the_librarys_numbers_at_every_point_of_the_grid(name):
    build, sliders, _, names = CHARTS[name]
    rows = chart_rows(build().to_dict())
    assert len(rows) == int(np.prod([s.positions for s in sliders]))
    for row in rows:
        np.testing.assert_allclose([row[n] for n in names], _independent(name, row), rtol=0, atol=0.5e-6)


@pytest.mark.parametrize("name", list(CHARTS))
def test_sliders_hold_every_value_or_25_positions_and_open_where_the_text_reads(name):
    build, sliders, *_ = CHARTS[name]
    stored = {p["name"]: p for p in chart_sliders(build().to_dict())}
    assert set(stored) == {s.name for s in sliders}
    for s in sliders:
        if s.integer:
            assert list(s.values) == list(range(int(s.start), int(s.stop) + 1))
        else:
            assert s.positions >= 25
    assert {s.name: stored[s.name]["value"] for s in sliders} == {
        "estimator_bias": {"G": 8}, "estimator_mse": {"G": 8}, "aggregation_bias": {"G": 8, "L_max": 3},
        "kl_bias": {"p5": 0.5}, "kl_std": {"p5": 0.5}}[name]


def test_the_stored_charts_are_the_ones_the_library_builds():
    cells = json.loads((BOOK / "16_estimators.ipynb").read_text(encoding="utf-8"))["cells"]
    stored = [o["data"][charts.MIME_TYPE] for c in cells if c["cell_type"] == "code"
              for o in c.get("outputs", []) if charts.MIME_TYPE in o.get("data", {})]
    assert stored == [json.loads(json.dumps(build().to_dict())) for build, *_ in CHARTS.values()]
