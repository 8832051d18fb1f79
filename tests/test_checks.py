"""The declared checks of rl4llm._checks: each rule returns what the function body receives and
refuses a bad value with a ValueError naming the parameter and its range."""
import numpy as np
import pytest

from rl4llm._checks import (checked, flag, generator, integer_in_range, logits_vector, one_reward_per_answer,
                            reward_vector)


def test_an_integer_in_a_range_is_an_integer_between_its_ends():
    rule = integer_in_range(1, 5)
    assert rule(np.int64(5), "n") == 5 and type(rule(1, "n")) is int
    for bad in (0, 6, 2.0, True, "3"):
        with pytest.raises(ValueError, match=r"n must be an integer in \[1, 5\]"):
            rule(bad, "n")


def test_a_reward_vector_has_one_finite_reward_per_answer():
    assert reward_vector([0, 1, 0], 3).dtype == np.float64
    for bad in ([0, 1], [[0, 1, 0]], [0, np.nan, 1]):
        with pytest.raises(ValueError, match="rewards"):
            reward_vector(bad, 3)


def test_one_reward_per_answer_relates_the_rewards_to_the_policys_last_axis():
    @checked(one_reward_per_answer("logits"), logits=logits_vector)
    def mean_reward(logits, rewards):
        return rewards.mean()

    assert mean_reward([0.0, 1.0], [1, 0]) == 0.5
    with pytest.raises(ValueError, match=r"rewards must be a 1-D vector of length 2 \(one reward per answer\)"):
        mean_reward([0.0, 1.0], [1, 0, 0])


def test_a_generator_is_a_numpy_generator():
    rng = np.random.default_rng(0)
    assert generator(rng, "rng") is rng
    with pytest.raises(ValueError, match=r"rng must be a numpy.random.Generator"):
        generator(np.random.RandomState(0), "rng")


def test_a_flag_is_true_or_false_and_nothing_truthy():
    assert flag(True, "switch") is True and flag(False, "switch") is False
    for bad in (1, 0, "yes", None):
        with pytest.raises(ValueError, match="switch must be True or False"):
            flag(bad, "switch")
