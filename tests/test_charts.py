"""The sliders' charts (rl4llm.viz.charts): their data are the library's numbers on the whole grid, every
continuous slider has at least 25 positions and never fewer than the live widget it replaced, the chart
opens at the figure the text discusses, and the stored chart is the one the library builds today."""
from __future__ import annotations

import importlib
import itertools
import json
import math
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("altair")

from rl4llm import CORRECT, LOGITS, VOCAB, decode_probs, sft_step, softmax  # noqa: E402
from rl4llm.viz import charts  # noqa: E402
from rl4llm.viz.charts import Slider, bar_chart, chart_rows, chart_sliders, from_csv, grid, to_csv  # noqa: E402
from rl4llm.viz.decoding import DECODING, decoding_chart  # noqa: E402
from rl4llm.viz.distribution import TEMPERATURE, distribution_chart  # noqa: E402
from rl4llm.viz.sft import LEARNING_RATE, sft_step_chart  # noqa: E402

BOOK = Path(__file__).resolve().parents[1] / "book"
VIZ = Path(__file__).resolve().parents[1] / "code" / "rl4llm" / "viz"
#: Every chapter, found by glob (``book/NN_<stem>.ipynb``); its charts are in ``rl4llm.viz.<stem>``.
CHAPTERS = {p.stem.split("_", 1)[1]: p.stem for p in sorted(BOOK.glob("[0-9][0-9]_*.ipynb"))}
#: The viz modules that are no chapter's: shared by every chapter.
SHARED = {"__init__", "charts", "style", "source"}
#: Every chart of the book as ``chapter/name``: each declared beside its builder, in its chapter's viz module's
#: ``CHARTS`` (``rl4llm.viz.charts.Declared``: its builder, its sliders and its oracle, the library's numbers
#: at a setting without the viz code).
DECLARED = {f"{CHAPTERS[path.stem]}/{d.name}": d for path in sorted(VIZ.glob("*.py")) if path.stem in CHAPTERS
            for d in getattr(importlib.import_module(f"rl4llm.viz.{path.stem}"), "CHARTS", ())}


def _opening(sliders) -> dict:
    """The setting a chart opens at: its sliders' defaults (the figure the text discusses)."""
    return {s.name: s.default for s in sliders}


def _discrete(sliders) -> set:
    """The sliders that take every value of their range: whole numbers a step of 1 apart."""
    return {s.name for s in sliders if s.integer and s.step == 1}


#: Bar charts: builder, its sliders, the library's numbers at a setting, its bars, the positions of the
#: ipywidgets slider it replaced (None if none) and the chart's opening setting.
CHARTS = {name: (d.build, list(d.sliders), d.oracle, d.categories, d.replaced, _opening(d.sliders))
          for name, d in DECLARED.items() if d.categories is not None}


def test_every_viz_module_is_a_chapters_and_every_chapter_with_a_chart_declares_its_charts():
    modules = {p.stem for p in VIZ.glob("*.py")}
    assert modules - SHARED <= set(CHAPTERS), f"viz modules of no chapter: {sorted(modules - SHARED - set(CHAPTERS))}"
    declaring = {page for stem, page in CHAPTERS.items() if stem in modules
                 and hasattr(importlib.import_module(f"rl4llm.viz.{stem}"), "CHARTS")}
    with_charts = {page for page in CHAPTERS.values() if stored_charts(page)}
    assert with_charts == declaring and {name.split("/")[0] for name in DECLARED} <= with_charts


@pytest.fixture(scope="module", params=list(CHARTS))
def built(request):
    build, sliders, library, categories, widget, opening = CHARTS[request.param]
    return request.param, build().to_dict(), sliders, library, categories, widget, opening


def test_the_charts_data_are_the_librarys_numbers_at_every_point_of_the_grid(built):
    _, spec, sliders, library, categories, *_ = built
    rows = chart_rows(spec)
    assert len(rows) == int(np.prod([s.positions for s in sliders]))
    stored = np.array([[row[str(t)] for t in categories] for row in rows])
    computed = np.array([library(**{s.name: s.cast(row[s.name]) for s in sliders}) for row in rows])
    np.testing.assert_allclose(stored, computed, rtol=0, atol=0.5e-6)
    settings = {tuple(row[s.name] for s in sliders) for row in rows}
    expected = {tuple(p) for p in np.array(np.meshgrid(*(s.values for s in sliders), indexing="ij")).reshape(
        len(sliders), -1).T}
    assert settings == expected


def check_positions(sliders, stored: dict, widget, discrete, opening) -> None:
    """Each slider as stored: the library's range, at least the positions of the widget it replaced
    (``widget``, None if none), every value of a ``discrete`` one and 25 positions of any other; the
    chart opens at ``opening``."""
    assert set(stored) == {s.name for s in sliders}
    assert widget is None or set(widget) == set(stored)
    for s in sliders:
        bind = stored[s.name]["bind"]
        assert (bind["input"], bind["min"], bind["max"], bind["step"]) == ("range", s.start, s.stop, s.step)
        assert round((bind["max"] - bind["min"]) / bind["step"]) + 1 == s.positions >= (widget or {}).get(s.name, 0)
        if s.name in discrete:                                 # every value of a discrete one
            assert s.integer and s.step == 1
        else:
            assert s.positions >= 25
    assert {name: p["value"] for name, p in stored.items()} == opening


def stored_charts(page: str) -> list:
    """The charts stored in a chapter's notebook (``page``: ``chapter`` or ``chapter/what``)."""
    cells = json.loads((BOOK / f"{page.split('/')[0]}.ipynb").read_text(encoding="utf-8"))["cells"]
    return [o["data"][charts.MIME_TYPE] for c in cells if c["cell_type"] == "code"
            for o in c.get("outputs", []) if charts.MIME_TYPE in o.get("data", {})]


def test_every_slider_has_enough_positions_and_opens_at_the_figure_in_the_text(built):
    _, spec, sliders, _, _, widget, opening = built
    check_positions(sliders, {p["name"]: p for p in chart_sliders(spec)}, widget,
                    {s.name for s in sliders if s.integer}, opening)


def test_the_stored_chart_is_the_one_the_library_builds(built):
    chapter, spec, *_ = built
    stored = stored_charts(chapter)
    assert json.loads(json.dumps(spec)) in stored
    assert len(stored) == sum(1 for name in DECLARED if name.split("/")[0] == chapter.split("/")[0])


def test_positions_the_exercises_ask_for_are_on_the_grid():
    on = lambda slider, v: np.any(np.isclose(slider.values, v, rtol=0, atol=1e-9))
    assert all(on(TEMPERATURE, t) for t in (0.5, 1.0, 2.0, 10.0, 17.0))          # ex-ch01-slider
    assert on(DECODING[0], 0.7) and on(DECODING[0], 0.65) and on(DECODING[2], 0.5)   # ex-ch02-sliders
    assert on(LEARNING_RATE, 0.57) and on(LEARNING_RATE, 0.58)                     # ex-ch04-slider (tie 0.5776)


def test_the_grid_is_rounded_and_survives_its_csv():
    rows = grid(lambda a, b: [a * b / 3, 1 / 7], [Slider("a", "a", 0.5, 1.5, 0.5, 1.0),
                                                   Slider("b", "b", 1, 3, 1, 2, fmt="d")], ["x", "y"])
    assert len(rows) == 9 and rows[0] == {"a": 0.5, "b": 1, "x": 0.166667, "y": 0.142857}
    assert from_csv(to_csv(rows)) == [{k: float(v) for k, v in r.items()} for r in rows]
    assert to_csv(rows).split("\n")[:2] == ["a,b,x,y", "0.5,1,0.166667,0.142857"]


def test_a_zero_is_stored_unsigned_whatever_side_the_cpu_rounds_it_to():
    """An unbiased estimator's bias is 0 in theory and +-1e-17 in floating point, its sign set by the
    CPU's kernels (chapter 17's k1 and k3 on AVX-512 and AVX2): the chart must store 0 either way."""
    rows = grid(lambda s: [s * 1e-17, s * 0.0, s * 2.5e-7], [Slider("s", "s", -1, 1, 2, 1, fmt="d")], ["a", "b", "c"])
    assert to_csv(rows).split("\n") == ["s,a,b,c", "-1,0,0,0", "1,0,0,0"]
    assert all(math.copysign(1.0, r[k]) == 1.0 for r in rows for k in "abc")
    assert charts.rounded(-4e-7) == -0.0 and math.copysign(1.0, charts.rounded(-4e-7)) == 1.0
    assert charts.rounded(-6e-7) == -1e-6


def test_a_chart_shows_the_value_in_its_title_and_describes_its_bars():
    spec = distribution_chart().to_dict()
    assert "'T = ' + format(T, '.2f')" in spec["title"]["text"]["expr"]
    bind = spec["params"][0]["bind"]
    assert bind["name"].strip() == "T"
    text = json.dumps(spec)
    assert '"description"' in text and "(correct)" in text
    assert spec["description"].startswith("the order never changes")


@pytest.mark.parametrize("bad, match", [
    (dict(name="top-k"), "identifier"), (dict(step=0.0), "step"), (dict(stop=1.03), "whole number"),
    (dict(default=1.01), "default")])
def test_a_slider_refuses_a_grid_it_cannot_hold(bad, match):
    settings = dict(name="T", label="T", start=0.05, stop=1.0, step=0.05, default=1.0) | bad
    with pytest.raises(ValueError, match=match):
        Slider(**settings)


def test_bar_chart_checks_the_correct_index_and_the_values_per_point():
    with pytest.raises(ValueError, match="correct"):
        bar_chart(lambda T: softmax(LOGITS, T), [TEMPERATURE], categories=VOCAB, correct=5, xlabel="x",
                  ylabel="y", headline="h", readout="r")
    with pytest.raises(ValueError, match="5 values"):
        grid(lambda T: [1.0], [TEMPERATURE], VOCAB)


# ----------------------------------------------------------------------------- line charts
SCALE = Slider("a", "a", 0.5, 2.0, 0.5, 1.0)
WHERE = Slider("w", "w", 0.0, 2.0, 0.5, 1.0)
X = np.linspace(0.0, 2.0, 9)


def _curves(a):
    return [a * X, a * X ** 2]


def test_a_line_chart_stores_every_series_at_every_x_and_setting_with_its_notes():
    spec = charts.line_chart(_curves, [SCALE], x=X, series=["a x", "a x^2"], xlabel="x", ylabel="y",
                             headline="h", notes=lambda a: {"peak": a * 4.0}).to_dict()
    rows = chart_rows(spec)
    assert len(rows) == SCALE.positions * len(X)
    for row in rows:
        assert row["s0"] == pytest.approx(row["a"] * row["x"], abs=1e-6)
        assert row["s1"] == pytest.approx(row["a"] * row["x"] ** 2, abs=1e-6)
    noted = [row for row in rows if not np.isnan(row["n0"])]            # once per setting, at its first x
    assert [(r["a"], r["x"], r["n0"]) for r in noted] == [(a, 0.0, 4 * a) for a in SCALE.values]
    text = json.dumps(spec)
    assert "'a = ' + format(a, '.2f')" in spec["title"]["text"]["expr"] and '\\"peak = \\"' in text
    assert [p["name"] for p in chart_sliders(spec)] == ["a"]


def test_a_line_chart_marks_the_marker_slider_and_reads_the_series_there():
    spec = charts.line_chart(lambda: [X, 2 * X], [], x=X, series=["x", "2x"], xlabel="x", ylabel="y",
                             headline="h", marker=WHERE, styles=["solid", "points"]).to_dict()
    assert len(chart_rows(spec)) == len(X)                   # the curves do not depend on the marker
    assert [(p["name"], p["value"]) for p in chart_sliders(spec)] == [("w", 1.0)]
    text = json.dumps(spec)
    assert "abs(datum.x - w) < 0.125" in text                 # the points and the values at the marker
    assert "' at w = ' + format(w, '.2f')" in text and "format(datum.s1, '.4f')" in text
    split = charts.line_chart(lambda: [X, 2 * X], [], x=X, series=["x", "2x"], xlabel="x", ylabel="y",
                              headline="h", marker=WHERE, readout_per_line=1).to_dict()
    texts = lambda spec: [layer for layer in spec["layer"] if layer["mark"]["type"] == "text"]
    assert (len(texts(spec)), len(texts(split))) == (1, 2)          # one value a line: a line per series


@pytest.mark.parametrize("bad, match", [
    (dict(x=[0.0, 0.0]), "x must increase"), (dict(styles=["solid", "wavy"]), "style"),
    (dict(colors=["#000000"]), "colour"), (dict(marker=Slider("w", "w", 0.0, 2.0, 0.1, 1.0)), "marker"),
    (dict(series=["one"]), "1 rows of 9")])
def test_line_chart_refuses_what_it_cannot_draw(bad, match):
    settings = dict(x=X, series=["a x", "a x^2"], xlabel="x", ylabel="y", headline="h") | bad
    with pytest.raises(ValueError, match=match):
        charts.line_chart(_curves, [SCALE], **settings)


def test_line_chart_notes_name_the_same_numbers_at_every_setting():
    with pytest.raises(ValueError, match="same numbers"):
        charts.line_chart(_curves, [SCALE], x=X, series=["a x", "a x^2"], xlabel="x", ylabel="y", headline="h",
                          notes=lambda a: {"peak": a} if a == 1.0 else {"top": a})


def test_a_line_chart_with_moving_points_stores_each_settings_own_x_its_error_bars_and_gaps():
    def law(n):
        x = np.arange(n + 1) / n
        return x, [x ** 2, np.where(x > 0.5, np.nan, x), 0.1 * x]     # a gap in the second series

    spec = charts.line_chart(law, [Slider("n", "n", 1, 4, 1, 2, fmt="d")], x=None, series=["share", "law"],
                             errors={"share": "± 2 SE"}, styles=["points", "dotted"], xlabel="x", ylabel="y",
                             headline="h", decimals=3).to_dict()
    rows = chart_rows(spec)
    assert [r["x"] for r in rows if r["n"] == 4] == [0.0, 0.25, 0.5, 0.75, 1.0]
    assert len(rows) == 2 + 3 + 4 + 5
    assert all(r["e0"] == pytest.approx(round(0.1 * r["x"], 3)) for r in rows)      # decimals=3 kept
    assert [np.isnan(r["s1"]) for r in rows if r["n"] == 4] == [False] * 3 + [True] * 2
    text = json.dumps(spec, ensure_ascii=False)
    assert "datum.s0 - datum.e0" in text and "bars: ± 2 SE" in text
    with pytest.raises(ValueError, match="errors must name series"):
        charts.line_chart(law, [SCALE], x=None, series=["share", "law"], errors={"other": "x"}, xlabel="x",
                          ylabel="y", headline="h")


# ----------------------------------------------------------------------------- line charts of the book
from rl4llm import TOY_GROUP, TOY_GROUP_ADVANTAGES, drift_case, drift_variance_ratio, ppo_inner_steps  # noqa: E402
from rl4llm.viz import (baselines, critic_gae, forward_kl, grpo_toy, importance_sampling, monte_carlo,  # noqa: E402
                        on_policy_loop, score_function, sequences, trust_region_ppo)

#: Line charts: builder, the sliders of its grid, its marker slider (or None), the library's (x, rows) at a
#: setting, the positions of the ipywidgets slider it replaced (None if none), the sliders that take every
#: value of their range and the chart's opening setting.
LINE_CHARTS = {name: (d.build, list(d.sliders), d.marker, d.oracle, d.replaced,
                      _discrete([*d.sliders, *([d.marker] if d.marker else [])]),
                      _opening([*d.sliders, *([d.marker] if d.marker else [])]))
               for name, d in DECLARED.items() if d.categories is None}



def test_the_seeds_chart_adds_runs_to_one_study():
    """More seeds extend the same runs: the chart's points at n are the first n of its points at n + 1."""
    rows = chart_rows(monte_carlo.seeds_chart().to_dict())
    runs = {n: [row["s0"] for row in rows if row["n_seeds"] == n] for n in (2, 8, 9, 128)}
    assert runs[8] == runs[9][:8] == runs[128][:8] and runs[2] == runs[128][:2]


def test_the_baseline_chart_marks_the_mean_and_the_optimum_of_every_grader():
    rows = chart_rows(baselines.baseline_chart().to_dict())
    for offset in (0.0, 0.25, 10.0):
        at = [row for row in rows if row["offset"] == offset]
        (mean,) = [row["x"] for row in at if row["s1"] == row["s1"]]          # not NaN: the one marked point
        (best,) = [row["x"] for row in at if row["s2"] == row["s2"]]
        assert mean == pytest.approx(offset + 0.2, abs=1e-6) and best == pytest.approx(offset + 43 / 185, abs=1e-6)


@pytest.fixture(scope="module", params=list(LINE_CHARTS))
def line_built(request):
    return request.param, LINE_CHARTS[request.param][0]().to_dict()


def _setting_key(values) -> tuple:
    """A setting as a dict key: its values rounded far below a slider's step, above float noise."""
    return tuple(round(float(v), 9) for v in values)


def test_a_line_charts_data_are_the_librarys_numbers_at_every_setting(line_built):
    chapter, spec = line_built
    _, sliders, _, library, *_ = LINE_CHARTS[chapter]
    rows = chart_rows(spec)
    settings = sorted({tuple(row[s.name] for s in sliders) for row in rows})
    assert settings == sorted(itertools.product(*(s.values for s in sliders)))
    if DECLARED[chapter].checked:
        settings = DECLARED[chapter].checked
    by_setting = {}                                  # the rows of each setting, found once (not per setting)
    for row in rows:
        by_setting.setdefault(_setting_key(row[s.name] for s in sliders), []).append(row)
    for setting in settings:
        params = {s.name: s.cast(v) for s, v in zip(sliders, setting)}
        x, expected = library(**params)
        at = by_setting[_setting_key(setting)]
        np.testing.assert_allclose([row["x"] for row in at], x, rtol=0, atol=0.5e-6)
        keys = sorted((k for k in at[0] if k[0] in "se" and k[1:].isdigit()), key=lambda k: (k[0] == "e", k))
        stored = np.array([[row[k] for row in at] for k in keys])
        # stored to its decimals: half a unit of the last, and the float error of a half
        np.testing.assert_allclose(stored, np.asarray(expected, dtype=float), rtol=0,
                                   atol=0.5 * 10.0 ** -DECLARED[chapter].decimals + 1e-12,
                                   err_msg=str(params))


def test_every_line_chart_slider_has_enough_positions_and_opens_at_the_figure_in_the_text(line_built):
    chapter, spec = line_built
    _, sliders, marker, _, widget, discrete, opening = LINE_CHARTS[chapter]
    check_positions(sliders + ([marker] if marker else []), {p["name"]: p for p in chart_sliders(spec)}, widget,
                    discrete, opening)


def test_the_stored_line_charts_are_the_ones_the_library_builds(line_built):
    chapter, spec = line_built
    stored = stored_charts(chapter)
    assert json.loads(json.dumps(spec)) in stored
    assert len(stored) == sum(1 for name in DECLARED if name.split("/")[0] == chapter.split("/")[0])


def test_positions_the_exercises_of_chapters_3_and_5_to_9_ask_for_are_on_the_grid():
    on = lambda slider, v: np.any(np.isclose(slider.values, v, rtol=0, atol=1e-9))
    assert on(sequences.PI_0, 0.1) and on(sequences.P_5_AFTER_0, 0.9)                                  # ex-ch03-talkative
    assert all(on(sequences.PI_0, v) for v in (0.15, 0.2)) and on(sequences.P_5_AFTER_0, 1.0)          # ex-ch03-sliders
    assert all(on(forward_kl.TRAINING_LR, v) for v in (0.5, 1.0, 2.0, 4.0))                         # ex-ch05-slider
    assert all(on(monte_carlo.JHAT_G, G) for G in (4, 13, 14, 16, 64))                               # ex-ch06-bell
    assert on(score_function.STEP_LR, 1.0) and on(score_function.STEP_LR, 5.0)                                    # ex-ch07-slider
    assert on(baselines.OFFSET, 0.0) and on(baselines.OFFSET, 10.0)                                     # ex-ch08-overshoot
    assert all(on(baselines.BASELINE, b) for b in (0.0, 0.2, 0.4, 0.5, 1.0, 10.2, 11.0))
    assert on(on_policy_loop.LEARNING_G, 8) and all(on(on_policy_loop.LEARNING_LR, v) for v in (0.5, 1.0, 2.0, 4.0))  # ex-ch09-lr


# ----------------------------------------------------------------------------- chapters 10-14
def test_chapter_10_to_14_sliders_reach_their_live_widgets_ends_and_the_positions_the_text_names():
    on = lambda slider, *vs: all(np.any(np.isclose(slider.values, v, rtol=0, atol=1e-9)) for v in vs)
    drift, G = importance_sampling.DRIFT
    assert (drift.start, drift.stop) == (0.05, 0.95) and on(drift, 0.05, 0.1, 0.2, 0.5, 0.8, 0.95)  # ex-ch10-drift
    assert on(G, 1, 8, 16, 32) and list(G.values) == list(range(1, 33))
    assert on(trust_region_ppo.CLIP_EPS, 0.05, 0.1, 0.2, 0.3, 0.5)                                  # ex-ch11-long-reuse
    assert list(trust_region_ppo.INNER_K.values) == list(range(1, 25)) and trust_region_ppo.INNER_K.positions == 24
    lam, gamma = critic_gae.GAE                                                              # ex-ch12-equal-credit
    assert on(lam, 0.0, 0.5, 0.65, 0.675, 0.7, 1.0) and on(gamma, 0.7, 0.75, 0.775, 0.8, 1.0)
    assert gamma.start < gamma.stop and gamma.default == gamma.stop    # gamma runs upward, opens at 1
    s = grpo_toy.GRPO_SLIDERS                                   # chapters 13 and 14's text, ex-ch14-leash
    assert on(s["G"], 2, 8, 32) and on(s["eps"], 0.05, 0.15, 0.5, 0.9) and on(s["lr"], 0.1, 0.5, 1.0, 3.0, 5.0)
    assert on(s["beta"], 0.0, 0.5, 2.0) and s["beta"].positions >= 21


def test_the_drift_charts_notes_are_the_librarys():
    notes = importance_sampling.drift_notes(0.5, 8)
    d = drift_case(0.5, 8)
    assert notes == {"stale 5 adds ρ(5)/G": d["ratio"] / 8, "P(no stale 5)": d["p_no_correct"],
                     "variance stale ÷ fresh": drift_variance_ratio([0.5])[0]}
    assert notes["variance stale ÷ fresh"] == pytest.approx(19.0)


def test_the_inner_steps_chart_reads_a_run_of_K_steps_at_its_marker():
    whole = ppo_inner_steps(LOGITS, TOY_GROUP, TOY_GROUP_ADVANTAGES, 0.2, 0.5, 24)
    for K in (1, 12, 24):
        short = ppo_inner_steps(LOGITS, TOY_GROUP, TOY_GROUP_ADVANTAGES, 0.2, 0.5, K)
        for key in ("kl", "clip_fraction", "probs"):
            np.testing.assert_array_equal(whole[key][:K + 1], short[key])


def test_grpo_run_chart_refuses_an_unknown_slider():
    with pytest.raises(ValueError, match="name must be one of"):
        grpo_toy.grpo_run_chart("K")


def test_a_label_with_a_quote_is_a_valid_vega_string():
    """A readout such as "k3's bias" must not end the expression's string early (chapter 17's did)."""
    from rl4llm.viz.charts import vega_string
    assert vega_string("P(5) = ") == "'P(5) = '"
    assert json.loads(vega_string("k3's bias = ")) == "k3's bias = "
    assert json.loads(vega_string('a "b" \\ c')) == 'a "b" \\ c'
