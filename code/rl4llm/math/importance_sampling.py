"""Reusing samples by reweighting them: importance sampling on the toy (chapter 10).

Samples drawn from pi_old estimate expectations under another policy pi once each is weighted by its
importance ratio rho(y) = pi(y) / pi_old(y); the price is variance, which grows with how far the two
policies drift apart. Everything is exact on the toy (enumeration), with Monte Carlo beside it.
"""
from __future__ import annotations

import numpy as np

from .._checks import (as_float_array, at_least, checked, index_in_range, one_reward_per_answer, probability_array,
                       same_shapes, scalar_or_array, vector_of)
from .distributions import log_softmax, probability_vector, softmax
from .estimators import sample_groups
from ..toy.five_token import CORRECT, LOGITS, REWARDS

@checked(same_shapes("new_logits", "old_logits"), new_logits=as_float_array, old_logits=as_float_array)
def importance_ratios(new_logits, old_logits) -> np.ndarray:
    """rho(y) = pi_new(y) / pi_old(y) for every answer y (chapter 10).

    E_{y ~ pi_old}[rho(y) f(y)]
        = sum_y pi_old(y) (pi_new(y) / pi_old(y)) f(y) = E_{y ~ pi_new}[f(y)]:
    samples from the old policy, reweighted by rho, estimate expectations under
    the new one. Computed as exp(ln pi_new - ln pi_old), so it never divides by
    an underflowed probability.
    """
    return np.exp(log_softmax(new_logits) - log_softmax(old_logits))


#: The checks of a pair of policies and the rewards of their answers.
_PAIR = (same_shapes("p_target", "p_sample"), one_reward_per_answer("p_target"))


@checked(*_PAIR, p_target=probability_array, p_sample=probability_array)
def importance_weighted_variance(p_target, p_sample, rewards):
    """Per-sample variance of the importance-weighted reward w(y) r(y), y ~ p_sample (chapter 10).

    w = p_target / p_sample. The mean is J = sum_y p_target(y) r(y) whatever p_sample is (the
    identity); the variance is sum_y p_target(y)^2 r(y)^2 / p_sample(y) - J^2. With
    p_sample = p_target (on-policy, every w = 1) it is the plain variance of r under p_target.
    Any function of the answer can stand in for the rewards (chapter 10's exercise passes 1 - r,
    the indicator of a wrong answer). Divide by G for the variance of a group mean. ``inf`` when
    p_sample misses an answer that p_target rewards (that answer can never be drawn, so no
    reweighting can recover it). One pair of 1-D policies gives a float; a batch (..., n) of pairs
    gives an array (...).
    """
    r = rewards
    needed = p_target * r != 0
    missing = np.any(needed & (p_sample == 0), axis=-1)
    safe_sample = np.where(p_sample > 0, p_sample, 1.0)
    second_moment = np.sum(np.where(needed, (p_target * r) ** 2 / safe_sample, 0.0), axis=-1)
    variance = np.where(missing, np.inf, np.maximum(second_moment - (p_target @ r) ** 2, 0.0))
    return scalar_or_array(variance)


def _reachable(args):
    """Relation: p_sample draws every answer that p_target rewards."""
    if np.any(args["p_sample"][args["p_target"] * args["rewards"] != 0] == 0):
        raise ValueError("p_sample must be > 0 wherever p_target * rewards is non-zero "
                         "(otherwise the importance-weighted estimate cannot reach J)")


@checked(*_PAIR, _reachable, p_target=probability_vector, p_sample=probability_vector, G=at_least(1))
def importance_weighted_jhat_distribution(p_target, p_sample, rewards, G: int):
    """The exact law of J-hat = (1/G) sum_i w(y_i) r(y_i), y_i ~ p_sample iid (chapter 10).

    Returns ``(values, probs)``, sorted by value. Built by convolving the law of one term G times
    (values equal to 12 decimals are merged), so it is exact for any rewards; with one rewarded
    answer y* it is J-hat = w(y*) k / G, k ~ Binomial(G, p_sample(y*)).
    """
    r = rewards
    drawn = p_sample > 0
    term = p_target[drawn] / p_sample[drawn] * r[drawn]
    one = _merge(term, p_sample[drawn])
    total = {0.0: 1.0}
    for _ in range(G):
        pairs = [(s + v, ps * pv) for s, ps in total.items() for v, pv in one.items()]
        total = _merge(np.array([s for s, _ in pairs]), np.array([p for _, p in pairs]))
    values = np.array(sorted(total))
    return values / G, np.array([total[v] for v in values])


@checked(*_PAIR, p_target=probability_vector, p_sample=probability_vector, seed=at_least(0))
def importance_weighted_jhat_samples(p_target, p_sample, rewards, G: int, n_groups: int,
                                     seed: int) -> np.ndarray:
    """``n_groups`` sampled estimates J-hat = (1/G) sum_i w(y_i) r(y_i), y_i ~ p_sample (chapter 10).

    Seeded (``np.random.default_rng(seed)``); shape (n_groups,). With p_sample = p_target this is the
    plain on-policy Monte Carlo estimate.
    """
    r = rewards
    rng = np.random.default_rng(seed)
    ys = sample_groups(p_sample, G, n_groups, rng)
    term = np.divide(p_target * r, p_sample, out=np.zeros_like(r), where=p_sample > 0)
    return term[ys].mean(axis=-1)


def drift_case(new_mass: float, G: int, old_mass: float = 0.05) -> dict:
    """Chapter 10's drift example on the toy: J = pi_new(5) estimated from G draws of pi_old.

    pi_old and pi_new are the toy with pi(5) moved to ``old_mass`` and ``new_mass``
    (``with_correct_mass``). Returns both policies, the ratio on 5, the exact law of the
    importance-weighted J-hat (``is_values``, ``is_probs``) and of the on-policy one drawn from
    pi_new (``on_values``, ``on_probs``), the chance of no 5 in the group, and the per-sample
    variances (``is_variance``, ``on_variance``). Old 0.05, new 0.5, G = 8: ratio 10,
    P(no 5) = 0.95^8, per-sample variances 4.75 and 0.25.
    """
    pi = softmax(LOGITS)
    p_old = with_correct_mass(pi, CORRECT, old_mass)
    p_new = with_correct_mass(pi, CORRECT, new_mass)
    is_values, is_probs = importance_weighted_jhat_distribution(p_new, p_old, REWARDS, G)
    on_values, on_probs = importance_weighted_jhat_distribution(p_new, p_new, REWARDS, G)
    return {
        "p_old": p_old, "p_new": p_new, "ratio": float(p_new[CORRECT] / p_old[CORRECT]),
        "J": float(p_new @ REWARDS), "p_no_correct": float(is_probs[0]),
        "is_values": is_values, "is_probs": is_probs, "on_values": on_values, "on_probs": on_probs,
        "is_variance": importance_weighted_variance(p_new, p_old, REWARDS),
        "on_variance": importance_weighted_variance(p_new, p_new, REWARDS),
    }


def _merge(values: np.ndarray, probs: np.ndarray) -> dict:
    merged: dict = {}
    for v, p in zip(np.round(values, 12), probs):
        merged[float(v)] = merged.get(float(v), 0.0) + float(p)
    return merged


def _masses(x, name):
    """Rule: a mass in (0, 1), or a 1-D array of them."""
    masses = as_float_array(x, name, ndim_min=0)
    if masses.ndim > 1 or np.any(masses <= 0) or np.any(masses >= 1):
        raise ValueError(f"{name} must be a number (or 1-D array) in (0, 1), got {x!r}")
    return masses


def _rescalable(args):
    """Relation: ``correct`` indexes an answer of p, and p puts some mass elsewhere."""
    args["correct"] = index_in_range(args["correct"], "correct", args["p"].size)
    if args["p"][args["correct"]] >= 1:
        raise ValueError("p must put some mass outside `correct` (to rescale it), got p(correct) = 1")


@checked(_rescalable, p=probability_vector, mass=_masses)
def with_correct_mass(p, correct: int, mass):
    """p with p(correct) set to ``mass`` and the other answers rescaled in their old proportions.

    Chapter 10's drift pair: the toy (0.1, 0.4, 0.2, 0.2, 0.1) with pi(5) moved to 0.05 (old) and
    to 0.5 (new), every wrong answer keeping its share of the remaining mass. A scalar ``mass``
    gives one policy (n,); an array of M masses gives M policies (M, n).
    """
    out = p * (1.0 - mass[..., None]) / (1.0 - p[correct])
    out[..., correct] = mass
    return out


@checked(new_masses=vector_of(_masses, "masses in (0, 1)"), old_mass=_masses)
def drift_variance_ratio(new_masses, old_mass: float = 0.05) -> np.ndarray:
    """Chapter 10's curve: per-sample variance of the reweighted J-hat over the on-policy one.

    For each pi_new(5) in ``new_masses`` (toy-shaped policies, ``with_correct_mass``), estimating
    J = pi_new(5) from draws of the toy-shaped pi_old with pi_old(5) = ``old_mass``. Equals 1 where
    the two agree; 19 at pi_new(5) = 0.5 from 0.05.
    """
    p_old = with_correct_mass.unchecked(softmax(LOGITS), CORRECT, old_mass)
    p_new = with_correct_mass.unchecked(softmax(LOGITS), CORRECT, new_masses)
    stale = importance_weighted_variance.unchecked(p_new, np.broadcast_to(p_old, p_new.shape), REWARDS)
    return stale / importance_weighted_variance.unchecked(p_new, p_new, REWARDS)


def mean_over_tokens(x, mask):
    """sum_t m_t x_t / sum_t m_t per sequence, shaped (B, 1): numpy arrays or torch tensors (B, T)
    (a row with no unmasked token gives 0)."""
    return (x * mask).sum(axis=-1, keepdims=True) / mask.sum(axis=-1, keepdims=True).clip(min=1)


def _token_batch(x, name):
    x = as_float_array(x, name)
    if x.ndim != 2:
        raise ValueError(f"{name} must be shaped (batch, tokens), got shape {x.shape}")
    return x


def _binary_mask(x, name):
    x = _token_batch(x, name)
    if not np.all((x == 0) | (x == 1)):
        raise ValueError(f"{name} must contain only 0 and 1")
    return x


@checked(same_shapes("logp", "logp_old", "mask"), logp=_token_batch, logp_old=_token_batch, mask=_binary_mask)
def sequence_ratio(logp, logp_old, mask) -> np.ndarray:
    """GSPO's sequence-level importance ratio, one per sequence (chapter 18):

        s_i = exp( sum_t m_it (logp_it - logp_old_it) / sum_t m_it ),

    the geometric mean of the token ratios over the sequence's own tokens (a length-normalised
    pi(y_i) / pi_old(y_i)). Arrays shaped (batch, tokens); returns shape (batch,).
    """
    return np.exp(mean_over_tokens(np.where(mask > 0, logp - logp_old, 0.0), mask))[:, 0]
