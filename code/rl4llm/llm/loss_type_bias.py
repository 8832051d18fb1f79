"""Every loss type's exact expected update on the toys, on-policy and with the policy ahead of the sampler
(chapter 17): every group enumerated, each group's update taken by autograd through ``grpo_loss``.

A toy (``"one_step"``: five answers of one token; ``"two_step"``: the "5" / "05" toy, seven answers of two or
three tokens, nine logits) has logits theta_old, the policy that sampled the group, and theta, the policy being
trained: theta = theta_old on-policy, and theta = theta_old + lead grad J(theta_old) when the policy is ``lead``
ahead (one exact gradient step, as after the first inner step of chapter 18). A group of G answers ~ pi_old gets
advantages from its rewards, and its update is X = -L_max d loss / d theta = -L_max sum_it (d loss / d logp_it)
grad_theta logp_it, with ``grpo_loss(logp, old_logp, advantages, mask, loss_type=...)`` the loss of that one
group and L_max the toy's longest answer (so that ``dr_grpo`` is the plain score-function estimate, as in
:mod:`rl4llm.studies.estimator_bias`). The law of a group is multinomial (``group_count_law``), so
E[X] = sum over compositions, its bias against the exact gradient grad J(theta), its direction error (the
angle between E[X] and grad J), and its total variance E|X - E X|^2 are exact sums. The route is independent
of the registry's ``token_weight`` (which it reproduces on-policy; ``tests/test_loss_type_bias.py``).
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np
import torch

from .._checks import at_least, checked, nonnegative_real, one_of
from ..math.credit import group_advantages
from ..math.estimators import group_count_law, sample_groups
from ..math.loss_types import LOSS_TYPES
from ..toy.five_token import LOGITS, PROMPT, REWARDS
from ..toy.two_step import CHOICES, TOKENS, two_step_logits
from ..toy.verifier import addition_reward
from .grpo import IMPORTANCE_SAMPLING_LEVELS, grpo_loss
from .grpo_toys import _two_step_logp

#: The toys, by name.
TOYS = ("one_step", "two_step")

#: The settings chapter 17 compares: label -> (TRL's ``loss_type``, ``importance_sampling_level``). GSPO is
#: ``grpo`` at the sequence level; LUSPO and VESPO run at the levels TRL 1.16 asks for (the registry's
#: ``importance_sampling_level``; ``tests/test_loss_type_bias.py`` checks that they agree).
LOSS_SETTINGS = {"grpo": ("grpo", "token"), "bnpo": ("bnpo", "token"), "dapo": ("dapo", "token"),
                 "dr_grpo": ("dr_grpo", "token"), "cispo": ("cispo", "token"), "sapo": ("sapo", "token"),
                 "gspo": ("grpo", "sequence"), "luspo": ("luspo", "sequence"), "vespo": ("vespo", "token")}


def _toy_logp(toy: str) -> tuple[np.ndarray, Callable, np.ndarray]:
    """(theta_old, logp_of, rewards): the toy's logits as one vector, the function theta -> (per-token logp
    (A, T), mask (A, T)) of its A answers, and their rewards."""
    if toy == "one_step":
        return (LOGITS.copy(), lambda theta: (torch.log_softmax(theta, 0)[:, None], torch.ones(theta.numel(), 1,
                                                                                             dtype=theta.dtype)),
                REWARDS.copy())
    sizes = [len(CHOICES[c]) for c in CHOICES]
    theta_old = np.concatenate([two_step_logits()[c] for c in CHOICES])

    def logp_of(theta):
        return _two_step_logp(dict(zip(CHOICES, torch.split(theta, sizes))), list(TOKENS))
    return theta_old, logp_of, np.array([addition_reward(PROMPT, a) for a in TOKENS])


def _answer_probs_and_gradient(logp_of: Callable, theta: np.ndarray, rewards: np.ndarray):
    """P(a) at ``theta`` and grad J = grad sum_a P(a) r(a), by autograd."""
    t = torch.tensor(theta, dtype=torch.float64, requires_grad=True)
    logp, mask = logp_of(t)
    probs = torch.exp((logp * mask).sum(dim=1))
    (grad,) = torch.autograd.grad(probs @ torch.as_tensor(rewards, dtype=torch.float64), t)
    return probs.detach().numpy(), grad.numpy()


@checked(toy=one_of(TOYS), lead=nonnegative_real)
def toy_policies(toy: str = "two_step", lead: float = 0.0) -> dict:
    """The toy's sampler and policy: ``theta_old``, ``theta`` = theta_old + lead grad J(theta_old), the answers'
    probabilities under each (``probs_old``, ``probs``), ``rewards``, and ``gradient``, grad J(theta)."""
    theta_old, logp_of, rewards = _toy_logp(toy)
    probs_old, grad_old = _answer_probs_and_gradient(logp_of, theta_old, rewards)
    theta = theta_old + lead * grad_old
    probs, grad = _answer_probs_and_gradient(logp_of, theta, rewards)
    return {"theta_old": theta_old, "theta": theta, "probs_old": probs_old, "probs": probs, "rewards": rewards,
            "gradient": grad}


def _advantage_rule(advantage, name):
    """Rule: a function of the group's rewards (G,) giving G advantages, or None (GRPO's ``group_advantages``)."""
    if advantage is not None and not callable(advantage):
        raise ValueError(f"{name} must be a function of a group's rewards, or None, got {advantage!r}")
    return advantage


def _group_updates(toy: str, groups: np.ndarray, loss_type: str, importance_sampling_level: str, lead: float,
                   advantage: Callable | None, loss_kwargs: dict) -> tuple[np.ndarray, dict]:
    """X for every group of answer indices ``groups`` (n, G), shape (n, n_logits), and ``toy_policies``
    (validated inputs)."""
    policies = toy_policies.unchecked(toy, lead)
    _, logp_of, rewards = _toy_logp(toy)
    theta = torch.tensor(policies["theta"], dtype=torch.float64)
    logp, mask = logp_of(theta)
    with torch.no_grad():
        old_logp, _ = logp_of(torch.tensor(policies["theta_old"], dtype=torch.float64))
    jacobian = torch.autograd.functional.jacobian(lambda t: logp_of(t)[0], theta)      # (A, T, n_logits)
    logp, L_max = logp.detach(), logp.shape[1]
    estimates = []
    for group in torch.as_tensor(groups):
        r = rewards[group.numpy()]
        a = group_advantages(r) if advantage is None else np.asarray(advantage(r), dtype=np.float64)
        lp = logp[group].clone().requires_grad_(True)
        loss, _ = grpo_loss(lp, old_logp[group], torch.as_tensor(a, dtype=torch.float64), mask[group],
                            loss_type=loss_type, max_completion_length=L_max,
                            importance_sampling_level=importance_sampling_level, **loss_kwargs)
        (d_logp,) = torch.autograd.grad(loss, lp)
        estimates.append(-L_max * torch.einsum("gt,gtk->k", d_logp, jacobian[group]).numpy())
    return np.array(estimates), policies


#: The checks of the two studies' common arguments.
_STUDY = dict(toy=one_of(TOYS), G=at_least(2), loss_type=one_of(LOSS_TYPES),
              importance_sampling_level=one_of(IMPORTANCE_SAMPLING_LEVELS), lead=nonnegative_real,
              advantage=_advantage_rule)


@checked(**_STUDY)
def loss_type_moments(toy: str = "two_step", G: int = 4, loss_type: str = "grpo",
                      importance_sampling_level: str = "token", lead: float = 0.0,
                      advantage: Callable | None = None, **loss_kwargs) -> dict:
    """The exact moments of one loss type's update X on a toy, over every group of G answers ~ pi_old.

    ``loss_kwargs`` go to ``grpo_loss`` (its defaults otherwise: the clip 0.2, CISPO's cap 5, TRL's SAPO and
    VESPO knobs). ``advantage`` maps a group's rewards (G,) to its advantages (GRPO's, std-scaled, when None).
    Returns ``mean`` E[X], ``gradient`` grad J(theta), ``bias`` E[X] - grad J, ``bias_norm``,
    ``relative_bias`` |bias| / |grad J|, ``angle`` the direction error between E[X] and grad J in degrees,
    ``scale`` E[X] . grad J / |grad J|^2, ``variance`` E|X - E X|^2, ``mean_squared_error`` and
    ``groups`` (the number of compositions summed).
    """
    counts, law = group_count_law(toy_policies.unchecked(toy, lead)["probs_old"], G)
    groups = np.array([np.repeat(np.arange(counts.shape[1]), row) for row in counts])
    estimates, policies = _group_updates(toy, groups, loss_type, importance_sampling_level, lead, advantage,
                                         loss_kwargs)
    mean, grad = law @ estimates, policies["gradient"]
    bias = mean - grad
    variance = float(law @ ((estimates - mean) ** 2).sum(axis=1))
    cosine = float(mean @ grad / (np.linalg.norm(mean) * np.linalg.norm(grad)))
    return {"mean": mean, "gradient": grad, "bias": bias, "bias_norm": float(np.linalg.norm(bias)),
            "relative_bias": float(np.linalg.norm(bias) / np.linalg.norm(grad)),
            "angle": math.degrees(math.acos(min(1.0, max(-1.0, cosine)))),
            "scale": float(mean @ grad / (grad @ grad)), "variance": variance,
            "mean_squared_error": variance + float(bias @ bias), "groups": len(law)}


@checked(n_groups=at_least(1), seed=at_least(0), **_STUDY)
def sample_loss_type_updates(toy: str = "two_step", G: int = 4, loss_type: str = "grpo",
                             importance_sampling_level: str = "token", lead: float = 0.0,
                             advantage: Callable | None = None, *, n_groups: int = 1000, seed: int = 0,
                             **loss_kwargs) -> np.ndarray:
    """``n_groups`` Monte Carlo draws of X (groups of G ~ pi_old, seeded), shape (n_groups, n_logits): their
    mean and total variance estimate what ``loss_type_moments`` sums exactly."""
    groups = sample_groups(toy_policies.unchecked(toy, lead)["probs_old"], G, n_groups, np.random.default_rng(seed))
    return _group_updates(toy, groups, loss_type, importance_sampling_level, lead, advantage, loss_kwargs)[0]
