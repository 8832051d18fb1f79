"""Tests for rl4llm.studies.estimator_bias (chapter 17): the tasks' exact gradients by finite differences, the
token weights by autograd through grpo_loss, the exact moments by Monte Carlo (within 4 standard errors,
fixed seeds) and by chapter 9's enumeration, dapo with many groups sharing its divisor (exact against one group
and against Monte Carlo), and every bad input."""
import numpy as np
import pytest
import torch

from rl4llm import LOGITS, REWARDS, policy_gradient
from rl4llm.studies.estimator_bias import (ADVANTAGES, Task, advantages, dapo_batch_moments, estimate_of_group,
                                   estimator_moments, group_estimates, one_step_task, sample_estimates,
                                   token_weights, two_step_task)
from rl4llm.studies.length_drift import length_task
from rl4llm.math.estimators import sample_groups
from rl4llm.math.estimators import group_estimator_moments, total_variance_and_standard_error
from rl4llm.math.credit import group_advantages
from rl4llm.math.loss_types import LOSS_TYPES
from rl4llm.llm.grpo import grpo_loss
from rl4llm.llm.grpo_toys import _two_step_logp, aggregation_weights
from rl4llm.math.two_step import answer_probabilities
from rl4llm.toy.two_step import CHOICES, two_step_logits

from numerics import finite_difference

ONE, TWO = one_step_task(), two_step_task()


def _two_step_J(flat):
    sizes = np.cumsum([0] + [len(v) for v in CHOICES.values()])
    params = {c: flat[a:b] for c, a, b in zip(CHOICES, sizes[:-1], sizes[1:])}
    probs = answer_probabilities(params)
    return sum(probs[a] * r for a, r in zip(TWO.answers, TWO.rewards))


def test_tasks_hold_the_toys():
    assert np.allclose(ONE.gradient, policy_gradient(LOGITS, REWARDS))
    assert np.allclose(TWO.probs, [0.08, 0.4, 0.16, 0.2, 0.1, 0.02, 0.04])
    assert TWO.rewards.tolist() == [0, 0, 1, 0, 0, 1, 0] and TWO.lengths.tolist() == [2, 2, 2, 2, 2, 3, 3]
    flat = np.concatenate(list(two_step_logits().values()))
    assert np.allclose(TWO.gradient, finite_difference(_two_step_J, flat), atol=1e-8)


@pytest.mark.parametrize("loss_type", LOSS_TYPES)
def test_token_weights_are_autograd_through_grpo_loss(loss_type):
    rewards, lengths = np.array([1.0, 0.0, 1.0, 0.0]), np.array([2, 3, 3, 1])
    A = group_advantages(rewards)
    ours = token_weights(A, lengths, loss_type, 5)
    theirs = aggregation_weights(rewards, lengths, loss_type, max_completion_length=5)["per_token"] * 5
    assert np.allclose(ours, theirs)


def test_one_group_estimate_is_minus_the_gradient_of_grpo_loss():
    """The two-step estimate of one group equals L_max times -d grpo_loss / d logits (autograd)."""
    group = np.array([2, 5, 1, 6, 5])
    names = list(TWO.answers)
    params = {c: torch.tensor(z, dtype=torch.float64, requires_grad=True) for c, z in two_step_logits().items()}
    logp, mask = _two_step_logp(params, [names[i] for i in group])
    for advantage in ADVANTAGES:
        A = advantages(TWO.rewards[group], TWO.lengths[group], advantage)
        for loss_type in LOSS_TYPES:
            for z in params.values():
                z.grad = None
            loss, _ = grpo_loss(logp, logp.detach(), torch.tensor(A), mask, loss_type=loss_type,
                                max_completion_length=4)
            loss.backward(retain_graph=True)
            grad = -4 * torch.cat([z.grad for z in params.values()]).numpy()
            assert np.allclose(estimate_of_group(TWO, group, advantage, loss_type, 4), grad)


@pytest.mark.parametrize("baseline, advantage", [(0.0, "reinforce"), ("mean", "group_mean"),
                                                 ("leave_one_out", "rloo")])
def test_one_step_moments_agree_with_chapter_9(baseline, advantage):
    ours = estimator_moments(ONE, 6, advantage)
    theirs = group_estimator_moments(LOGITS, REWARDS, 6, baseline)
    assert np.allclose(ours["mean"], theirs["mean"])
    assert np.isclose(ours["variance"], theirs["total_variance"])
    assert np.isclose(ours["mean_squared_error"], theirs["mean_squared_error"])


@pytest.mark.parametrize("task", [ONE, TWO])
def test_which_estimators_are_unbiased(task):
    for G in (2, 3, 5):
        for advantage in ("reinforce", "rloo"):
            assert estimator_moments(task, G, advantage)["bias_norm"] < 1e-12
        m = estimator_moments(task, G, "group_mean")
        assert np.allclose(m["mean"], (1 - 1 / G) * task.gradient) and np.isclose(m["relative_bias"], 1 / G)
        assert estimator_moments(task, 4, "grpo")["relative_bias"] > 0.5


def test_grpo_equals_rloo_at_G_2_and_reinforce_pp_equals_grpo_on_one_token():
    for task in (ONE, TWO):
        assert np.allclose(estimator_moments(task, 2, "grpo")["mean"], estimator_moments(task, 2, "rloo")["mean"])
    for G in (3, 6):
        a, b = estimator_moments(ONE, G, "grpo"), estimator_moments(ONE, G, "reinforce_pp")
        assert np.allclose(a["mean"], b["mean"]) and np.isclose(a["variance"], b["variance"])
    assert estimator_moments(TWO, 4, "reinforce_pp")["bias_norm"] != estimator_moments(TWO, 4, "grpo")["bias_norm"]


def test_length_aggregations_bend_the_direction_on_two_lengths_only():
    for loss_type in ("grpo", "dapo"):
        assert estimator_moments(ONE, 4, "rloo", loss_type)["cosine"] > 1 - 1e-12
        assert estimator_moments(TWO, 4, "rloo", loss_type)["cosine"] < 0.9999
    assert estimator_moments(TWO, 4, "rloo", "dr_grpo", max_completion_length=7)["bias_norm"] < 1e-12
    long_cap = estimator_moments(TWO, 4, "rloo", "grpo", max_completion_length=6)
    assert np.isclose(long_cap["scale"], 2 * estimator_moments(TWO, 4, "rloo", "grpo")["scale"])


@pytest.mark.parametrize("task, advantage, loss_type", [
    (ONE, "grpo", "dr_grpo"), (TWO, "rloo", "grpo"), (TWO, "grpo", "dapo"), (TWO, "reinforce_pp", "dr_grpo"),
    (TWO, "group_mean", "bnpo")])
def test_exact_moments_against_monte_carlo(task, advantage, loss_type):
    exact = estimator_moments(task, 4, advantage, loss_type)
    x = sample_estimates(task, 4, 40_000, seed=7, advantage=advantage, loss_type=loss_type)
    se = x.std(axis=0, ddof=1) / np.sqrt(len(x))
    assert np.all(np.abs(x.mean(axis=0) - exact["mean"]) < 4 * se + 1e-12)
    v, v_se = total_variance_and_standard_error(x)
    assert abs(v - exact["variance"]) < 4 * v_se
    assert np.isclose(exact["mean_squared_error"], exact["variance"] + exact["bias_norm"] ** 2)


def test_sample_estimates_is_seeded():
    assert np.array_equal(sample_estimates(TWO, 3, 50, 1), sample_estimates(TWO, 3, 50, 1))


LENGTH = length_task()


@pytest.mark.parametrize("task, cap", [(TWO, None), (LENGTH, 12), (length_task(overlong="filter"), 12)])
@pytest.mark.parametrize("advantage", ADVANTAGES)
def test_dapo_batch_of_one_group_is_estimator_moments_dapo(task, cap, advantage):
    ours = dapo_batch_moments(task, 5, 1, advantage, cap)
    theirs = estimator_moments(task, 5, advantage, "dapo", cap)
    assert np.allclose(ours["mean"], theirs["mean"], rtol=1e-12, atol=1e-15)
    for key in ("bias_norm", "relative_bias", "cosine", "scale"):
        assert np.isclose(ours[key], theirs[key], rtol=1e-12)


@pytest.mark.parametrize("task, cap", [(TWO, 3), (LENGTH, 12)])
def test_dapo_batch_of_four_groups_against_monte_carlo(task, cap):
    """B = 4 groups of 8 drawn at random, one divisor: the batch's token count."""
    B, G, n = 4, 8, 20_000
    exact = dapo_batch_moments(task, G, B, "rloo", cap)["mean"]
    samples = sample_groups(task.probs, G, n * B, np.random.default_rng(11)).reshape(n, B, G)
    sum_Ag = G * group_estimates(task, samples, "rloo", "dr_grpo", cap).sum(axis=1)      # (n, n_logits)
    tokens = task.lengths[samples].sum(axis=(1, 2))
    x = cap * sum_Ag / tokens[:, None]
    se = x.std(axis=0, ddof=1) / np.sqrt(n)
    assert np.all(np.abs(x.mean(axis=0) - exact) < 4 * se + 1e-12)
    if task is LENGTH:                         # there the check tells B = 4 from B = 1 (on TWO they lie too close)
        one = dapo_batch_moments(task, G, 1, "rloo", cap)["mean"]
        assert np.linalg.norm(x.mean(axis=0) - one) > 4 * np.linalg.norm(se)


def test_dapo_batch_turns_towards_dr_grpo_as_groups_share_the_divisor():
    dr = estimator_moments(LENGTH, 8, "rloo", "dr_grpo", 12)["mean"]
    cosines = []
    for B in (1, 4, 16, 64):
        m = dapo_batch_moments(LENGTH, 8, B, "rloo", 12)["mean"]
        cosines.append(m @ dr / (np.linalg.norm(m) * np.linalg.norm(dr)))
    assert all(a < b for a, b in zip(cosines, cosines[1:])) and cosines[-1] > 1 - 1e-5
    to_grad_J = [dapo_batch_moments(LENGTH, 8, B, "rloo", 12)["cosine"] for B in (1, 64)]
    assert to_grad_J[1] > to_grad_J[0]                         # RLOO's dr_grpo mean is grad J itself


def test_bad_inputs():
    with pytest.raises(ValueError, match="task must be a Task"):
        estimator_moments("toy", 4)
    with pytest.raises(ValueError, match="advantage must be one of"):
        estimator_moments(ONE, 4, "ppo")
    with pytest.raises(ValueError, match="loss_type must be one of"):
        estimator_moments(ONE, 4, "group_mean", "mean")
    with pytest.raises(ValueError, match="G must be"):
        estimator_moments(ONE, 1, "rloo")
    with pytest.raises(ValueError, match="G must be"):
        estimator_moments(ONE, 0)
    with pytest.raises(ValueError, match="max_completion_length must be"):
        estimator_moments(TWO, 4, max_completion_length=2)
    with pytest.raises(ValueError, match="samples must"):
        estimate_of_group(ONE, [0, 7])
    with pytest.raises(ValueError, match="group must be a 1-D"):
        estimate_of_group(ONE, [[0, 1]])
    with pytest.raises(ValueError, match="n_groups must be"):
        sample_estimates(ONE, 4, 0, 1)
    with pytest.raises(ValueError, match="rewards must be"):
        one_step_task(LOGITS, [0, 1])
    for bad in (0, 1.5, -1):
        with pytest.raises(ValueError, match="n_groups must be"):
            dapo_batch_moments(TWO, 4, bad)
    with pytest.raises(ValueError, match="G must be"):
        dapo_batch_moments(TWO, 1, 4, "rloo")
    with pytest.raises(ValueError, match="task must be a Task"):
        dapo_batch_moments("toy", 4, 4)
    with pytest.raises(ValueError, match="advantage must be one of"):
        dapo_batch_moments(TWO, 4, 4, "ppo")
    with pytest.raises(ValueError, match="reinforce_pp"):
        dapo_batch_moments(TWO, 4, 2, "reinforce_pp")
    with pytest.raises(ValueError, match="max_completion_length must be"):
        dapo_batch_moments(TWO, 4, 2, max_completion_length=2)
    assert isinstance(ONE, Task)
