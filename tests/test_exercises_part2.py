"""The checks of chapters 6, 8 and 9 (rl4llm.exercises.part2): the library's function passes, typical wrong
answers written here get their diagnosis in words, and each by-hand number accepts its value and names
each listed mistake."""
import math

import numpy as np
import pytest

from rl4llm import (LOGITS, REWARDS, estimator_variance, group_mean_baseline_gradient, jhat_distribution,
                    softmax)
from rl4llm.exercises import EXERCISES, SPECS, NumericExercise, answer_key, check
from rl4llm.exercises._core import MALFORMED


# ----------------------------------------------------------------------------- function exercises
@pytest.mark.parametrize("exercise, reference, chapter", [
    ("jhat_distribution", jhat_distribution, 6),
    ("estimator_variance", estimator_variance, 8),
    ("group_mean_baseline_gradient", group_mean_baseline_gradient, 9)])
def test_the_library_function_passes(exercise, reference, chapter):
    assert EXERCISES[exercise] == chapter
    assert check(exercise, reference).startswith("Correct:")


def _jhat_loop(p, G):
    """A correct student version, written with a loop and math.comb."""
    values = [k / G for k in range(G + 1)]
    probs = [math.comb(G, k) * p ** k * (1 - p) ** (G - k) for k in range(G + 1)]
    return values, probs                                   # lists, not arrays: accepted too


def _jhat_no_comb(p, G):
    k = np.arange(G + 1)
    return k / G, p ** k * (1 - p) ** (G - k)


def _jhat_counts(p, G):
    k = np.arange(G + 1)
    return k, np.array([math.comb(G, i) for i in k]) * p ** k * (1 - p) ** (G - k)


def _jhat_swapped(p, G):
    k = np.arange(G + 1)
    return k / G, np.array([math.comb(G, i) for i in k]) * (1 - p) ** k * p ** (G - k)


def _variance_parts(z, r, b):
    pi = softmax(z)
    r = np.asarray(r, dtype=float)
    g_sq = 1 - 2 * pi + pi @ pi
    grad = pi * (r - pi @ r)
    return pi, r, g_sq, grad


def _variance_loop(z, r, baseline=0.0, G=1):
    """A correct student version: the score vectors written out, the trace of the covariance by enumeration."""
    b = baseline
    pi = softmax(z)
    scores = np.eye(len(z)) - pi
    x = (np.asarray(r, dtype=float) - b)[:, None] * scores          # row y: the estimate when y is sampled
    mean = pi @ x
    return float(pi @ ((x - mean) ** 2).sum(axis=1)) / G


def _variance_one_sample(z, r, baseline=0.0, G=1):
    b = baseline
    pi, r, g_sq, grad = _variance_parts(z, r, b)
    return float(pi @ ((r - b) ** 2 * g_sq) - grad @ grad)


def _variance_times_G(z, r, baseline=0.0, G=1):
    b = baseline
    return G * _variance_one_sample(z, r, b)


def _variance_by_sqrt_G(z, r, baseline=0.0, G=1):
    b = baseline
    return _variance_one_sample(z, r, b) / np.sqrt(G)


def _variance_no_baseline(z, r, baseline=0.0, G=1):
    b = baseline
    return _variance_one_sample(z, r, 0.0) / G


def _variance_second_moment(z, r, baseline=0.0, G=1):
    b = baseline
    pi, r, g_sq, _ = _variance_parts(z, r, b)
    return float(pi @ ((r - b) ** 2 * g_sq)) / G


def _variance_own_coordinate(z, r, baseline=0.0, G=1):
    b = baseline
    pi, r, _, grad = _variance_parts(z, r, b)
    return float(pi @ ((r - b) ** 2 * (1 - pi) ** 2) - grad @ grad) / G


def _group_loop(z, samples, rewards):
    """A correct student version, one sample at a time as in the chapter's plain loop."""
    pi = softmax(z)
    r = [rewards[y] for y in samples]
    r_bar = sum(r) / len(r)
    total = np.zeros(len(z))
    for y, r_y in zip(samples, r):
        total += (r_y - r_bar) * (np.eye(len(z))[y] - pi)
    return total / len(samples)


def _group_without_pi_term(z, samples, rewards):
    """Also correct: the advantages sum to zero, so the -pi term of every score cancels."""
    r = np.asarray(rewards, dtype=float)[samples]
    return np.eye(len(z))[samples].T @ (r - r.mean()) / len(samples)


def _group_descent(z, samples, rewards):
    return -_group_loop(z, samples, rewards)


def _group_no_baseline(z, samples, rewards):
    pi = softmax(z)
    r = np.asarray(rewards, dtype=float)[samples]
    return (r[:, None] * (np.eye(len(z))[samples] - pi)).mean(axis=0)


def _group_sum(z, samples, rewards):
    return len(samples) * _group_loop(z, samples, rewards)


def _group_leave_one_out(z, samples, rewards):
    pi = softmax(z)
    r = np.asarray(rewards, dtype=float)[samples]
    G = len(samples)
    baseline = (r.sum() - r) / (G - 1)
    return ((r - baseline)[:, None] * (np.eye(len(z))[samples] - pi)).mean(axis=0)


@pytest.mark.parametrize("exercise, right", [
    ("jhat_distribution", _jhat_loop), ("estimator_variance", _variance_loop),
    ("group_mean_baseline_gradient", _group_loop), ("group_mean_baseline_gradient", _group_without_pi_term)])
def test_other_correct_versions_pass(exercise, right):
    assert check(exercise, right).startswith("Correct:")


@pytest.mark.parametrize("exercise, wrong, says", [
    ("jhat_distribution", _jhat_no_comb, "binomial coefficient C(G, k) is missing"),
    ("jhat_distribution", _jhat_counts, "FRACTION correct, k / G"),
    ("jhat_distribution", _jhat_swapped, "p and 1 - p are swapped"),
    ("jhat_distribution", lambda p, G: _jhat_loop(p, G)[1], "return the pair (values, probs)"),
    ("estimator_variance", _variance_one_sample, "variance of ONE sample"),
    ("estimator_variance", _variance_times_G, "DIVIDES it by G"),
    ("estimator_variance", _variance_by_sqrt_G, "divided by sqrt(G)"),
    ("estimator_variance", _variance_no_baseline, "baseline is missing"),
    ("estimator_variance", _variance_second_moment, "|grad J|^2 is not subtracted"),
    ("estimator_variance", _variance_own_coordinate, "|g(y)|^2 is not (1 - pi(y))^2"),
    ("group_mean_baseline_gradient", _group_descent, "sign is flipped"),
    ("group_mean_baseline_gradient", _group_no_baseline, "baseline is missing"),
    ("group_mean_baseline_gradient", _group_sum, "sum over the group"),
    ("group_mean_baseline_gradient", _group_leave_one_out, "leave-one-out (RLOO)"),
])
def test_typical_mistakes_get_their_diagnosis(exercise, wrong, says):
    message = check(exercise, wrong)
    assert message.startswith("Not yet:") and says in message, message


def test_other_wrong_answers_are_reported_not_raised():
    assert check("jhat_distribution", lambda p, G: 1 / 0).startswith("Not yet: your function raised ZeroDivisionError")
    assert "should be a function" in check("jhat_distribution", (np.zeros(5), np.zeros(5)))
    # values of the wrong length (range(G): G values, not G + 1): named by the first case that differs
    message = check("jhat_distribution", lambda p, G: (np.arange(G) / G, np.full(G, 1 / G)))
    assert message.startswith("Not yet: on arguments 0.2, 4 the reference returns shape (2, 5)"), message
    # a stray common factor
    message = check("estimator_variance", lambda z, r, baseline=0.0, G=1: 3 * estimator_variance(z, r, baseline, G))
    assert message.startswith("Not yet:") and "times 3" in message, message
    message = check("group_mean_baseline_gradient", lambda z, y, r: np.zeros(len(z)))
    assert message.startswith("Not yet: on arguments"), message


# ----------------------------------------------------------------------------- by-hand exercises
BY_HAND = {                       # label: (chapter, the answer as text, the answer as a number)
    "ex-ch06-lenient-se": (6, "0.2016", 0.2016),
    "ex-ch08-lenient-baseline": (8, "45/148", 0.3041),
    "ex-ch09-group-step": (9, "-1/8", -0.125),
}


def test_the_by_hand_exercises_and_their_keys():
    for label, (chapter, _, _) in BY_HAND.items():
        spec = SPECS[label]
        assert isinstance(spec, NumericExercise) and EXERCISES[label] == chapter
        key = answer_key()[label]
        assert key["value"] == spec.value and len(key["mistakes"]) == len(spec.mistakes) >= 3


def test_the_by_hand_values():
    pi = softmax(LOGITS)
    lenient = np.array([0, 0, 1, 0, 0.5])
    assert SPECS["ex-ch06-lenient-se"].value == pytest.approx(math.sqrt((0.225 - 0.25 ** 2) / 4))
    assert SPECS["ex-ch08-lenient-baseline"].value == pytest.approx(45 / 148)
    g_sq = 1 - 2 * pi + pi @ pi
    assert SPECS["ex-ch08-lenient-baseline"].value == pytest.approx(pi @ (lenient * g_sq) / (pi @ g_sq))
    assert SPECS["ex-ch09-group-step"].value == pytest.approx(-0.125)
    assert REWARDS[[2, 1, 1, 0]].tolist() == [1, 0, 0, 0]


@pytest.mark.parametrize("label", BY_HAND)
def test_a_by_hand_answer_is_accepted(label):
    _, text, number = BY_HAND[label]
    for answer in (text, number, SPECS[label].value, f"  {SPECS[label].value:.4f} "):
        assert check(label, answer).startswith("Correct:"), (label, answer)


@pytest.mark.parametrize("label, wrong, says", [
    ("ex-ch06-lenient-se", "0.2165", "J (1 - J) is the variance of a 0/1 reward only"),
    ("ex-ch06-lenient-se", 0.040625, "that is the variance of J-hat"),
    ("ex-ch06-lenient-se", "0.4031", "standard deviation of ONE reward"),
    ("ex-ch06-lenient-se", 0.1008, "divided by G = 4"),
    ("ex-ch08-lenient-baseline", "1/4", "that is the mean reward J = 0.25"),
    ("ex-ch08-lenient-baseline", 0.3233, "the weights pi(y) are missing"),
    ("ex-ch08-lenient-baseline", "0.225", "only the numerator"),
    ("ex-ch08-lenient-baseline", 0.2998, "|g(y)|^2 is not (1 - pi(y))^2"),
    ("ex-ch09-group-step", "-0.1", "the baseline is missing"),
    ("ex-ch09-group-step", "1/8", "the sign is flipped"),
    ("ex-ch09-group-step", -0.5, "sum over the group"),
    ("ex-ch09-group-step", "-1/6", "leave-one-out (RLOO)"),
])
def test_each_listed_mistake_gets_its_message(label, wrong, says):
    message = check(label, wrong)
    assert message.startswith("Not yet:") and says in message, message


@pytest.mark.parametrize("label", BY_HAND)
def test_another_number_and_text_get_the_generic_messages(label):
    message = check(label, 42)
    assert message.startswith("Not yet: that is not within") and "Recompute" in message, message
    assert check(label, "abc") == MALFORMED
