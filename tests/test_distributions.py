"""softmax, log_softmax, entropy, cross_entropy, kl_divergence, decode_probs, sequence_probability, onehot."""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from rl4llm import (CORRECT, LOGITS, VOCAB, cross_entropy, decode_probs, entropy, kl_divergence, log_softmax,
                    onehot, sequence_probability, softmax)
from rl4llm import toy
from rl4llm.math.two_step import two_token_paths

PI = np.array([0.1, 0.4, 0.2, 0.2, 0.1])
FOUR, FIVE, SIX = VOCAB.index("4"), VOCAB.index("5"), VOCAB.index("6")


def p5_at(temperature):
    return softmax(LOGITS, temperature)[CORRECT]


# ---------------------------------------------------------------- softmax and log_softmax: the text's values
def test_softmax_of_the_toy_is_the_texts_pi():
    np.testing.assert_allclose(softmax(LOGITS), PI, rtol=1e-14)
    np.testing.assert_allclose(softmax(list(LOGITS)), PI, rtol=1e-14)  # lists are accepted
    assert isinstance(softmax(LOGITS), np.ndarray)


def test_softmax_matches_naive_exp_over_sum_on_moderate_logits():
    """Independent route: exp(z / T) / sum exp(z / T) without the max shift."""
    rng = np.random.default_rng(0)
    for _ in range(50):
        z = rng.normal(scale=5.0, size=rng.integers(1, 20))
        t = rng.uniform(0.3, 4.0)
        naive = np.exp(z / t) / np.exp(z / t).sum()
        np.testing.assert_allclose(softmax(z, t), naive, rtol=1e-12)
        np.testing.assert_allclose(log_softmax(z, t), np.log(naive), rtol=1e-10, atol=1e-12)


def test_softmax_works_row_by_row_on_a_batch():
    z = np.array([LOGITS, LOGITS[::-1], np.zeros(5)])
    out = softmax(z)
    for row_in, row_out in zip(z, out):
        np.testing.assert_allclose(row_out, softmax(row_in), rtol=1e-14)
    np.testing.assert_allclose(out.sum(axis=-1), 1.0, rtol=1e-14)


def test_log_softmax_is_the_log_of_softmax():
    np.testing.assert_allclose(log_softmax(LOGITS), np.log(PI), rtol=1e-13)
    np.testing.assert_allclose(np.exp(log_softmax(LOGITS, 0.7)), softmax(LOGITS, 0.7), rtol=1e-14)


# ---------------------------------------------------------------- softmax: edge cases
@pytest.mark.parametrize("big", [1e300, -1e300, 1e308, -1e308])
def test_softmax_is_stable_for_huge_logits(big):
    for z in (np.array([big, 0.0, 1.0]), np.full(4, big)):
        out = softmax(z)
        assert np.all(np.isfinite(out)) and out.sum() == pytest.approx(1.0, abs=1e-15)
        assert not np.any(np.isnan(log_softmax(z)))


def test_softmax_huge_logits_of_both_signs():
    np.testing.assert_array_equal(softmax([1e300, -1e300]), [1.0, 0.0])
    np.testing.assert_array_equal(softmax([-1e300, -1e300]), [0.5, 0.5])
    np.testing.assert_allclose(softmax([1e300, 1e300 - 1e285]), [1.0, 0.0])  # a gap of 1e285 is decisive
    with np.errstate(all="raise"):  # no overflow warning even when the gap exceeds the float range
        out = softmax([1e308, -1e308])
    np.testing.assert_array_equal(out, [1.0, 0.0])
    assert log_softmax([1e308, -1e308])[0] == 0.0


def test_softmax_of_shifted_huge_logits_matches_moderate_ones():
    """The same gaps far from zero give the same distribution (shift invariance at the extremes)."""
    np.testing.assert_allclose(softmax(LOGITS + 1e15), PI, rtol=0.2)  # 1e15 eats ~1e-1 of a unit gap
    np.testing.assert_allclose(softmax(LOGITS - 1e6), PI, rtol=1e-9)


def test_ties_get_equal_probability():
    out = softmax([1.0, 1.0, 1.0])
    np.testing.assert_allclose(out, [1 / 3] * 3, rtol=1e-15)
    assert softmax(LOGITS)[FIVE] == softmax(LOGITS)[SIX]


def test_single_logit_has_probability_one():
    np.testing.assert_array_equal(softmax([3.7]), [1.0])


def test_low_temperature_limit_is_the_argmax_without_nan():
    for t in (1e-3, 1e-100, 1e-300):
        out = softmax(LOGITS, t)
        assert not np.any(np.isnan(out))
        np.testing.assert_allclose(out, onehot(FOUR, 5), atol=1e-12)
    # a tie at the top splits evenly, still no NaN
    np.testing.assert_allclose(softmax([0.0, 1.0, 1.0], 1e-300), [0.0, 0.5, 0.5])


def test_high_temperature_limit_is_uniform():
    for t in (1e6, 1e100, 1e300):
        np.testing.assert_allclose(softmax(LOGITS, t), np.full(5, 0.2), rtol=1e-5)


def test_overflow_of_logits_over_temperature_raises_not_nan():
    with pytest.raises(ValueError, match="temperature"):
        softmax([1e300, 0.0], temperature=1e-10)
    with pytest.raises(ValueError, match="temperature"):
        log_softmax(LOGITS, temperature=1e-310)  # a subnormal temperature: z / T = inf
    with np.errstate(all="raise"), pytest.raises(ValueError, match="temperature"):
        softmax([1e300, 0.0], temperature=1e-10)  # reported as ValueError, not as a floating-point warning


# ---------------------------------------------------------------- softmax: properties
finite_logits = arrays(np.float64, st.integers(1, 12), elements=st.floats(-1e6, 1e6, allow_nan=False))


@settings(max_examples=200, deadline=None)
@given(finite_logits, st.floats(0.05, 50.0))
def test_softmax_sums_to_one_and_is_a_distribution(z, t):
    out = softmax(z, t)
    assert out.shape == z.shape
    assert np.all(out >= 0) and np.all(out <= 1)
    assert out.sum() == pytest.approx(1.0, abs=1e-12)


@settings(max_examples=200, deadline=None)
@given(arrays(np.float64, st.integers(1, 12), elements=st.floats(-50, 50)), st.floats(-1e3, 1e3))
def test_softmax_is_shift_invariant(z, c):
    np.testing.assert_allclose(softmax(z + c), softmax(z), rtol=1e-9, atol=1e-12)


@settings(max_examples=200, deadline=None)
@given(arrays(np.float64, st.integers(1, 12), elements=st.floats(-50, 50)), st.floats(0.1, 10.0))
def test_temperature_divides_the_logits(z, t):
    """softmax(z, T) == softmax(z / T, 1): temperature is a rescaling of the logits."""
    np.testing.assert_allclose(softmax(z, t), softmax(z / t), rtol=1e-9, atol=1e-300)


@settings(max_examples=100, deadline=None)
@given(arrays(np.float64, st.integers(2, 12), elements=st.floats(-50, 50)))
def test_softmax_preserves_the_order_of_the_logits(z):
    """Weakly monotone: a larger logit never gets a smaller probability (underflow may tie them)."""
    out = softmax(z)
    order = np.argsort(z, kind="stable")
    assert np.all(np.diff(out[order]) >= 0)
    assert out[np.argmax(z)] == out.max()


# ---------------------------------------------------------------- the temperature curve of chapter 2
def test_half_temperature_lowers_p5_to_4_over_26():
    assert p5_at(0.5) == pytest.approx(4 / 26, rel=1e-13)
    assert round(p5_at(0.5), 4) == 0.1538


def test_temperature_two_is_the_best_any_temperature_can_do():
    best = 1 / (2 + 2 * math.sqrt(2))  # u / (u^2 + 2u + 2) with u = 2^(1/T) peaks at u = sqrt(2), T = 2
    assert p5_at(2.0) == pytest.approx(best, rel=1e-13)
    assert round(p5_at(2.0), 4) == 0.2071
    grid = np.concatenate([np.linspace(0.01, 10, 20000), np.geomspace(10, 1e6, 2000)])
    values = np.array([p5_at(t) for t in grid])
    assert values.max() <= p5_at(2.0) + 1e-15
    assert grid[np.argmax(values)] == pytest.approx(2.0, abs=1e-3)


def test_temperature_two_is_a_stationary_maximum_by_the_derivative():
    """Central differences: dP(5)/dT = 0 at T = 2, > 0 below, < 0 above, second derivative < 0."""
    h = 1e-5
    slope = lambda t: (p5_at(t + h) - p5_at(t - h)) / (2 * h)
    assert abs(slope(2.0)) < 1e-9
    assert slope(1.5) > 0 and slope(1.0) > 0 and slope(0.5) > 0
    assert slope(2.5) < 0 and slope(5.0) < 0
    curvature = (p5_at(2.0 + 1e-3) - 2 * p5_at(2.0) + p5_at(2.0 - 1e-3)) / 1e-6
    assert curvature < 0


def test_temperature_derivative_closed_form_vanishes_at_two():
    """dpi_i/dT = -(pi_i / T^2)(z_i - sum_j pi_j z_j); at T = 2 the pi-weighted mean logit is ln 2 = z_5."""
    pi = softmax(LOGITS, 2.0)
    assert pi @ LOGITS == pytest.approx(LOGITS[CORRECT], rel=1e-14)


# ---------------------------------------------------------------- decode_probs
def test_greedy_picks_four():
    np.testing.assert_array_equal(decode_probs(LOGITS, top_k=1), onehot(FOUR, 5))
    assert decode_probs(LOGITS, top_k=1)[CORRECT] == 0.0  # greedy accuracy 0


def test_decode_with_no_truncation_is_softmax():
    np.testing.assert_allclose(decode_probs(LOGITS), PI, rtol=1e-14)
    np.testing.assert_allclose(decode_probs(LOGITS, temperature=0.5), softmax(LOGITS, 0.5), rtol=1e-14)
    np.testing.assert_allclose(decode_probs(LOGITS, top_k=5, top_p=1.0), PI, rtol=1e-14)
    np.testing.assert_allclose(decode_probs(LOGITS, top_k=50), PI, rtol=1e-14)  # k beyond the vocabulary


def test_top_k_two_keeps_four_and_five_with_ties_toward_the_lower_index():
    out = decode_probs(LOGITS, top_k=2)
    np.testing.assert_allclose(out, [0, 2 / 3, 1 / 3, 0, 0], rtol=1e-14)
    assert out[SIX] == 0.0  # 6 ties with 5; 5 has the lower index and is kept
    assert round(out[CORRECT], 4) == 0.3333


@pytest.mark.parametrize("top_p", [0.40001, 0.45, 0.5, 0.59, 0.6])
def test_top_p_in_the_window_keeps_four_and_five(top_p):
    np.testing.assert_allclose(decode_probs(LOGITS, top_p=top_p), [0, 2 / 3, 1 / 3, 0, 0], rtol=1e-14)


@pytest.mark.parametrize("top_p, kept", [(0.1, [FOUR]), (0.4, [FOUR]), (0.61, [FOUR, FIVE, SIX]),
                                         (0.8, [FOUR, FIVE, SIX]), (0.85, [0, FOUR, FIVE, SIX]),
                                         (0.9, [0, FOUR, FIVE, SIX]), (0.95, list(range(5))), (1.0, list(range(5)))])
def test_top_p_keeps_the_smallest_prefix_with_enough_mass(top_p, kept):
    """Independent route: walk the sorted order by hand (ties by lower index) until the mass reaches top_p."""
    out = decode_probs(LOGITS, top_p=top_p)
    assert sorted(np.flatnonzero(out)) == sorted(kept)
    order = sorted(range(5), key=lambda i: (-PI[i], i))
    mass, by_hand = 0.0, []
    for i in order:
        by_hand.append(i)
        mass += PI[i]
        if mass >= top_p - 1e-12:
            break
    assert sorted(by_hand) == sorted(kept)
    np.testing.assert_allclose(out[kept], PI[kept] / PI[kept].sum(), rtol=1e-14)


def test_ties_are_broken_toward_the_lower_index():
    np.testing.assert_array_equal(decode_probs([1.0, 1.0, 1.0], top_k=1), [1.0, 0.0, 0.0])
    np.testing.assert_allclose(decode_probs([0.0, 1.0, 1.0, 1.0], top_k=2), [0, 0.5, 0.5, 0])
    # the same two tied tokens in the other order: still the lower index wins
    z = LOGITS[[0, 1, 3, 2, 4]]
    assert decode_probs(z, top_k=2)[2] == pytest.approx(1 / 3)


def test_temperature_is_applied_before_truncation():
    out = decode_probs(LOGITS, temperature=0.5, top_k=2)
    pi = softmax(LOGITS, 0.5)
    np.testing.assert_allclose(out[[FOUR, FIVE]], pi[[FOUR, FIVE]] / pi[[FOUR, FIVE]].sum(), rtol=1e-14)
    assert out[CORRECT] == pytest.approx(4 / 20)  # 16 : 4


def test_top_k_then_top_p_compose():
    # top-k = 3 keeps {4, 5, 6}, renormalised (0.5, 0.25, 0.25); top-p = 0.5 of that is reached by 4 alone
    np.testing.assert_allclose(decode_probs(LOGITS, top_k=3, top_p=0.5), onehot(FOUR, 5))
    # top-p = 0.6 of the renormalised top-3 needs 4 and 5 (0.75); of the raw pi it would too (0.6)
    np.testing.assert_allclose(decode_probs(LOGITS, top_k=3, top_p=0.6), [0, 2 / 3, 1 / 3, 0, 0])
    # top-p asks for more mass than top-k leaves: top-k wins
    np.testing.assert_allclose(decode_probs(LOGITS, top_k=1, top_p=0.9), onehot(FOUR, 5))


def test_no_decoding_lifts_p5_above_the_best_temperature_without_truncation():
    """Without truncation, decoding only rescales: P(5) <= 0.2071 for every temperature on the grid."""
    ts = np.geomspace(1e-3, 1e3, 500)
    assert max(decode_probs(LOGITS, t)[CORRECT] for t in ts) <= p5_at(2.0) + 1e-15


# ---------------------------------------------------------------- entropy, cross-entropy, KL
def test_entropy_values():
    assert entropy(PI) == pytest.approx(-np.sum(PI * np.log(PI)), rel=1e-14)
    assert entropy([1.0, 0.0, 0.0]) == 0.0  # 0 ln 0 = 0
    assert math.copysign(1.0, entropy([0.0, 1.0])) == 1.0  # +0.0, never a printed "-0.0"
    assert entropy(np.full(5, 0.2)) == pytest.approx(math.log(5), rel=1e-14)
    assert entropy([0.5, 0.5, 0.0]) == pytest.approx(math.log(2))


def test_uniform_has_the_largest_entropy():
    rng = np.random.default_rng(1)
    for _ in range(100):
        p = rng.dirichlet(np.ones(5))
        assert entropy(p) <= math.log(5) + 1e-12


def test_cross_entropy_is_entropy_plus_kl():
    rng = np.random.default_rng(2)
    pairs = [(PI, np.full(5, 0.2)), (onehot(CORRECT, 5), PI), (PI, PI), ([0.5, 0.5, 0.0], [0.2, 0.3, 0.5])]
    pairs += [(rng.dirichlet(np.ones(6)), rng.dirichlet(np.ones(6))) for _ in range(50)]
    for p, q in pairs:
        assert cross_entropy(p, q) == pytest.approx(entropy(p) + kl_divergence(p, q), rel=1e-12, abs=1e-14)


def test_cross_entropy_of_a_one_hot_label_is_the_surprise_of_the_label():
    assert cross_entropy(onehot(CORRECT, 5), PI) == pytest.approx(-math.log(0.2), rel=1e-14)
    assert kl_divergence(onehot(CORRECT, 5), PI) == pytest.approx(-math.log(0.2), rel=1e-14)  # H(onehot) = 0


def test_kl_is_zero_iff_equal_and_positive_otherwise():
    assert kl_divergence(PI, PI) == 0.0
    rng = np.random.default_rng(3)
    for _ in range(50):
        p, q = rng.dirichlet(np.ones(4)), rng.dirichlet(np.ones(4))
        assert kl_divergence(p, q) > 0


def test_kl_is_not_symmetric():
    p, q = np.array([0.5, 0.5]), np.array([0.9, 0.1])
    forward, reverse = kl_divergence(p, q), kl_divergence(q, p)
    assert forward == pytest.approx(0.5 * math.log(0.5 / 0.9) + 0.5 * math.log(5), rel=1e-14)
    assert reverse == pytest.approx(0.9 * math.log(1.8) + 0.1 * math.log(0.2), rel=1e-14)
    assert forward - reverse > 0.1
    assert kl_divergence(onehot(CORRECT, 5), PI) != pytest.approx(kl_divergence(PI, onehot(CORRECT, 5)))


def test_kl_and_ce_are_infinite_where_q_misses_mass_of_p():
    assert kl_divergence([0.5, 0.5], [1.0, 0.0]) == math.inf
    assert cross_entropy([0.5, 0.5], [1.0, 0.0]) == math.inf
    assert kl_divergence(PI, onehot(CORRECT, 5)) == math.inf
    # q may be zero where p is zero
    assert kl_divergence([1.0, 0.0], [0.5, 0.5]) == pytest.approx(math.log(2))


def test_kl_is_finite_when_the_ratio_p_over_q_overflows():
    """q = 1e-320 (subnormal): p / q overflows a float, but p ln p - p ln q is finite."""
    q = np.array([1 - 1e-320, 1e-320])
    p = np.array([0.5, 0.5])
    expected = 0.5 * (math.log(0.5) - math.log1p(-1e-320)) + 0.5 * (math.log(0.5) - math.log(1e-320))
    with np.errstate(all="raise"):
        assert kl_divergence(p, q) == pytest.approx(expected, rel=1e-12)
    assert cross_entropy(p, q) == pytest.approx(entropy(p) + kl_divergence(p, q), rel=1e-12)


def test_kl_agrees_with_a_monte_carlo_estimate():
    """Independent route: KL(p || q) = E_{y ~ p}[ln p(y) - ln q(y)], 200k samples, within 4 standard errors."""
    rng = np.random.default_rng(4)
    q = np.full(5, 0.2)
    ys = rng.choice(5, size=200_000, p=PI)
    terms = np.log(PI[ys]) - np.log(q[ys])
    se = terms.std() / math.sqrt(terms.size)
    assert abs(terms.mean() - kl_divergence(PI, q)) < 4 * se


# ---------------------------------------------------------------- sequence_probability
def test_sequence_probabilities_of_the_two_strings():
    paths = two_token_paths()
    assert sequence_probability(paths["5"]) == pytest.approx(0.16, rel=1e-13)
    assert sequence_probability(paths["05"]) == pytest.approx(0.02, rel=1e-13)
    assert sequence_probability(paths["5"]) / sequence_probability(paths["05"]) == pytest.approx(8.0)


def test_log_probabilities_add():
    for steps in two_token_paths().values():
        assert math.log(sequence_probability(steps)) == pytest.approx(sum(math.log(s) for s in steps), rel=1e-13)


def test_sequence_probability_edge_values():
    assert sequence_probability([1.0]) == 1.0
    assert sequence_probability([0.5, 0.0, 0.9]) == 0.0
    assert isinstance(sequence_probability(np.array([0.5, 0.5])), float)


def _two_token_tree():
    """The whole two-token tree of the extended toy, as {string: per-step conditionals}.

    First token ~ pi. After "5": EOS 0.8, else one more token drawn uniformly from the vocabulary,
    then stop. After "0": "5" with 0.2 (then stop), else EOS. After any other first token: EOS.
    Only the "5" and "05" branches are fixed by the text; the rest just has to be a valid tree.
    """
    pi = softmax(LOGITS)
    leaves = {}
    for i, tok in enumerate(VOCAB):
        if tok == "5":
            leaves["5"] = [pi[i], toy.P_EOS_AFTER_5]
            for tok2 in VOCAB:
                leaves["5" + tok2] = [pi[i], (1 - toy.P_EOS_AFTER_5) / len(VOCAB), 1.0]
        elif tok == "0":
            leaves["05"] = [pi[i], toy.P_5_AFTER_0, toy.P_EOS_AFTER_05]
            leaves["0"] = [pi[i], 1 - toy.P_5_AFTER_0]
        else:
            leaves[tok] = [pi[i], 1.0]
    return leaves


def test_enumerating_the_two_token_tree_sums_to_one_and_matches_the_paths():
    leaves = _two_token_tree()
    assert sum(sequence_probability(s) for s in leaves.values()) == pytest.approx(1.0, abs=1e-14)
    paths = two_token_paths()
    assert sequence_probability(leaves["5"]) == pytest.approx(sequence_probability(paths["5"]), rel=1e-14)
    assert sequence_probability(leaves["05"]) == pytest.approx(sequence_probability(paths["05"]), rel=1e-14)


def test_monte_carlo_on_the_tree_agrees_with_enumeration():
    """Sample whole strings step by step; the frequency of "05" is within 4 standard errors of 0.02."""
    rng = np.random.default_rng(5)
    n = 100_000
    first = rng.choice(5, size=n, p=softmax(LOGITS))
    is_0 = first == VOCAB.index("0")
    continues = rng.random(n) < toy.P_5_AFTER_0
    freq_05 = np.mean(is_0 & continues)
    freq_5 = np.mean((first == CORRECT) & (rng.random(n) < toy.P_EOS_AFTER_5))
    for freq, exact in ((freq_05, 0.02), (freq_5, 0.16)):
        assert abs(freq - exact) < 4 * math.sqrt(exact * (1 - exact) / n)


# ---------------------------------------------------------------- onehot
def test_onehot():
    np.testing.assert_array_equal(onehot(2, 5), [0, 0, 1, 0, 0])
    np.testing.assert_array_equal(onehot(np.int64(0), 1), [1.0])


# ---------------------------------------------------------------- bad inputs
BAD_LOGITS = [[], [1.0, np.nan], [np.inf, 0.0], [-np.inf, 0.0], "abc", ["1", "2"], [[1.0], [1.0, 2.0]],
              [10 ** 400, 0], 3.0, [1 + 2j, 0]]


@pytest.mark.parametrize("bad", BAD_LOGITS)
def test_bad_logits_raise(bad):
    for f in (softmax, log_softmax, decode_probs):
        with pytest.raises(ValueError, match="logits"):
            f(bad)


@pytest.mark.parametrize("bad", [0, 0.0, -1.0, -1e-300, np.nan, np.inf, -np.inf, "2", None, True, 10 ** 400, [2.0]])
def test_bad_temperature_raises(bad):
    for f in (softmax, log_softmax, decode_probs):
        with pytest.raises(ValueError, match="temperature"):
            f(LOGITS, bad)


@pytest.mark.parametrize("bad", [0, -1, 1.5, 2.0, "2", True, np.nan])
def test_bad_top_k_raises(bad):
    with pytest.raises(ValueError, match="top_k"):
        decode_probs(LOGITS, top_k=bad)


@pytest.mark.parametrize("bad", [0, 0.0, -0.1, 1.0000001, 2, np.nan, np.inf, "0.5", True])
def test_bad_top_p_raises(bad):
    with pytest.raises(ValueError, match="top_p"):
        decode_probs(LOGITS, top_p=bad)


def test_decode_probs_needs_one_distribution():
    with pytest.raises(ValueError, match="logits"):
        decode_probs([LOGITS, LOGITS], top_k=1)


BAD_P = [[0.5, 0.6], [1.1, -0.1], [0.5, 0.5 - 2e-9], [], [np.nan, 1.0], [np.inf, 0.0], ["0.5", "0.5"],
         [[0.5, 0.5], [0.5, 0.5]]]


@pytest.mark.parametrize("bad", BAD_P)
def test_bad_probabilities_raise(bad):
    with pytest.raises(ValueError, match="p"):
        entropy(bad)
    with pytest.raises(ValueError, match=r"\bp\b"):
        cross_entropy(bad, [0.5, 0.5])
    with pytest.raises(ValueError, match=r"\bq\b"):
        kl_divergence([0.5, 0.5], bad)


def test_sums_within_tolerance_are_accepted():
    assert entropy([0.5, 0.5 + 5e-10]) == pytest.approx(math.log(2))


def test_mismatched_shapes_raise():
    with pytest.raises(ValueError, match="p and q"):
        cross_entropy([0.5, 0.5], [0.2, 0.3, 0.5])
    with pytest.raises(ValueError, match="p and q"):
        kl_divergence(PI, [0.5, 0.5])


@pytest.mark.parametrize("bad", [[], [1.1], [-0.1, 0.5], [np.nan], [np.inf], [[0.5], [0.5]], ["0.5"], 0.5, None])
def test_bad_step_probs_raise(bad):
    with pytest.raises(ValueError, match="step_probs"):
        sequence_probability(bad)


@pytest.mark.parametrize("index, size, name", [(5, 5, "index"), (-1, 5, "index"), (1.0, 5, "index"),
                                               (True, 5, "index"), (0, 0, "size"), (0, 2.0, "size")])
def test_bad_onehot_raises(index, size, name):
    with pytest.raises(ValueError, match=name):
        onehot(index, size)


def test_decode_probs_is_what_hugging_face_samples_from():
    """Independent route: transformers' own warpers (temperature, top-k, top-p, in generate's order),
    on random logits without ties, every combination of the three."""
    torch = pytest.importorskip("torch")
    from transformers.generation.logits_process import (TemperatureLogitsWarper, TopKLogitsWarper,
                                                        TopPLogitsWarper)
    rng = np.random.default_rng(0)
    for _ in range(200):
        z = rng.normal(scale=2.0, size=int(rng.integers(3, 9)))
        T, k, p = float(rng.uniform(0.3, 3.0)), int(rng.integers(1, z.size + 1)), float(rng.uniform(0.05, 0.99))
        scores = torch.tensor(z, dtype=torch.float64)[None]
        for top_k, top_p in ((None, None), (k, None), (None, p), (k, p)):
            warped = TemperatureLogitsWarper(T)(None, scores.clone())
            if top_k is not None:
                warped = TopKLogitsWarper(top_k)(None, warped)
            if top_p is not None:
                warped = TopPLogitsWarper(top_p)(None, warped)
            expected = torch.softmax(warped, dim=-1)[0].numpy()
            np.testing.assert_allclose(decode_probs(z, T, top_k=top_k, top_p=top_p), expected, atol=1e-12)
