"""The "5" vs "05" toy under SFT and RL (rl4llm.two_strings)."""
import itertools

import numpy as np
import pytest

from rl4llm import CORRECT, LOGITS, PROMPT, VOCAB, addition_reward, policy_gradient, sft_step, softmax
from rl4llm import toy
from rl4llm.two_strings import first_token_rewards, string_probabilities, training_curves
from numerics import finite_difference


def test_string_probabilities_on_the_toy():
    probs = string_probabilities()
    assert probs["5"] == pytest.approx(0.16, rel=1e-13)
    assert probs["05"] == pytest.approx(0.02, rel=1e-13)
    assert probs == pytest.approx(string_probabilities(LOGITS))


def test_string_probabilities_follow_the_first_step():
    """Independent route: pi(first token) times the chapter-3 conditionals, written out by hand."""
    rng = np.random.default_rng(0)
    for _ in range(10):
        z = rng.normal(size=5)
        pi = softmax(z)
        probs = string_probabilities(z)
        assert probs["5"] == pytest.approx(pi[CORRECT] * toy.P_EOS_AFTER_5, rel=1e-13)
        assert probs["05"] == pytest.approx(pi[VOCAB.index("0")] * toy.P_5_AFTER_0 * toy.P_EOS_AFTER_05, rel=1e-13)


def test_only_5_and_05_are_correct_among_short_strings():
    """Enumerate every string of one or two tokens: the verifier accepts exactly "5" and "05"."""
    strings = list(VOCAB) + ["".join(pair) for pair in itertools.product(VOCAB, repeat=2)]
    correct = {s for s in strings if addition_reward(PROMPT, s) == 1.0}
    assert correct == {"5", "05"}


def test_first_token_rewards():
    np.testing.assert_allclose(first_token_rewards(), [0.2, 0.0, 0.8, 0.0, 0.0], rtol=1e-14)
    np.testing.assert_array_equal(first_token_rewards("2+4="), np.zeros(5))  # neither string sums to 6


def test_expected_reward_is_the_total_probability_of_the_correct_strings():
    """J = sum_y pi(y) r(y) = P("5") + P("05"), and its exact gradient matches finite differences of it."""
    r = first_token_rewards()
    rng = np.random.default_rng(1)
    for z in [LOGITS] + [rng.normal(size=5) for _ in range(5)]:
        total = lambda v: sum(string_probabilities(v).values())
        assert softmax(z) @ r == pytest.approx(total(z), rel=1e-13)
        np.testing.assert_allclose(policy_gradient(z, r), finite_difference(total, np.array(z, float)), atol=1e-9)


def test_training_curves_start_at_the_toy_and_match_single_steps():
    curves = training_curves(1.0, 3)
    np.testing.assert_array_equal(curves["step"], [0, 1, 2, 3])
    for key in ("sft_5", "rl_5"):
        assert curves[key][0] == pytest.approx(0.16)
    for key in ("sft_05", "rl_05"):
        assert curves[key][0] == pytest.approx(0.02)
    # after one SFT step, pi(5) = 0.4207, so P("5") = 0.8 x 0.4207
    after = softmax(sft_step(LOGITS, CORRECT, 1.0))
    assert curves["sft_5"][1] == pytest.approx(0.8 * after[CORRECT], rel=1e-13)
    assert curves["sft_05"][1] == pytest.approx(0.2 * after[0], rel=1e-13)


def test_sft_drains_05_while_rl_first_lifts_it():
    curves = training_curves(1.0, 30)
    assert np.all(np.diff(curves["sft_05"]) < 0)  # SFT pushes "05" down from the first step
    assert np.all(np.diff(curves["sft_5"]) > 0)
    assert curves["rl_05"][1] > curves["rl_05"][0]  # RL's first step raises "05": r(0) = 0.2 > J = 0.18
    total_rl = curves["rl_5"] + curves["rl_05"]
    assert np.all(np.diff(total_rl) > 0)  # RL climbs on the verifier's expected reward


def test_zero_steps_and_zero_learning_rate():
    curves = training_curves(0.5, 0)
    assert all(len(v) == 1 for v in curves.values())
    flat = training_curves(0.0, 4)
    np.testing.assert_allclose(flat["sft_05"], 0.02)
    np.testing.assert_allclose(flat["rl_5"], 0.16)


@pytest.mark.parametrize("bad", [[0.0, 1.0], np.zeros((5, 1)), [np.nan] * 5, "01234"])
def test_bad_logits_raise(bad):
    with pytest.raises(ValueError, match="logits"):
        string_probabilities(bad)
    with pytest.raises(ValueError, match="logits"):
        training_curves(1.0, 2, bad)


@pytest.mark.parametrize("lr, steps, name", [(np.nan, 3, "lr"), (np.inf, 3, "lr"), ("1", 3, "lr"),
                                             (1.0, -1, "steps"), (1.0, 2.5, "steps"), (1.0, True, "steps")])
def test_bad_lr_and_steps_raise(lr, steps, name):
    with pytest.raises(ValueError, match=name):
        training_curves(lr, steps)


def test_malformed_prompt_raises():
    with pytest.raises(ValueError, match="prompt"):
        first_token_rewards("2+3")
