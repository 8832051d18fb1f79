"""A language model's next-token distribution, and what decoding does to it (chapters 1-4).

Notation: logits z, temperature T, policy pi = softmax(z / T).
"""
from __future__ import annotations

import numpy as np

from ._checks import (as_float_array, index_in_range, integer_at_least, logits_array, positive_real,
                      probability_array, real_in_range, same_shape)

#: Tolerance used when comparing cumulative probability mass to top_p (floating-point sums).
_MASS_TOL = 1e-12


def log_softmax(logits, temperature: float = 1.0) -> np.ndarray:
    """ln softmax(z / T) over the last axis, computed stably (chapter 1).

    ln pi_i = z_i / T - m - ln sum_j exp(z_j / T - m), with m = max_j z_j / T,
    so no exp overflows.
    """
    logits = logits_array(logits)
    temperature = positive_real(temperature, "temperature")
    with np.errstate(over="ignore"):  # an overflow is refused by the next check
        z = logits / temperature
    if not np.all(np.isfinite(z)):
        raise ValueError("temperature is too small for these logits: logits / "
                         "temperature overflowed; use temperature > 0 large enough "
                         "that |logits / temperature| is finite")
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


def entropy(p) -> float:
    """H(p) = -sum_i p_i ln p_i, with 0 ln 0 = 0 (chapter 4). In nats."""
    p = probability_array(p)
    if p.ndim != 1:
        raise ValueError(f"p must be a 1-D probability vector, got shape {p.shape}")
    nz = p > 0
    return float(0.0 - (p[nz] * np.log(p[nz])).sum())  # 0.0 - x, not -x: a certain outcome gives +0.0, not -0.0


def cross_entropy(p, q) -> float:
    """CE(p, q) = -sum_i p_i ln q_i: p is the data, q the model (chapter 4).

    Equals H(p) + KL(p || q); ``inf`` where some p_i > 0 has q_i = 0.
    """
    p, q = _pair(p, q)
    nz = p > 0
    if np.any(q[nz] == 0):
        return float("inf")
    return float(-(p[nz] * np.log(q[nz])).sum())


def kl_divergence(p, q) -> float:
    """KL(p || q) = sum_i p_i ln(p_i / q_i), with 0 ln 0 = 0 (chapters 4-5).

    ``inf`` where some p_i > 0 has q_i = 0: q must cover every place p does. Not symmetric.
    """
    p, q = _pair(p, q)
    nz = p > 0
    if np.any(q[nz] == 0):
        return float("inf")
    return float((p[nz] * (np.log(p[nz]) - np.log(q[nz]))).sum())  # not log(p / q): p / q can overflow


def _pair(p, q) -> tuple[np.ndarray, np.ndarray]:
    p = probability_array(p, "p")
    q = probability_array(q, "q")
    same_shape(p, q, "p", "q")
    if p.ndim != 1:
        raise ValueError(f"p and q must be 1-D probability vectors, got shape {p.shape}")
    return p, q


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
    if pi.ndim != 1:
        raise ValueError(f"logits must be 1-D for decode_probs, got shape {pi.shape}")
    order = np.argsort(-pi, kind="stable")
    keep = np.zeros(pi.shape, dtype=bool)
    n_keep = pi.size
    if top_k is not None:
        n_keep = min(integer_at_least(top_k, "top_k", 1), pi.size)
    if top_p is not None:
        top_p = real_in_range(top_p, "top_p", 0.0, 1.0, low_open=True)
        mass = np.cumsum(pi[order[:n_keep]]) / pi[order[:n_keep]].sum()
        n_keep = min(n_keep, int(np.searchsorted(mass, top_p - _MASS_TOL)) + 1)
    keep[order[:n_keep]] = True
    kept = np.where(keep, pi, 0.0)
    return kept / kept.sum()


def sequence_probability(step_probs) -> float:
    """P(y) = prod_t pi(y_t | x, y_<t): the product of the per-step conditionals (chapter 3).

    Include P(EOS | ...) as a factor where stopping is part of the string. In logs, the
    log-probabilities add: ln P(y) = sum_t ln pi(y_t | ...).
    """
    arr = as_float_array(step_probs, "step_probs")
    if arr.ndim != 1:
        raise ValueError(f"step_probs must be a non-empty 1-D list of probabilities in [0, 1], got shape {arr.shape}")
    if np.any(arr < 0) or np.any(arr > 1):
        raise ValueError(f"step_probs must be probabilities in [0, 1], got {step_probs!r}")
    return float(np.prod(arr))


def onehot(index: int, size: int) -> np.ndarray:
    """The one-hot vector e_index of length ``size`` (the label distribution of SFT)."""
    size = integer_at_least(size, "size", 1)
    out = np.zeros(size)
    out[index_in_range(index, "index", size)] = 1.0
    return out
