"""Reusing samples: importance sampling, the trust region and PPO's clip (chapters 10-11).

Notation: a group of G answers y_1..y_G was drawn from pi_old = softmax(z_old); after some updates
the policy is pi = softmax(z). The importance ratio of an answer is rho(y) = pi(y) / pi_old(y), and
the advantage of sample i is A_i. Everything here is an objective to MAXIMISE (gradient ascent).
"""
from __future__ import annotations

import numpy as np

from ._checks import (as_float_array, at_least, checked, clip_range, clip_width, in_range, index_in_range,
                      integer_at_least, logits_vector, positive_real, probability_array, same_shape, same_shapes,
                      sample_indices)
from .distributions import kl_divergence, log_softmax, softmax
from .estimators import sample_groups
from .toy import CORRECT, LOGITS, REWARDS

#: Chapter 11's fixed toy group of G = 8 answers drawn from the toy policy: 4, 4, 5, 6, 4, 0, 5, 15
#: (two correct out of eight, close to the toy's 0.2).
TOY_GROUP = np.array([1, 1, 2, 3, 1, 0, 2, 4])
#: Its group-mean advantages r_i - mean(r): +0.75 for each 5, -0.25 for every other answer.
TOY_GROUP_ADVANTAGES = REWARDS[TOY_GROUP] - REWARDS[TOY_GROUP].mean()


def _out(x: np.ndarray):
    """A 0-d result as a Python float, anything else as the array."""
    return float(x) if x.ndim == 0 else x


# --------------------------------------------------------------------------- importance sampling
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
    p_target, p_sample, r = _is_inputs(p_target, p_sample, rewards, batch=True)
    needed = p_target * r != 0
    missing = np.any(needed & (p_sample == 0), axis=-1)
    safe_sample = np.where(p_sample > 0, p_sample, 1.0)
    second_moment = np.sum(np.where(needed, (p_target * r) ** 2 / safe_sample, 0.0), axis=-1)
    variance = np.where(missing, np.inf, np.maximum(second_moment - (p_target @ r) ** 2, 0.0))
    return _out(variance)


def importance_weighted_jhat_distribution(p_target, p_sample, rewards, G: int):
    """The exact law of J-hat = (1/G) sum_i w(y_i) r(y_i), y_i ~ p_sample iid (chapter 10).

    Returns ``(values, probs)``, sorted by value. Built by convolving the law of one term G times
    (values equal to 12 decimals are merged), so it is exact for any rewards; with one rewarded
    answer y* it is J-hat = w(y*) k / G, k ~ Binomial(G, p_sample(y*)).
    """
    p_target, p_sample, r = _is_inputs(p_target, p_sample, rewards)
    G = integer_at_least(G, "G", 1)
    if np.any(p_sample[p_target * r != 0] == 0):
        raise ValueError("p_sample must be > 0 wherever p_target * rewards is non-zero "
                         "(otherwise the importance-weighted estimate cannot reach J)")
    drawn = p_sample > 0
    term = p_target[drawn] / p_sample[drawn] * r[drawn]
    one = _merge(term, p_sample[drawn])
    total = {0.0: 1.0}
    for _ in range(G):
        pairs = [(s + v, ps * pv) for s, ps in total.items() for v, pv in one.items()]
        total = _merge(np.array([s for s, _ in pairs]), np.array([p for _, p in pairs]))
    values = np.array(sorted(total))
    return values / G, np.array([total[v] for v in values])


def importance_weighted_jhat_samples(p_target, p_sample, rewards, G: int, n_groups: int,
                                     seed: int) -> np.ndarray:
    """``n_groups`` sampled estimates J-hat = (1/G) sum_i w(y_i) r(y_i), y_i ~ p_sample (chapter 10).

    Seeded (``np.random.default_rng(seed)``); shape (n_groups,). With p_sample = p_target this is the
    plain on-policy Monte Carlo estimate.
    """
    p_target, p_sample, r = _is_inputs(p_target, p_sample, rewards)
    rng = np.random.default_rng(integer_at_least(seed, "seed", 0))
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


def _is_inputs(p_target, p_sample, rewards, batch: bool = False):
    p_target = probability_array(p_target, "p_target")
    p_sample = probability_array(p_sample, "p_sample")
    r = as_float_array(rewards, "rewards")
    same_shape(p_target, p_sample, "p_target", "p_sample")
    if r.ndim != 1 or r.size != p_target.shape[-1]:
        raise ValueError(f"p_target and rewards must have the same last axis (one reward per answer), "
                         f"got shapes {p_target.shape} and {r.shape}")
    if p_target.ndim != 1 and not batch:
        raise ValueError(f"p_target must be a 1-D probability vector, got shape {p_target.shape}")
    return p_target, p_sample, r


def with_correct_mass(p, correct: int, mass):
    """p with p(correct) set to ``mass`` and the other answers rescaled in their old proportions.

    Chapter 10's drift pair: the toy (0.1, 0.4, 0.2, 0.2, 0.1) with pi(5) moved to 0.05 (old) and
    to 0.5 (new), every wrong answer keeping its share of the remaining mass. A scalar ``mass``
    gives one policy (n,); an array of M masses gives M policies (M, n).
    """
    p = probability_array(p, "p")
    if p.ndim != 1:
        raise ValueError(f"p must be a 1-D probability vector, got shape {p.shape}")
    correct = index_in_range(correct, "correct", p.size)
    masses = as_float_array(mass, "mass", ndim_min=0)
    if masses.ndim > 1 or np.any(masses <= 0) or np.any(masses >= 1):
        raise ValueError(f"mass must be a number (or 1-D array) in (0, 1), got {mass!r}")
    rest = 1.0 - p[correct]
    if rest <= 0:
        raise ValueError("p must put some mass outside `correct` (to rescale it), got p(correct) = 1")
    out = p * (1.0 - masses[..., None]) / rest
    out[..., correct] = masses
    return out


def drift_variance_ratio(new_masses, old_mass: float = 0.05) -> np.ndarray:
    """Chapter 10's curve: per-sample variance of the reweighted J-hat over the on-policy one.

    For each pi_new(5) in ``new_masses`` (toy-shaped policies, ``with_correct_mass``), estimating
    J = pi_new(5) from draws of the toy-shaped pi_old with pi_old(5) = ``old_mass``. Equals 1 where
    the two agree; 19 at pi_new(5) = 0.5 from 0.05.
    """
    p_old = with_correct_mass(softmax(LOGITS), CORRECT, old_mass)
    p_new = with_correct_mass(softmax(LOGITS), CORRECT, new_masses)
    if p_new.ndim != 2:
        raise ValueError(f"new_masses must be a 1-D array of masses in (0, 1), got {new_masses!r}")
    stale = importance_weighted_variance(p_new, np.broadcast_to(p_old, p_new.shape), REWARDS)
    return stale / importance_weighted_variance(p_new, p_new, REWARDS)


# --------------------------------------------------------------------------- the leash: KL, TRPO
def policy_kl(p_logits, q_logits) -> float:
    """KL(softmax(p) || softmax(q)) between two tabular policies given by their logits (chapter 11).

    The trust region measures KL(pi_old || pi_new): ``policy_kl(old_logits, new_logits)``.
    """
    return kl_divergence(softmax(logits_vector(p_logits, "p_logits")), softmax(logits_vector(q_logits, "q_logits")))


def fisher_matrix(logits) -> np.ndarray:
    """Fisher information of a tabular softmax policy in its logits (chapter 11).

    F = diag(pi) - pi pi^T = E_y[score(y) score(y)^T], the curvature of the KL at
    zero step: KL(pi_z || pi_{z + d}) = (1/2) d^T F d + O(|d|^3). F is singular:
    F 1 = pi - pi (sum_y pi(y)) = 0, because adding one constant to every logit
    leaves pi unchanged. With every pi(y) > 0 that is its only null direction
    (rank n - 1), so F has no inverse, only a pseudo-inverse F^+.
    """
    pi = softmax(logits_vector(logits, "logits"))
    return np.diag(pi) - np.outer(pi, pi)


def conjugate_gradient(matrix, b, iters: int = 10, tol: float = 1e-10) -> np.ndarray:
    """Solve matrix x = b by conjugate gradients, using only matrix @ v (chapter 11).

    TRPO never forms the Fisher matrix of a large network; it only multiplies
    by it, which is all this method needs. Started from x = 0, every iterate is
    a combination of b, A b, A^2 b, ..., so for a positive semi-definite matrix
    A and b in its range it stays in that range and converges to the
    minimum-norm solution A^+ b (the pseudo-inverse). For b outside the range
    there is no solution and the iterates blow up. ``iters`` caps the work
    (TRPO typically uses about 10).
    """
    A = as_float_array(matrix, "matrix", ndim_min=2)
    b = as_float_array(b, "b")
    if A.ndim != 2 or A.shape != (b.size, b.size):
        raise ValueError(f"matrix must be square, shaped ({b.size}, {b.size}) to match b, got {A.shape}")
    iters = integer_at_least(iters, "iters", 1)
    tol = positive_real(tol, "tol")
    x = np.zeros_like(b)
    residual = b.copy()
    direction = residual.copy()
    rr = residual @ residual
    for _ in range(iters):
        if rr < tol:
            break
        Ad = A @ direction
        alpha = rr / (direction @ Ad)
        x += alpha * direction
        residual -= alpha * Ad
        rr_new = residual @ residual
        direction = residual + (rr_new / rr) * direction
        rr = rr_new
    return x


@checked(same_shapes("logits", "gradient"), logits=logits_vector, gradient=as_float_array, delta=positive_real,
         backtrack=in_range(0.0, 1.0, low_open=True, high_open=True), max_backtracks=at_least(0))
def trust_region_step(logits, gradient, delta: float, backtrack: float = 0.8,
                      max_backtracks: int = 10) -> dict:
    """One TRPO step on a tabular softmax policy (chapter 11).

    Maximise g^T d subject to KL(pi_z || pi_{z+d}) <= delta, approximately:
    1. natural direction s = F^+ g, with F = ``fisher_matrix`` and F^+ its
       pseudo-inverse. F is singular (F 1 = 0: shifting every logit by one
       constant leaves pi unchanged), so F s = g has a line of solutions
       s + c 1, all the same policy step; F^+ g is the one orthogonal to 1.
       Computed by conjugate gradients from s = 0 on g minus its mean (F^+
       ignores g's all-ones part, and a policy gradient has none): the
       iterates then never leave the subspace orthogonal to 1;
    2. the largest step that meets the quadratic KL model:
       d = sqrt(2 delta / s^T F s) s;
    3. line search: shrink d by ``backtrack`` until the exact KL is <= delta
       (full TRPO also requires the surrogate to improve; this checks the KL).
    Returns the new logits, the exact KL, the step fraction kept and the
    backtracks used (fraction 0 and the old logits if no step met the bound).
    """
    z, g = logits, gradient
    F = fisher_matrix(z)
    s = conjugate_gradient(F, g - g.mean(), iters=z.size)     # s = F^+ g
    curvature = float(s @ F @ s)
    if curvature <= 0:
        return {"logits": z.copy(), "kl": 0.0, "fraction": 0.0, "backtracks": 0}
    step = np.sqrt(2.0 * delta / curvature) * s
    fraction = 1.0
    for n in range(max_backtracks + 1):
        kl = policy_kl(z, z + fraction * step)
        if kl <= delta:
            return {"logits": z + fraction * step, "kl": kl,
                    "fraction": fraction, "backtracks": n}
        fraction *= backtrack
    return {"logits": z.copy(), "kl": 0.0,
            "fraction": 0.0, "backtracks": max_backtracks}


# --------------------------------------------------------------------------- PPO's clip
def _ratio(ratio, name):
    rho = as_float_array(ratio, name, ndim_min=0)
    if np.any(rho < 0):
        raise ValueError(f"{name} must be >= 0 (a ratio of probabilities), got {ratio!r}")
    return rho


def _advantage(advantage, name):
    return as_float_array(advantage, name, ndim_min=0)


#: PPO's clip: a ratio and an advantage of one shape, and a clip range.
_CLIP = {"ratio": _ratio, "advantage": _advantage}


@checked(same_shapes("ratio", "advantage"), clip_range("eps", "eps_high"), **_CLIP)
def clipped_objective(ratio, advantage, eps, eps_high=None):
    """PPO's clipped surrogate, elementwise (chapter 11), to be maximised:

    min(rho A, clip(rho, 1 - eps, 1 + eps_high) A).

    ``eps_high`` defaults to ``eps`` (DAPO's clip-higher sets it larger). With
    eps = 0.2: A = +0.8, rho = 2 gives 0.96 (capped); A = -0.2 gives -0.16 at
    rho = 0.5 (capped) and -0.40 at rho = 2 (not capped). Scalars in, float
    out; arrays in, array out.
    """
    rho, A = ratio, advantage
    return _out(np.minimum(rho * A, np.clip(rho, 1.0 - eps, 1.0 + eps_high) * A))


@checked(same_shapes("ratio", "advantage"), clip_range(), **_CLIP)
def clip_binds(ratio, advantage, eps_low, eps_high=None) -> np.ndarray:
    """Where the clip is the active term of the min, so the gradient is 0 (chapter 11).

    True iff rho > 1 + eps_high with A > 0 (a good answer already pushed up
    enough), or rho < 1 - eps_low with A < 0 (a bad answer already pushed down
    enough). Never on the side that corrects the ratio back toward 1.
    """
    return clip_binds_mask(ratio, advantage, eps_low, eps_high)


def clip_binds_mask(rho, A, low: float, high: float):
    """``clip_binds`` on trusted inputs, numpy arrays or torch tensors alike: the one definition of
    where PPO's clip binds, which the toy loops and ``grpo_loss`` use."""
    return ((rho > 1.0 + high) & (A > 0)) | ((rho < 1.0 - low) & (A < 0))


@checked(same_shapes("ratio", "advantage"), clip_range("eps", "eps_high"), **_CLIP)
def clipped_objective_grad(ratio, advantage, eps, eps_high=None):
    """d/d rho of ``clipped_objective`` (chapter 11).

    A where the unclipped term rho A is active, 0 where the clip binds. At the
    band's edge (rho = 1 +- eps exactly) both terms agree and the value is A,
    the derivative from inside the band.
    """
    return _out(np.where(clip_binds_mask(ratio, advantage, eps, eps_high), 0.0, advantage))


def clip_fraction(ratio, advantage, eps_low, eps_high=None) -> float:
    """Share of samples where the clip binds (see ``clip_binds``): PPO's diagnostic (chapter 11).

    Counts only binding clips, as TRL's GRPO logs its clip ratio. CleanRL's PPO logs
    mean(|rho - 1| > eps) instead, which also counts ratios outside the band on the side the
    clip leaves alone (rho < 1 - eps with A > 0, rho > 1 + eps with A < 0), so it is never
    smaller than this.
    """
    return float(np.mean(clip_binds(ratio, advantage, eps_low, eps_high)))


# --------------------------------------------------------------------------- the toy group surrogate
def _group(args):
    """Relation: a group of G answer indices into the logits, one advantage each."""
    z = args["logits"]
    if "old_logits" in args:
        same_shape(z, args["old_logits"], "logits", "old_logits")
    ys = args["samples"] = sample_indices(args["samples"], z.size)
    if ys.ndim != 1:
        raise ValueError(f"samples must be a 1-D array of G answer indices, got shape {ys.shape}")
    same_shape(ys, args["advantages"], "samples", "advantages")


#: A toy group: the policy's logits (and the old policy's), its answers and their advantages.
_GROUP = {"logits": logits_vector, "old_logits": logits_vector, "advantages": as_float_array}


@checked(_group, clip_range(), **_GROUP)
def clipped_surrogate(logits, old_logits, samples, advantages, eps_low, eps_high=None) -> float:
    """The group surrogate L(z) = (1/G) sum_i min(rho_i A_i, clip(rho_i, 1 - eps_low, 1 + eps_high) A_i).

    rho_i = pi(y_i) / pi_old(y_i) with pi = softmax(logits), pi_old = softmax(old_logits) (chapter 11).
    """
    rho = importance_ratios(logits, old_logits)[samples]
    return float(np.mean(clipped_objective(rho, advantages, eps_low, eps_high)))


@checked(_group, clip_range(), **_GROUP)
def clipped_surrogate_gradient(logits, old_logits, samples, advantages, eps_low,
                               eps_high=None) -> np.ndarray:
    """grad_z of ``clipped_surrogate`` for a tabular softmax policy (chapter 11).

    Chain rule through rho_i = pi(y_i) / pi_old(y_i):
    d rho_i / dz = rho_i score(z, y_i), with score(z, y) = onehot(y) - pi the
    score of chapter 7, so

        grad L = (1/G) sum_i c_i rho_i (onehot(y_i) - pi),

    with c_i = ``clipped_objective_grad`` (A_i, or 0 where the clip binds). At
    z = z_old every rho_i = 1, nothing binds, and this is the REINFORCE
    gradient (1/G) sum_i A_i score(y_i).
    """
    return _surrogate_gradient(logits, log_softmax(old_logits), samples, advantages, eps_low, eps_high)


def _surrogate_gradient(z, old_logp, ys, A, eps_low, eps_high) -> np.ndarray:
    """``clipped_surrogate_gradient`` on checked inputs, given ln pi_old.

    All G samples at once: row i of ``scores`` is score(z, y_i) = onehot(y_i) - pi.
    """
    logp = log_softmax(z)
    rho = np.exp(logp[ys] - old_logp[ys])       # importance_ratios(z, z_old)[ys]
    weight = clipped_objective_grad(rho, A, eps_low, eps_high) * rho
    scores = np.eye(z.size)[ys] - np.exp(logp)
    return weight @ scores / ys.size


@checked(_group, logits=logits_vector, advantages=as_float_array, eps=clip_width, lr=positive_real, K=at_least(1))
def ppo_inner_steps(logits, samples, advantages, eps: float, lr: float, K: int) -> dict:
    """K clipped gradient-ascent steps on ONE fixed group, from frozen old logits (chapter 11).

    z_0 = z_old = ``logits`` (the policy that drew ``samples``); z_{k+1} = z_k + lr grad L(z_k), with
    L the ``clipped_surrogate`` against the frozen z_old (eps_high = eps). Row k of each array is
    the state after k inner steps (row 0: before any step, so KL 0, clip fraction 0, every ratio 1):

    - ``logits`` (K+1, n), ``probs`` (K+1, n), ``ratios`` (K+1, G): rho_i at z_k;
    - ``kl`` (K+1,): KL(pi_old || pi_k) = -sum_y pi_old(y) ln rho_k(y), the leash TRPO would constrain;
    - ``clip_fraction`` (K+1,): share of the group where the clip binds at z_k;
    - ``surrogate`` (K+1,): L(z_k).
    """
    z_old, ys, A, low, high = logits, samples, advantages, eps, eps
    old_logp = log_softmax(z_old)
    path = [z_old]
    for _ in range(K):
        path.append(path[-1] + lr * _surrogate_gradient(path[-1], old_logp, ys, A, low, high))
    path = np.array(path)
    all_ratios = importance_ratios(path, np.broadcast_to(z_old, path.shape))
    ratios = all_ratios[:, ys]
    advantages_per_row = np.broadcast_to(A, ratios.shape)
    return {
        "logits": path,
        "probs": softmax(path),
        "ratios": ratios,
        "kl": np.maximum(-(np.log(all_ratios) @ softmax(z_old)), 0.0),
        "clip_fraction": clip_binds(ratios, advantages_per_row, low, high).mean(axis=1),
        "surrogate": clipped_objective(ratios, advantages_per_row, low, high).mean(axis=1),
    }
