"""GRPO assembled on the toy (chapter 13), and the choices the one-token toy hides (chapter 14).

Two pieces, each built from the library's own functions (no formula is re-derived here):

- ``grpo_toy_run``: the full GRPO loop on the five-answer toy. Each step freezes pi_old, samples
  a group of G answers (``sample_groups``), scores them with the verifier's rewards, turns the
  rewards into ``group_advantages`` and takes K clipped inner steps
  (``clipped_surrogate_gradient``), optionally with a KL-to-reference penalty (weight beta) and an
  entropy bonus. It logs pi(5), the entropy, KL(pi || pi_ref), whether each group was flat, and
  the clip fraction and the length of every inner step (so a saturated clip shows).
- The KL-to-reference term: GRPO adds beta * k3 per sampled token, k3 = ref/pi - ln(ref/pi) - 1.
  The VALUE of k3 averages to the reverse KL(pi || pi_ref), but its expected GRADIENT (samples held
  fixed, as autograd sees them) is the gradient of the FORWARD KL(pi_ref || pi) = pi - pi_ref
  (``forward_kl_gradient``; TRL's rho * k3 follows ``reverse_kl_gradient``).

What needs ``grpo_loss`` and autograd on the toys (the k3 penalty's gradient, the inner steps on the
two-step "5" / "05" toy, each loss type's weights) is in :mod:`rl4llm.llm.grpo_toys`.
"""
from __future__ import annotations

import math

import numpy as np

from .._checks import (at_least, checked, clip_range, in_range, logits_vector, one_of, optional,
                      positive_real, reward_array, same_shapes, seed_list, std_ddof)
from ..math.credit import group_advantages
from ..math.distributions import entropy, kl_divergence, log_softmax, softmax
from ..math.estimators import sample_groups
from ..math.importance_sampling import importance_ratios
from ..math.ppo_clip import clip_fraction, clipped_surrogate_gradient
from ..toy.five_token import LOGITS, REWARDS


# ----------------------------------------------------------------------------- the KL and entropy terms
@checked(same_shapes("logits", "ref_logits"), logits=logits_vector, ref_logits=logits_vector)
def forward_kl_gradient(logits, ref_logits) -> np.ndarray:
    """grad_z KL(pi_ref || pi_z) = pi - pi_ref, for a tabular softmax policy pi = softmax(z) (chapter 14).

    KL(pi_ref || pi) = sum_y pi_ref ln pi_ref - sum_y pi_ref(y) ln pi(y), and
    grad_z ln pi(y) = onehot(y) - pi, so the gradient is -(pi_ref - pi sum_y pi_ref(y)) = pi - pi_ref.
    This is the expected gradient of GRPO's k3 penalty (``rl4llm.llm.grpo_toys.k3_loss_gradient``).
    """
    return softmax(logits) - softmax(ref_logits)


@checked(same_shapes("logits", "ref_logits"), logits=logits_vector, ref_logits=logits_vector)
def reverse_kl_gradient(logits, ref_logits) -> np.ndarray:
    """grad_z KL(pi_z || pi_ref) = pi * (ln(pi / pi_ref) - KL(pi || pi_ref)) (chapter 14).

    The mode-seeking direction the source text names for the RLHF leash. GRPO's k3 estimator
    estimates this KL's VALUE but, in the loss, follows the other direction's gradient.
    """
    pi = softmax(logits)
    log_ratio = log_softmax(logits) - log_softmax(ref_logits)
    return pi * (log_ratio - pi @ log_ratio)


@checked(logits=logits_vector)
def entropy_gradient(logits) -> np.ndarray:
    """grad_z H(softmax(z)) = -pi * (ln pi + H), the ascent direction of an entropy bonus (chapter 14).

    From H = -sum_y pi ln pi and d pi_y / d z_k = pi_y (1[y = k] - pi_k). Its entries sum to 0, and it
    vanishes at the uniform policy (maximum entropy).
    """
    pi = softmax(logits)
    log_pi = log_softmax(logits)
    return -pi * (log_pi - pi @ log_pi)


# ----------------------------------------------------------------------------- the GRPO loop on the toy
def _default_reference(args):
    if args["ref_logits"] is None:
        args["ref_logits"] = args["logits"].copy()


@checked(clip_range(), same_shapes("logits", "rewards"), _default_reference, same_shapes("logits", "ref_logits"),
         G=at_least(2), steps=at_least(1), K=at_least(1), lr=positive_real, ddof=std_ddof,
         beta=in_range(0.0, math.inf), entropy_coef=in_range(0.0, math.inf), seed=at_least(0), logits=logits_vector,
         rewards=reward_array, ref_logits=optional(logits_vector), kl_direction=one_of(("forward", "reverse")))
def grpo_toy_run(G: int = 8, steps: int = 30, K: int = 4, lr: float = 1.0,
                 eps_low: float = 0.2, eps_high: float | None = None,
                 scale: bool = True, ddof: int = 0, beta: float = 0.0,
                 entropy_coef: float = 0.0, seed: int = 0, logits=LOGITS,
                 rewards=REWARDS, ref_logits=None,
                 kl_direction: str = "forward") -> dict:
    """The full GRPO loop on the tabular toy, seeded (chapter 13).

    For each of ``steps`` steps: z_old = z (frozen); y_1..y_G ~ softmax(z_old)
    (``sample_groups``); A = ``group_advantages``(r(y), scale, ddof); then K inner
    steps of gradient ASCENT

        z <- z + lr * [grad L_clip(z; z_old, y, A) - beta grad KL + c grad H(pi)],

    with L_clip the group's clipped surrogate (``clipped_surrogate_gradient``), c =
    ``entropy_coef`` and grad H the entropy bonus (``entropy_gradient``). grad KL is
    the exact expected gradient of GRPO's k3 penalty under the CURRENT policy, the
    FORWARD KL(pi_ref || pi): pi - pi_ref (``forward_kl_gradient``), at every inner
    step, as if each drew fresh samples. (k3 on the group itself, drawn from pi_old,
    follows sum_y pi_old(y) (1 - pi_ref(y) / pi(y)) grad ln pi(y) instead, which is
    pi - pi_ref only while pi = pi_old.) With ``kl_direction="reverse"`` it is the
    gradient of KL(pi || pi_ref) (``reverse_kl_gradient``), which TRL's default
    ``use_bias_correction_kl=True`` follows. pi_ref = softmax(``ref_logits``), by
    default the starting policy. K = 1 is the plain on-policy loop (rho = 1).

    Returns a dict of arrays. Row t = after t steps (length steps + 1):
    ``pi_correct`` (the mass on the best-rewarded answer(s): pi(5) on the toy),
    ``J`` (sum pi r), ``entropy``, ``kl_ref`` (KL(pi || pi_ref), the value that the
    k3 estimate tracks and TRL logs) and ``logits``. Row t = step t + 1 (length
    ``steps``): ``zero_std`` (1.0 if the group's rewards were all equal: no signal;
    TRL logs the share as ``frac_reward_zero_std``); ``inner_clip_fraction``
    (steps, K), the share of the group where the clip binds at the start of inner
    step k (0 for k = 1, where rho = 1); ``inner_step_size`` (steps, K), the length
    of inner step k's change of the logits; ``clip_fraction``, the mean of
    ``inner_clip_fraction`` over the K inner steps.
    """
    z = logits.copy()
    rng = np.random.default_rng(seed)
    kl_gradient = {"forward": forward_kl_gradient.unchecked, "reverse": reverse_kl_gradient.unchecked}[kl_direction]

    path, zero_std, clip_fractions, step_sizes = [z.copy()], [], [], []
    for _ in range(steps):
        z_old = z.copy()
        ys = sample_groups(softmax(z_old), G, 1, rng)[0]
        A = group_advantages(rewards[ys], scale=bool(scale), ddof=ddof)
        zero_std.append(float(rewards[ys].max() == rewards[ys].min()))
        inner_clip, inner_size = [], []
        for _ in range(K):
            rho = importance_ratios(z, z_old)[ys]
            inner_clip.append(clip_fraction(rho, A, eps_low, eps_high))
            ascent = clipped_surrogate_gradient(z, z_old, ys, A, eps_low, eps_high)
            if beta > 0:
                ascent = ascent - beta * kl_gradient(z, ref_logits)
            if entropy_coef > 0:
                ascent = ascent + entropy_coef * entropy_gradient.unchecked(z)
            z = z + lr * ascent
            inner_size.append(float(np.linalg.norm(lr * ascent)))
        path.append(z.copy())
        clip_fractions.append(inner_clip)
        step_sizes.append(inner_size)
    path = np.array(path)
    probs = softmax(path)
    pi_ref = softmax(ref_logits)
    return {
        "pi_correct": probs[:, rewards == rewards.max()].sum(axis=1),
        "J": probs @ rewards,
        "entropy": np.array([entropy(p) for p in probs]),
        "kl_ref": np.array([kl_divergence(p, pi_ref) for p in probs]),
        "zero_std": np.array(zero_std),
        "inner_clip_fraction": np.array(clip_fractions),
        "inner_step_size": np.array(step_sizes),
        "clip_fraction": np.array(clip_fractions).mean(axis=1),
        "logits": path,
    }


@checked(seeds=seed_list())
def run_over_seeds(run, seeds, **kwargs):
    """Call ``run(seed=s, **kwargs)`` for every seed and stack the results (chapters 13, 14, 17).

    A run returning an array gives an array shaped (n_seeds, ...); a run returning a dict of arrays
    gives a dict of such stacks. Use it to draw a mean with a spread instead of one lucky seed.
    """
    results = [run(seed=s, **kwargs) for s in seeds]
    if isinstance(results[0], dict):
        return {key: np.array([res[key] for res in results]) for key in results[0]}
    return np.array(results)


#: The short run behind the four sliders of chapters 13 (G, eps, lr) and 14 (beta): few enough inner steps to
#: recompute in milliseconds (``benchmarks/sliders_part3_grpo.py`` times it).
SLIDER_RUN = {"steps": 10, "K": 2, "seed": 0}


def grpo_slider_run(G: int = 8, eps: float = 0.2, lr: float = 1.0, beta: float = 0.0) -> dict:
    """``grpo_toy_run`` with ``SLIDER_RUN``'s short settings and the four slider values (chapters 13 and 14)."""
    return grpo_toy_run(G=G, eps_low=eps, lr=lr, beta=beta, **SLIDER_RUN)
