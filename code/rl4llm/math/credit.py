"""Credit assignment: returns, TD errors and GAE over several steps (chapter 12), and GRPO's group-relative
advantages (chapter 13).

Notation: an episode s_0, a_0, r_0, s_1, ..., s_{T-1}, a_{T-1}, r_{T-1}; a critic V(s_t); a discount
gamma in (0, 1]; GAE's mixing parameter lambda in [0, 1]. After the last step the value is
``last_value`` (0 for an episode that has ended).
"""
from __future__ import annotations

import numpy as np

from .._checks import (as_float_array, at_least, checked, finite_real, in_range, nonnegative_real, reward_groups,
                       same_shapes, std_ddof, vector_of)


#: Chapter 12's made-up three-step episode: nothing until a win at the end...
EXAMPLE_REWARDS = np.array([0.0, 0.0, 1.0])
#: ...and a critic that already predicts V(s_0), V(s_1), V(s_2) along the way.
EXAMPLE_VALUES = np.array([0.5, 0.6, 0.7])


def _episode(rewards, name):
    r = as_float_array(rewards, name)
    if r.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array (one reward per step), got shape {r.shape}")
    return r


#: An episode's rewards (and its critic's values, one per step), the discount and the value after it.
_EPISODE = {"rewards": _episode, "values": as_float_array, "gamma": in_range(0.0, 1.0, low_open=True),
            "last_value": finite_real}


@checked(rewards=_episode, gamma=_EPISODE["gamma"], last_value=finite_real)
def discounted_returns(rewards, gamma: float = 1.0, last_value: float = 0.0) -> np.ndarray:
    """G_t = sum_{l >= 0} gamma^l r_{t+l} + gamma^(T-t) last_value: the return from each step (chapter 12).

    Computed backwards, G_t = r_t + gamma G_{t+1} with G_T = ``last_value``. G_t - V(s_t) is the
    Monte Carlo advantage: honest, but it carries all the luck of the steps after t.
    """
    out = np.empty_like(rewards)
    running = last_value
    for t in range(rewards.size - 1, -1, -1):
        running = rewards[t] + gamma * running
        out[t] = running
    return out


@checked(same_shapes("rewards", "values"), **_EPISODE)
def td_errors(rewards, values, gamma: float = 1.0,
              last_value: float = 0.0) -> np.ndarray:
    """delta_t = r_t + gamma V(s_{t+1}) - V(s_t), V(s_T) = ``last_value`` (chapter 12).

    The critic's one-step surprise. ``values`` holds V(s_0), ..., V(s_{T-1}).
    For rewards (0, 0, 1), V = (0.5, 0.6, 0.7), gamma = 1:
    delta = (0.1, 0.1, 0.3).
    """
    next_values = np.append(values[1:], last_value)       # V(s_1), ..., V(s_{T-1}), V(s_T)
    return rewards + gamma * next_values - values


@checked(same_shapes("rewards", "values"), lam=in_range(0.0, 1.0), **_EPISODE)
def gae(rewards, values, gamma: float = 1.0, lam: float = 1.0,
        last_value: float = 0.0) -> np.ndarray:
    """Generalised advantage estimation (chapter 12):

    A_t = sum_{l >= 0} (gamma lambda)^l delta_{t+l},

    computed backwards, A_t = delta_t + gamma lambda A_{t+1}. lambda = 0 keeps
    only delta_t (the critic's read: low variance, biased by the critic);
    lambda = 1 telescopes to G_t - V(s_t) (the Monte Carlo advantage: unbiased,
    noisy). The last step is delta_{T-1} for every lambda.
    """
    delta = td_errors(rewards, values, gamma, last_value)
    decay = gamma * lam
    out = np.empty_like(delta)
    running = 0.0
    for t in range(delta.size - 1, -1, -1):
        running = delta[t] + decay * running
        out[t] = running
    return out


@checked(same_shapes("rewards", "values"), lams=vector_of(as_float_array, "lambdas in [0, 1]"), **_EPISODE)
def advantage_table(rewards, values, gamma: float = 1.0, lams=(0.0, 0.5, 1.0),
                    last_value: float = 0.0) -> dict:
    """Everything chapter 12's table shows, for one episode (the lambda and gamma sliders).

    ``delta`` (T,): the TD errors; ``returns`` (T,): G_t; ``monte_carlo`` (T,): G_t - V(s_t);
    ``lams`` (L,) and ``advantages`` (L, T): row j is ``gae`` at lambda = lams[j].
    """
    v = values
    returns = discounted_returns(rewards, gamma, last_value)
    return {
        "delta": td_errors(rewards, values, gamma, last_value),
        "returns": returns,
        "monte_carlo": returns - v,
        "lams": lams,
        "advantages": np.array([gae(rewards, values, gamma, lam, last_value) for lam in lams]),
    }


@checked(reward=finite_real, baseline=finite_real, length=at_least(1))
def group_baseline_advantages(reward: float, baseline: float, length: int) -> np.ndarray:
    """GRPO's flat credit: every one of the ``length`` tokens gets the same advantage r - b (chapter 12).

    No critic: the per-state V(s_t) is replaced by one per-prompt baseline b (the group's mean
    reward), so the advantage no longer varies along the sequence.
    """
    return np.full(length, reward - baseline)


def _group_of_two_for_ddof_1(args):
    shape = tuple(args["rewards"].shape)
    if shape[-1] < 1 + args["ddof"]:
        raise ValueError(f"rewards must be shaped (..., G) with G >= {1 + args['ddof']} for ddof={args['ddof']}, "
                         f"got shape {shape}")


@checked(_group_of_two_for_ddof_1, rewards=reward_groups, ddof=std_ddof, eps=nonnegative_real)
def group_advantages(rewards, scale: bool = True, ddof: int = 0, eps: float = 1e-8):
    """A_i = (r_i - mean_j r_j) / (std_j r_j + eps) within each group (chapter 13; chapter 14 compares ddof and scale).

    ``rewards`` is shaped (..., G): the last axis is the group. ``ddof=0`` is the population std
    (the default here); ``ddof=1`` is Bessel's sample std, which TRL uses, with eps = 1e-4:
    ``group_advantages(r, ddof=1, eps=1e-4)`` is TRL's ``scale_rewards="group"``. ``scale=False``
    gives the plain r_i - mean (Dr. GRPO; TRL's ``scale_rewards="none"``). A group whose rewards are all
    equal carries no signal and gets exactly zero advantages, never NaN. One definition for numpy arrays
    (returns numpy) and torch tensors (returns a tensor on the same device): it uses only the methods
    both share.
    """
    r = rewards
    centred = r - r.mean(axis=-1, keepdims=True)
    flat = (r == r[..., :1]).all(axis=-1, keepdims=True)
    if scale:
        std = ((centred ** 2).sum(axis=-1, keepdims=True) / (r.shape[-1] - ddof)) ** 0.5
        centred = centred / (std + eps + flat)              # a flat group's denominator is >= 1: no 0 / 0
    return centred - centred * flat                         # exactly 0 (not -0) on a flat group
