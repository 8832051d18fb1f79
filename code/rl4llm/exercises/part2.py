"""Checked exercises of Part II (chapters 6-9): the RL core."""
from __future__ import annotations

import numpy as np

from ..distributions import softmax
from ..gradients import expected_reward, policy_gradient, score
from ..toy import LOGITS, REWARDS, VOCAB
from ._core import FunctionExercise, NumericExercise, toy_and_random


def _logits_token(rng):
    if rng is None:
        return LOGITS, 2
    K = int(rng.integers(3, 7))
    return rng.normal(size=K), int(rng.integers(K))


def _logits_rewards(rng):
    if rng is None:
        return LOGITS, REWARDS
    K = int(rng.integers(3, 7))
    return rng.normal(size=K), rng.integers(0, 2, size=K).astype(float) + rng.normal(scale=0.1, size=K)


#: Chapter 7's lenient verifier: 1 for "5", 0.5 for "15" (the digits of 5 with a stray 1), else 0.
PARTIAL_CREDIT = np.array([0.0, 0.0, 1.0, 0.0, 0.5])
_FIFTEEN = VOCAB.index("15")
_PI = softmax(LOGITS)


def _partial_credit_mistakes() -> tuple[tuple[float, str], ...]:
    pi, r = _PI[_FIFTEEN], PARTIAL_CREDIT[_FIFTEEN]
    J = expected_reward(LOGITS, PARTIAL_CREDIT)
    return (
        (-pi * (r - J), "the sign is flipped: dJ/dz(15) = pi(15) (r(15) - J), and r(15) = 0.5 is above J = 0.25"),
        (pi * r, "the baseline is missing: pi(15) r(15) is not the derivative; subtract J = 0.25 from r(15) first"),
        (pi * (1 - pi) * r, "only the own-logit term pi(15) (1 - pi(15)) r(15) is there; raising z(15) also "
                            "lowers pi(5), which costs pi(15) pi(5) r(5)"),
        (J, "that is J itself; the question asks for the derivative dJ/dz(15) = pi(15) (r(15) - J)"),
    )


SPECS: dict[str, FunctionExercise | NumericExercise] = {
    "ex-ch07-partial-credit": NumericExercise(
        7, "dJ/dz(15) under the lenient verifier", float(policy_gradient(LOGITS, PARTIAL_CREDIT)[_FIFTEEN]),
        5e-4, _partial_credit_mistakes()),
    "score": FunctionExercise(7, score, toy_and_random(_logits_token), (
        ("the sign is flipped: grad ln pi(y) is onehot(y) - pi (pi - onehot(y) is the SFT loss's gradient)",
         lambda z, y: -score(z, y)),
        ("the -pi term is missing: softmax couples every logit, so grad ln pi(y) = onehot(y) - pi",
         lambda z, y: np.eye(len(z))[y]),
    )),
    "policy_gradient": FunctionExercise(7, policy_gradient, toy_and_random(_logits_rewards), (
        ("the sign is flipped: that is the descent direction; grad J = pi * (r - J) points uphill",
         lambda z, r: -policy_gradient(z, r)),
        ("the baseline is missing: pi * r is not the gradient; subtract J = sum pi r from r first "
         "(the entries of grad J sum to zero)", lambda z, r: softmax(z) * np.asarray(r, float)),
        ("the weight pi is missing: each token's term is pi(y) (r(y) - J), not r(y) - J",
         lambda z, r: np.asarray(r, float) - softmax(z) @ np.asarray(r, float)),
    )),
}
