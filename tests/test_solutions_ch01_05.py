"""The solutions of chapters 1-5: each test runs the solution's code and checks the numbers it states."""
import itertools
import math

import numpy as np
import pytest

from rl4llm import (CORRECT, EOS_MARKER, LOGITS, PROMPT, VOCAB, addition_reward, cross_entropy, decode_probs,
                    entropy, fit_single_peak, kl_divergence, sequence_probability, sft_gradient, sft_step,
                    softmax, two_peaked)
from rl4llm.math.two_step import (answer_probabilities, string_probabilities, training_curves, two_spellings,
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


def test_ch01_a_colder_model():
    k = np.array([0, 2, 1, 1, 0])
    weights = np.exp(LOGITS / (1 / 3))
    np.testing.assert_allclose(weights, 2.0 ** (3 * k))
    np.testing.assert_allclose(weights, [1, 64, 8, 8, 1])
    assert weights.sum() == pytest.approx(82)
    cold = softmax(LOGITS, 1 / 3)
    assert list(np.round(cold, 4)) == [0.0122, 0.7805, 0.0976, 0.0976, 0.0122]
    assert cold[CORRECT] == pytest.approx(8 / 82) and cold[FOUR] == pytest.approx(64 / 82)
    cubes = softmax(LOGITS) ** 3
    assert cubes[CORRECT] == pytest.approx(0.008) and cubes.sum() == pytest.approx(0.082)
    np.testing.assert_allclose(cubes / cubes.sum(), cold)                  # pi_T is proportional to pi^(1/T)
    assert round(float(softmax(LOGITS * (1 / 3))[CORRECT]), 4) == 0.2063  # multiplied by T: flatter
    assert cold[CORRECT] < softmax(LOGITS)[CORRECT] / 2 + 1e-12


def test_ch01_what_temperature_does_to_the_bars():
    for t, ratio in ((0.5, 4.0), (1.0, 2.0), (2.0, math.sqrt(2))):
        p = softmax(LOGITS, t)
        assert p[FOUR] / p[CORRECT] == pytest.approx(ratio)
        assert ratio == pytest.approx(2 ** (1 / t))
    assert round(0.6154 / 0.1538, 2) == 4.0 and round(0.2929 / 0.2071, 3) == 1.414
    hot = softmax(LOGITS, 10)
    assert (round(float(hot[FOUR]), 4), round(float(hot[0]), 4), round(float(hot[-1]), 4)) == (0.2171, 0.1890, 0.1890)
    temperatures = np.geomspace(0.05, 100, 20001)
    probs = softmax(LOGITS[None, :] / temperatures[:, None])
    assert np.all(np.diff(np.argsort(-probs, axis=1, kind="stable"), axis=0) == 0)   # never reordered
    assert np.all(probs[:, 2] == probs[:, 3]) and np.all(probs[:, 0] == probs[:, 4])
    gap = np.abs(probs - 0.2).max(axis=1)
    assert np.all(np.diff(gap[temperatures > 1]) < 0)
    within = temperatures[np.argmax(gap < 0.01)]
    assert round(float(within)) == 17
    zbar = LOGITS.mean()
    np.testing.assert_allclose(softmax(LOGITS, 1000), 0.2 * (1 + (LOGITS - zbar) / 1000), atol=1e-6)


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


def test_ch02_heat_first_then_cut():
    weights = np.exp(LOGITS / 0.5)
    np.testing.assert_allclose(weights, [1, 16, 4, 4, 1])
    order = np.argsort(-weights, kind="stable")
    running = np.cumsum(weights[order]) / weights.sum()
    assert [VOCAB[i] for i in order[:3]] == ["4", "5", "6"]
    assert list(np.round(running[:3], 4)) == [0.6154, 0.7692, 0.9231]
    kept = decode_probs(LOGITS, 0.5, top_p=0.9)
    assert [VOCAB[i] for i in np.flatnonzero(kept)] == ["4", "5", "6"]
    assert kept[CORRECT] == pytest.approx(1 / 6) and round(float(kept[CORRECT]), 4) == 0.1667
    at_one = decode_probs(LOGITS, 1.0, top_p=0.9)
    assert [VOCAB[i] for i in np.flatnonzero(at_one)] == ["0", "4", "5", "6"]
    assert list(np.round(np.cumsum(np.sort(softmax(LOGITS))[::-1])[:4], 4)) == [0.4, 0.6, 0.8, 0.9]
    cut_then_heat = np.where(at_one > 0, softmax(LOGITS, 0.5), 0)
    assert (cut_then_heat / cut_then_heat.sum())[CORRECT] == pytest.approx(4 / 25)


def test_ch02_a_colder_sampler_loses_the_answer():
    from rl4llm.viz.decoding import DECODING
    slider = DECODING[0].values                                     # chapter 2's chart: T in steps of 0.05
    assert np.any(np.isclose(slider, 0.70)) and np.any(np.isclose(slider, 0.65))
    assert np.any(np.isclose(DECODING[2].values, 0.5))
    p5 = lambda t: float(decode_probs(LOGITS, t, top_p=0.5)[CORRECT])
    assert p5(1.0) == pytest.approx(1 / 3) and round(p5(0.70), 4) == 0.2709 and p5(0.65) == 0.0
    threshold = math.log(2) / math.log(1 + math.sqrt(3))
    assert round(threshold, 4) == 0.6897
    assert softmax(LOGITS, threshold)[FOUR] == pytest.approx(0.5)
    assert p5(threshold * 1.0001) == pytest.approx(1 / (2 + math.sqrt(3)), rel=1e-3)
    assert round(1 / (2 + math.sqrt(3)), 4) == 0.2679 and p5(threshold * 0.9999) == 0.0
    temperatures = np.linspace(threshold * 1.0001, 1.0, 200)        # {4, 5} kept: 1 / (1 + u), falling as T drops
    values = np.array([p5(t) for t in temperatures])
    np.testing.assert_allclose(values, 1 / (1 + 2 ** (1 / temperatures)), rtol=1e-12)
    assert np.all(np.diff(values) > 0)


# ----------------------------------------------------------------------------- chapter 3
def test_ch03_a_more_talkative_model():
    p05 = sequence_probability([0.1, 0.9, 1.0])
    assert p05 == pytest.approx(0.09)
    assert round(0.16 / p05, 2) == 1.78
    assert 0.16 + p05 == pytest.approx(0.25)
    assert sequence_probability([0.2, 0.8]) == pytest.approx(0.16) and 0.2 + p05 == pytest.approx(0.29)
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


def test_ch03_when_the_long_spelling_wins():
    first_5 = two_spellings(0.0)["5"]
    assert first_5 == pytest.approx(2 / 9 * 0.8) and round(first_5, 4) == 0.1778
    for q, crossing in ((1.0, 0.1509), (0.2, 0.4706)):
        at = first_5 / (q + first_5)
        assert round(at, 4) == crossing
        assert two_spellings(at, q)["05"] == pytest.approx(two_spellings(at, q)["5"])
        assert two_spellings(at + 1e-3, q)["05"] > two_spellings(at + 1e-3, q)["5"]
    low, high = two_spellings(0.15, 1.0), two_spellings(0.2, 1.0)
    assert (round(low["5"], 4), round(low["05"], 4)) == (0.1511, 0.15)
    assert (round(high["05"], 4), round(high["5"], 4)) == (0.2, 0.1422)
    for pi_0 in np.linspace(0, 1, 21):
        assert two_spellings(pi_0, 1.0)["05"] == pytest.approx(pi_0)
    assert round(two_spellings(0.0, 1.0)["correct"], 4) == 0.1778 and two_spellings(1.0, 1.0)["correct"] == 1.0


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


def test_ch04_noisy_labels():
    pi, p = softmax(LOGITS), np.array([0, 0.5, 0.5, 0, 0])
    assert (round(float(-np.log(0.4)), 4), round(float(-np.log(0.2)), 4)) == (0.9163, 1.6094)
    # The exact value 1.262864... rounds to 1.2629; the sum of the rounded logs, 1.26285, sits on a
    # rounding half, so it is compared with a tolerance rather than rounded.
    assert round(cross_entropy(p, pi), 4) == 1.2629
    assert 0.5 * (0.9163 + 1.6094) == pytest.approx(cross_entropy(p, pi), abs=5e-5)
    assert round(entropy(p), 4) == 0.6931 and round(kl_divergence(p, pi), 4) == 0.5697
    assert entropy(p) + kl_divergence(p, pi) == pytest.approx(cross_entropy(p, pi))
    assert cross_entropy(p, p) == pytest.approx(math.log(2))                # the best model keeps ln 2
    assert round(float(-np.log(p @ pi)), 4) == 1.2040


def test_ch04_when_5_takes_the_lead():
    eta = math.log(2) / 1.2
    assert round(eta, 4) == 0.5776
    after = lambda lr: softmax(sft_step(LOGITS, CORRECT, lr))
    gap = lambda lr: sft_step(LOGITS, CORRECT, lr)[CORRECT] - sft_step(LOGITS, CORRECT, lr)[FOUR]
    assert gap(0.0) == pytest.approx(-math.log(2)) and gap(1.0) - gap(0.0) == pytest.approx(1.2)
    tie = after(0.5776)
    assert round(float(tie[CORRECT]), 4) == round(float(tie[FOUR]), 4) == 0.3169
    assert after(eta)[CORRECT] == pytest.approx(after(eta)[FOUR])
    from rl4llm.viz.sft import LEARNING_RATE
    assert np.any(np.isclose(LEARNING_RATE.values, 0.57)) and np.any(np.isclose(LEARNING_RATE.values, 0.58))
    assert (round(float(after(0.57)[FOUR]), 4), round(float(after(0.57)[CORRECT]), 4)) == (0.3180, 0.3151)
    assert (round(float(after(0.58)[CORRECT]), 4), round(float(after(0.58)[FOUR]), 4)) == (0.3174, 0.3165)
    assert all(after(lr)[CORRECT] > after(lr)[FOUR] for lr in LEARNING_RATE.values if lr >= 0.58)
    for lr in LEARNING_RATE.values:
        assert after(lr)[0] == after(lr)[-1]


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


def test_ch05_forward_or_reverse():
    pi, p = softmax(LOGITS), np.array([0.05, 0.05, 0.8, 0.05, 0.05])
    np.testing.assert_allclose(p / pi, [1 / 2, 1 / 8, 4, 1 / 4, 1 / 2])
    assert kl_divergence(p, pi) == pytest.approx(1.25 * math.log(2)) and round(kl_divergence(p, pi), 4) == 0.8664
    assert kl_divergence(pi, p) == pytest.approx(1.4 * math.log(2)) and round(kl_divergence(pi, p), 4) == 0.9704
    assert round(0.8 * 2 * math.log(2), 4) == 1.1090 and round(0.4 * 3 * math.log(2), 4) == 0.8318
    forward_terms, reverse_terms = p * np.log(p / pi), pi * np.log(pi / p)
    assert int(np.argmax(forward_terms)) == CORRECT and int(np.argmax(reverse_terms)) == FOUR


def test_ch05_the_reverse_kl_of_the_label_is_infinite():
    assert kl_divergence(softmax(LOGITS), np.eye(5)[CORRECT]) == math.inf


def test_ch05_the_learning_rate_is_a_clock():
    found = {}
    for lr in (0.25, 0.5, 1.0, 2.0, 4.0):
        curves = training_curves(lr, 25)
        peak = int(np.argmax(curves["rl_05"]))
        found[lr] = (peak, round(float(curves["rl_05"][peak]), 4), round(float(curves["rl_05"][-1]), 4),
                     round(float(curves["sft_05"][-1]), 4))
        assert np.all(np.diff(curves["sft_05"]) < 0)
    assert found == {0.25: (14, 0.0217, 0.0198, 0.0055), 0.5: (7, 0.0218, 0.0101, 0.0027),
                     1.0: (4, 0.0219, 0.0039, 0.0013), 2.0: (2, 0.0221, 0.0017, 0.0007),
                     4.0: (1, 0.0224, 0.0009, 0.0003)}
