"""Checked exercises of Part I (chapters 1-5): from softmax to SFT.

By hand (one number each, on the toy): ``ex-ch01-cold``, ``ex-ch02-nucleus``, ``ex-ch03-talkative``,
``ex-ch04-noisy-labels``, ``ex-ch05-forward-kl``. Coding (the library function of the same name):
``softmax`` (1), ``decode_probs`` (2), ``sequence_probability`` (3), ``sft_gradient`` (4),
``kl_divergence`` (5).
"""
from __future__ import annotations

import math

import numpy as np

from ..math.distributions import cross_entropy, decode_probs, entropy, kl_divergence, sequence_probability, softmax
from ..math.gradients import sft_gradient
from ..toy.five_token import CORRECT, LOGITS, VOCAB
from ..math.two_step import two_spellings
from ._core import Call, FunctionExercise, NumericExercise, logits_and_token, toy_and_random

_PI = softmax(LOGITS)
_LN2 = math.log(2.0)


def _ignoring_float_warnings(function):
    """``function`` with numpy's overflow, 0/0 and log(0) warnings silenced (a mistake's replica
    must give the student's nan or inf quietly)."""
    def quiet(*args):
        with np.errstate(all="ignore"):
            return function(*args)
    return quiet


# ----------------------------------------------------------------------------- chapter 1: softmax
def _softmax_cases() -> list[tuple]:
    """The toy, random logits at the default and at several temperatures, a batch of rows, and huge logits (near +1000,
    and a batch with one row near +800 and one near -800) that the naive formula turns into nan."""
    rng = np.random.default_rng(0)
    return [(LOGITS, 1.0),
            (rng.normal(size=4),),                 # the default temperature, 1
            (rng.normal(size=6), 0.5),
            (rng.normal(size=4), 3.0),
            (rng.normal(size=(3, 5)), 2.0),
            (rng.normal(size=5) * 3 + 1000.0, 0.7),
            (rng.normal(size=(2, 4)) + np.array([[800.0], [-800.0]]), 1.0)]


def _softmax_variant(z, t=1.0, *, shift="row", temperature="divide", axis=-1):
    """softmax with its typical slips: ``shift`` "row" (each row's max subtracted), "none" or "global"
    (the whole array's max); ``temperature`` "divide", "multiply" or "ignore"; ``axis`` the axis the
    max and the sum run over (-1, 0, or None for the whole array)."""
    z = np.asarray(z, float)
    z = {"divide": z / t, "multiply": z * t, "ignore": z}[temperature]
    keep = axis is not None
    with np.errstate(all="ignore"):
        if shift != "none":
            z = z - (z.max() if shift == "global" else z.max(axis=axis, keepdims=keep))
        weights = np.exp(z)
        return weights / weights.sum(axis=axis, keepdims=keep)


#: Each slip of a softmax: (its variant's settings, what went wrong).
_SOFTMAX_SLIPS = (
    ({"shift": "none"}, "the max is not subtracted: exp overflows to inf (or underflows to 0) on logits near "
                        "±1000 and the ratio is nan; subtract the largest z / T of each row first (softmax does "
                        "not change)"),
    ({"temperature": "multiply"}, "the logits are multiplied by the temperature instead of divided: pi is "
                                  "proportional to exp(z / T), so T < 1 sharpens and T > 1 flattens"),
    ({"temperature": "ignore"}, "the temperature is ignored: divide the logits by T before the exponential"),
    ({"axis": 0}, "a 2-D input is normalised over the wrong axis (axis 0, down the columns): each row is one "
                  "distribution, so take the max and the sum over the last axis, with keepdims=True"),
    ({"axis": None}, "a 2-D input is normalised over the whole array, not row by row: each row is one "
                     "distribution, so take the max and the sum over the last axis, with keepdims=True"),
    ({"shift": "global"}, "the max is taken over the whole array, not per row: a row far below the overall "
                          "max underflows to 0 / 0 = nan; subtract each row's own max (axis=-1, keepdims=True)"),
)


def _softmax_mistakes() -> tuple[tuple[str, object], ...]:
    """Every slip alone, then every two slips at once (named together)."""
    def variant(settings):
        return lambda z, t=1.0: _softmax_variant(z, t, **settings)
    single = tuple((said, variant(settings)) for settings, said in _SOFTMAX_SLIPS)
    pairs = tuple((f"two slips at once: {said_1}; and {said_2}", variant({**one, **two}))
                  for k, (one, said_1) in enumerate(_SOFTMAX_SLIPS) for two, said_2 in _SOFTMAX_SLIPS[k + 1:]
                  if not one.keys() & two.keys() and not ("axis" in one and "shift" in two))
    return single + pairs


def _cold_mistakes() -> tuple[tuple[float, str], ...]:
    return (
        (float(softmax(LOGITS * (1 / 3))[CORRECT]), "the logits were multiplied by T = 1/3 instead of divided: "
         "z / T triples them (each weight e^z is cubed), which sharpens; multiplying flattens"),
        (float(softmax(LOGITS, 0.5)[CORRECT]), "that is T = 1/2 (each weight squared, 4/26); at T = 1/3 each "
         "weight is cubed"),
        (float(_PI[CORRECT] ** 3), "π(5)³ = 0.008 is not normalised: cube every probability (or weight), "
         "then divide by their sum"),
        (float(_PI[CORRECT]), "that is π(5) at T = 1; the temperature changes it"),
        (float(softmax(LOGITS, 1 / 3)[VOCAB.index("4")]),
         "that is P(4) = 64/82, the answer the cold temperature favours; P(5) is the weight of 5, 2³ = 8, over "
         "the same sum 82"),
    )


# ----------------------------------------------------------------------------- chapter 2: decode_probs
#: How a sampler may sort: the library's rule (a stable sort of -pi: ties to the lower index), and the
#: usual slips, replicated exactly (numpy's default sort promises no order among equal values).
_ORDERS = {"stable": lambda pi: np.argsort(-pi, kind="stable"),
           "reversed": lambda pi: np.argsort(pi)[::-1],
           "reversed stable": lambda pi: np.argsort(pi, kind="stable")[::-1],
           "unstable": lambda pi: np.argsort(-pi)}


def _sampler(z, t, k, p, *, order="stable", nucleus="reach", renormalise=True):
    """decode_probs with one rule changed (for the mistakes): ``order`` names how the tokens are
    sorted (``_ORDERS``); ``nucleus="below"`` keeps only the tokens whose running mass stays below top_p."""
    pi = softmax(z, t)
    order = _ORDERS[order](pi)
    n_keep = pi.size if k is None else min(k, pi.size)
    if p is not None:
        mass = np.cumsum(pi[order[:n_keep]])
        reach = mass - pi[order[:n_keep]] < p if nucleus == "reach" else mass < p
        n_keep = int(reach.sum())
    kept = np.zeros_like(pi)
    kept[order[:n_keep]] = pi[order[:n_keep]]
    if not renormalise:
        return kept
    with np.errstate(invalid="ignore"):
        return kept / kept.sum()


def _truncate_then_heat(z, t=1.0, top_k=None, top_p=None):
    keep = decode_probs(z, 1.0, top_k, top_p) > 0
    kept = np.where(keep, softmax(z, t), 0.0)
    return kept / kept.sum()


def _decode_cases() -> list[tuple]:
    """The toy (top-k = 2 and top-p = 0.5 meet the tie of 5 and 6; T = 1/2 changes top-p's set), ties
    among random tokens, and random logits with top-k or top-p. Each case cuts with one of the two only
    (libraries differ on whether top-p measures the mass before or after top-k's renormalisation); the
    other is given as "no cut", top_k = the vocabulary's size or top_p = 1 (not None, which the verdict's
    display of a case cannot format). No running mass lies within 1e-3 of a top_p below 1, so a correct
    function cannot fail on rounding. Last, the defaults: top_k or top_p given by name, or neither."""
    rng = np.random.default_rng(2)
    cases = [(LOGITS, 1.0, 2, None),
             (LOGITS, 1.0, None, 0.5),
             (LOGITS, 0.5, None, 0.7),
             (np.array([0.5, 1.0, 0.0, 1.0, 0.5, 1.0, -1.0]), 1.0, 2, None),
             (np.array([0.0, 1.0, 1.0, 0.5, 1.0, -0.5]), 1.0, None, 0.4),
             (rng.normal(size=6), 1.3, 3, None),
             (rng.normal(size=7), 0.6, None, 0.8),
             (rng.normal(size=8), 2.0, None, 0.6)]
    cases = [(z, t, len(z) if k is None else k, 1.0 if p is None else p) for z, t, k, p in cases]
    # then the defaults: top_k and top_p given by name, one at a time, and neither (no cut)
    return cases + [Call((LOGITS,), {"top_k": 2}), Call((rng.normal(size=6), 1.2), {"top_p": 0.7}),
                    Call((rng.normal(size=5),)), Call((rng.normal(size=5), 1.5))]


_REVERSED = ("ties are not broken toward the lower index: sorting pi and reversing (np.argsort(pi)[::-1]) "
             "reverses the order of equal values too. Sort -pi with a stable sort, np.argsort(-pi, "
             "kind='stable'), so that the lower index wins, as the library does (on the toy, top-k = 2 then "
             "keeps 5, not 6)")
_DECODE_MISTAKES = (
    (_REVERSED, lambda z, t=1.0, top_k=None, top_p=None: _sampler(z, t, top_k, top_p, order="reversed")),
    (_REVERSED, lambda z, t=1.0, top_k=None, top_p=None: _sampler(z, t, top_k, top_p, order="reversed stable")),
    ("ties are broken by an unstable sort: np.argsort's default does not promise to keep equal values in "
     "index order; use np.argsort(-pi, kind='stable'), so that the lower index wins, as the library does",
     lambda z, t=1.0, top_k=None, top_p=None: _sampler(z, t, top_k, top_p, order="unstable")),
    ("top-p drops the token whose mass crosses top_p: the nucleus is the smallest prefix whose mass reaches "
     "top_p, so keep a token while the mass before it is still below top_p",
     lambda z, t=1.0, top_k=None, top_p=None: _sampler(z, t, top_k, top_p, nucleus="below")),
    ("the kept probabilities are not renormalised: divide them by their sum, so that the sampler's "
     "distribution sums to 1", lambda z, t=1.0, top_k=None, top_p=None: _sampler(z, t, top_k, top_p, renormalise=False)),
    ("the truncation is applied before the temperature: divide the logits by T first, then choose the "
     "tokens to keep from the tempered distribution (with top-p, T changes which tokens survive)",
     _truncate_then_heat),
    ("the temperature is ignored: take the softmax of logits / T before truncating",
     lambda z, t=1.0, top_k=None, top_p=None: decode_probs(z, 1.0, top_k, top_p)),
)


def _nucleus_mistakes() -> tuple[tuple[float, str], ...]:
    return (
        (float(_truncate_then_heat(LOGITS, 0.5, None, 0.9)[CORRECT]), "that is top-p applied before the "
         "temperature (at T = 1 it keeps {0, 4, 5, 6}, then heating gives 4/25): the sampler divides by T "
         "first, and at T = 1/2 the prefix {4, 5, 6} already holds 24/26 ≥ 0.9"),
        (float(_sampler(LOGITS, 0.5, None, 0.9, renormalise=False)[CORRECT]), "that is π_T(5) = 4/26 before "
         "the cut: renormalise over the kept tokens (divide by their mass)"),
        (float(_sampler(LOGITS, 0.5, None, 0.9, nucleus="below")[CORRECT]), "0.2 is P(5) over {4, 5} only "
         "(or with no decoding at all): top-p keeps the smallest prefix whose mass reaches 0.9, so 6, whose "
         "mass takes the running total past 0.9, stays in"),
        (float(decode_probs(LOGITS, 1.0, top_p=0.9)[CORRECT]), "the temperature is left out: that is top-p "
         "= 0.9 at T = 1; square the weights (T = 1/2) before sorting and cutting"),
    )


# ----------------------------------------------------------------------------- chapter 3: sequence_probability
def _steps(rng):
    if rng is None:
        return ([0.2, 0.8],)                        # "5": pi(5), then P(EOS | 5)
    return (list(rng.uniform(0.05, 1.0, size=int(rng.integers(2, 7)))),)


_SEQUENCE_MISTAKES = (
    ("the factors are added: a string's probability is the product of its conditionals (their logs add, "
     "the probabilities multiply)", lambda s: float(np.sum(s))),
    ("the last factor, the EOS step, is left out: stopping is part of the string, so P(EOS | ...) is a "
     "factor too", lambda s: float(np.prod(s[:-1]))),
    ("that is the geometric mean exp(mean ln p), a per-token (length-normalised) score: the string's "
     "probability is the product, exp(sum ln p)", lambda s: float(np.exp(np.mean(np.log(s))))),
    ("that is ln P(y), the sum of the log-factors: return its exp, the probability",
     lambda s: float(np.sum(np.log(s)))),
)


def _talkative_mistakes() -> tuple[tuple[float, str], ...]:
    p5 = sequence_probability([0.2, 0.8])
    p05 = sequence_probability([0.1, 0.9, 1.0])
    return (
        (0.2 + p05, 'the EOS factor of "5" is missing: "5" is an answer only if the model stops after it, '
                    'so P("5") = 0.2 × 0.8'),
        (p5, '"05" is missing: both spellings are correct, so add P("05") = 0.1 × 0.9 × 1'),
        (float(two_spellings(0.1, 0.2)["correct"]), "that is the toy's total, with P(5 | 0) = 0.2: redo "
                                                    'P("05") with 0.9'),
        (p5 + 0.9, 'P("05") is not P(5 | 0): multiply by its first factor π(0) = 0.1'),
    )


# ----------------------------------------------------------------------------- chapter 4: sft_gradient
_NOISY = np.array([0.0, 0.5, 0.5, 0.0, 0.0])      # half the labels say 4, half say 5


def _noisy_label_mistakes() -> tuple[tuple[float, str], ...]:
    return (
        (kl_divergence(_NOISY, _PI), "that is KL(p || π): the cross-entropy adds the data's own entropy, "
                                      "CE = H(p) + KL(p || π)"),
        (entropy(_NOISY), "that is the entropy H(p) = ln 2 of the data: the cross-entropy scores the data's "
                          "labels with the model's surprise, -ln π"),
        (cross_entropy(_NOISY, _PI) / _LN2, "that is in bits (log base 2): the book uses natural logs"),
        (float(-np.log(_NOISY @ _PI)), "that is the surprise of the average probability, -ln(0.5 × 0.4 + "
                                       "0.5 × 0.2): the cross-entropy averages the surprises, "
                                       "0.5 (-ln 0.4) + 0.5 (-ln 0.2)"),
        (float(-np.log(_PI[_NOISY > 0]).sum()),
         "that adds the two surprises, -ln 0.4 - ln 0.2: the cross-entropy weights each by its label's share "
         "p = 0.5, so it is their average, 0.5 (-ln 0.4) + 0.5 (-ln 0.2)"),
    )


_SFT_GRADIENT_MISTAKES = (
    ("the sign is flipped: that is onehot(target) - pi, the direction that lowers the loss fastest "
     "(the score, chapter 7), not the gradient of the loss", lambda z, t: -sft_gradient(z, t)),
    ("the onehot(target) term is missing: the gradient of -ln pi(target) is pi - onehot(target)",
     lambda z, t: softmax(z)),
    ("that is the derivative in the probabilities, -1 / pi(target) at the target: the loss's gradient in "
     "the logits goes through the softmax and is pi - onehot(target)",
     lambda z, t: -np.eye(len(z))[t] / softmax(z)[t]),
    ("only the target's entry pi(target) - 1 is there: the softmax couples all the logits, so every other "
     "entry is pi_i (raising any other logit lowers pi(target))",
     lambda z, t: np.eye(len(z))[t] * (softmax(z)[t] - 1)),
    ("the logits are used in place of the probabilities: the gradient is softmax(z) - onehot(target)",
     lambda z, t: np.asarray(z, float) - np.eye(len(z))[t]),
)


# ----------------------------------------------------------------------------- chapter 5: kl_divergence
_DATA = np.array([0.05, 0.05, 0.8, 0.05, 0.05])   # chapter 5's by-hand data: every p / pi a power of 2


def _forward_kl_mistakes() -> tuple[tuple[float, str], ...]:
    return (
        (kl_divergence(_PI, _DATA), "that is the reverse KL(π || p), with the arguments swapped: SFT "
                                    "minimises the forward KL(p || π) = Σ p ln(p / π), weighted by the data p"),
        (kl_divergence(_DATA, _PI) / _LN2, "that is in bits (log base 2): the book's KL uses natural logs, "
                                           "so multiply by ln 2"),
        (kl_divergence(_PI, _DATA) / _LN2, "that is the reverse KL(π || p), and in bits: put the data p "
                                           "first, and use natural logs"),
        (cross_entropy(_DATA, _PI), "that is the cross-entropy CE(p, π) = H(p) + KL(p || π): subtract the "
                                    "data's entropy H(p)"),
        (-kl_divergence(_DATA, _PI), "the sign is flipped: that is Σ p ln(π / p); the KL is Σ p ln(p / π), "
                                     "never negative (ln(p / π) = +2 ln 2 at 5, where the data put 0.8)"),
        (kl_divergence(_DATA, _PI) / 10, "the decimal point slipped: the KL is 1.25 ln 2 ≈ 0.8664 nats"),
        (0.09, "0.09 is not the KL to four decimals: 1.25 ln 2 ≈ 0.8664 nats (0.0866 has the decimal point "
               "moved); enter four decimals"),
    )


def _distribution_pair(rng):
    if rng is None:                                # the label 5 against the toy's pi
        return np.eye(5)[CORRECT], _PI
    K = int(rng.integers(3, 7))
    return rng.dirichlet(np.ones(K)), rng.dirichlet(np.ones(K))


def _kl_cases() -> list[tuple]:
    """The toy (a one-hot label: zeros in p), chapter 5's data against the toy's pi (H(p) > 0: catches
    the cross-entropy returned for the KL, equal on a one-hot p), random pairs, then the edges: p with zeros, p and q both
    zero on a token, q zero where p is not (inf), and p = q (0)."""
    rng = np.random.default_rng(5)
    p_zero = np.array([0.3, 0.0, 0.5, 0.0, 0.2])
    both_zero = np.array([0.25, 0.0, 0.35, 0.4]), np.array([0.5, 0.0, 0.2, 0.3])
    q_zero = np.array([0.2, 0.3, 0.0, 0.5]), np.array([0.4, 0.0, 0.1, 0.5])
    toy, *random_pairs = toy_and_random(_distribution_pair, 3)()
    # right after the toy, chapter 5's spread-out data: H(p) > 0 there, so the cross-entropy is not the KL
    return [toy, (_DATA, _PI), *random_pairs, (p_zero, rng.dirichlet(np.ones(5))), both_zero, q_zero, (p_zero, p_zero)]


@_ignoring_float_warnings
def _kl_naive(p, q):
    p, q = np.asarray(p, float), np.asarray(q, float)
    return float(np.sum(p * np.log(p / q)))


def _kl_skipping_zeros(p, q):
    p, q = np.asarray(p, float), np.asarray(q, float)
    both = (p > 0) & (q > 0)
    return float(np.sum(p[both] * np.log(p[both] / q[both])))


_REVERSE = ("the arguments are swapped: that is the reverse KL(q || p) = Σ q ln(q / p), weighted by q. The "
            "forward KL(p || q) = Σ p ln(p / q) is weighted by p, the first argument (the data, in SFT)")
_KL_MISTAKES = (
    ("that is the cross-entropy CE(p, q) = -Σ p ln q = H(p) + KL(p || q): on the toy's one-hot label H(p) = 0, "
     "so the two agree there, but not on a spread-out p such as chapter 5's data (0.05, 0.05, 0.8, 0.05, 0.05). "
     "The KL also has p's own ln p: Σ p ln(p / q)", lambda p, q: cross_entropy(np.asarray(p, float), np.asarray(q, float))),
    (_REVERSE, lambda p, q: kl_divergence(q, p)),
    (_REVERSE, lambda p, q: _kl_naive(q, p)),
    ("the log is base 2 (bits): the book's KL is in nats, with the natural log np.log",
     lambda p, q: kl_divergence(p, q) / _LN2),
    ("terms with p_i = 0 give nan (0 × ln 0): by convention they count 0, so sum only where p > 0",
     _kl_naive),
    ("where p_i > 0 and q_i = 0 the divergence is infinite (the model rules out what the data contains), "
     "but these terms are skipped: return inf there", _kl_skipping_zeros),
    ("the sign is flipped: KL(p || q) = Σ p ln(p / q) ≥ 0, and Σ p ln(q / p) is its negative",
     lambda p, q: -kl_divergence(p, q)),
)


SPECS: dict[str, FunctionExercise | NumericExercise] = {
    "ex-ch01-cold": NumericExercise(1, "P(5) at temperature T = 1/3", float(softmax(LOGITS, 1 / 3)[CORRECT]),
                                    5e-4, _cold_mistakes()),
    "softmax": FunctionExercise(1, softmax, _softmax_cases, _softmax_mistakes()),
    "ex-ch02-nucleus": NumericExercise(2, "P(5) at T = 1/2 with top-p = 0.9",
                                       float(decode_probs(LOGITS, 0.5, top_p=0.9)[CORRECT]), 5e-4,
                                       _nucleus_mistakes()),
    "decode_probs": FunctionExercise(2, decode_probs, _decode_cases, _DECODE_MISTAKES),
    "ex-ch03-talkative": NumericExercise(3, "P(a correct answer) when P(5 | 0) = 0.9",
                                         float(two_spellings(0.1, 0.9)["correct"]), 5e-4, _talkative_mistakes()),
    "sequence_probability": FunctionExercise(3, sequence_probability, toy_and_random(_steps), _SEQUENCE_MISTAKES),
    "ex-ch04-noisy-labels": NumericExercise(4, "CE(p, π) for the labels p = (0, 0.5, 0.5, 0, 0)",
                                            cross_entropy(_NOISY, _PI), 5e-4, _noisy_label_mistakes()),
    "sft_gradient": FunctionExercise(4, sft_gradient, toy_and_random(logits_and_token), _SFT_GRADIENT_MISTAKES),
    "ex-ch05-forward-kl": NumericExercise(5, "the forward KL(p || π) that SFT minimises, in nats",
                                          kl_divergence(_DATA, _PI), 5e-4, _forward_kl_mistakes()),
    "kl_divergence": FunctionExercise(5, kl_divergence, _kl_cases, _KL_MISTAKES),
}
