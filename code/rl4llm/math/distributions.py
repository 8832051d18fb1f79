"""A language model's next-token distribution, and what decoding does to it (chapters 1-4).

Notation: logits z, temperature T, policy pi = softmax(z / T).
"""
from __future__ import annotations

import numpy as np

from .._checks import (as_float_array, at_least, checked, in_range, index_in_range, logits_array,
                      optional, positive_real, probability_array, same_shapes)

#: Tolerance used when comparing cumulative probability mass to top_p (floating-point sums).
_MASS_TOL = 1e-12


def _scaled_logits_finite(args):
    with np.errstate(over="ignore"):  # an overflow is what this check refuses
        finite = np.all(np.isfinite(args["logits"] / args["temperature"]))
    if not finite:
        raise ValueError("temperature is too small for these logits: logits / "
                         "temperature overflowed; use temperature > 0 large enough "
                         "that |logits / temperature| is finite")


@checked(_scaled_logits_finite, logits=logits_array, temperature=positive_real)
def log_softmax(logits, temperature: float = 1.0) -> np.ndarray:
    """ln softmax(z / T) over the last axis, computed stably (chapter 1).

    ln pi_i = z_i / T - m - ln sum_j exp(z_j / T - m), with m = max_j z_j / T,
    so no exp overflows.
    """
    z = logits / temperature
    # A gap beyond the float range rounds to -inf: probability 0, no NaN.
    with np.errstate(over="ignore"):
        shifted = z - z.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def softmax(logits, temperature: float = 1.0) -> np.ndarray:
    """pi_i = exp(z_i / T) / sum_j exp(z_j / T) over the last axis, stably (chapter 1).

    Subtracting max_j z_j / T first changes nothing mathematically (softmax is
    shift-invariant) and keeps every exponent <= 0, so huge logits cannot overflow.
    """
    return np.exp(log_softmax(logits, temperature))


def probability_vector(p, name: str = "p") -> np.ndarray:
    """Rule: one probability vector (1-D, entries >= 0, summing to 1)."""
    p = probability_array(p, name)
    if p.ndim != 1:
        raise ValueError(f"{name} must be a 1-D probability vector, got shape {p.shape}")
    return p


@checked(p=probability_vector)
def entropy(p) -> float:
    """H(p) = -sum_i p_i ln p_i, with 0 ln 0 = 0 (chapter 4). In nats."""
    nz = p > 0
    return float(0.0 - (p[nz] * np.log(p[nz])).sum())  # 0.0 - x, not -x: a certain outcome gives +0.0, not -0.0


@checked(same_shapes("p", "q"), p=probability_vector, q=probability_vector)
def cross_entropy(p, q) -> float:
    """CE(p, q) = -sum_i p_i ln q_i: p is the data, q the model (chapter 4).

    Equals H(p) + KL(p || q); ``inf`` where some p_i > 0 has q_i = 0.
    """
    nz = p > 0
    if np.any(q[nz] == 0):
        return float("inf")
    return float(-(p[nz] * np.log(q[nz])).sum())


@checked(same_shapes("p", "q"), p=probability_vector, q=probability_vector)
def kl_divergence(p, q) -> float:
    """KL(p || q) = sum_i p_i ln(p_i / q_i), with 0 ln 0 = 0 (chapters 4-5).

    ``inf`` where some p_i > 0 has q_i = 0: q must cover every place p does. Not symmetric.
    """
    nz = p > 0
    if np.any(q[nz] == 0):
        return float("inf")
    return float((p[nz] * (np.log(p[nz]) - np.log(q[nz]))).sum())  # not log(p / q): p / q can overflow


def _one_distribution(args):
    if np.ndim(args["logits"]) != 1:
        raise ValueError(f"logits must be 1-D for decode_probs, got shape {np.shape(args['logits'])}")


@checked(_one_distribution, logits=logits_array, top_k=optional(at_least(1)),
         top_p=optional(in_range(0.0, 1.0, low_open=True)))
def decode_probs(logits, temperature: float = 1.0, top_k: int | None = None,
                 top_p: float | None = None) -> np.ndarray:
    """The distribution a sampler actually draws from (chapter 2).

    1. temperature: pi = softmax(z / T);
    2. top-k: keep the k most probable tokens;
    3. top-p (nucleus): keep the smallest prefix of the sorted order whose mass is >= top_p,
       the mass measured on the distribution top-k left (renormalised), as samplers do: Hugging
       Face's top-p warper takes the softmax of the logits top-k has already masked;
    then renormalise. Sorting is stable, so ties are broken toward the lower index:
    on the toy, 5 (index 2) is kept before 6 (index 3). Greedy decoding is ``top_k=1``.
    """
    pi = softmax(logits, temperature)
    order = np.argsort(-pi, kind="stable")
    keep = np.zeros(pi.shape, dtype=bool)
    n_keep = pi.size
    if top_k is not None:
        n_keep = min(top_k, pi.size)
    if top_p is not None:
        mass = np.cumsum(pi[order[:n_keep]]) / pi[order[:n_keep]].sum()
        n_keep = min(n_keep, int(np.searchsorted(mass, top_p - _MASS_TOL)) + 1)
    keep[order[:n_keep]] = True
    kept = np.where(keep, pi, 0.0)
    return kept / kept.sum()


def _step_probabilities(x, name):
    arr = as_float_array(x, name)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a non-empty 1-D list of probabilities in [0, 1], got shape {arr.shape}")
    if np.any(arr < 0) or np.any(arr > 1):
        raise ValueError(f"{name} must be probabilities in [0, 1], got {x!r}")
    return arr


@checked(step_probs=_step_probabilities)
def sequence_probability(step_probs) -> float:
    """P(y) = prod_t pi(y_t | x, y_<t): the product of the per-step conditionals (chapter 3).

    Include P(EOS | ...) as a factor where stopping is part of the string. In logs, the
    log-probabilities add: ln P(y) = sum_t ln pi(y_t | ...).
    """
    return float(np.prod(step_probs))


def _index_below_size(args):
    args["index"] = index_in_range(args["index"], "index", args["size"])


@checked(_index_below_size, size=at_least(1))
def onehot(index: int, size: int) -> np.ndarray:
    """The one-hot vector e_index of length ``size`` (the label distribution of SFT)."""
    out = np.zeros(size)
    out[index] = 1.0
    return out
