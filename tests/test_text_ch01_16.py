"""Chapters 1-16, as the close reads of issue 35 left them: each number or statement the text now gives, recomputed
here from the library (the chapters print them; nbval checks the printouts)."""
import math

import numpy as np
import pytest

from rl4llm import LOGITS, REWARDS, expected_reward, fisher_matrix, policy_gradient
from rl4llm.math.estimators import estimator_variance, group_estimator_moments, optimal_baseline


# ----------------------------------------------------------------------------- chapter 8
def test_chapter_8_the_group_mean_is_shrunk_to_seven_eighths_and_the_fair_ratios():
    r10, G = REWARDS + 10, 8
    none, own, loo = (group_estimator_moments(LOGITS, r10, G, b) for b in (0.0, "mean", "leave_one_out"))
    g = policy_gradient(LOGITS, r10)
    np.testing.assert_allclose(own["mean"], (G - 1) / G * g, atol=1e-12)        # E[estimate] = 7/8 grad J
    np.testing.assert_allclose(loo["mean"], g, atol=1e-12)                      # leave-one-out: unbiased
    assert round(none["total_variance"] / own["total_variance"]) == 843
    per_unit = none["total_variance"] / loo["total_variance"]
    assert round(per_unit) == 645
    assert per_unit == pytest.approx(none["total_variance"] / (own["total_variance"] / (7 / 8) ** 2), rel=1e-9)
    assert round(none["mean_squared_error"] / own["mean_squared_error"]) == 805
    constant = estimator_variance(LOGITS, r10, 0.0, G) / estimator_variance(LOGITS, r10, expected_reward(LOGITS, r10), G)
    assert round(constant) == 788 and per_unit < constant          # "below b = J's 788x"


# ----------------------------------------------------------------------------- chapter 5
def test_chapter_5_at_lr_0_1_the_highest_point_is_the_last_step():
    from rl4llm.math.two_step import training_curves
    from rl4llm.viz.forward_kl import TRAINING_LR
    slow = training_curves(0.1, 25)["rl_05"]
    assert int(np.argmax(slow)) == 25 and slow[-1] > slow[-2]
    assert all(np.argmax(training_curves(lr, 25)["rl_05"]) < 25 for lr in TRAINING_LR.values if lr >= 0.2)


def test_chapter_5_tree_gradient_is_the_derivative_of_the_reach_weighted_values():
    """The two-line derivation: dJ/dz_c = P(reach c) sum_t Q_c(t) dpi_c(t)/dz_c = P(reach c) pi_c (Q_c - V_c),
    with the softmax's Jacobian diag(pi) - pi pi^T, checked for the first token (reach 1)."""
    from rl4llm import softmax
    from rl4llm.math.two_step import continuation_values, two_step_policy_gradient
    pi, q = softmax(LOGITS), continuation_values()[""]
    jacobian = np.diag(pi) - np.outer(pi, pi)
    np.testing.assert_allclose(jacobian @ q, two_step_policy_gradient()[""], atol=1e-12)
    np.testing.assert_allclose(jacobian @ q, pi * (q - pi @ q), atol=1e-12)


# ----------------------------------------------------------------------------- chapter 9
def test_chapter_9_chart_prints_what_it_stores():
    """The chart keeps 3 decimals and prints 3: 0.746 at G = 8, lr = 1 is the cell's 0.7455 rounded."""
    import inspect

    from rl4llm.viz import on_policy_loop
    from rl4llm.viz.charts import rounded
    source = inspect.getsource(on_policy_loop.learning_chart)
    assert 'decimals=3, fmt=".3f"' in source
    median = on_policy_loop.learning_band(8, 1.0)["median"][10]
    assert f"{median:.4f}" == "0.7455" and f"{rounded(median, 3):.3f}" == "0.746"


# ----------------------------------------------------------------------------- chapter 11
def test_chapter_11_the_lagrangian_step_uses_the_whole_budget_and_beats_every_other_direction():
    F, g, delta = fisher_matrix(LOGITS), policy_gradient(LOGITS, REWARDS), 0.01
    s = np.linalg.pinv(F) @ g
    d = math.sqrt(2 * delta / (s @ F @ s)) * s
    assert 0.5 * d @ F @ d == pytest.approx(delta) and g @ d == pytest.approx(math.sqrt(2 * delta * (s @ F @ s)))
    rng = np.random.default_rng(0)
    for v in rng.normal(size=(200, 5)):
        if v @ F @ v > 1e-12:
            assert g @ v * math.sqrt(2 * delta / (v @ F @ v)) <= g @ d + 1e-12


# ----------------------------------------------------------------------------- chapters 14 and 16
def test_chapters_14_and_16_trl_entropy_bonus_is_off_by_default_on_both_sides_of_the_bridge():
    trl = pytest.importorskip("trl")
    from dataclasses import fields

    from rl4llm.llm.trainer import chapter15_config
    from rl4llm.trl.knobs import trl_config_kwargs
    defaults = {f.name: f.default for f in fields(trl.GRPOConfig)}
    assert defaults["entropy_coef"] == 0.0 and defaults["use_adaptive_entropy"] is False
    assert {"entropy_target", "entropy_coef_delta", "entropy_coef_min", "entropy_coef_max"} <= set(defaults)
    kwargs = trl_config_kwargs(chapter15_config(), allow_unsupported=True)
    mapped = {key: value for key, value in kwargs.items() if "entrop" in key}
    assert mapped == {key: defaults[key] for key in mapped}      # the book's default EntropyControl() is TRL's
    assert mapped["entropy_coef"] == 0.0 and mapped["use_adaptive_entropy"] is False


def test_trl_knobs_optim_is_unfused_while_the_trainer_runs_fused_adamw():
    """trl_knobs' comment: the bridge maps to torch's unfused AdamW, TRL's default is the fused kernel, the
    book's trainer runs fused AdamW."""
    trl = pytest.importorskip("trl")
    from dataclasses import fields

    from rl4llm.trl.knobs import FIXED
    assert FIXED["optim"] == "adamw_torch"
    assert {f.name: f.default for f in fields(trl.GRPOConfig)}["optim"] == "adamw_torch_fused"
    import inspect

    from rl4llm.llm import trainer
    assert "fused=True" in inspect.getsource(trainer.GRPOTrainer.__init__)


# ----------------------------------------------------------------------------- chapter 15's stored grid as a chart
def test_chapter_15_grid_chart_is_live_over_every_stored_run():
    """The playground's kernel-free twin: a Vega-Lite chart whose two rows of buttons pick a cell of the grid,
    stored with every cell's evaluations (digits depend on the machine; the structure does not)."""
    import json
    from pathlib import Path

    from rl4llm.llm.grid_study import GRID_COLUMNS, GRID_LRS, GRID_STEPS, lr_label
    from rl4llm.viz.charts import MIME_TYPE
    cells = json.loads((Path(__file__).resolve().parents[1] / "book" / "15_tiny_transformer.ipynb").read_text())["cells"]
    stored = [o["data"][MIME_TYPE] for c in cells if c["cell_type"] == "code" for o in c.get("outputs", [])
              if MIME_TYPE in o.get("data", {})]
    assert len(stored) == 1
    spec = stored[0]
    params = {p["name"]: p for p in spec["params"]}
    assert params["row"]["bind"]["options"] == [lr_label(lr) for lr in GRID_LRS] and params["row"]["value"] == "lr=1e-03"
    assert params["col"]["bind"]["options"] == list(GRID_COLUMNS) and params["col"]["value"] == "G=8"
    runs = spec["layer"][1]["data"]["values"]
    cells_seen = {(r["row"], r["col"]) for r in runs}
    assert cells_seen == {(lr_label(lr), c) for lr in GRID_LRS for c in GRID_COLUMNS}
    for cell in cells_seen:
        steps = sorted(r["step"] for r in runs if (r["row"], r["col"]) == cell)
        assert steps == list(range(0, GRID_STEPS + 1, 10))
    assert all(r["step"] <= GRID_STEPS for r in spec["layer"][0]["data"]["values"])


def test_chapter_8_chart_the_mean_and_the_optimum_move_together_with_the_offset():
    """The chart's note: J and b* shift by the offset alike, so they stay 0.2 and 0.2324 apart as for 0/1."""
    from rl4llm.viz.baselines import OFFSET
    gaps = {round(optimal_baseline(LOGITS, REWARDS + o) - expected_reward(LOGITS, REWARDS + o), 9) for o in OFFSET.values}
    assert gaps == {round(43 / 185 - 0.2, 9)}
