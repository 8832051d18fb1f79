"""Tests for rl4llm.studies.length_drift (chapter 17): DAPO's soft punishment against its definition, the masked
token weights against autograd through grpo_loss, the length toy's exact expected step against Monte
Carlo, the drift directions of the exact paths, the seeded runs, and every bad input."""
import numpy as np
import pytest
import torch

from rl4llm.studies.estimator_bias import advantages, estimator_moments, sample_estimates, token_weights
from rl4llm.math.loss_types import LOSS_TYPES
from rl4llm.llm.grpo import grpo_loss
from rl4llm.studies.length_drift import (LENGTH_CAP, OVERLONG, length_drift_exact, length_drift_run, length_task,
                                 soft_overlong_penalty)


def test_soft_overlong_penalty():
    assert np.allclose(soft_overlong_penalty([2, 6, 8, 11, 12, 13, 16]), [0, 0, -1 / 3, -5 / 6, -1, -1, -1])
    assert np.allclose(soft_overlong_penalty([3, 4], cap=4, buffer=1), [0, -1])


@pytest.mark.parametrize("loss_type", LOSS_TYPES)
def test_masked_weights_are_autograd_through_grpo_loss(loss_type):
    task = length_task(overlong="filter")
    group = np.array([0, 4, 3, 2, 4])
    lengths, kept = task.lengths[group], task.lengths[group] * task.kept[group]
    A = advantages(task.rewards[group] + np.array([0, 0, 0, 0, 0.5]), lengths, "grpo")
    logp = torch.zeros((5, LENGTH_CAP), dtype=torch.float64, requires_grad=True)
    mask = (torch.arange(LENGTH_CAP)[None, :] < torch.as_tensor(kept)[:, None]).to(torch.float64)
    loss, _ = grpo_loss(logp, logp.detach(), torch.tensor(A), mask, loss_type=loss_type,
                        max_completion_length=LENGTH_CAP)
    loss.backward()
    ours = token_weights(A, kept, loss_type, LENGTH_CAP)
    assert np.allclose(ours, -LENGTH_CAP * logp.grad[:, 0].numpy())
    assert ours[1] == 0.0 and ours[4] == 0.0


@pytest.mark.parametrize("overlong", OVERLONG)
def test_expected_step_against_monte_carlo(overlong):
    task = length_task(np.array([0.3, -0.2, 0.1, 0.0, 0.4]), overlong)
    exact = estimator_moments(task, 6, "group_mean", "dapo", LENGTH_CAP)
    x = sample_estimates(task, 6, 40_000, seed=3, advantage="group_mean", loss_type="dapo",
                         max_completion_length=LENGTH_CAP)
    se = x.std(axis=0, ddof=1) / np.sqrt(len(x))
    assert np.all(np.abs(x.mean(axis=0) - exact["mean"]) < 4 * se)


def test_grpo_shortens_right_answers_and_lengthens_wrong_ones():
    unbiased, per_sequence = length_drift_exact("dr_grpo", steps=20), length_drift_exact("grpo", steps=20)
    assert np.allclose(unbiased["length_right"], 5.0)            # both right answers grow alike
    assert per_sequence["length_right"][-1] < 3.0 < 8.0 < per_sequence["length_wrong"][-1]
    assert np.all(np.diff(per_sequence["length_right"]) < 0)
    soft = length_drift_exact("dr_grpo", "soft", steps=20)
    assert soft["length_right"][-1] < 4.0 and soft["overlong"][-1] < unbiased["overlong"][-1]
    kept = length_drift_exact("dr_grpo", "filter", steps=20)
    assert kept["overlong"][-1] > unbiased["overlong"][-1]


def test_runs_are_seeded_and_start_uniform():
    a, b = length_drift_run(seed=4, steps=5), length_drift_run(seed=4, steps=5)
    assert all(np.array_equal(a[k], b[k]) for k in a)
    assert np.isclose(a["correct"][0], 0.4) and np.isclose(a["length"][0], (2 + 8 + 2 + 8 + 12) / 5)


def test_bad_inputs():
    with pytest.raises(ValueError, match="overlong must be one of"):
        length_task(overlong="cut")
    with pytest.raises(ValueError, match="logits must hold 5"):
        length_task(np.zeros(3))
    with pytest.raises(ValueError, match="loss_type must be one of"):
        length_drift_run("mean")
    with pytest.raises(ValueError, match="advantage must be one of"):
        length_drift_exact(advantage="ppo")
    with pytest.raises(ValueError, match="G must be"):
        length_drift_run(G=1)
    with pytest.raises(ValueError, match="buffer must be in"):
        soft_overlong_penalty(3, cap=4, buffer=5)
