"""The on-policy loop on the toy, and what many runs of it look like (chapters 6, 7, 9).

One step: sample a group of G answers from the CURRENT policy, score them, subtract the group's
mean reward (the baseline), and ascend: z <- z + lr * (1/G) sum_i (r_i - rbar) (onehot(y_i) - pi).
The group is then thrown away, so the policy that sampled it and the policy being updated are
always the same one: on-policy.
"""
from __future__ import annotations

import math

import numpy as np

from .._checks import as_float_array, at_least, checked, finite_real, logits_vector, one_reward_per_answer
from ..math.distributions import onehot, softmax
from ..math.estimators import group_gradient_from_policy, inverse_cdf
from ..math.gradients import index_into, policy_gradient, sft_gradient
from ..toy.five_token import CORRECT, LOGITS, REWARDS

#: Relation: one reward per answer of the policy's logits.
_one_reward_per_answer = one_reward_per_answer("logits")


@checked(_one_reward_per_answer, logits=logits_vector, rewards=as_float_array, G=at_least(1), lr=finite_real,
         steps=at_least(0), seed=at_least(0))
def on_policy_loop_plain(logits, rewards, G: int, lr: float, steps: int,
                         seed: int = 0) -> np.ndarray:
    """The on-policy loop written plainly, one sample at a time (chapter 9).

    Every step: sample G answers from the current policy, score them, take the group's
    mean reward as the baseline, and ascend along
    (1/G) sum_i (r_i - rbar) (onehot(y_i) - pi). Returns the logits before every step
    and after the last, shape (steps + 1, K). It draws the same random numbers as
    ``on_policy_loop(..., seed)``, so it gives the same run: the reference that the
    vectorised ``on_policy_runs`` is tested against.
    """
    z, r, K = logits, rewards, logits.size
    rng = np.random.default_rng(seed)
    trajectory = [z]
    for _ in range(steps):
        pi = softmax(z)
        answers = inverse_cdf(pi, rng.random(G))  # 1. sample G answers from pi
        group_rewards = r[answers]                # 2. score them
        r_bar = group_rewards.mean()              # 3. baseline: the group's mean
        update = np.zeros(K)
        for y, r_y in zip(answers, group_rewards):
            advantage = r_y - r_bar
            score = onehot(y, K) - pi             # grad_z log pi(y), chapter 7
            update += advantage * score
        z = z + lr * update / G                   # 4. ascend, then discard the group
        trajectory.append(z)
    return np.array(trajectory)


@checked(_one_reward_per_answer, logits=logits_vector, rewards=as_float_array, G=at_least(1), lr=finite_real,
         steps=at_least(0), n_seeds=at_least(1), seed=at_least(0))
def on_policy_runs(logits, rewards, G: int, lr: float, steps: int, n_seeds: int,
                   seed: int = 0) -> dict:
    """``n_seeds`` independent runs of the on-policy loop, all at once (chapter 9).

    The loop of ``on_policy_loop_plain``, for every run at once. Every step draws one
    ``(n_seeds, G)`` block of uniforms from ``np.random.default_rng(seed)``; run k uses
    row k, so the runs are independent (as if each had its own seed) and the whole batch
    is reproducible from ``seed``. Returns arrays with a leading run axis:

    - ``logits`` (n_seeds, steps + 1, K) and ``pi`` (same shape): the policy before each
      step and after the last;
    - ``pi_correct`` (n_seeds, steps + 1): pi of the best-rewarded answer (the toy's 5);
    - ``expected_reward`` (n_seeds, steps + 1): J = sum pi r;
    - ``group_reward`` (n_seeds, steps): the group's mean reward rbar = J-hat;
    - ``zero_signal`` (n_seeds, steps): True where every reward in the group was equal,
      so every advantage r_i - rbar and the whole update were zero.
    """
    z0, r = logits, rewards
    rng = np.random.default_rng(seed)
    trajectory = np.empty((n_seeds, steps + 1, z0.size))
    trajectory[:, 0] = z0
    group_reward = np.empty((n_seeds, steps))
    zero_signal = np.empty((n_seeds, steps), dtype=bool)
    for t in range(steps):
        z = trajectory[:, t]
        pi = softmax(z)
        samples = inverse_cdf(pi, rng.random((n_seeds, G)))  # (n_seeds, G) answers
        group_rewards = r[samples]
        group_reward[:, t] = group_rewards.mean(axis=1)
        all_equal = group_rewards == group_rewards[:, :1]
        zero_signal[:, t] = all_equal.all(axis=1)
        update = group_gradient_from_policy(pi, samples, group_rewards)
        trajectory[:, t + 1] = z + lr * update
    pi = softmax(trajectory)
    return {
        "logits": trajectory,
        "pi": pi,
        "pi_correct": pi[..., int(np.argmax(r))],
        "expected_reward": pi @ r,
        "group_reward": group_reward,
        "zero_signal": zero_signal,
    }


def on_policy_loop(logits, rewards, G: int, lr: float, steps: int, seed: int = 0) -> dict:
    """One run of the on-policy loop (chapter 9): run 0 of ``on_policy_runs(..., n_seeds=1, seed)``.

    Same keys as ``on_policy_runs`` without the leading run axis.
    """
    runs = on_policy_runs(logits, rewards, G, lr, steps, 1, seed)
    return {key: value[0] for key, value in runs.items()}


#: The runs of chapter 6's "a single run proves nothing" study: ``seed_study(n, seed=..., **SEED_RUN)``.
SEED_RUN = {"G": 4, "lr": 1.0, "steps": 10}


@checked(n_seeds=at_least(2))
def seed_study(n_seeds: int, G: int = 4, lr: float = 1.0, steps: int = 20, seed: int = 0,
               logits=LOGITS, rewards=REWARDS) -> dict:
    """The final pi(correct) of ``n_seeds`` identical runs that differ only in their luck (chapter 6).

    Returns ``finals`` (n_seeds,), their ``mean``, their sample standard deviation ``std``
    (ddof = 1: the noise floor, how much one run wobbles) and the ``standard_error`` of the mean,
    std / sqrt(n_seeds). A spread needs two runs, so n_seeds >= 2.
    """
    finals = on_policy_runs(logits, rewards, G, lr, steps, n_seeds, seed)["pi_correct"][:, -1]
    std = float(finals.std(ddof=1))
    return {"finals": finals, "mean": float(finals.mean()), "std": std,
            "standard_error": std / math.sqrt(n_seeds)}


def _quantile_band(band, name: str) -> tuple[float, float]:
    """Rule: two quantiles 0 <= low < high <= 1."""
    low, high = (finite_real(q, name) for q in band)
    if not 0.0 <= low < high <= 1.0:
        raise ValueError(f"{name} must be two quantiles 0 <= low < high <= 1, got {band!r}")
    return low, high


@checked(band=_quantile_band)
def learning_curve_band(G: int, lr: float, steps: int = 30, n_seeds: int = 100, seed: int = 0,
                        logits=LOGITS, rewards=REWARDS, band: tuple[float, float] = (0.1, 0.9)) -> dict:
    """Learning curves of pi(correct) over ``n_seeds`` runs, summarised per step (chapter 9).

    Returns ``step`` (0..steps), ``mean``, ``median``, ``low`` and ``high`` (the ``band`` quantiles
    across runs, 10% and 90% by default), ``zero_signal_fraction`` (per step: the share of runs
    whose group carried no signal) and ``curves`` (n_seeds, steps + 1), every run's pi(correct).
    """
    runs = on_policy_runs(logits, rewards, G, lr, steps, n_seeds, seed)
    curves = runs["pi_correct"]
    low, median, high = np.quantile(curves, [band[0], 0.5, band[1]], axis=0)
    return {"step": np.arange(curves.shape[1]), "mean": curves.mean(axis=0), "median": median,
            "low": low, "high": high, "zero_signal_fraction": runs["zero_signal"].mean(axis=0),
            "curves": curves}


@checked(n_repeats=at_least(2), seed=at_least(0))
def repeated_band(G: int, lr: float, steps: int = 10, n_repeats: int = 30, n_seeds: int = 100,
                  seed: int = 0, logits=LOGITS, rewards=REWARDS,
                  band: tuple[float, float] = (0.1, 0.9)) -> dict:
    """The learning-curve figure drawn ``n_repeats`` times with fresh luck (chapter 9).

    Repeat k is ``learning_curve_band(G, lr, steps, n_seeds, seed + k)``: ``n_seeds`` runs,
    summarised per step. Returns ``median``, ``low``, ``high`` and ``width`` = high - low
    (the 10-90% band's width by default), each (n_repeats, steps + 1). The spread of a
    column over the repeats is how much that number moves when only the seed changes: the
    noise to compare settings against. Settings compared with Welch's test need seeds of their
    own (chapter 9 gives its k-th setting ``seed = 100 k``): with the same ``seed`` two settings
    share their random draws, and their summaries are correlated rather than independent.
    """
    figures = [learning_curve_band(G, lr, steps, n_seeds, seed + k, logits, rewards, band)
               for k in range(n_repeats)]
    out = {key: np.array([f[key] for f in figures]) for key in ("median", "low", "high")}
    out["width"] = out["high"] - out["low"]
    return out


def _rates(lr, name: str) -> np.ndarray:
    """Rule: a learning rate, or a 1-D array of them."""
    rates = as_float_array(lr, name, ndim_min=0)
    if rates.ndim > 1:
        raise ValueError(f"{name} must be a number or a 1-D array of numbers, got shape {rates.shape}")
    return rates


@checked(index_into("target"), lr=_rates, logits=logits_vector)
def rl_and_sft_steps(lr, logits=LOGITS, rewards=REWARDS, target: int = CORRECT) -> dict:
    """One exact RL step beside one SFT step at the same learning rate (chapter 7).

    RL ascends J: z + lr pi (r - J); SFT descends -ln pi(target): z - lr (pi - onehot(target)).
    ``lr`` is a number or a 1-D array of them (one step per entry, computed at once). Returns
    the policies ``pi_rl`` and ``pi_sft`` after the step (shape (K,) or (len(lr), K)) and
    ``pi_before``. On the toy at lr = 1, pi(5) goes 0.2 -> 0.2366 (RL) and 0.2 -> 0.4207 (SFT);
    RL needs lr = 5 to match.
    """
    z, rates = logits, lr[..., None]
    return {"pi_before": softmax(z), "pi_rl": softmax(z + rates * policy_gradient(z, rewards)),
            "pi_sft": softmax(z - rates * sft_gradient(z, target))}
