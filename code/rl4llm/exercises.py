"""Auto-checks for the coding exercises: ``check(exercise_id, answer)`` (groundwork for the course's
exercises; chapters 4, 7, 11, 12, 13). It imports torch, through rl4llm.grpo.

A student writes a function with the signature of the library function of the same name (for
example ``policy_gradient(logits, rewards)``) and calls ``check("policy_gradient", my_function)``.
The check runs the student's function beside the library's reference on the toy and on seeded
random cases. A correct function gets a one-line confirmation. A wrong one gets the first
diagnosis that explains every case (the sign flipped, a missing baseline, the std with the wrong
ddof or its eps in the wrong place, per-token instead of per-sequence aggregation, GAE's
discounting off by one, the clip on the wrong side for a negative advantage, a factor of G...),
or else the first case where it differs, with both values. It never raises on a wrong or crashing
answer: the exception is reported in the message. The message is returned and printed.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

from .credit import gae
from .distributions import softmax
from .gradients import policy_gradient, score, sft_gradient
from .grpo import group_advantages
from .reuse import clipped_objective
from .toy import LOGITS, REWARDS


@dataclass(frozen=True)
class _Exercise:
    chapter: int
    reference: Callable
    cases: Callable[[], list[tuple]]          # each case: the positional arguments
    mistakes: tuple[tuple[str, Callable], ...]


def _toy_and_random(extra: Callable[[np.random.Generator], tuple]) -> Callable[[], list[tuple]]:
    def cases():
        rng = np.random.default_rng(0)
        return [extra(None)] + [extra(rng) for _ in range(4)]
    return cases


def _logits_rewards(rng):
    if rng is None:
        return LOGITS, REWARDS
    K = int(rng.integers(3, 7))
    return rng.normal(size=K), rng.integers(0, 2, size=K).astype(float) + rng.normal(scale=0.1, size=K)


def _logits_token(rng):
    if rng is None:
        return LOGITS, 2
    K = int(rng.integers(3, 7))
    return rng.normal(size=K), int(rng.integers(K))


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


EXERCISES_SPEC: dict[str, _Exercise] = {
    "sft_gradient": _Exercise(4, sft_gradient, _toy_and_random(_logits_token), (
        ("the sign is flipped: that is onehot(target) - pi, the direction that lowers the loss fastest "
         "(the score, chapter 7), not the gradient of the loss", lambda z, t: -sft_gradient(z, t)),
        ("the onehot(target) term is missing: the gradient of -ln pi(target) is pi - onehot(target)",
         lambda z, t: softmax(z)),
    )),
    "score": _Exercise(7, score, _toy_and_random(_logits_token), (
        ("the sign is flipped: grad ln pi(y) is onehot(y) - pi (pi - onehot(y) is the SFT loss's gradient)",
         lambda z, y: -score(z, y)),
        ("the -pi term is missing: softmax couples every logit, so grad ln pi(y) = onehot(y) - pi",
         lambda z, y: np.eye(len(z))[y]),
    )),
    "policy_gradient": _Exercise(7, policy_gradient, _toy_and_random(_logits_rewards), (
        ("the sign is flipped: that is the descent direction; grad J = pi * (r - J) points uphill",
         lambda z, r: -policy_gradient(z, r)),
        ("the baseline is missing: pi * r is not the gradient; subtract J = sum pi r from r first "
         "(the entries of grad J sum to zero)", lambda z, r: softmax(z) * np.asarray(r, float)),
        ("the weight pi is missing: each token's term is pi(y) (r(y) - J), not r(y) - J",
         lambda z, r: np.asarray(r, float) - softmax(z) @ np.asarray(r, float)),
    )),
    "group_advantages": _Exercise(13, lambda r: group_advantages(r), _toy_and_random(_group_rewards), (
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
    "gae": _Exercise(12, gae, _toy_and_random(_episode), (
        ("the discounting is off by one: A_t = delta_t + gamma lambda A_{t+1}, so delta_t itself gets weight "
         "1, not gamma lambda", lambda r, v, g, l: _gae_variant(r, v, g, l, shift=1)),
        ("lambda is missing from the recursion: A_t = delta_t + gamma * lambda * A_{t+1}",
         lambda r, v, g, l: _gae_variant(r, v, g, l, use_lam=False)),
        ("gamma is missing from the recursion: A_t = delta_t + gamma * lambda * A_{t+1}",
         lambda r, v, g, l: _gae_variant(r, v, g, l, use_gamma=False)),
    )),
    "clipped_objective": _Exercise(11, clipped_objective, _toy_and_random(_ratios_advantages), (
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
    from .grpo import grpo_loss
    return float(grpo_loss(*args, **kwargs)[0])


EXERCISES_SPEC["grpo_loss"] = _Exercise(13, _grpo_loss_value, _toy_and_random(_loss_batch), (
    ("the sign is flipped: grpo_loss returns the NEGATED clipped objective, a loss to minimise",
     lambda *a: -_grpo_loss_value(*a)),
    ("the aggregation is per token over the whole batch (bnpo/dapo); loss_type 'grpo' averages each "
     "sequence over its own tokens first, then averages the sequences", lambda *a: _grpo_loss_value(*a, loss_type="bnpo")),
    ("the padding is counted: average over the unmasked tokens only (the mask)",
     lambda lp, old, adv, mask: _grpo_loss_value(lp, old, adv, mask.new_ones(mask.shape))),
))

#: Every exercise id with its chapter.
EXERCISES: dict[str, int] = {name: spec.chapter for name, spec in EXERCISES_SPEC.items()}


def check(exercise_id: str, answer) -> str:
    """Check a student's function ``answer`` for ``exercise_id``; return (and print) the verdict."""
    if exercise_id not in EXERCISES_SPEC:
        raise ValueError(f"exercise_id must be one of {sorted(EXERCISES_SPEC)}, got {exercise_id!r}")
    message = _verdict(EXERCISES_SPEC[exercise_id], answer)
    print(message)
    return message


def _verdict(spec: _Exercise, answer) -> str:
    if not callable(answer):
        return f"Not yet: the answer should be a function, got {type(answer).__name__}."
    cases = spec.cases()
    outputs = []
    for args in cases:
        try:
            out = answer(*args)
            out = out[0] if isinstance(out, tuple) else out          # grpo_loss returns (loss, stats)
            outputs.append(np.asarray(out.detach() if hasattr(out, "detach") else out, dtype=float))
        except Exception as err:      # a student's crash is reported, never raised
            return f"Not yet: your function raised {type(err).__name__}: {err} (on arguments {_show(args)})."
    expected = [np.asarray(spec.reference(*args), dtype=float) for args in cases]
    if all(_close(o, e) for o, e in zip(outputs, expected)):
        return f"Correct: your function matches the reference on the toy and on {len(cases) - 1} random cases."
    for explanation, mistake in spec.mistakes:
        if all(_close(o, np.asarray(mistake(*args), dtype=float)) for o, args in zip(outputs, cases)):
            return f"Not yet: {explanation}."
    factor = _common_factor(outputs, expected)
    if factor is not None:
        return f"Not yet: your values are the reference's times {factor:g} on every case (a stray factor)."
    i = next(i for i, (o, e) in enumerate(zip(outputs, expected)) if not _close(o, e))
    return (f"Not yet: on arguments {_show(cases[i])} the reference gives {np.round(expected[i], 4).tolist()} "
            f"and yours {np.round(outputs[i], 4).tolist()}.")


def _close(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and bool(np.allclose(a, b, rtol=1e-6, atol=1e-9))


def _common_factor(outputs, expected) -> float | None:
    """c if every output is c times its reference (c != 1), else None."""
    ratios = []
    for o, e in zip(outputs, expected):
        if o.shape != e.shape or not np.any(np.abs(e) > 1e-9):
            return None
        k = np.argmax(np.abs(e))
        ratios.append(o.flat[k] / e.flat[k])
    c = ratios[0]
    if not math.isfinite(c) or abs(c - 1) < 1e-9 or abs(c) < 1e-12:
        return None
    return c if all(_close(o, c * e) for o, e in zip(outputs, expected)) else None


def _show(args) -> str:
    return ", ".join(np.array2string(np.asarray(a), precision=3) if np.ndim(a) else f"{a:g}" for a in args)
