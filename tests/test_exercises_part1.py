"""The checks of chapters 1-5: the library passes; wrong answers written as a student would write them get
the diagnosis of their mistake; each by-hand number is accepted (as a decimal, a fraction or text), its
listed mistakes get their messages, any other number the generic one, and text that is no number the
malformed one."""
import math

import numpy as np
import pytest

from rl4llm import (CORRECT, LOGITS, cross_entropy, decode_probs, kl_divergence, sequence_probability,
                    sft_gradient, softmax)
from rl4llm.exercises import EXERCISES, FUNCTIONS, SPECS, NumericExercise, check
from rl4llm.exercises._core import MALFORMED

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")   # the naive wrong answers overflow

PART1 = {name: spec for name, spec in SPECS.items() if spec.chapter <= 5}


def test_part1_has_a_function_and_a_by_hand_check_per_chapter():
    assert {FUNCTIONS[n] for n, s in PART1.items() if not isinstance(s, NumericExercise)} == {
        "softmax", "decode_probs", "sequence_probability", "sft_gradient", "kl_divergence"}
    assert {n for n, s in PART1.items() if isinstance(s, NumericExercise)} == {
        "ex-ch01-cold", "ex-ch02-nucleus", "ex-ch03-talkative", "ex-ch04-noisy-labels", "ex-ch05-forward-kl"}
    assert {EXERCISES[n] for n in PART1} == {1, 2, 3, 4, 5}
    assert [EXERCISES[n] for n in ("softmax", "decode_probs", "sequence_probability", "sft_gradient",
                                   "kl_divergence")] == [1, 2, 3, 4, 5]


@pytest.mark.parametrize("exercise, reference", [
    ("softmax", softmax), ("decode_probs", decode_probs), ("sequence_probability", sequence_probability),
    ("sft_gradient", sft_gradient), ("kl_divergence", kl_divergence)])
def test_the_library_function_passes(exercise, reference):
    assert check(exercise, reference).startswith("Correct:")


# ----------------------------------------------------------------------------- wrong answers, as written
def naive_softmax(logits, temperature=1.0):
    e = np.exp(np.asarray(logits) / temperature)
    return e / e.sum(axis=-1, keepdims=True)


def softmax_times_t(logits, temperature=1.0):
    z = np.asarray(logits) * temperature
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def softmax_flat(logits, temperature=1.0):
    z = np.asarray(logits) / temperature
    e = np.exp(z - z.max())
    return e / e.sum()


def softmax_columns(logits, temperature=1.0):
    z = np.asarray(logits) / temperature
    e = np.exp(z - z.max(axis=0))
    return e / e.sum(axis=0)


def softmax_global_max(logits, temperature=1.0):
    z = np.asarray(logits) / temperature
    e = np.exp(z - z.max())
    return e / e.sum(axis=-1, keepdims=True)


def _nucleus(logits, temperature=1.0, top_k=None, top_p=None, *, reverse_sort=False, strict=False,
             renormalise=True, heat_after=False):
    z = np.asarray(logits, dtype=float)
    pi = np.exp(z / (1.0 if heat_after else temperature))
    pi /= pi.sum()
    order = (np.argsort(pi, kind="stable")[::-1] if reverse_sort == "stable" else np.argsort(pi)[::-1]
             if reverse_sort else np.argsort(-pi, kind="stable"))
    keep = np.zeros(len(pi), dtype=bool)
    n = len(pi) if top_k is None else top_k
    if top_p is not None:
        cum = np.cumsum(pi[order])
        n = min(n, int(np.sum(cum < top_p)) if strict else int(np.searchsorted(cum, top_p)) + 1)
    keep[order[:n]] = True
    if heat_after:
        pi = np.exp(z / temperature)
        pi /= pi.sum()
    out = np.where(keep, pi, 0.0)
    return out / out.sum() if renormalise else out


def kl_swapped(p, q):                       # the reverse KL, written with care for zeros
    p, q = np.asarray(p), np.asarray(q)
    m = q > 0
    if np.any(p[m] == 0):
        return math.inf
    return float(np.sum(q[m] * np.log(q[m] / p[m])))


def kl_swapped_naive(p, q):
    with np.errstate(all="ignore"):
        return float(np.sum(q * np.log(q / p)))


def kl_naive(p, q):
    with np.errstate(all="ignore"):
        return float(np.sum(np.asarray(p) * np.log(np.asarray(p) / np.asarray(q))))


def kl_bits(p, q):
    p, q = np.asarray(p), np.asarray(q)
    m = p > 0
    if np.any(q[m] == 0):
        return math.inf
    return float(np.sum(p[m] * np.log2(p[m] / q[m])))


def kl_no_infinity(p, q):
    p, q = np.asarray(p), np.asarray(q)
    m = (p > 0) & (q > 0)
    return float(np.sum(p[m] * np.log(p[m] / q[m])))


def _decoder(**slip):
    """A student's decode_probs (the library's signature) with one slip of ``_nucleus``."""
    return lambda z, t=1.0, top_k=None, top_p=None: _nucleus(z, t, top_k, top_p, **slip)


@pytest.mark.parametrize("exercise, wrong, says", [
    ("softmax", naive_softmax, ["max is not subtracted", "nan"]),
    ("softmax", softmax_times_t, ["multiplied by the temperature"]),
    ("softmax", lambda z, t=1.0: softmax(z), ["temperature is ignored"]),
    ("softmax", softmax_flat, ["whole array", "each row"]),
    ("softmax", softmax_columns, ["wrong axis"]),
    ("softmax", softmax_global_max, ["not per row"]),
    ("decode_probs", _decoder(reverse_sort=True), ["ties", "lower index", "reverses"]),
    ("decode_probs", _decoder(reverse_sort="stable"), ["ties", "lower index", "reverses"]),
    ("decode_probs", _decoder(strict=True), ["crosses top_p"]),
    ("decode_probs", _decoder(renormalise=False), ["not renormalised"]),
    ("decode_probs", _decoder(heat_after=True), ["before the temperature"]),
    ("decode_probs", lambda z, t=1.0, top_k=None, top_p=None: _nucleus(z, 1.0, top_k, top_p), ["temperature is ignored"]),
    ("sequence_probability", lambda steps: sum(steps), ["added", "product"]),
    ("sequence_probability", lambda steps: float(np.prod(steps[:-1])), ["EOS"]),
    ("sequence_probability", lambda steps: float(np.prod(steps) ** (1 / len(steps))), ["geometric mean"]),
    ("sequence_probability", lambda steps: float(np.sum(np.log(steps))), ["ln P(y)"]),
    ("sft_gradient", lambda z, t: np.eye(len(z))[t] - softmax(z), ["sign is flipped"]),
    ("sft_gradient", lambda z, t: -np.eye(len(z))[t] / softmax(z)[t], ["derivative in the probabilities"]),
    ("sft_gradient", lambda z, t: np.where(np.arange(len(z)) == t, softmax(z) - 1, 0.0), ["only the target"]),
    ("sft_gradient", lambda z, t: np.asarray(z) - np.eye(len(z))[t], ["logits are used"]),
    ("kl_divergence", kl_swapped, ["swapped", "reverse KL"]),
    ("kl_divergence", kl_swapped_naive, ["swapped", "reverse KL"]),
    ("kl_divergence", kl_bits, ["base 2"]),
    ("kl_divergence", kl_naive, ["0 × ln 0"]),
    ("kl_divergence", kl_no_infinity, ["infinite"]),
    ("kl_divergence", lambda p, q: -kl_divergence(p, q), ["sign is flipped"]),
])
def test_typical_mistakes_get_their_diagnosis(exercise, wrong, says):
    message = check(exercise, wrong)
    assert message.startswith("Not yet:"), message
    for words in says:
        assert words in message, message


def test_an_unstable_sort_passes_or_is_named():
    """np.argsort's default sort promises no order among ties: where it keeps the vocabulary order (as on
    most machines for short vectors) the answer passes, elsewhere the check names the unstable sort."""
    def default_sort(logits, temperature=1.0, top_k=None, top_p=None):
        pi = softmax(logits, temperature)
        order = np.argsort(-pi)
        n = len(pi) if top_k is None else top_k
        if top_p is not None:
            n = min(n, int(np.searchsorted(np.cumsum(pi[order]), top_p)) + 1)
        out = np.zeros_like(pi)
        out[order[:n]] = pi[order[:n]]
        return out / out.sum()
    message = check("decode_probs", default_sort)
    assert message.startswith("Correct:") or "unstable sort" in message, message


def test_forward_and_reverse_kl_are_told_apart():
    """The issue's example: the reverse KL is named as such, in the function check and the by-hand one."""
    assert "reverse KL" in check("kl_divergence", lambda p, q: kl_divergence(q, p))
    pi, data = softmax(LOGITS), np.array([0.05, 0.05, 0.8, 0.05, 0.05])
    assert "reverse KL" in check("ex-ch05-forward-kl", round(kl_divergence(pi, data), 4))
    assert check("ex-ch05-forward-kl", round(kl_divergence(data, pi), 4)).startswith("Correct:")


def test_other_wrong_functions_get_the_first_differing_case_or_the_crash():
    message = check("softmax", lambda z, t=1.0: np.exp(np.asarray(z, float)) + 1)
    assert message.startswith("Not yet: on arguments") and "the reference gives" in message
    assert "raised ZeroDivisionError" in check("decode_probs", lambda *a: 1 / 0)
    assert "should be a function" in check("kl_divergence", 0.5)
    assert "times 2" in check("sequence_probability", lambda s: 2 * sequence_probability(s))


# ----------------------------------------------------------------------------- by-hand numbers
BY_HAND = {                      # id: (answers to accept, a wrong number no mistake explains)
    "ex-ch01-cold": (["8/82", "4/41", 0.0976, "0.0976"], 0.5),
    "ex-ch02-nucleus": (["1/6", "4/24", 0.1667, "0.1667"], 0.3),
    "ex-ch03-talkative": (["1/4", 0.25, "0.25", "25e-2"], 0.5),
    "ex-ch04-noisy-labels": ([1.2629, "1.2629", f"{cross_entropy([0, .5, .5, 0, 0], softmax(LOGITS)):.6f}"], 1.0),
    "ex-ch05-forward-kl": ([0.8664, "0.8664", f"{1.25 * math.log(2):.5f}"], 0.5),
}


@pytest.mark.parametrize("exercise", sorted(BY_HAND))
def test_by_hand_answers(exercise):
    spec = SPECS[exercise]
    accepted, other = BY_HAND[exercise]
    for answer in accepted:
        assert check(exercise, answer).startswith("Correct:"), answer
    assert len(spec.mistakes) >= 2
    for wrong, explanation in spec.mistakes:
        assert check(exercise, wrong) == f"Not yet: {explanation}."
        assert check(exercise, f"{wrong:.4f}") == f"Not yet: {explanation}.", wrong
    assert check(exercise, other) == spec.wrong_message
    assert check(exercise, "abc") == MALFORMED


def test_by_hand_values_are_the_library_s():
    pi = softmax(LOGITS)
    assert SPECS["ex-ch01-cold"].value == pytest.approx(8 / 82)
    assert SPECS["ex-ch02-nucleus"].value == pytest.approx(1 / 6)
    assert SPECS["ex-ch03-talkative"].value == pytest.approx(0.25)
    assert SPECS["ex-ch04-noisy-labels"].value == pytest.approx(0.5 * (-math.log(0.4) - math.log(0.2)))
    assert SPECS["ex-ch05-forward-kl"].value == pytest.approx(1.25 * math.log(2))
    assert kl_divergence(pi, [0.05, 0.05, 0.8, 0.05, 0.05]) == pytest.approx(1.4 * math.log(2))
    assert decode_probs(LOGITS, 0.5, top_p=0.9)[CORRECT] == pytest.approx(1 / 6)


def test_the_decode_cases_stay_clear_of_rounding():
    """Each case cuts with top-k or with top-p, never both; no running mass of a top-p case lies near
    top_p, and no case's top token alone reaches top_p, so every way of writing the nucleus rule agrees
    on them (and each mistake is told apart)."""
    for call in SPECS["decode_probs"].calls():
        z, t, k, p = (*call.args, *[None] * (4 - len(call.args)))
        t, k, p = 1.0 if t is None else t, call.kwargs.get("top_k", k), call.kwargs.get("top_p", p)
        k, p = len(z) if k is None else k, 1.0 if p is None else p
        assert k == len(z) or p == 1.0
        if p < 1.0:
            pi = np.sort(softmax(z, t))[::-1]
            assert np.min(np.abs(np.cumsum(pi) - p)) > 1e-3 and pi[0] < p
