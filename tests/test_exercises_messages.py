"""The checks' messages (rl4llm.exercises): each wrong answer a close read (issue 35) found answered generically gets its own
message, and a check never prints numpy's warnings into the student's cell."""
import warnings

import numpy as np
import pytest

from rl4llm import cross_entropy, kl_divergence, softmax
from rl4llm.exercises import check
from rl4llm.exercises.part3 import SPECS as PART3


@pytest.mark.parametrize("label, wrong, says", [
    ("ex-ch01-cold", 0.7805, ["that is P(4) = 64/82", "2³ = 8"]),             # P(4) given for P(5)
    ("ex-ch01-cold", "32/41", ["that is P(4)"]),
    ("ex-ch04-noisy-labels", 2.5257, ["adds the two surprises", "average"]),    # summed, not averaged
    ("ex-ch09-group-step", -0.0625, ["only one of the two 4s"]),               # one 4 counted
    ("ex-ch09-group-step", "-1/16", ["only one of the two 4s"]),
    ("ex-ch09-group-step", -0.2887, ["divided by the group's std", "plain r_i - rbar"]),   # std-scaled
    ("ex-ch10-weight", 0.8333, ["every OTHER answer", "2 x 10/12"]),
    ("ex-ch10-weight", 1.6, ["2 x (1 - 0.2)", "5/3"]),
    ("ex-ch14-trl-advantage", 1.5, ["without TRL's eps", "0.5001"]),
])
def test_each_wrong_number_gets_its_own_message(label, wrong, says):
    message = check(label, wrong)
    assert message.startswith("Not yet:") and "Recompute it step by step" not in message, message
    for words in says:
        assert words in message, message


def test_the_trl_advantage_is_checked_to_its_fourth_decimal():
    """1.4997 and 1.5 are 3e-4 apart: the tolerance 1e-4 tells them apart, and the reply gives 1.4997."""
    assert PART3["ex-ch14-trl-advantage"].tolerance == 1e-4
    message = check("ex-ch14-trl-advantage", 1.4997)
    assert message.startswith("Correct:") and "is 1.4997 " in message, message
    assert check("ex-ch14-trl-advantage", "1.5").startswith("Not yet:")


def test_cross_entropy_for_the_kl_is_named():
    """On the toy's one-hot label H(p) = 0, so CE = KL there; the case after the toy (chapter 5's data)
    tells them apart, and the message names the cross-entropy."""
    message = check("kl_divergence", cross_entropy)
    assert message.startswith("Not yet:") and "cross-entropy" in message, message
    def naive_ce(p, q):
        p, q = np.asarray(p, float), np.asarray(q, float)
        with np.errstate(divide="ignore"):
            terms = np.where(p > 0, -p * np.log(np.where(p > 0, q, 1.0)), 0.0)
        return float(terms.sum())
    assert "cross-entropy" in check("kl_divergence", naive_ce)
    assert check("kl_divergence", kl_divergence).startswith("Correct:")


def test_a_std_scaled_advantage_in_the_group_gradient_is_named():
    def std_scaled(z, y, r):
        pi, y = softmax(z), np.asarray(y)
        rewards = np.asarray(r, float)[y]
        advantages = (rewards - rewards.mean()) / (rewards.std() + 1e-8)
        return (advantages[:, None] * (np.eye(pi.size)[y] - pi)).mean(axis=0)
    message = check("group_mean_baseline_gradient", std_scaled)
    assert message.startswith("Not yet:") and "divided by the group's std" in message, message


def test_inf_over_inf_prints_no_numpy_warning():
    """A function that returns inf where the reference is finite and infinite: the stray-factor test divides
    inf by inf, which must not print numpy's "invalid value encountered in scalar divide"."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        message = check("kl_divergence", lambda p, q: float("inf"))
    assert message.startswith("Not yet:"), message
