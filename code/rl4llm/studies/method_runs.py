"""Every method of the book on the toy, one call each (chapter 21).

Each ``run_*`` function trains the five-answer toy from pi(5) = 0.2 and returns its
learning curve: pi(5) before every step and after the last (length ``steps + 1``). They
are thin loops over the functions the earlier chapters built, so each one reads like its
skeleton in chapter 21:

=====================  =====================================================  =======
method                 one step                                               chapter
=====================  =====================================================  =======
SFT                    z <- z - lr (pi - onehot(5))  (``sft_step``)           4
REINFORCE              z <- z + lr (1/G) sum_i r_i score(y_i)                 7
                       (``gradient_samples``)
REINFORCE + baseline   z <- z + lr (1/G) sum_i (r_i - rbar) score(y_i)        8, 9
                       (``on_policy_loop``)
TRPO                   one KL-constrained natural step (``trust_region_step``)  11
PPO                    K clipped steps on one batch, A = r - V                11, 12
                       (``ppo_inner_steps``)
GRPO                   K clipped steps, group-relative A (``grpo_toy_run``)   13
=====================  =====================================================  =======

TRPO and PPO need a critic V(prompt). The toy can afford the ideal one, the exact
expected reward J(pi_old) = sum_y pi_old(y) r(y) (chapter 12: for a one-step task V is
the prompt's success probability); GRPO replaces it by the group's mean reward.

``run_exact_gradient`` is the reference none of them can afford at scale: ascent along
the exact gradient of J, which REINFORCE follows on average.
"""
from __future__ import annotations

import numpy as np

from .._checks import (at_least, checked, index_in_range, logits_vector, one_reward_per_answer,
                      positive_real, reward_array)
from ..math.distributions import softmax
from ..math.estimators import gradient_samples, sample_groups
from ..math.gradients import expected_reward, policy_gradient, sft_step
from .onpolicy import on_policy_loop
from ..math.ppo_clip import clipped_surrogate_gradient, ppo_inner_steps
from ..math.trust_region import trust_region_step
from ..toy.five_token import CORRECT, LOGITS, REWARDS
from .toy_grpo import grpo_toy_run, run_over_seeds


_one_reward_per_answer = one_reward_per_answer("logits")


def _target_in_range(args):
    args["target"] = index_in_range(args["target"], "target", args["logits"].size)


#: What every runner given a reward per answer checks: its step count, the policy and the rewards.
_RUN = {"steps": at_least(1), "logits": logits_vector, "rewards": reward_array}


def _best(r: np.ndarray) -> int:
    return int(np.argmax(r))


@checked(_target_in_range, steps=at_least(1), lr=positive_real, logits=logits_vector)
def run_sft(steps: int = 30, lr: float = 0.5, logits=LOGITS,
            target: int = CORRECT) -> np.ndarray:
    """SFT on the label: ``steps`` descents on -ln pi(target),
    z <- z - lr (pi - onehot(target)) (chapter 4).

    Samples nothing and needs no reward: the label says which answer to imitate.
    Deterministic.
    """
    z = logits.copy()
    curve = [softmax(z)[target]]
    for _ in range(steps):
        z = sft_step(z, target, lr)
        curve.append(softmax(z)[target])
    return np.array(curve)


@checked(_one_reward_per_answer, lr=positive_real, **_RUN)
def run_exact_gradient(steps: int = 30, lr: float = 1.0, logits=LOGITS,
                       rewards=REWARDS) -> np.ndarray:
    """Ascent along the exact gradient, z <- z + lr pi * (r - J) (chapters 7, 21).

    No sampling: ``policy_gradient`` is grad J itself, the mean of REINFORCE's estimate.
    So this is roughly the path REINFORCE follows on average (up to the noise and the
    curvature of the softmax), and at ``lr`` (1 - 1/G) roughly that of the group-mean
    baseline loop (chapter 9: its estimate has mean (1 - 1/G) grad J). Deterministic.
    """
    z, r = logits.copy(), rewards
    best = _best(r)
    curve = [softmax(z)[best]]
    for _ in range(steps):
        z = z + lr * policy_gradient(z, r)
        curve.append(softmax(z)[best])
    return np.array(curve)


@checked(_one_reward_per_answer, lr=positive_real, seed=at_least(0), G=at_least(1), **_RUN)
def run_reinforce(steps: int = 30, G: int = 8, lr: float = 1.0, seed: int = 0,
                  logits=LOGITS, rewards=REWARDS) -> np.ndarray:
    """REINFORCE without a baseline (chapter 7):
    z <- z + lr (1/G) sum_i r(y_i) score(y_i), y_i ~ pi.

    Each step's G single-sample estimates come from ``gradient_samples`` (baseline 0),
    seeded from ``np.random.default_rng(seed)``; the group is used once and thrown away.
    """
    z, r = logits.copy(), rewards
    rng = np.random.default_rng(seed)
    best = _best(r)
    curve = [softmax(z)[best]]
    for _ in range(steps):
        step_seed = int(rng.integers(2**31))
        estimates = gradient_samples(z, r, G, step_seed, baseline=0.0)
        z = z + lr * estimates.mean(axis=0)
        curve.append(softmax(z)[best])
    return np.array(curve)


@checked(_one_reward_per_answer, lr=positive_real, seed=at_least(0), G=at_least(2), **_RUN)
def run_reinforce_baseline(steps: int = 30, G: int = 8, lr: float = 1.0, seed: int = 0,
                           logits=LOGITS, rewards=REWARDS) -> np.ndarray:
    """REINFORCE with the group-mean baseline, chapter 9's ``on_policy_loop`` (ch. 8-9).

    z <- z + lr (1/G) sum_i (r_i - rbar) score(y_i): wrong answers in a group with a
    right one are pushed down, and a group whose rewards are all equal changes nothing.
    """
    return on_policy_loop(logits.copy(), rewards, G, lr, steps, seed)["pi_correct"]


def _group_and_critic_advantages(z: np.ndarray, r: np.ndarray, G: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """G answers y_i ~ pi_old = softmax(z) and A_i = r(y_i) - V, with the ideal critic V = J(pi_old),
    exact on the toy (chapter 12)."""
    ys = sample_groups(softmax(z), G, 1, rng)[0]
    return ys, r[ys] - expected_reward(z, r)


@checked(_one_reward_per_answer, seed=at_least(0), G=at_least(1), delta=positive_real, **_RUN)
def run_trpo(steps: int = 30, G: int = 8, delta: float = 0.02, seed: int = 0,
             logits=LOGITS, rewards=REWARDS) -> np.ndarray:
    """TRPO: one KL-constrained natural-gradient step per batch (chapter 11).

    Each step: y_i ~ pi_old (G of them), A_i = r(y_i) - V (ideal critic); g = gradient
    of the surrogate (1/G) sum_i rho_i A_i at z_old, where every rho = 1, so the clip
    never binds and ``clipped_surrogate_gradient`` is exactly
    (1/G) sum_i A_i score(y_i); then ``trust_region_step`` solves F s = g
    (F = diag(pi) - pi pi^T) and backtracks until KL(pi_old || pi_new) <= delta.
    """
    z, r = logits.copy(), rewards
    rng = np.random.default_rng(seed)
    best = _best(r)
    curve = [softmax(z)[best]]
    for _ in range(steps):
        ys, A = _group_and_critic_advantages(z, r, G, rng)
        gradient = clipped_surrogate_gradient(z, z, ys, A, 0.2)
        z = trust_region_step(z, gradient, delta)["logits"]
        curve.append(softmax(z)[best])
    return np.array(curve)


@checked(_one_reward_per_answer, seed=at_least(0), G=at_least(1), **_RUN)
def run_ppo(steps: int = 30, G: int = 8, K: int = 4, lr: float = 1.0, eps: float = 0.2,
            seed: int = 0, logits=LOGITS, rewards=REWARDS) -> np.ndarray:
    """PPO: K clipped gradient steps per batch, advantages from the critic (chapter 11).

    Each step: y_i ~ pi_old (G of them), A_i = r(y_i) - V (ideal critic), then
    ``ppo_inner_steps``: K ascents on
    (1/G) sum_i min(rho_i A_i, clip(rho_i, 1 - eps, 1 + eps) A_i).
    """
    z, r = logits.copy(), rewards
    rng = np.random.default_rng(seed)
    best = _best(r)
    curve = [softmax(z)[best]]
    for _ in range(steps):
        ys, A = _group_and_critic_advantages(z, r, G, rng)
        z = ppo_inner_steps(z, ys, A, eps, lr, K)["logits"][-1]
        curve.append(softmax(z)[best])
    return np.array(curve)


def run_grpo(steps: int = 30, G: int = 8, K: int = 4, lr: float = 1.0,
             eps_low: float = 0.2, seed: int = 0, logits=LOGITS, rewards=REWARDS,
             **options) -> np.ndarray:
    """GRPO: K clipped steps per group, advantages from the group itself (chapter 13).

    ``grpo_toy_run``'s pi(5) curve; ``options`` (scale, ddof, beta, entropy_coef,
    eps_high, ...) are passed through.
    """
    run = grpo_toy_run(G=G, steps=steps, K=K, lr=lr, eps_low=eps_low, seed=seed,
                       logits=logits, rewards=rewards, **options)
    return run["pi_correct"]


#: The six methods of chapter 21, in the book's order: name -> one-call runner.
METHODS = {
    "SFT": run_sft,
    "REINFORCE": run_reinforce,
    "REINFORCE + baseline": run_reinforce_baseline,
    "TRPO": run_trpo,
    "PPO": run_ppo,
    "GRPO": run_grpo,
}


@checked(steps=at_least(1))
def method_curves(steps: int = 30, seeds=range(8)) -> dict[str, np.ndarray]:
    """Every method's pi(5) curve with its default settings (chapter 21).

    name -> array (n_runs, steps + 1): one row per seed for the sampling methods
    (``run_over_seeds``), a single row for SFT, which samples nothing and is
    deterministic.
    """
    curves = {"SFT": run_sft(steps=steps)[None, :]}
    for name, run in METHODS.items():
        if name != "SFT":
            curves[name] = run_over_seeds(run, seeds, steps=steps)
    return curves

