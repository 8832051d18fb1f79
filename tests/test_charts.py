"""The sliders' charts (rl4llm.viz.charts): their data are the library's numbers on the whole grid, every
continuous slider has at least 25 positions and never fewer than the live widget it replaced, the chart
opens at the figure the text discusses, and the stored chart is the one the library builds today."""
from __future__ import annotations

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


# chapters 17 and 18: the bars' numbers at a setting, from the library without the viz code
from rl4llm.studies.estimator_bias import ADVANTAGES, estimator_moments, one_step_task, two_step_task  # noqa: E402
from rl4llm.studies.kl_leashes import ESTIMATORS, kl_estimator_moments, moved_policy  # noqa: E402
from rl4llm.studies.sequence_ratios import WEIGHTINGS, chain_sequences, reweighted_moments  # noqa: E402
from rl4llm.viz import estimators as ec  # noqa: E402
from rl4llm.viz import sequence_ratios as sc  # noqa: E402

ONE_STEP, TWO_STEP = one_step_task(), two_step_task()


def _one_step(G, key, scale=1.0):
    return [estimator_moments(ONE_STEP, G, a)[key] / scale for a in ADVANTAGES]


def _kl(p5, key):
    m = kl_estimator_moments(moved_policy(p5))
    return [m[k]["bias"] if key == "bias" else np.sqrt(m[k]["variance"]) for k in ESTIMATORS]


def _chain(L, steps, key, clips=None):
    task = chain_sequences(L, steps, sc.LEAD_LR)
    if clips is None:
        return [reweighted_moments(task, w)[key] for w in WEIGHTINGS]
    return [reweighted_moments(task, w, low, high)[key] for _, w, low, high in clips]


PART5_BARS = {
    "17_estimators/bias": (ec.estimator_bias_chart, [ec.G_ONE_STEP], lambda G: _one_step(G, "relative_bias"),
                           ADVANTAGES, None, {"G": 8}),
    "17_estimators/mse": (ec.estimator_mse_chart, [ec.G_ONE_STEP],
                          lambda G: _one_step(G, "mean_squared_error", float(ONE_STEP.gradient @ ONE_STEP.gradient)),
                          ADVANTAGES, None, {"G": 8}),
    "17_estimators/aggregation": (ec.aggregation_bias_chart, [ec.G_TWO_STEP, ec.LENGTH_CAP],
                                  lambda G, L_max: [estimator_moments(TWO_STEP, G, "rloo", t, L_max)["relative_bias"]
                                                    for t in ec.AGGREGATIONS],
                                  ec.AGGREGATIONS, None, {"G": 8, "L_max": 3}),
    "17_estimators/kl_bias": (ec.kl_bias_chart, [ec.PI_5], lambda p5: _kl(p5, "bias"), ESTIMATORS, None,
                              {"p5": 0.5}),
    "17_estimators/kl_std": (ec.kl_std_chart, [ec.PI_5], lambda p5: _kl(p5, "std"), ESTIMATORS, None, {"p5": 0.5}),
    "18_sequence_ratios/variance": (sc.variance_chart, [sc.LENGTH, sc.LEAD],
                                    lambda L, steps: _chain(L, steps, "variance"), sc.WEIGHTING_LABELS, None,
                                    {"L": 6, "steps": 2}),
    "18_sequence_ratios/clip": (sc.clip_chart, [sc.LENGTH, sc.LEAD],
                                lambda L, steps: _chain(L, steps, "zero_share", sc.CLIPS),
                                [label for label, *_ in sc.CLIPS], None, {"L": 6, "steps": 2}),
}

#: Bar charts (a page's charts as ``chapter/what``, in the page's order): builder, its sliders, the
#: library's numbers at a setting (computed here without the viz code), its bars, the positions the
#: ipywidgets slider it replaced had (chapter 1: FloatLogSlider 10^-1.3..10^1.3 step 0.05; chapter 2: the
#: same to 10^1.7, IntSlider 1..5, FloatSlider 0.05..1 step 0.05; chapter 4: FloatSlider 0..5 step 0.1;
#: None for the charts of Part V, which replaced none) and the chart's opening setting (the figure the
#: text discusses: the toy as trained, T = 1 and nothing cut, one step at lr = 1).
CHARTS = {
    "01_distribution": (distribution_chart, [TEMPERATURE], lambda T: softmax(LOGITS, T), VOCAB, {"T": 53},
                        {"T": 1.0}),
    "02_decoding": (decoding_chart, list(DECODING),
                    lambda T, top_k, top_p: decode_probs(LOGITS, T, top_k=top_k, top_p=top_p), VOCAB,
                    {"T": 61, "top_k": 5, "top_p": 20}, {"T": 1.0, "top_k": 5, "top_p": 1.0}),
    "04_sft": (sft_step_chart, [LEARNING_RATE], lambda lr: softmax(sft_step(LOGITS, CORRECT, lr)), VOCAB,
               {"lr": 51}, {"lr": 1.0}),
    **PART5_BARS,
}


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
    assert len(stored) == sum(1 for name in (*CHARTS, *LINE_CHARTS) if name.split("/")[0] == chapter.split("/")[0])


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


# ----------------------------------------------------------------------------- chapters 3 and 5-9
from functools import lru_cache  # noqa: E402

from rl4llm import REWARDS, estimator_variance, expected_reward, optimal_baseline, training_curves  # noqa: E402
from rl4llm.math.estimators import jhat_study  # noqa: E402
from rl4llm.studies.onpolicy import learning_curve_band, rl_and_sft_steps, seed_study  # noqa: E402
from rl4llm.math.statistics import t_quantile  # noqa: E402
from rl4llm.math.two_step import two_spellings  # noqa: E402
from rl4llm import (TOY_GROUP, TOY_GROUP_ADVANTAGES, advantage_table, clipped_objective,  # noqa: E402
                    clipped_objective_grad, drift_case, drift_variance_ratio, ppo_inner_steps)
from rl4llm.math.credit import EXAMPLE_REWARDS, EXAMPLE_VALUES  # noqa: E402
from rl4llm.studies.toy_grpo import grpo_slider_run  # noqa: E402
from rl4llm.viz import (baselines, critic_gae, forward_kl, grpo_toy, importance_sampling, monte_carlo,  # noqa: E402
                        on_policy_loop, score_function, sequences, trust_region_ppo)


@lru_cache(maxsize=1)
def _seed_pool():
    """Chapter 6's one study: 128 runs; the chart at n shows its first n (never a fresh set of n)."""
    return seed_study(128, seed=0, G=4, lr=1.0, steps=10)["finals"]


def _first(n_seeds):
    finals = _seed_pool()[:n_seeds]
    return finals, finals.mean(), finals.std(ddof=1) / math.sqrt(n_seeds)


def _seeds(n_seeds):
    finals, mean, se = _first(n_seeds)
    half = t_quantile(0.975, n_seeds - 1) * se
    ends = np.full(n_seeds, np.nan)
    ends[[0, -1]] = 1.0                                   # the mean and the interval: their two ends
    return np.arange(1, n_seeds + 1), [finals, mean * ends, (mean - half) * ends, (mean + half) * ends]


def _seed_errors():
    n = np.arange(2, 129)
    sigma = seed_study(4096, seed=1, G=4, lr=1.0, steps=10)["std"]
    return n, [sigma / np.sqrt(n), [_first(int(k))[2] for k in n]]


def test_the_seeds_chart_adds_runs_to_one_study():
    """More seeds extend the same runs: the chart's points at n are the first n of its points at n + 1."""
    rows = chart_rows(monte_carlo.seeds_chart().to_dict())
    runs = {n: [row["s0"] for row in rows if row["n_seeds"] == n] for n in (2, 8, 9, 128)}
    assert runs[8] == runs[9][:8] == runs[128][:8] and runs[2] == runs[128][:2]


def _baseline_x():
    """The slider's b, and every grader's mean reward J and optimal b* (the chart marks both)."""
    marks = [f(LOGITS, REWARDS + offset) for offset in baselines.OFFSET.values for f in (expected_reward, optimal_baseline)]
    return np.unique(np.round(np.r_[baselines.BASELINE.values, marks], 10))


def _baseline(offset):
    r, b = REWARDS + offset, _baseline_x()
    mean, best = expected_reward(LOGITS, r), optimal_baseline(LOGITS, r)
    ratio = np.array([estimator_variance(LOGITS, r, x) for x in b]) / estimator_variance(LOGITS, r, mean)
    return b, [ratio, np.where(np.isclose(b, mean, rtol=0, atol=1e-9), ratio, np.nan),
               np.where(np.isclose(b, best, rtol=0, atol=1e-9), ratio, np.nan)]


def test_the_baseline_chart_marks_the_mean_and_the_optimum_of_every_grader():
    rows = chart_rows(baselines.baseline_chart().to_dict())
    for offset in (0.0, 0.25, 10.0):
        at = [row for row in rows if row["offset"] == offset]
        (mean,) = [row["x"] for row in at if row["s1"] == row["s1"]]          # not NaN: the one marked point
        (best,) = [row["x"] for row in at if row["s2"] == row["s2"]]
        assert mean == pytest.approx(offset + 0.2, abs=1e-6) and best == pytest.approx(offset + 43 / 185, abs=1e-6)


def _learning(G, lr):
    band = learning_curve_band(G, lr, 30, 100, 0)
    return np.arange(31), [band["median"], band["low"], band["high"],
                           np.concatenate([[np.nan], band["zero_signal_fraction"]])]


#: Line charts: builder, the sliders of its grid, its marker slider (or None), the library's (x, rows)
#: at a setting, computed here without the viz code, the positions of the ipywidgets slider it replaced
#: (ch3: FloatSliders 0..1 step 0.05; ch5: 0.1..5 step 0.1; ch6: IntSliders 1..64 and 2..128; ch7:
#: 0..8 step 0.25; ch8: offset 0..10 step 0.5, b -1..11 step 0.1; ch9: G 1..32, lr 0.25..4 step 0.25),
#: the discrete sliders and the chart's opening setting (the figure the text discusses).
LINE_CHARTS = {
    "03_sequences": (sequences.two_spellings_chart, [sequences.P_5_AFTER_0], sequences.PI_0,
                     lambda p_5_after_0: (sequences.PI_0.values, [[two_spellings(q, p_5_after_0)[k] for q in sequences.PI_0.values]
                                                              for k in ("5", "05", "correct")]),
                     {"pi_0": 21, "p_5_after_0": 21}, set(), {"pi_0": 0.1, "p_5_after_0": 0.2}),
    "05_forward_kl": (forward_kl.training_curves_chart, [forward_kl.TRAINING_LR], None,
                      lambda lr: (np.arange(26), [training_curves(lr, 25)[f"{run}_{k}"] for run in ("sft", "rl")
                                                  for k in ("5", "05", "5_after_0")]),
                      {"lr": 50}, set(), {"lr": 1.0}),
    "06_monte_carlo": (monte_carlo.jhat_chart, [monte_carlo.JHAT_G], None,
                       lambda G: (lambda s: (s["values"], [s["frequencies"], s["law"], 2 * s["frequency_standard_errors"]]))(
                           jhat_study(G, 0.2, 20_000, 0)),
                       {"G": 64}, {"G"}, {"G": 4}),
    "06_monte_carlo/seeds": (monte_carlo.seeds_chart, [monte_carlo.N_SEEDS], None, _seeds, {"n_seeds": 127}, {"n_seeds"},
                             {"n_seeds": 8}),
    "06_monte_carlo/seed_errors": (monte_carlo.seeds_error_chart, [], monte_carlo.N_SEEDS, _seed_errors, {"n_seeds": 127},
                                   {"n_seeds"}, {"n_seeds": 8}),
    "07_score_function": (score_function.steps_chart, [], score_function.STEP_LR,
                          lambda: (score_function.STEP_LR.values, [rl_and_sft_steps(score_function.STEP_LR.values)[k][:, CORRECT]
                                                          for k in ("pi_rl", "pi_sft")]),
                          {"lr": 33}, set(), {"lr": 1.0}),
    "08_baselines": (baselines.baseline_chart, [baselines.OFFSET], baselines.BASELINE, _baseline, {"offset": 21, "b": 121},
                     set(), {"offset": 10.0, "b": 0.0}),
    "09_on_policy_loop": (on_policy_loop.learning_chart, [on_policy_loop.LEARNING_G, on_policy_loop.LEARNING_LR], None, _learning,
                          {"G": 32, "lr": 16}, {"G"}, {"G": 8, "lr": 1.0}),
}


# chapters 10-14: the library's numbers at a setting, computed here without the viz code
def _drift(drift, G):
    d = drift_case(drift, G)
    law = np.zeros((2, 33))                               # how many 5s among G draws: 0 to 32
    law[0, :G + 1], law[1, :G + 1] = d["on_probs"], d["is_probs"]
    return np.arange(33), law


def _clip(eps):
    rho = np.round(np.linspace(0.0, 2.5, 126), 10)      # the x the chart stores: 0.82 itself, not 0.8200000000000001
    return rho, [f(rho, np.full_like(rho, A), eps) for A in (0.8, -0.2) for f in (clipped_objective,
                                                                                  clipped_objective_grad)]


def _inner(eps):
    out = ppo_inner_steps(LOGITS, TOY_GROUP, TOY_GROUP_ADVANTAGES, eps, 0.5, 24)
    return np.arange(25), [out["kl"], out["clip_fraction"], out["probs"][:, CORRECT], out["probs"][:, 1]]


def _grpo(**setting):
    run = grpo_slider_run(**setting)
    return np.arange(11), [run["pi_correct"], run["entropy"], run["kl_ref"],
                           np.r_[np.nan, run["inner_clip_fraction"][:, -1]]]


#: The line charts of chapters 10-14, as ``LINE_CHARTS``; the ipywidgets they replaced: ch10 FloatSlider
#: 0.05..0.95 step 0.05, IntSlider 1..32; ch11 eps 0.05..0.5 step 0.05, K 1..24; ch12 FloatSliders 0..1 and
#: 0.05..1 step 0.05; ch13 G 2..32 step 2, eps 0.05..0.9 step 0.05, lr 10^-1..10^0.7 step 0.1 (18 positions),
#: ch14 beta 0..2 step 0.1.
PART3_CHARTS = {
    "10_importance_sampling": (importance_sampling.drift_chart, list(importance_sampling.DRIFT), None, _drift, {"drift": 19, "G": 32}, {"G"},
                               {"drift": 0.5, "G": 8}),
    "11_trust_region_ppo/clip": (trust_region_ppo.clip_chart, [trust_region_ppo.CLIP_EPS], None, _clip, {"eps": 10}, set(), {"eps": 0.2}),
    "11_trust_region_ppo/inner": (trust_region_ppo.inner_steps_chart, [trust_region_ppo.CLIP_EPS], trust_region_ppo.INNER_K, _inner,
                                  {"eps": 10, "K": 24}, {"K"}, {"eps": 0.2, "K": 12}),
    "12_critic_gae": (critic_gae.gae_chart, list(critic_gae.GAE), None,
                      lambda lam, gamma: (np.arange(3), advantage_table(EXAMPLE_REWARDS, EXAMPLE_VALUES, gamma,
                                                                        lams=(0.0, lam, 1.0))["advantages"]),
                      {"lam": 21, "gamma": 20}, set(), {"lam": 0.5, "gamma": 1.0}),
    **{f"{page}/{name}": (lambda name=name: grpo_toy.grpo_run_chart(name), [s], None, _grpo, {name: widget},
                          {"G"} & {name}, {name: s.default})
       for (name, s), widget, page in zip(grpo_toy.GRPO_SLIDERS.items(), (16, 18, 18, 21),
                                          ("13_grpo_toy",) * 3 + ("14_grpo_choices",))},
}
LINE_CHARTS.update(PART3_CHARTS)


# chapters 18 and 19: the library's numbers at a setting, computed here without the viz code
from functools import lru_cache  # noqa: E402

from rl4llm import draws_per_kept_group, grpo_toy_run, memory_budget, run_over_seeds, schedule  # noqa: E402
from rl4llm.math.memory import QWEN25_1_5B, shape_options  # noqa: E402
from rl4llm.math.pass_at_k import pass_at_k  # noqa: E402
from rl4llm.math.step_time import (H100_SXM, SCHEDULES, generation_seconds, training_seconds,  # noqa: E402
                              weight_sync_seconds)
from rl4llm.viz import real_runs as rr  # noqa: E402

#: The model state's parts, and chapter 19's sizes: 25 from 1e5 to 1e11 and chapter 15's GPT, 7B and 70B.
STATE = ("weights", "gradients", "master_weights", "optimizer_state", "reference")
TINY_GPT = 102016
SIZES = np.unique(np.r_[np.logspace(5, 11, 25), TINY_GPT, 7e9, 70e9])


def _state_gb(n, n_gpus, stage, reference=True):
    b = memory_budget(float(n), n_gpus=n_gpus, sharding=("none", "zero1", "zero2", "zero3")[stage], reference=reference)
    return sum(b[p] for p in STATE) / 1e9


def _fits(n_gpus, stage):
    return SIZES / 1e9, [[_state_gb(n, n_gpus, stage) for n in SIZES],
                         [_state_gb(n, n_gpus, stage, reference=False) for n in SIZES],
                         [H100_SXM["memory_bytes"] / 1e9] * len(SIZES)]


def _batch(G, parts):
    """Qwen2.5-1.5B's group of G: activations (plain, checkpointed), fp32 logits (whole, 1024 at a time), KV."""
    def gb(T, part, **options):
        return memory_budget(QWEN25_1_5B.n_params, prompts=1, group_size=G, prompt_length=512,
                             completion_length=int(T), **shape_options(QWEN25_1_5B), **options)[part] / 1e9
    T = rr.COMPLETION.values
    every = [[gb(t, "activations") for t in T], [gb(t, "activations", activation_checkpointing=True) for t in T],
             [gb(t, "logits") for t in T], [gb(t, "logits", logits_chunk=1024) for t in T],
             [gb(t, "kv_cache") for t in T]]
    return T, every[parts]


def _step(n, G, samplers, trainers, completion=4096):
    """Rollout, training and sync seconds of 64 prompts of 512 tokens, G each, 40% of an H100's bf16 peak;
    the busiest sampler decodes its share at 60% of the bandwidth, reading a KV cache of 57,344 bytes a token
    at 7B (Qwen2.5-7B's shape) scaled with n, in waves of what 80 GB holds beside the weights."""
    F, sequences = 0.4 * H100_SXM["bf16_flops"], 64 * G
    return (generation_seconds(n, math.ceil(sequences / samplers), 512, completion, flops_per_second=F,
                               bandwidth=0.6 * H100_SXM["memory_bandwidth"], kv_bytes_per_token=round(57344 * n / 7e9),
                               memory_bytes=80e9),
            training_seconds(n, sequences * (512 + completion), F, gpus=trainers), weight_sync_seconds(n, 50e9))


def _walls(G):
    """Wall seconds of 7B's step: all 16 GPUs in turn (the weights over NVLink), then each split apart."""
    rollout, train, _ = _step(7e9, G, 16, 16)
    together = schedule(rollout, train, weight_sync_seconds(7e9, H100_SXM["nvlink_bandwidth"]), "synchronous")
    splits = rr.ROLLOUT_GPUS.values
    apart = [[schedule(*_step(7e9, G, int(r), 16 - int(r)), m)["wall"] for r in splits] for m in SCHEDULES[1:]]
    return splits, [[together["wall"]] * len(splits)] + apart


#: Chapter 18's trained toys (the chapter's 40 seeds of three settings) and the ks of its pass@k chart.
PASS_SETTINGS = {"eps 0.2": {}, "clip-higher 0.28": {"eps_high": 0.28}, "entropy bonus 0.1": {"entropy_coef": 0.1}}
PASS_KS = [1, 2, 4, 8, 16, 32]


@lru_cache(maxsize=None)
def pass_curves() -> dict:
    return {name: run_over_seeds(grpo_toy_run, range(40), G=8, K=4, lr=0.5, steps=8, **extra)["pi_correct"]
            for name, extra in PASS_SETTINGS.items()}


#: The line charts of chapters 18 and 19, as ``LINE_CHARTS`` (they replaced no widget).
PART5_LINES = {
    "19_real_runs/fits": (lambda: rr.fits_chart(SIZES, TINY_GPT), [rr.GPUS, rr.STAGE], None, _fits, None,
                          {"n_gpus", "stage"}, {"n_gpus": 8, "stage": 3}),
    "19_real_runs/activations": (lambda: rr.batch_charts()[0], [rr.GROUP], rr.COMPLETION,
                                 lambda G: _batch(G, slice(0, 2)), None, {"G"}, {"G": 8, "completion": 4096}),
    "19_real_runs/logits": (lambda: rr.batch_charts()[1], [rr.GROUP], rr.COMPLETION,
                            lambda G: _batch(G, slice(2, 5)), None, {"G"}, {"G": 8, "completion": 4096}),
    "19_real_runs/time": (rr.time_chart, [rr.MODEL_SIZE], None,
                          lambda billions: (rr.GROUPS, np.array([_step(billions * 1e9, int(G), 8, 8)
                                                                 for G in rr.GROUPS]).T),
                          None, set(), {"billions": 7}),
    "19_real_runs/schedule": (rr.schedule_chart, [rr.GROUP], rr.ROLLOUT_GPUS, _walls, None, {"G", "rollout_gpus"},
                              {"G": 8, "rollout_gpus": 8}),
    "18_sequence_ratios/cost": (sc.cost_chart, [sc.GROUP], None,
                                lambda G: (sc.P_RIGHT, [[draws_per_kept_group([p, 1 - p], [1, 0], G)
                                                         for p in sc.P_RIGHT]]),
                                None, {"G"}, {"G": 8}),
    "18_sequence_ratios/pass_at_k": (lambda: sc.pass_at_k_chart(pass_curves(), PASS_KS),
                                     [charts.Slider("t", "training step", 0, 8, 1, 8, fmt="d")], None,
                                     lambda t: (PASS_KS, [[pass_at_k(p[:, t], k).mean() for k in PASS_KS]
                                                          for p in pass_curves().values()]),
                                     None, {"t"}, {"t": 8}),
}
# chapter 20: the spread of a sequence's capped weight, from the closed form (rl4llm.llm.sampler_study)
from rl4llm.llm.sampler_study import CAP_RULES, lognormal_weight_moments  # noqa: E402
from rl4llm.viz import sampler_trainer  # noqa: E402

PART5_LINES["20_sampler_trainer"] = (
    sampler_trainer.weight_chart, [sampler_trainer.LENGTH, sampler_trainer.CAP], None,
    lambda L, cap: (sampler_trainer.SIGMA, [[np.sqrt(lognormal_weight_moments(s * np.sqrt(L), cap, rule)[1])
                                            for s in sampler_trainer.SIGMA] for rule in CAP_RULES]),
    None, {"L"}, {"L": 4, "cap": 3.0})
LINE_CHARTS.update(PART5_LINES)        # the tests below check every line chart of the book
#: Settings of chapter 9's grid recomputed here (its 992 settings of 100 runs each take a while).
LEARNING_SAMPLE = [(1, 0.25), (8, 1.0), (8, 2.0), (32, 4.0), (13, 2.875), (2, 0.5)]


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
    if chapter == "09_on_policy_loop":
        settings = LEARNING_SAMPLE
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
        # stored to 6 decimals (3 for ch9): half a unit of the last, and the float error of a half
        np.testing.assert_allclose(stored, np.asarray(expected, dtype=float), rtol=0,
                                   atol=(0.5e-3 if chapter.startswith("09") else 0.5e-6) + 1e-12,
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
    assert len(stored) == sum(1 for name in (*CHARTS, *LINE_CHARTS) if name.split("/")[0] == chapter.split("/")[0])


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
