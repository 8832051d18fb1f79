"""Checked exercises of Part III (chapters 10-13): reusing samples, trust regions, GRPO."""
from __future__ import annotations

import numpy as np

from ..credit import gae
from ..grpo import group_advantages
from ..reuse import clipped_objective
from ._core import FunctionExercise, NumericExercise, toy_and_random


def _group_rewards(rng):
    if rng is None:      # the toy's group, and a nearly flat one (where eps's place shows)
        return (np.array([[0.0, 1.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0 + 1e-6]]),)
    return (rng.integers(0, 2, size=(3, 6)).astype(float) + rng.normal(scale=0.2, size=(3, 6)),)


def _episode(rng):
    if rng is None:
        return np.array([0.0, 0.0, 1.0]), np.array([0.5, 0.6, 0.7]), 0.9, 0.5
    T = int(rng.integers(3, 7))
    return rng.normal(size=T), rng.normal(size=T), float(rng.uniform(0.5, 1.0)), float(rng.uniform(0.1, 0.9))


def _ratios_advantages(rng):
    if rng is None:
        return np.array([0.5, 1.0, 2.0, 0.5, 2.0]), np.array([0.8, 0.8, 0.8, -0.2, -0.2]), 0.2
    return rng.uniform(0.3, 2.0, size=8), rng.normal(size=8), 0.2


def _std_advantages(rewards, ddof, where):
    r = np.asarray(rewards, dtype=float)
    centred = r - r.mean(axis=-1, keepdims=True)
    if where == "sqrt":
        return centred / np.sqrt(r.var(axis=-1, ddof=ddof, keepdims=True) + 1e-8)
    return centred / (r.std(axis=-1, ddof=ddof, keepdims=True) + 1e-8)


def _gae_variant(rewards, values, gamma, lam, shift=0, use_lam=True, use_gamma=True):
    r, v = np.asarray(rewards, float), np.asarray(values, float)
    nxt = np.append(v[1:], 0.0)
    delta = r + gamma * nxt - v
    decay = (gamma if use_gamma else 1.0) * (lam if use_lam else 1.0)
    out, running = np.empty_like(delta), 0.0
    for t in range(len(delta) - 1, -1, -1):
        running = delta[t] + decay * running
        out[t] = running
    return out * decay if shift else out


def _clip_wrong_side(ratio, advantage, eps):
    rho, A = np.asarray(ratio, float), np.asarray(advantage, float)
    upper = np.minimum(rho, 1 + eps) * A
    lower = np.maximum(rho, 1 - eps) * A
    return np.where(A >= 0, np.minimum(rho * A, upper), np.minimum(rho * A, lower))


SPECS: dict[str, FunctionExercise | NumericExercise] = {
    "group_advantages": FunctionExercise(13, lambda r: group_advantages(r), toy_and_random(_group_rewards), (
        ("the std uses ddof=1 (the sample std, TRL's choice); the book's default is ddof=0, the population "
         "std", lambda r: _std_advantages(r, 1, "outside")),
        ("eps is in the wrong place: it is added to the std, (r - mean) / (std + eps), not inside the square "
         "root", lambda r: _std_advantages(r, 0, "sqrt")),
        ("the baseline is missing: subtract the group's mean reward before dividing by its std",
         lambda r: np.asarray(r, float) / (np.asarray(r, float).std(axis=-1, keepdims=True) + 1e-8)),
        ("the division by the group's std is missing (that is Dr. GRPO's r - mean, scale=False)",
         lambda r: np.asarray(r, float) - np.asarray(r, float).mean(axis=-1, keepdims=True)),
        ("the mean and std are taken over the whole batch, not within each group (the last axis)",
         lambda r: (np.asarray(r, float) - np.mean(r)) / (np.std(r) + 1e-8)),
    )),
    "gae": FunctionExercise(12, gae, toy_and_random(_episode), (
        ("the discounting is off by one: A_t = delta_t + gamma lambda A_{t+1}, so delta_t itself gets weight "
         "1, not gamma lambda", lambda r, v, g, l: _gae_variant(r, v, g, l, shift=1)),
        ("lambda is missing from the recursion: A_t = delta_t + gamma * lambda * A_{t+1}",
         lambda r, v, g, l: _gae_variant(r, v, g, l, use_lam=False)),
        ("gamma is missing from the recursion: A_t = delta_t + gamma * lambda * A_{t+1}",
         lambda r, v, g, l: _gae_variant(r, v, g, l, use_gamma=False)),
    )),
    "clipped_objective": FunctionExercise(11, clipped_objective, toy_and_random(_ratios_advantages), (
        ("the clip is on the wrong side for a negative advantage: with A < 0 the bound that matters is "
         "rho < 1 - eps (min(rho A, clip(rho) A) picks it)", _clip_wrong_side),
        ("max instead of min: PPO keeps the pessimistic (smaller) of rho A and clip(rho) A",
         lambda p, a, e: np.maximum(np.asarray(p) * a, np.clip(p, 1 - e, 1 + e) * np.asarray(a))),
        ("the unclipped term is missing: the objective is min(rho A, clip(rho) A), not clip(rho) A",
         lambda p, a, e: np.clip(p, 1 - e, 1 + e) * np.asarray(a)),
    )),
}

def _loss_batch(rng):
    import torch
    gen = np.random.default_rng(0) if rng is None else rng
    B, T = 6, 5
    lengths = gen.integers(1, T + 1, size=B)
    mask = (np.arange(T)[None, :] < lengths[:, None]).astype(np.float32)
    logp = gen.normal(-1.0, 0.3, size=(B, T)).astype(np.float32)
    old = (logp + gen.normal(0.0, 0.3, size=(B, T))).astype(np.float32)
    adv = gen.normal(size=B).astype(np.float32)
    return tuple(torch.as_tensor(x) for x in (logp, old, adv, mask))


def _grpo_loss_value(*args, **kwargs) -> float:
    from ..grpo import grpo_loss
    return float(grpo_loss(*args, **kwargs)[0])


SPECS["grpo_loss"] = FunctionExercise(13, _grpo_loss_value, toy_and_random(_loss_batch), (
    ("the sign is flipped: grpo_loss returns the NEGATED clipped objective, a loss to minimise",
     lambda *a: -_grpo_loss_value(*a)),
    ("the aggregation is per token over the whole batch (bnpo/dapo); loss_type 'grpo' averages each "
     "sequence over its own tokens first, then averages the sequences", lambda *a: _grpo_loss_value(*a, loss_type="bnpo")),
    ("the padding is counted: average over the unmasked tokens only (the mask)",
     lambda lp, old, adv, mask: _grpo_loss_value(lp, old, adv, mask.new_ones(mask.shape))),
))
