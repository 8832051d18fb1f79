"""Gradients and one-step updates of a tabular softmax policy (chapters 4, 7).

The logits z are the parameters and pi = softmax(z). SFT does gradient DESCENT on the loss
-ln pi(target); RL does gradient ASCENT on the expected reward J = sum_y pi(y) r(y).
"""
from __future__ import annotations

import numpy as np

from ._checks import as_float_array, finite_real, index_in_range, logits_vector, same_shape
from .distributions import onehot, softmax


def sft_gradient(logits, target: int) -> np.ndarray:
    """d/dz of the SFT loss -ln softmax(z)[target] = pi - onehot(target) (chapter 4).

    "Predicted minus true": the target's entry is pi(target) - 1 < 0, every other
    entry pi_i > 0.
    """
    z = logits_vector(logits)
    target = index_in_range(target, "target", z.size)
    return softmax(z) - onehot(target, z.size)


def sft_step(logits, target: int, lr: float) -> np.ndarray:
    """One SFT gradient-descent step on the logits (chapter 4):
    z - lr (pi - onehot(target))."""
    lr = finite_real(lr, "lr")
    z = logits_vector(logits)
    return z - lr * sft_gradient(z, target)


def score(logits, y: int) -> np.ndarray:
    """The score function grad_z ln softmax(z)[y] = onehot(y) - pi (chapter 7).

    The ascent direction on ln pi(y); it is minus the SFT gradient for target y.
    """
    z = logits_vector(logits)
    return onehot(index_in_range(y, "y", z.size), z.size) - softmax(z)


def _rewards_for(z: np.ndarray, rewards) -> np.ndarray:
    r = as_float_array(rewards, "rewards")
    same_shape(z, r, "logits", "rewards")
    return r


def expected_reward(logits, rewards) -> float:
    """J = sum_y pi(y) r(y) (chapter 6). On the toy, J = pi(5) = 0.2."""
    z = logits_vector(logits)
    return float(softmax(z) @ _rewards_for(z, rewards))


def policy_gradient(logits, rewards) -> np.ndarray:
    """The exact gradient grad_z J = E_y[r(y) score(y)] = pi * (r - J) (chapter 7).

    Its entries sum to zero, because adding a constant to every logit leaves pi, hence J, unchanged.
    """
    z = logits_vector(logits)
    r = _rewards_for(z, rewards)
    pi = softmax(z)
    return pi * (r - pi @ r)


def policy_gradient_step(logits, rewards, lr: float) -> np.ndarray:
    """One exact gradient-ASCENT step on J: z + lr * pi * (r - J) (chapter 7)."""
    lr = finite_real(lr, "lr")
    return logits_vector(logits) + lr * policy_gradient(logits, rewards)
