"""TRL's adaptive entropy control on chapter 13's toy (chapter 18).

Each outer step is one step of :func:`rl4llm.studies.toy_grpo.grpo_toy_run` (G answers, K inner steps) with
the entropy bonus the controller applies at that step: the controller of
:func:`rl4llm.math.entropy.adaptive_entropy_step`, fed the exact entropy of the sampling policy. It updates
once per outer step (TRL updates once per optimizer step, which is the same at K = 1); the K inner steps
of an outer step share one coefficient.
"""
from __future__ import annotations

import math

import numpy as np

from .._checks import at_least, checked, in_range, positive_real
from ..math.distributions import entropy, softmax
from ..math.entropy import adaptive_entropy_step
from ..toy.five_token import CORRECT, LOGITS
from .toy_grpo import grpo_toy_run

_NONNEGATIVE = in_range(0.0, math.inf)


@checked(target=_NONNEGATIVE, delta=_NONNEGATIVE, coef=_NONNEGATIVE, coef_max=_NONNEGATIVE, G=at_least(2),
         steps=at_least(1), K=at_least(1), lr=positive_real, seed=at_least(0))
def adaptive_entropy_toy_run(target: float, delta: float, coef: float = 0.0, coef_max: float = 1.0, G: int = 8,
                             steps: int = 8, K: int = 4, lr: float = 0.5, seed: int = 0) -> dict:
    """The toy trained ``steps`` outer steps under adaptive entropy control (``coef_min`` 0). Outer step t
    draws its group with the seed ``seed * 1_000_003 + t``. Returns arrays over t = 0..steps:
    ``pi_correct`` and ``entropy``; and over the steps: ``applied`` (the coefficient each step's loss used)
    and ``coef`` (the coefficient after each step's update)."""
    z, last = LOGITS.copy(), math.inf
    path, applied, coefs = [z], [], []
    for t in range(steps):
        measured = entropy(softmax(z))
        used, coef = adaptive_entropy_step(coef, last, measured, target, delta, 0.0, coef_max)
        last = measured
        z = grpo_toy_run(G=G, steps=1, K=K, lr=lr, entropy_coef=used, seed=seed * 1_000_003 + t, logits=z)["logits"][-1]
        path.append(z)
        applied.append(used)
        coefs.append(coef)
    probs = softmax(np.array(path))
    return {"pi_correct": probs[:, CORRECT], "entropy": np.array([entropy(p) for p in probs]),
            "applied": np.array(applied), "coef": np.array(coefs)}
