"""Monte Carlo estimates of J and of its gradient, and how noisy they are (chapters 6-9).

Notation: logits z, policy pi = softmax(z), reward vector r (one entry per answer), expected
reward J = sum_y pi(y) r(y), score g(y) = grad_z ln pi(y) = onehot(y) - pi. A group is G answers
y_1..y_G drawn iid from pi.

- Chapter 5: ``policy_gradient_by_finite_differences``: a gradient over a tree of softmax
  choices by central differences, with no score function.
- Chapter 6: ``sample_groups``, ``jhat_distribution``, ``jhat_samples``, ``jhat_study``,
  ``spread_of_means``: J-hat = mean_i r(y_i) and its noise; ``std_and_standard_error``: how
  precisely a Monte Carlo standard deviation is known.
- Chapter 7: ``gradient_by_enumeration``, ``gradient_by_finite_differences``, ``gradient_samples``:
  grad J three ways, and the single-sample REINFORCE estimate r(y) g(y).
- Chapter 8: ``estimator_variance``, ``optimal_baseline``, ``variance_curve``: (r(y) - b) g(y);
  ``total_variance_and_standard_error``: the same variance measured from samples.
- Chapter 9: ``group_mean_baseline_gradient``, ``leave_one_out_gradient`` and the exact law of a
  group (``group_count_law``, ``expected_group_gradient``, ``group_estimator_moments``,
  ``expected_policy_after_step``).
"""
from __future__ import annotations

import itertools
import math

import numpy as np

from .._checks import (as_float_array, at_least, checked, finite_real, generator, in_range, logits_array, logits_vector,
                      one_reward_per_answer, sample_indices)
from .distributions import probability_vector, softmax

#: Relation: one reward per answer of the policy's logits.
_one_reward_per_answer = one_reward_per_answer("logits")
#: The checks of a tabular policy's logits (K,) and its rewards (one per answer).
_POLICY = {"logits": logits_vector, "rewards": as_float_array}


def _vector(values, name: str) -> np.ndarray:
    """Rule: a 1-D array of finite numbers."""
    v = as_float_array(values, name)
    if v.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array, got shape {v.shape}")
    return v


# ----------------------------------------------------------------------------- chapter 6: sampling
def inverse_cdf(probs: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Answer indices y with P(y = k) = probs[k], from uniforms u in [0, 1) (chapter 6).

    y = #{k < K - 1 : F_k <= u}, with F the cumulative sum of ``probs`` over its last
    axis: the inverse CDF, for every uniform at once. ``probs`` has shape (..., K)
    (already validated) and ``u`` shape (..., G) with the same leading axes; the result
    has the shape of ``u``. A token of probability 0 is never drawn, rounding included.
    """
    K = probs.shape[-1]
    cdf = np.cumsum(probs, axis=-1)
    # dividing by the total makes F exactly 1.0 from the last positive entry on
    # (adding 0.0 is exact), so u < 1 never reaches a trailing zero-probability answer
    cdf = cdf[..., :-1] / cdf[..., -1:]
    y = np.zeros(u.shape, dtype=np.intp)
    for k in range(K - 1):      # a loop over answers, each covering all samples at once
        y += u >= cdf[..., k:k + 1]
    return y


@checked(probs=probability_vector, G=at_least(1), n_groups=at_least(1), rng=generator)
def sample_groups(probs, G: int, n_groups: int, rng) -> np.ndarray:
    """``n_groups`` groups of G answers drawn iid from ``probs``: int indices, shape (n_groups, G).

    Vectorised inverse-CDF sampling: one ``rng.random((n_groups, G))`` call, then
    ``inverse_cdf``; no Python loop per sample (chapter 6).
    """
    return inverse_cdf(probs, rng.random((n_groups, G)))


@checked(p=in_range(0.0, 1.0), G=at_least(1))
def jhat_distribution(p, G: int) -> tuple[np.ndarray, np.ndarray]:
    """``(values, probs)``: the law of J-hat, the fraction correct among G samples (chapter 6).

    With P(correct) = p, the number correct is Binomial(G, p), so
    P(J-hat = k / G) = C(G, k) p^k (1 - p)^(G - k), k = 0..G. On the toy (p = 0.2, G = 4) the
    probabilities are (256, 256, 96, 16, 1) / 625.
    """
    k = np.arange(G + 1)
    if p in (0.0, 1.0):                     # a point mass: no logarithm of zero below
        return k / G, (k == round(p * G)).astype(np.float64)
    log_comb = np.array([math.lgamma(G + 1) - math.lgamma(i + 1) - math.lgamma(G - i + 1) for i in k])
    return k / G, np.exp(log_comb + k * math.log(p) + (G - k) * math.log1p(-p))


@checked(one_reward_per_answer("probs"), probs=probability_vector, G=at_least(1), n_groups=at_least(1),
         seed=at_least(0))
def jhat_samples(probs, rewards, G: int, n_groups: int, seed: int) -> np.ndarray:
    """``n_groups`` Monte Carlo estimates J-hat = (1/G) sum_i r(y_i), y_i ~ probs (chapter 6).

    Seeded (``np.random.default_rng(seed)``); shape (n_groups,).
    """
    return rewards[sample_groups(probs, G, n_groups, np.random.default_rng(seed))].mean(axis=-1)


@checked(G=at_least(1), p=in_range(0.0, 1.0), n_groups=at_least(1), seed=at_least(0))
def jhat_study(G: int, p: float = 0.2, n_groups: int = 4000, seed: int = 0) -> dict:
    """J-hat for 0/1 rewards with P(correct) = p: Monte Carlo beside its exact law (chapter 6).

    Draws ``n_groups`` groups of G answers (correct with probability p) and returns ``values``
    (k / G), ``law`` (``jhat_distribution``), ``frequencies`` (the share of groups at each value),
    ``frequency_standard_errors`` sqrt(law (1 - law) / n_groups) (how far a share of n_groups
    groups strays from its exact probability by chance), ``z`` = (frequencies - law) /
    frequency_standard_errors (0 where the law is 0 or 1), ``mean`` (p) and ``standard_error``
    sqrt(p (1 - p) / G), the width of the normal curve N(p, p (1 - p) / G) that the law
    approaches as G grows.
    """
    values, law = jhat_distribution(p, G)
    n_correct = sample_groups([1.0 - p, p], G, n_groups, np.random.default_rng(seed)).sum(axis=1)
    frequencies = np.bincount(n_correct, minlength=values.size) / n_correct.size
    frequency_se = np.sqrt(law * (1.0 - law) / n_groups)
    z = np.divide(frequencies - law, frequency_se, out=np.zeros_like(law), where=frequency_se > 0)
    return {"values": values, "law": law, "frequencies": frequencies,
            "frequency_standard_errors": frequency_se, "z": z, "mean": p,
            "standard_error": math.sqrt(p * (1.0 - p) / G)}


def _two_batches(args):
    """Relation: ``values`` make at least two batches of ``n``."""
    size = args["values"].size
    if size // args["n"] < 2:
        raise ValueError(f"n must be in [1, {size // 2}] so that {size} values give two batches, got {args['n']}")


@checked(_two_batches, values=_vector, n=at_least(1))
def spread_of_means(values, n: int) -> float:
    """Standard deviation (ddof = 1) of the means of consecutive disjoint batches of n values (chapter 6).

    With iid values of standard deviation sigma it estimates sigma / sqrt(n): the 1/sqrt(n) law.
    Needs at least two batches (len(values) >= 2 n); a trailing partial batch is dropped.
    """
    n_batches = values.size // n
    return float(values[: n_batches * n].reshape(n_batches, n).mean(axis=1).std(ddof=1))


def _spread_out(values, name: str) -> np.ndarray:
    """Rule: a 1-D array of at least 2 numbers whose standard deviation is not 0."""
    v = _vector(values, name)
    if v.size < 2:
        raise ValueError(f"{name} must be a 1-D array of at least 2 numbers, got shape {v.shape}")
    if v.std(ddof=1) == 0.0:
        raise ValueError(f"{name} must not all be equal (their standard deviation is 0)")
    return v


@checked(values=_spread_out)
def std_and_standard_error(values) -> tuple[float, float]:
    """``(s, se)``: the sample standard deviation s (ddof = 1) of iid ``values`` and its standard error (chapter 6).

    A Monte Carlo standard deviation is itself an estimate. By the delta method,
    Var(s^2) ~ (m4 - s^4) / n with m4 the fourth central moment, and s = sqrt(s^2), so
    se(s) ~ sqrt((m4 - s^4) / n) / (2 s). For normal values m4 = 3 s^4 and se = s / sqrt(2 n).
    A large-sample formula: with a few hundred values it is a few percent low. Needs at least
    2 values that are not all equal.
    """
    s = float(values.std(ddof=1))
    m4 = float(((values - values.mean()) ** 4).mean())
    return s, math.sqrt(max(m4 - s ** 4, 0.0) / values.size) / (2.0 * s)


# ----------------------------------------------------------------------------- chapter 7: gradient
@checked(_one_reward_per_answer, **_POLICY)
def gradient_by_enumeration(logits, rewards) -> np.ndarray:
    """grad J = E_y[r(y) score(y)] = sum_y pi(y) r(y) (onehot(y) - pi), summed over every answer (chapter 7).

    The score-function identity written out term by term; it must agree with the closed form
    ``policy_gradient`` = pi * (r - J).
    """
    pi = softmax(logits)
    scores = np.eye(logits.size) - pi[None, :]     # row y: score(y)
    return (pi * rewards) @ scores


#: Rule: a finite-difference step h in (0, 1].
_STEP = in_range(0.0, 1.0, low_open=True)


@checked(_one_reward_per_answer, h=_STEP, **_POLICY)
def gradient_by_finite_differences(logits, rewards, h: float = 1e-6) -> np.ndarray:
    """dJ/dz_k ~ (J(z + h e_k) - J(z - h e_k)) / (2 h) for every logit k (chapter 7).

    A route that never uses the score function: it only evaluates J = sum pi r. Error O(h^2).
    """
    shifts = h * np.eye(logits.size)
    return (softmax(logits + shifts) @ rewards - softmax(logits - shifts) @ rewards) / (2 * h)


def _function(objective, name: str):
    """Rule: a function (of a policy dict)."""
    if not callable(objective):
        raise ValueError(f"{name} must be a function of a policy dict, got {type(objective).__name__}")
    return objective


def _policy_dict(policy, name: str) -> dict:
    """Rule: a non-empty dict {context: logits}, each a vector of finite logits."""
    if not isinstance(policy, dict) or not policy:
        raise ValueError(f"{name} must be a non-empty dict {{context: logits}}, got {type(policy).__name__}")
    return {context: logits_vector(z, name) for context, z in policy.items()}


@checked(objective=_function, policy=_policy_dict, h=_STEP)
def policy_gradient_by_finite_differences(objective, policy: dict, h: float = 1e-6) -> dict:
    """d objective / dz for every logit of a policy ``{context: logits}``, by central differences
    (chapter 5's check of the tree gradient).

    ``objective`` is a function of such a policy that returns a number (for instance
    ``rl4llm.math.two_step.expected_verifier_reward``). Each logit k of each context is moved by
    +h and -h alone: (f(z + h e_k) - f(z - h e_k)) / (2 h), error O(h^2). The route never uses a
    score function or the tree's Q values: it only evaluates the objective.
    """
    grads = {}
    for context, z in policy.items():
        g = np.empty(z.size)
        for k in range(z.size):
            step = h * np.eye(z.size)[k]
            g[k] = (float(objective({**policy, context: z + step}))
                    - float(objective({**policy, context: z - step}))) / (2 * h)
        grads[context] = g
    return grads


@checked(_one_reward_per_answer, n=at_least(1), seed=at_least(0), baseline=finite_real, **_POLICY)
def gradient_samples(logits, rewards, n: int, seed: int, baseline: float = 0.0) -> np.ndarray:
    """``n`` single-sample estimates (r(y) - b) g(y), y ~ pi, shape (n, K) (chapters 7-8).

    Their mean is a Monte Carlo estimate of grad J = E[(r(y) - b) g(y)], for any constant b.
    """
    pi = softmax(logits)
    y = sample_groups(pi, n, 1, np.random.default_rng(seed))[0]
    return (rewards[y] - baseline)[:, None] * (np.eye(logits.size)[y] - pi)


# ----------------------------------------------------------------------------- chapter 8: variance
def _variance_terms(z: np.ndarray, r: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """pi, |g(y)|^2 = 1 - 2 pi(y) + |pi|^2 for every y, and grad J."""
    pi = softmax(z)
    score_sq = 1.0 - 2.0 * pi + pi @ pi
    return pi, score_sq, pi * (r - pi @ r)


def _total_variance(z: np.ndarray, r: np.ndarray, baselines: np.ndarray) -> np.ndarray:
    """sum_y pi(y) (r(y) - b)^2 |g(y)|^2 - |grad J|^2 for every b in ``baselines`` (validated inputs)."""
    pi, score_sq, grad = _variance_terms(z, r)
    second_moment = ((r[None, :] - baselines[:, None]) ** 2 * score_sq[None, :]) @ pi
    return np.maximum(second_moment - grad @ grad, 0.0)


@checked(_one_reward_per_answer, logits=logits_vector, rewards=as_float_array, baseline=finite_real, G=at_least(1))
def estimator_variance(logits, rewards, baseline: float = 0.0, G: int = 1) -> float:
    """Total variance of the mean of G iid estimates (r(y) - b) g(y), y ~ pi (ch. 8).

    "Total" = the trace of the covariance matrix: the variances of the K gradient
    coordinates added up, E|X - grad J|^2 = E|X|^2 - |grad J|^2. By enumeration over the
    K answers, with |g(y)|^2 = |onehot(y) - pi|^2 = 1 - 2 pi(y) + |pi|^2:

        Var = ( sum_y pi(y) (r(y) - b)^2 |g(y)|^2 - |grad J|^2 ) / G.

    The mean, grad J, does not depend on b; the variance does.
    """
    pi, score_sq, grad_J = _variance_terms(logits, rewards)     # pi, |g(y)|^2 for every y, grad J
    second_moment = pi @ ((rewards - baseline) ** 2 * score_sq)  # E|X|^2
    return float(max(second_moment - grad_J @ grad_J, 0.0)) / G


def _draws(samples, name: str) -> np.ndarray:
    """Rule: n >= 2 draws of a random vector, a 2-D array (n, K)."""
    x = as_float_array(samples, name)
    if x.ndim != 2 or x.shape[0] < 2:
        raise ValueError(f"{name} must be a 2-D array (n, K) with n >= 2, got shape {x.shape}")
    return x


@checked(samples=_draws)
def total_variance_and_standard_error(samples) -> tuple[float, float]:
    """``(v, se)``: the total variance of vector samples, measured, and its standard error (chapter 8).

    ``samples`` (n, K): n iid draws of a random vector X. v = sum_k Var-hat(X_k) =
    (1 / (n - 1)) sum_i |X_i - Xbar|^2, the Monte Carlo counterpart of ``estimator_variance``
    (the trace of the covariance). It is a mean of the n numbers |X_i - Xbar|^2, so its
    standard error is their standard deviation over sqrt(n).
    """
    n = samples.shape[0]
    squared_distance = ((samples - samples.mean(axis=0)) ** 2).sum(axis=1)
    return float(squared_distance.sum() / (n - 1)), float(squared_distance.std(ddof=1) / math.sqrt(n))


@checked(_one_reward_per_answer, **_POLICY)
def optimal_baseline(logits, rewards) -> float:
    """The constant b minimising ``estimator_variance``: b* = E[r |g|^2] / E[|g|^2] (chapter 8).

    Setting d/db sum_y pi(y) (r(y) - b)^2 |g(y)|^2 = 0 gives this weighted mean of the rewards,
    weighted by pi(y) |g(y)|^2. On the toy with 0/1 rewards, b* = 0.172 / 0.74 = 43/185.
    """
    pi, score_sq, _ = _variance_terms(logits, rewards)
    weights = pi * score_sq
    return float(weights @ rewards / weights.sum())


@checked(_one_reward_per_answer, offset=finite_real, baselines=_vector, **_POLICY)
def variance_curve(logits, rewards, offset: float, baselines) -> dict:
    """The baseline study behind chapter 8's slider, for rewards r + offset (the grader's shift).

    Returns ``baselines``, ``variance`` (``estimator_variance`` at each, G = 1), ``mean`` (J, the
    mean baseline), ``optimal`` (b*), ``variance_none`` (b = 0), ``variance_mean`` and
    ``variance_optimal``.
    """
    z, r = logits, rewards + offset
    mean = float(softmax(z) @ r)
    optimal = optimal_baseline(z, r)
    none_mean_optimal = _total_variance(z, r, np.array([0.0, mean, optimal]))
    return {
        "baselines": baselines,
        "variance": _total_variance(z, r, baselines),
        "mean": mean,
        "optimal": optimal,
        "variance_none": float(none_mean_optimal[0]),
        "variance_mean": float(none_mean_optimal[1]),
        "variance_optimal": float(none_mean_optimal[2]),
    }


# ----------------------------------------------------------------------------- chapter 9: groups
def _answers_of(policy: str = "logits"):
    """Relation: ``samples`` are answer indices (..., G) into the (checked) ``policy``'s last axis."""
    def relation(args):
        args["samples"] = sample_indices(args["samples"], args[policy].shape[-1])
    return relation


#: The checks of a batch of groups: policies (K,) or (..., K), answers (..., G), one reward per answer.
_GROUPS = (_answers_of(), _one_reward_per_answer)


@checked(*_GROUPS, logits=logits_array)
def group_mean_baseline_gradient(logits, samples, rewards) -> np.ndarray:
    """The group-mean-baseline estimate (1/G) sum_i (r_i - rbar) g(y_i), rbar = (1/G) sum_j r_j (chapter 9).

    ``samples``: answer indices shaped (..., G); ``rewards``: one reward per answer (length K);
    ``logits``: shape (K,) or (..., K) matching the leading axes of ``samples`` (one policy per
    group). Returns shape (..., K). Its expectation is (1 - 1/G) grad J, not grad J: the baseline
    rbar contains r_i itself (chapter 9 derives it).
    """
    return group_gradient_from_policy(softmax(logits), samples, rewards[samples])


def _groups_of_two(args):
    """Relation: every group holds G >= 2 answers (leave-one-out needs another answer)."""
    G = args["samples"].shape[-1]
    if G < 2:
        raise ValueError(f"samples must hold groups of G >= 2 answers (last axis), got G = {G}")


@checked(*_GROUPS, _groups_of_two, logits=logits_array)
def leave_one_out_gradient(logits, samples, rewards) -> np.ndarray:
    """The leave-one-out (RLOO) estimate (1/G) sum_i (r_i - b_i) g(y_i) (chapter 9).

    b_i = (1/(G-1)) sum_{j != i} r_j, the mean reward of the OTHER answers of the group,
    so b_i does not depend on y_i and the estimate is unbiased: its expectation is
    grad J (``group_estimator_moments`` checks it by enumerating every group). G >= 2.
    Shapes as in ``group_mean_baseline_gradient``.
    """
    r = rewards[samples]
    others_mean = (r.sum(axis=-1, keepdims=True) - r) / (r.shape[-1] - 1)
    return gradient_from_advantages(softmax(logits), samples, r - others_mean)


def group_gradient_from_policy(pi: np.ndarray, samples: np.ndarray,
                               sample_rewards: np.ndarray) -> np.ndarray:
    """``group_mean_baseline_gradient`` on validated inputs, many groups (chapter 9).

    ``pi`` (..., K), ``samples`` and ``sample_rewards`` = r(y_i) both (..., G). For the
    on-policy loop, which has just computed pi to sample from it.
    """
    advantages = sample_rewards - sample_rewards.mean(axis=-1, keepdims=True)
    return gradient_from_advantages(pi, samples, advantages)


def gradient_from_advantages(pi: np.ndarray, samples: np.ndarray,
                              advantages: np.ndarray) -> np.ndarray:
    """(1/G) sum_i A_i (onehot(y_i) - pi) for every group at once (chapter 9).

    ``pi`` (..., K); ``samples`` (answer indices) and ``advantages`` A_i, both (..., G);
    inputs already validated. The estimate for any per-sample advantages: the group mean
    baseline (``group_gradient_from_policy``) or leave-one-out (``leave_one_out_gradient``).

    It equals (1/G) sum_i A_i onehot(y_i) - mean_i(A_i) pi. The first term adds up the
    advantages of each answer; ``np.bincount`` does it for all groups in one call, by
    giving answer k of group m the cell number m K + k.
    """
    K, G = pi.shape[-1], samples.shape[-1]
    n_groups = samples.size // G
    cells = (np.arange(n_groups) * K).reshape(samples.shape[:-1] + (1,)) + samples
    per_answer = np.bincount(cells.ravel(), weights=advantages.ravel(),
                             minlength=n_groups * K).reshape(samples.shape[:-1] + (K,))
    return per_answer / G - advantages.mean(axis=-1, keepdims=True) * pi


@checked(probs=probability_vector, G=at_least(1))
def group_count_law(probs, G: int) -> tuple[np.ndarray, np.ndarray]:
    """Every possible group of G answers as counts, with its probability (chapter 9).

    A group's estimate depends only on how many times each answer appears, n = (n_1..n_K),
    sum n = G, with multinomial probability G! / prod(n_k!) prod pi_k^(n_k). Returns
    ``(counts, probs)`` of shapes (M, K) and (M,), M = C(G + K - 1, K - 1) (495 for G = 8, K = 5).
    """
    p, K = probs, probs.size
    combos = list(itertools.combinations(range(G + K - 1), K - 1))
    bars = np.array(combos, dtype=int).reshape(len(combos), K - 1)
    edges = np.concatenate([np.full((bars.shape[0], 1), -1), bars,
                            np.full((bars.shape[0], 1), G + K - 1)], axis=1)
    counts = np.diff(edges, axis=1) - 1
    log_fact = np.array([math.lgamma(i + 1) for i in range(G + 1)])
    with np.errstate(divide="ignore"):
        log_p = np.log(p)
    log_terms = np.where(counts > 0, counts * log_p, 0.0)
    law = np.exp(log_fact[G] - log_fact[counts].sum(axis=1) + log_terms.sum(axis=1))
    return counts, law


def _count_gradients(z: np.ndarray, r: np.ndarray, counts: np.ndarray,
                     baseline="mean") -> np.ndarray:
    """The group estimate of every group given as counts, shape (M, K) (validated inputs).

    (1/G) sum_i (r_i - b_i) g(y_i) = (1/G) sum_k n_k (r_k - b_(k)) (onehot(k) - pi), where
    b_(k) is the baseline of a sample of answer k: rbar ("mean"), the mean of the other G - 1
    rewards (sum_j n_j r_j - r_k) / (G - 1) ("leave_one_out"), or a constant (a number).
    """
    G = counts[0].sum()
    total = counts @ r                                         # sum of the group's rewards
    if isinstance(baseline, str) and baseline == "mean":
        b = np.broadcast_to((total / G)[:, None], counts.shape)
    elif isinstance(baseline, str) and baseline == "leave_one_out":
        b = (total[:, None] - r[None, :]) / (G - 1)
    else:
        b = np.full(counts.shape, float(baseline))
    weights = counts * (r[None, :] - b) / G
    return weights - weights.sum(axis=1, keepdims=True) * softmax(z)[None, :]


@checked(_one_reward_per_answer, G=at_least(1), **_POLICY)
def expected_group_gradient(logits, rewards, G: int) -> np.ndarray:
    """E[group-mean-baseline estimate] over every group of G, exactly (chapter 9).

    Equals (1 - 1/G) grad J.
    """
    counts, law = group_count_law(softmax(logits), G)
    return law @ _count_gradients(logits, rewards, counts)


def _group_baseline(baseline, name: str):
    """Rule: "mean", "leave_one_out" or a number (a constant baseline)."""
    if isinstance(baseline, str):
        if baseline not in ("mean", "leave_one_out"):
            raise ValueError(f'{name} must be "mean", "leave_one_out" or a number, got {baseline!r}')
        return baseline
    return finite_real(baseline, name)


def _another_answer_to_leave_out(args):
    """Relation: the leave-one-out baseline needs G >= 2."""
    if args["baseline"] == "leave_one_out" and args["G"] < 2:
        raise ValueError(f"G must be >= 2 for the leave-one-out baseline, got {args['G']}")


@checked(_one_reward_per_answer, _another_answer_to_leave_out, G=at_least(1), baseline=_group_baseline, **_POLICY)
def group_estimator_moments(logits, rewards, G: int, baseline="mean") -> dict:
    """Exact mean and spread of a group estimate, by enumerating every group of G (chapter 9).

    The estimate is X = (1/G) sum_i (r_i - b_i) g(y_i) with ``baseline`` "mean" (b_i = rbar,
    the group-mean baseline), "leave_one_out" (b_i = mean of the other G - 1 rewards; G >= 2)
    or a number (a constant b, chapter 8). Over the multinomial law of ``group_count_law``:
    ``mean`` E[X] (K,), ``total_variance`` E|X - E X|^2 (the trace of the covariance, as in
    ``estimator_variance``) and ``mean_squared_error`` E|X - grad J|^2 = total variance + |bias|^2.
    """
    z, r = logits, rewards
    counts, law = group_count_law(softmax(z), G)
    estimates = _count_gradients(z, r, counts, baseline)
    mean = law @ estimates
    grad_J = gradient_by_enumeration(z, r)
    return {"mean": mean,
            "total_variance": float(law @ ((estimates - mean) ** 2).sum(axis=1)),
            "mean_squared_error": float(law @ ((estimates - grad_J) ** 2).sum(axis=1))}


@checked(_one_reward_per_answer, G=at_least(1), lr=finite_real, **_POLICY)
def expected_policy_after_step(logits, rewards, G: int, lr: float) -> np.ndarray:
    """E[pi after one on-policy step] = sum over groups P(group) softmax(z + lr * estimate) (chapter 9).

    Exact enumeration over the multinomial counts of ``group_count_law``, no sampling. On the toy,
    G = 8 and lr = 1 give E[pi(5)] = 0.2322.
    """
    counts, law = group_count_law(softmax(logits), G)
    return law @ softmax(logits[None, :] + lr * _count_gradients(logits, rewards, counts))


def zero_signal_probability(p, G: int) -> float:
    """P(all G rewards equal) for 0/1 rewards with P(r = 1) = p: p^G + (1 - p)^G (chapters 6, 9).

    Such a group has r_i - rbar = 0 for every i, so its group-mean-baseline gradient is zero.
    """
    _, law = jhat_distribution(p, G)
    return float(law[0] + law[-1])
