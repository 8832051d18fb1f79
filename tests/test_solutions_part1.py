"""The solutions of chapters 1-5: each test runs the solution's code and checks the numbers it states."""
import itertools
import math

import numpy as np
import pytest

from rl4llm import (CORRECT, EOS_MARKER, LOGITS, PROMPT, VOCAB, addition_reward, cross_entropy, decode_probs,
                    entropy, fit_single_peak, kl_divergence, sequence_probability, sft_gradient, sft_step,
                    softmax, two_peaked)
from rl4llm.two_strings import (answer_probabilities, string_probabilities, training_curves, two_spellings,
                                two_step_policy, two_step_sft_gradient)
from numerics import finite_difference

FOUR = VOCAB.index("4")


# ----------------------------------------------------------------------------- chapter 1
def test_ch01_shift_invariance():
    assert np.allclose(softmax(LOGITS - 7), softmax(LOGITS))
    assert np.allclose(softmax(LOGITS + 300), softmax(LOGITS))
    for a in (0.5, 2.0, 3.0):              # a > 0 is temperature 1/a: same order
        assert np.allclose(softmax(a * LOGITS), softmax(LOGITS, 1 / a))
        assert list(np.argsort(-softmax(a * LOGITS), kind="stable")) == list(np.argsort(-LOGITS, kind="stable"))
    np.testing.assert_allclose(softmax(0 * LOGITS), 0.2)          # a = 0: uniform
    reversed_ = softmax(-LOGITS)                                   # a < 0: order reversed
    np.testing.assert_allclose(np.round(reversed_, 4), [0.3077, 0.0769, 0.1538, 0.1538, 0.3077])
    np.testing.assert_allclose(np.exp(-LOGITS), [1, 0.25, 0.5, 0.5, 1])
    assert int(np.argmin(reversed_)) == FOUR == int(np.argmax(softmax(LOGITS)))
    assert set(np.flatnonzero(reversed_ == reversed_.max())) == {VOCAB.index("0"), VOCAB.index("15")}


def test_ch01_limits_of_temperature():
    np.testing.assert_allclose(softmax(LOGITS, 1e-3), np.eye(5)[FOUR], atol=1e-12)
    np.testing.assert_allclose(softmax(LOGITS, 1e6), 0.2, atol=1e-6)
    with pytest.raises(ValueError, match="temperature must be a finite number > 0"):
        softmax(LOGITS, 0)


# ----------------------------------------------------------------------------- chapter 2
def test_ch02_best_temperature():
    temperatures = np.geomspace(0.1, 50, 20001)
    p5 = softmax(LOGITS[None, :] / temperatures[:, None])[:, CORRECT]
    assert temperatures[np.argmax(p5)] == pytest.approx(2.0, rel=1e-3)
    assert p5.max() == pytest.approx(1 / (2 + 2 * np.sqrt(2)), rel=1e-9)
    assert round(1 / (2 + 2 * np.sqrt(2)), 4) == 0.2071
    u = 2 ** (1 / temperatures)
    np.testing.assert_allclose(p5, u / (u ** 2 + 2 * u + 2), rtol=1e-12)
    assert np.all(np.diff(p5[temperatures < 2]) > 0) and np.all(np.diff(p5[temperatures > 2.001]) < 0)


def test_ch02_truncate_then_heat():
    temperatures = np.geomspace(0.05, 1e4, 300)
    u = 2 ** (1 / temperatures)
    by_k = {k: np.array([decode_probs(LOGITS, t, top_k=k)[CORRECT] for t in temperatures]) for k in range(1, 6)}
    np.testing.assert_allclose(by_k[2], 1 / (1 + u), rtol=1e-10)
    np.testing.assert_allclose(by_k[3], 1 / (u + 2), rtol=1e-10)
    np.testing.assert_allclose(by_k[4], u / (u + 1) ** 2, rtol=1e-10)
    assert np.all(by_k[1] == 0) and by_k[5].max() <= 1 / (2 + 2 * np.sqrt(2)) + 1e-12
    assert np.all(by_k[3] < 1 / 3) and np.all(by_k[4] < 1 / 4) and np.all(by_k[2] < 0.5)
    assert np.all(np.diff(by_k[2]) > 0)
    assert round(float(decode_probs(LOGITS, temperature=1e6, top_k=2)[CORRECT]), 4) == 0.5
    for t in temperatures:                       # no (T, k) makes 5 the mode
        for k in range(1, 6):
            probs = decode_probs(LOGITS, t, top_k=k)
            assert probs[FOUR] > probs[CORRECT]


def test_ch02_ties_in_practice():
    swapped = [0, 1, 3, 2, 4]                    # vocabulary listed with 6 before 5
    for kwargs in ({"top_k": 2}, {"top_p": 0.5}):
        toward_5 = decode_probs(LOGITS, **kwargs)[CORRECT]
        toward_6 = decode_probs(LOGITS[swapped], **kwargs)[swapped.index(CORRECT)]
        assert (toward_5, toward_6) == (pytest.approx(1 / 3), 0.0)
        assert 0.5 * toward_5 + 0.5 * toward_6 == pytest.approx(1 / 6)
    assert np.cumsum(np.sort(softmax(LOGITS))[::-1])[1] == pytest.approx(0.6)


# ----------------------------------------------------------------------------- chapter 3
def test_ch03_a_more_talkative_model():
    p05 = sequence_probability([0.1, 0.9, 1.0])
    assert p05 == pytest.approx(0.09)
    assert round(0.16 / p05, 2) == 1.78
    assert 0.16 + p05 == pytest.approx(0.25)
    talkative = two_spellings(0.1, 0.9)
    assert (talkative["5"], talkative["05"], talkative["correct"]) == (pytest.approx(0.16), pytest.approx(0.09),
                                                                      pytest.approx(0.25))
    for p in np.linspace(0, 1, 11):              # "05" never exceeds its first factor pi(0) = 0.1
        assert two_spellings(0.1, p)["05"] <= 0.1 + 1e-15


def test_ch03_length_costs():
    long_, short = 20 * math.log(0.95), 5 * math.log(0.8)
    assert (round(long_, 3), round(short, 3)) == (-1.026, -1.116)
    assert (round(math.exp(long_), 2), round(math.exp(short), 2)) == (0.36, 0.33)
    assert long_ > short


def test_ch03_what_the_verifier_sees():
    correct = ["".join(s) for n in (1, 2, 3) for s in itertools.product(VOCAB, repeat=n)
               if addition_reward(PROMPT, "".join(s)) == 1.0]
    assert sorted(correct) == ["005", "05", "5"]
    positive = {a for a, p in answer_probabilities().items() if p > 0}
    assert positive & set(correct) == {"5", "05"}


# ----------------------------------------------------------------------------- chapter 4
def test_ch04_gibbs_inequality():
    rng = np.random.default_rng(0)
    for _ in range(1000):
        p, q = rng.dirichlet(np.ones(5)), rng.dirichlet(np.ones(5))
        assert kl_divergence(p, q) >= 0
        assert cross_entropy(p, q) >= entropy(p) - 1e-12
    assert kl_divergence(softmax(LOGITS), softmax(LOGITS)) == 0.0


def test_ch04_step_to_one_half():
    after = lambda lr: softmax(sft_step(LOGITS, CORRECT, lr))[CORRECT]
    assert after(0.0) == pytest.approx(0.2) and round(float(after(1.0)), 4) == 0.4207
    assert after(1.0) < 0.5 < after(2.0)
    lo, hi = 1.0, 2.0
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if after(mid) < 0.5 else (lo, mid)
    assert round(lo, 4) == 1.3030
    eta = lo
    lhs = 2 * np.exp(0.8 * eta)
    rhs = np.exp(-0.1 * eta) + 4 * np.exp(-0.4 * eta) + 2 * np.exp(-0.2 * eta) + np.exp(-0.1 * eta)
    assert lhs == pytest.approx(rhs, rel=1e-9)


def test_ch04_gradient_sums_to_zero():
    rng = np.random.default_rng(1)
    for _ in range(5):
        z, y = rng.normal(size=5), int(rng.integers(5))
        assert sft_gradient(z, y).sum() == pytest.approx(0.0, abs=1e-15)
        loss = lambda v: -np.log(softmax(v)[y])
        along_ones = (loss(z + 1e-6) - loss(z - 1e-6)) / 2e-6      # shift every logit together
        assert along_ones == pytest.approx(0.0, abs=1e-8)


# ----------------------------------------------------------------------------- chapter 5
def test_ch05_two_labels():
    data = np.array([0.5, 0, 0.5, 0, 0])
    grad = softmax(LOGITS) - data
    assert grad[VOCAB.index("0")] == pytest.approx(-0.4)            # descent raises z(0)
    half = {c: 0.5 * (a + b) for (c, a), b in zip(two_step_sft_gradient(LOGITS, "5").items(),
                                                  two_step_sft_gradient(LOGITS, "05").values())}
    np.testing.assert_allclose(half[""], grad, atol=1e-14)
    policy = two_step_policy()
    for _ in range(3000):                                             # SFT on both labels, half each
        g5, g05 = two_step_sft_gradient(policy, "5"), two_step_sft_gradient(policy, "05")
        policy = {c: z - 1.0 * 0.5 * (g5[c] + g05[c]) for c, z in policy.items()}
    probs = string_probabilities(policy)
    assert probs["5"] == pytest.approx(0.5, abs=2e-3) and probs["05"] == pytest.approx(0.5, abs=2e-3)
    assert softmax(policy["0"])[0] > 0.998                            # P(5 | 0) -> 1


def test_ch05_sft_drains_05_even_if_p5_after_0_were_one():
    policy = two_step_policy()
    policy["0"] = np.array([40.0, 0.0])                               # P(5 | 0) = 1 to double precision
    curves = training_curves(1.0, 10, policy)
    assert np.all(np.diff(curves["sft_05"]) < 0)


def test_ch05_a_reliable_path_through_0():
    policy = two_step_policy()
    policy["0"] = np.log([0.9, 0.1])
    curves = training_curves(1.0, 25, policy)
    assert string_probabilities(policy)["05"] == pytest.approx(0.09)
    assert round(float(curves["sft_05"][-1]), 4) == 0.0059 and np.all(np.diff(curves["sft_05"]) < 0)
    peak = int(np.argmax(curves["rl_05"]))
    assert (peak, round(float(curves["rl_05"][peak]), 4)) == (7, 0.1342)
    assert round(float(curves["rl_05"][-1]), 4) == 0.0583
    peak0 = int(np.argmax(curves["rl_pi0"]))
    assert (peak0, round(float(curves["rl_pi0"][peak0]), 4)) == (7, 0.1471)
    ahead = curves["rl_eos_after_5"] > curves["rl_5_after_0"]
    assert int(np.argmax(ahead)) == 12 and np.all(ahead[12:]) and not np.any(ahead[:12])
    J = curves["rl_5"] + curves["rl_05"]
    assert np.all(J < curves["rl_5_after_0"])           # z(0)'s push pi(0) (Q(0) - J) > 0 at every step


def test_ch05_which_direction_has_infinities():
    p = two_peaked()
    _, _, q = fit_single_peak(p, "forward", np.arange(0.0, 60.0, 1.0), np.arange(1.0, 21.0, 1.0))
    q = q.copy()
    q[30] = 0.0
    q /= q.sum()
    assert np.all(p > 0)
    assert kl_divergence(p, q) == np.inf
    assert np.isfinite(kl_divergence(q, p))


def test_ch05_break_the_texts_reward():
    for text in ("+5", "\u0665", "0_5"):
        assert int(text) == 5
        assert addition_reward("2+3=", text) == 0.0
    with pytest.raises(ValueError):
        int("5" + EOS_MARKER)
    assert addition_reward("2+3=", "5" + EOS_MARKER) == 1.0
