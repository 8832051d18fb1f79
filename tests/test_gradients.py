"""sft_gradient, sft_step, score, expected_reward, policy_gradient, policy_gradient_step."""
import math

import numpy as np
import pytest

from rl4llm import (CORRECT, LOGITS, REWARDS, expected_reward, log_softmax, policy_gradient, policy_gradient_step,
                    score, sft_gradient, sft_step, softmax)
from numerics import finite_difference

PI = np.array([0.1, 0.4, 0.2, 0.2, 0.1])


def random_cases(seed, n=20):
    rng = np.random.default_rng(seed)
    for _ in range(n):
        size = int(rng.integers(2, 9))
        yield rng.normal(scale=2.0, size=size), int(rng.integers(size)), rng.normal(size=size)


# ---------------------------------------------------------------- SFT: the text's values
def test_sft_gradient_on_the_toy_is_predicted_minus_true():
    g = sft_gradient(LOGITS, CORRECT)
    np.testing.assert_allclose(g, [0.1, 0.4, -0.8, 0.2, 0.1], rtol=1e-13)
    assert g.sum() == pytest.approx(0.0, abs=1e-15)


def test_one_sft_step_with_lr_one_lifts_p5_to_0_4207():
    new = softmax(sft_step(LOGITS, CORRECT, 1.0))
    assert round(new[CORRECT], 4) == 0.4207
    # closed form: the new e^z are (1, 4, 2, 2, 1) * e^{-g}
    w = np.array([1, 4, 2, 2, 1]) * np.exp(-np.array([0.1, 0.4, -0.8, 0.2, 0.1]))
    assert new[CORRECT] == pytest.approx(w[CORRECT] / w.sum(), rel=1e-13)
    assert np.all(np.delete(new, CORRECT) < np.delete(PI, CORRECT))  # every other answer loses mass


def test_sft_step_with_lr_zero_changes_nothing_and_negative_lr_ascends():
    np.testing.assert_array_equal(sft_step(LOGITS, CORRECT, 0.0), LOGITS)
    assert softmax(sft_step(LOGITS, CORRECT, -1.0))[CORRECT] < 0.2


# ---------------------------------------------------------------- SFT: independent routes
def test_sft_gradient_matches_finite_differences_of_the_loss():
    for z, target, _ in random_cases(0):
        numeric = finite_difference(lambda v: -log_softmax(v)[target], z)
        np.testing.assert_allclose(sft_gradient(z, target), numeric, atol=1e-8)
    numeric = finite_difference(lambda v: -log_softmax(v)[CORRECT], LOGITS)
    np.testing.assert_allclose(sft_gradient(LOGITS, CORRECT), numeric, atol=1e-8)


def test_small_sft_step_decreases_the_loss_by_lr_times_squared_gradient():
    lr = 1e-4
    g = sft_gradient(LOGITS, CORRECT)
    before, after = -log_softmax(LOGITS)[CORRECT], -log_softmax(sft_step(LOGITS, CORRECT, lr))[CORRECT]
    assert before - after == pytest.approx(lr * g @ g, rel=1e-3)


def test_sft_gradient_is_stable_for_huge_logits():
    g = sft_gradient([1e300, -1e300, 0.0], 1)
    np.testing.assert_array_equal(g, [1.0, -1.0, 0.0])


# ---------------------------------------------------------------- score function
def test_score_of_five_on_the_toy():
    np.testing.assert_allclose(score(LOGITS, CORRECT), [-0.1, -0.4, 0.8, -0.2, -0.1], rtol=1e-13)


def test_score_is_minus_the_sft_gradient_and_matches_finite_differences():
    for z, y, _ in random_cases(1):
        np.testing.assert_allclose(score(z, y), -sft_gradient(z, y), rtol=1e-15)
        numeric = finite_difference(lambda v: log_softmax(v)[y], z)
        np.testing.assert_allclose(score(z, y), numeric, atol=1e-8)


def test_expected_score_is_zero():
    """E_{y ~ pi}[score(y)] = sum_y pi(y)(e_y - pi) = pi - pi = 0: why a baseline is free."""
    for z, _, _ in random_cases(2):
        pi = softmax(z)
        mean = sum(pi[y] * score(z, y) for y in range(z.size))
        np.testing.assert_allclose(mean, 0.0, atol=1e-15)


# ---------------------------------------------------------------- expected reward and policy gradient
def test_expected_reward_on_the_toy_is_p5():
    assert expected_reward(LOGITS, REWARDS) == pytest.approx(0.2, rel=1e-14)
    assert isinstance(expected_reward(LOGITS, REWARDS), float)


def test_policy_gradient_on_the_toy():
    g = policy_gradient(LOGITS, REWARDS)
    np.testing.assert_allclose(g, [-0.02, -0.08, 0.16, -0.04, -0.02], rtol=1e-12)
    assert g.sum() == pytest.approx(0.0, abs=1e-16)


def test_policy_gradient_is_the_expected_reward_weighted_score():
    """Independent route: sum_y pi(y) r(y) score(y), the score-function identity, by enumeration."""
    for z, _, r in random_cases(3):
        pi = softmax(z)
        enumerated = sum(pi[y] * r[y] * score(z, y) for y in range(z.size))
        np.testing.assert_allclose(policy_gradient(z, r), enumerated, atol=1e-14)


def test_policy_gradient_matches_finite_differences_of_j():
    for z, _, r in random_cases(4):
        numeric = finite_difference(lambda v: expected_reward(v, r), z)
        np.testing.assert_allclose(policy_gradient(z, r), numeric, atol=1e-8)
    numeric = finite_difference(lambda v: expected_reward(v, REWARDS), LOGITS)
    np.testing.assert_allclose(policy_gradient(LOGITS, REWARDS), numeric, atol=1e-9)


def test_policy_gradient_matches_monte_carlo():
    """REINFORCE with 200k samples: each coordinate within 4 standard errors of the exact gradient."""
    rng = np.random.default_rng(5)
    ys = rng.choice(5, size=200_000, p=PI)
    samples = REWARDS[ys][:, None] * (np.eye(5)[ys] - PI)
    se = samples.std(axis=0) / math.sqrt(len(ys))
    assert np.all(np.abs(samples.mean(axis=0) - policy_gradient(LOGITS, REWARDS)) < 4 * se)


def test_policy_gradient_ignores_a_constant_reward_offset():
    np.testing.assert_allclose(policy_gradient(LOGITS, REWARDS + 10), policy_gradient(LOGITS, REWARDS), atol=1e-14)
    np.testing.assert_allclose(policy_gradient(LOGITS, np.full(5, 3.0)), 0.0, atol=1e-15)


def test_rl_step_lr_one_gives_0_2366_and_lr_five_gives_the_sft_step():
    one = softmax(policy_gradient_step(LOGITS, REWARDS, 1.0))[CORRECT]
    five = softmax(policy_gradient_step(LOGITS, REWARDS, 5.0))[CORRECT]
    assert round(one, 4) == 0.2366
    assert round(five, 4) == 0.4207
    # lr = 5 times pi(5) = 0.2 makes the RL step the SFT step exactly: 5 * pi * (r - J) = onehot - pi
    np.testing.assert_allclose(policy_gradient_step(LOGITS, REWARDS, 5.0), sft_step(LOGITS, CORRECT, 1.0),
                               rtol=1e-13, atol=1e-15)


def test_policy_gradient_step_is_ascent():
    j0 = expected_reward(LOGITS, REWARDS)
    assert expected_reward(policy_gradient_step(LOGITS, REWARDS, 0.1), REWARDS) > j0
    np.testing.assert_array_equal(policy_gradient_step(LOGITS, REWARDS, 0.0), LOGITS)


# ---------------------------------------------------------------- bad inputs
BAD_LOGITS = [[], [np.nan, 0.0], [np.inf, 0.0], [[0.0, 1.0], [1.0, 0.0]], ["1", "2"], 1.0]


@pytest.mark.parametrize("bad", BAD_LOGITS)
def test_bad_logits_raise(bad):
    calls = [lambda: sft_gradient(bad, 0), lambda: sft_step(bad, 0, 1.0), lambda: score(bad, 0),
             lambda: expected_reward(bad, [0.0, 1.0]), lambda: policy_gradient(bad, [0.0, 1.0]),
             lambda: policy_gradient_step(bad, [0.0, 1.0], 1.0)]
    for call in calls:
        with pytest.raises(ValueError, match="logits"):
            call()


@pytest.mark.parametrize("bad", [5, -1, 2.0, True, None, "2", np.int64(7)])
def test_target_out_of_range_raises(bad):
    with pytest.raises(ValueError, match="target"):
        sft_gradient(LOGITS, bad)
    with pytest.raises(ValueError, match="target"):
        sft_step(LOGITS, bad, 1.0)
    with pytest.raises(ValueError, match=r"\by\b"):
        score(LOGITS, bad)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf, "1", None, True, [1.0], 10 ** 400])
def test_bad_learning_rate_raises(bad):
    with pytest.raises(ValueError, match="lr"):
        sft_step(LOGITS, CORRECT, bad)
    with pytest.raises(ValueError, match="lr"):
        policy_gradient_step(LOGITS, REWARDS, bad)


@pytest.mark.parametrize("bad", [[0, 1], [0, 0, 1, 0, 0, 0], [[0, 0, 1, 0, 0]], [np.nan, 0, 1, 0, 0],
                                 [0, 0, np.inf, 0, 0], []])
def test_bad_rewards_raise(bad):
    for f in (expected_reward, policy_gradient):
        with pytest.raises(ValueError, match="rewards"):
            f(LOGITS, bad)
    with pytest.raises(ValueError, match="rewards"):
        policy_gradient_step(LOGITS, bad, 1.0)
