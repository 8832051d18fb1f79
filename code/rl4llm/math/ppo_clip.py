"""PPO's clip: the clipped surrogate, where the clip binds, and K clipped steps on one toy group (chapter 11).

Notation: a group of G answers y_1..y_G was drawn from pi_old = softmax(z_old); after some updates the
policy is pi = softmax(z). rho(y) = pi(y) / pi_old(y), A_i the advantage of sample i. Everything here is an
objective to MAXIMISE (gradient ascent).
"""
from __future__ import annotations

import numpy as np

from .._checks import (as_float_array, at_least, checked, clip_range, clip_width, logits_vector, positive_real,
                      same_shape, same_shapes, sample_indices, scalar_or_array)
from .distributions import log_softmax, softmax
from .importance_sampling import importance_ratios
from ..toy.five_token import REWARDS

#: Chapter 11's fixed toy group of G = 8 answers drawn from the toy policy: 4, 4, 5, 6, 4, 0, 5, 15
#: (two correct out of eight, close to the toy's 0.2).
TOY_GROUP = np.array([1, 1, 2, 3, 1, 0, 2, 4])
#: Its group-mean advantages r_i - mean(r): +0.75 for each 5, -0.25 for every other answer.
TOY_GROUP_ADVANTAGES = REWARDS[TOY_GROUP] - REWARDS[TOY_GROUP].mean()


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
    return scalar_or_array(np.minimum(rho * A, np.clip(rho, 1.0 - eps, 1.0 + eps_high) * A))


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
    return scalar_or_array(np.where(clip_binds_mask(ratio, advantage, eps, eps_high), 0.0, advantage))


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
    return surrogate_gradient(logits, log_softmax(old_logits), samples, advantages, eps_low, eps_high)


def surrogate_gradient(z, old_logp, ys, A, eps_low, eps_high) -> np.ndarray:
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
        path.append(path[-1] + lr * surrogate_gradient(path[-1], old_logp, ys, A, low, high))
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
