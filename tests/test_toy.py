"""The five-token toy and its two-token extension (rl4llm.toy.five_token)."""
import math

import numpy as np
import pytest

from rl4llm import CORRECT, LOGITS, PROMPT, REWARDS, VOCAB, addition_reward, sequence_probability, softmax
from rl4llm import toy
from rl4llm.math.two_step import two_token_paths


def test_vocabulary_and_correct_answer():
    assert VOCAB == ("0", "4", "5", "6", "15")
    assert CORRECT == 2 and VOCAB[CORRECT] == "5"
    assert PROMPT == "2+3="


def test_logits_are_multiples_of_ln2_giving_exact_fractions():
    np.testing.assert_allclose(LOGITS / math.log(2), [0, 2, 1, 1, 0], atol=1e-15)
    np.testing.assert_allclose(np.exp(LOGITS), [1, 4, 2, 2, 1], rtol=1e-14)
    np.testing.assert_allclose(softmax(LOGITS), [0.1, 0.4, 0.2, 0.2, 0.1], rtol=1e-14)


def test_rewards_are_the_verifiers_scores():
    """REWARDS is what the safe verifier says about each answer of VOCAB on the prompt."""
    verified = [addition_reward(PROMPT, token) for token in VOCAB]
    np.testing.assert_array_equal(REWARDS, verified)
    np.testing.assert_array_equal(REWARDS, [0, 0, 1, 0, 0])


def test_two_token_paths_give_the_texts_probabilities():
    paths = two_token_paths()
    assert set(paths) == {"5", "05"}
    np.testing.assert_allclose(paths["5"], [0.2, 0.8], rtol=1e-14)
    np.testing.assert_allclose(paths["05"], [0.1, 0.2, 1.0], rtol=1e-14)
    p5, p05 = sequence_probability(paths["5"]), sequence_probability(paths["05"])
    assert p5 == pytest.approx(0.16, abs=1e-15)
    assert p05 == pytest.approx(0.02, abs=1e-15)
    assert p5 / p05 == pytest.approx(8.0, rel=1e-12)


def test_two_token_paths_first_step_is_the_toy_policy():
    """Independent route: each path's first factor is softmax(LOGITS) at the path's first token."""
    pi = softmax(LOGITS)
    paths = two_token_paths()
    assert paths["5"][0] == pytest.approx(pi[VOCAB.index("5")], rel=1e-14)
    assert paths["05"][0] == pytest.approx(pi[VOCAB.index("0")], rel=1e-14)
    assert paths["5"][1] == toy.P_EOS_AFTER_5
    assert paths["05"][1:] == [toy.P_5_AFTER_0, toy.P_EOS_AFTER_05]


def test_both_strings_verify_as_correct():
    for text in ("5", "05"):
        assert addition_reward(PROMPT, text + toy.EOS) == 1.0


def test_two_token_paths_returns_fresh_lists():
    """Mutating one result must not change the next one."""
    first = two_token_paths()
    first["5"][0] = 99.0
    assert two_token_paths()["5"][0] == pytest.approx(0.2)
