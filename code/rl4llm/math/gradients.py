"""Gradients and one-step updates of a tabular softmax policy (chapters 4, 7).

The logits z are the parameters and pi = softmax(z). SFT does gradient DESCENT on the loss
-ln pi(target); RL does gradient ASCENT on the expected reward J = sum_y pi(y) r(y).
"""
from __future__ import annotations

import numpy as np

from .._checks import checked, finite_real, index_in_range, logits_vector, reward_array, same_shapes
from .distributions import onehot, softmax


def index_into(index: str, vector: str = "logits"):
    """Relation: the argument ``index`` is an integer index into the (checked) vector ``vector``."""
    def relation(args):
        args[index] = index_in_range(args[index], index, args[vector].size)
    return relation


@checked(index_into("target"), logits=logits_vector)
def sft_gradient(logits, target: int) -> np.ndarray:
    """d/dz of the SFT loss -ln softmax(z)[target] = pi - onehot(target) (chapter 4).

    "Predicted minus true": the target's entry is pi(target) - 1 < 0, every other
    entry pi_i > 0.
    """
    return softmax(logits) - onehot(target, logits.size)


@checked(logits=logits_vector, lr=finite_real)
def sft_step(logits, target: int, lr: float) -> np.ndarray:
    """One SFT gradient-descent step on the logits (chapter 4):
    z - lr (pi - onehot(target))."""
    return logits - lr * sft_gradient(logits, target)


@checked(index_into("y"), logits=logits_vector)
def score(logits, y: int) -> np.ndarray:
    """The score function grad_z ln softmax(z)[y] = onehot(y) - pi (chapter 7).

    The ascent direction on ln pi(y); it is minus the SFT gradient for target y.
    """
    return onehot(y, logits.size) - softmax(logits)


#: The checks of a policy's logits and one reward per answer.
_POLICY_AND_REWARDS = {"logits": logits_vector, "rewards": reward_array}


@checked(same_shapes("logits", "rewards"), **_POLICY_AND_REWARDS)
def expected_reward(logits, rewards) -> float:
    """J = sum_y pi(y) r(y) (chapter 6). On the toy, J = pi(5) = 0.2."""
    return float(softmax(logits) @ rewards)


@checked(same_shapes("logits", "rewards"), **_POLICY_AND_REWARDS)
def policy_gradient(logits, rewards) -> np.ndarray:
    """The exact gradient grad_z J = E_y[r(y) score(y)] = pi * (r - J) (chapter 7).

    Its entries sum to zero, because adding a constant to every logit leaves pi, hence J, unchanged.
    """
    pi = softmax(logits)
    return pi * (rewards - pi @ rewards)


@checked(logits=logits_vector, lr=finite_real)
def policy_gradient_step(logits, rewards, lr: float) -> np.ndarray:
    """One exact gradient-ASCENT step on J: z + lr * pi * (r - J) (chapter 7)."""
    return logits + lr * policy_gradient(logits, rewards)
