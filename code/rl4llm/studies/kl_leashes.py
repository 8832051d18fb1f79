"""Where the KL goes: k1, k2 and k3 as estimates of KL(pi || pi_ref), and as leashes (chapter 17).

With x = ln pi(y) - ln pi_ref(y) at a token y sampled from pi,

    k1 = x,    k2 = x^2 / 2,    k3 = e^(-x) + x - 1  (= pi_ref / pi - ln(pi_ref / pi) - 1).

k1 and k3 average to KL(pi || pi_ref) exactly; k2 averages to something else (close to the KL only
where pi and pi_ref are close); k3 is never negative. As a *leash* each enters a trainer's loss in one
place (``LEASHES``), and what the trainer follows is the expected gradient of that term, samples held
fixed, as autograd sees them (chapter 17 derives each):

- ``"k1_reward"``: k1 subtracted from the reward (classic RLHF-PPO), so it reaches the loss as
  sg(k1) ln pi(y): E[k1 grad ln pi] = grad KL(pi || pi_ref), the REVERSE KL;
- ``"k1_loss"``: k1 added to the loss: E[grad ln pi] = 0, NO KL at all;
- ``"k2_loss"``: grad k2 = k1 grad ln pi, the same as k1 in the reward: the REVERSE KL;
- ``"k3_loss"``: grad k3 = (1 - pi_ref / pi) grad ln pi, whose mean is pi - pi_ref: the FORWARD
  KL(pi_ref || pi) (GRPO's penalty, TRL's ``use_bias_correction_kl=False``);
- ``"k3_corrected"``: rho k3 with rho = exp(ln pi - sg(ln pi)) (TRL's ``use_bias_correction_kl=True``):
  grad = (k3 + 1 - pi_ref / pi) grad ln pi = k1 grad ln pi, the REVERSE KL again.

``kl_estimators`` is the formula; ``kl_estimator_moments`` its exact bias and variance on a tabular
policy; ``leash_gradient`` the expected (or sampled) gradient of each leash by autograd;
``leash_run`` and ``leash_exact_run`` train the toy with each, sampled and exactly.
"""
from __future__ import annotations

import numpy as np
import torch

from .._checks import (as_float_array, finite_real, integer_at_least, logits_vector, positive_real, real_in_range,
                      reward_vector, same_shape)
from ..math.distributions import kl_divergence, log_softmax, softmax
from .estimator_bias import advantages
from ..math.estimators import sample_groups
from ..math.gradients import policy_gradient
from ..llm.grpo import k3
from ..toy.five_token import CORRECT, LOGITS, REWARDS

#: Where a trainer puts the KL, and how (see the module docstring).
LEASHES = ("k1_reward", "k1_loss", "k2_loss", "k3_loss", "k3_corrected")
#: The KL whose gradient each leash follows in expectation on samples from pi: "reverse" is
#: KL(pi || pi_ref), "forward" is KL(pi_ref || pi), "none" is a zero expected gradient.
LEASH_DIRECTIONS = {"k1_reward": "reverse", "k1_loss": "none", "k2_loss": "reverse", "k3_loss": "forward",
                    "k3_corrected": "reverse"}
ESTIMATORS = ("k1", "k2", "k3")


def kl_estimators(logp, logp_ref):
    """``(k1, k2, k3)`` elementwise, with x = logp - logp_ref (chapter 17):
    k1 = x, k2 = x^2 / 2, k3 = exp(logp_ref - logp) - (logp_ref - logp) - 1.

    ``logp`` and ``logp_ref`` are the log-probabilities of the same sampled tokens under pi and pi_ref,
    of one shape: numpy arrays (or lists; numpy comes back) or torch tensors (tensors come back, with
    their gradients). Over tokens sampled from pi, k1 and k3 average to KL(pi || pi_ref).
    """
    if isinstance(logp, torch.Tensor) or isinstance(logp_ref, torch.Tensor):
        for name, t in (("logp", logp), ("logp_ref", logp_ref)):
            if not isinstance(t, torch.Tensor):
                raise ValueError(f"{name} must be a torch.Tensor when the other is one, got {type(t).__name__}")
            if not bool(torch.isfinite(t).all()):
                raise ValueError(f"{name} must hold finite log-probabilities (no NaN or inf)")
        if logp.shape != logp_ref.shape:
            raise ValueError(f"logp and logp_ref must have the same shape, got {tuple(logp.shape)} and "
                             f"{tuple(logp_ref.shape)}")
        return _estimators(logp, logp_ref)
    a, b = as_float_array(logp, "logp", ndim_min=0), as_float_array(logp_ref, "logp_ref", ndim_min=0)
    same_shape(a, b, "logp", "logp_ref")
    return tuple(k.numpy() for k in _estimators(torch.from_numpy(a), torch.from_numpy(b)))


def _estimators(logp: torch.Tensor, logp_ref: torch.Tensor) -> tuple:
    log_ratio = logp - logp_ref
    return log_ratio, log_ratio ** 2 / 2, k3(-log_ratio)


def _pair(logits, ref_logits) -> tuple[np.ndarray, np.ndarray]:
    z, z_ref = logits_vector(logits, "logits"), logits_vector(ref_logits, "ref_logits")
    same_shape(z, z_ref, "logits", "ref_logits")
    return z, z_ref


def kl_estimator_moments(logits, ref_logits=LOGITS) -> dict:
    """Each estimator's exact mean, bias and variance as an estimate of KL(pi || pi_ref), one token y ~ pi.

    By enumeration over the answers of the tabular policies pi = softmax(``logits``) and
    pi_ref = softmax(``ref_logits``): ``kl`` KL(pi || pi_ref), and for each of "k1", "k2", "k3" a dict
    with ``mean`` E[k], ``bias`` E[k] - KL and ``variance`` Var[k] (of one sample; a mean of n
    samples has variance / n).
    """
    z, z_ref = _pair(logits, ref_logits)
    pi = softmax(z)
    kl = kl_divergence(pi, softmax(z_ref))
    out = {"kl": float(kl)}
    for name, k in zip(ESTIMATORS, kl_estimators(log_softmax(z), log_softmax(z_ref))):
        mean = float(pi @ k)
        out[name] = {"mean": mean, "bias": mean - float(kl), "variance": float(pi @ (k - mean) ** 2)}
    return out


def _check_leash(leash) -> str:
    if leash not in LEASHES:
        raise ValueError(f"leash must be one of {LEASHES}, got {leash!r}")
    return leash


def leash_term(logp: torch.Tensor, logp_ref: torch.Tensor, leash: str) -> torch.Tensor:
    """The per-token penalty whose gradient a trainer takes, for each placement of ``LEASHES`` (validated inputs).

    ``"k1_reward"``: sg(k1) logp, the penalty's share of the surrogate -(r - beta k1) logp; the loss
    placements: k1, k2, k3 as they are; ``"k3_corrected"``: exp(logp - sg(logp)) k3 (1 in value).
    """
    k1, k2, k3_ = _estimators(logp, logp_ref)
    if leash == "k1_reward":
        return k1.detach() * logp
    if leash == "k3_corrected":
        return torch.exp(logp - logp.detach()) * k3_
    return {"k1_loss": k1, "k2_loss": k2, "k3_loss": k3_}[leash]


def leash_gradient(logits, ref_logits, leash: str, samples=None) -> np.ndarray:
    """d/dz of the leash's penalty by autograd: its expectation over y ~ pi when ``samples`` is None
    (every answer weighted by pi(y), the weights held fixed), else its mean over the sampled answer
    indices ``samples`` (a Monte Carlo estimate of that expectation). A DESCENT direction: the trainer
    subtracts beta times it from its ascent on J (chapter 17).
    """
    z, z_ref = _pair(logits, ref_logits)
    leash = _check_leash(leash)
    zt = torch.tensor(z, dtype=torch.float64, requires_grad=True)
    logp = torch.log_softmax(zt, dim=0)
    ref = torch.from_numpy(log_softmax(z_ref))
    if samples is None:
        penalty = (torch.from_numpy(softmax(z)) * leash_term(logp, ref, leash)).sum()
    else:
        ys = np.asarray(samples)
        if (ys.ndim != 1 or ys.size == 0 or not np.issubdtype(ys.dtype, np.integer)
                or ys.min() < 0 or ys.max() >= z.size):
            raise ValueError(f"samples must be a non-empty 1-D array of answer indices in [0, {z.size - 1}]")
        index = torch.from_numpy(ys)
        penalty = leash_term(logp[index], ref[index], leash).mean()
    penalty.backward()
    return zt.grad.numpy().copy()


def _run_settings(leash, beta, steps, lr, logits, rewards, ref_logits):
    leash = _check_leash(leash)
    beta = finite_real(beta, "beta")
    if beta < 0:
        raise ValueError(f"beta must be a finite number >= 0, got {beta!r}")
    steps = integer_at_least(steps, "steps", 1)
    lr = positive_real(lr, "lr")
    z = logits_vector(logits, "logits").copy()
    r = reward_vector(rewards, z.size)
    z_ref = z.copy() if ref_logits is None else _pair(z, ref_logits)[1]
    return leash, beta, steps, lr, z, r, z_ref


def _record(path: list, r: np.ndarray, z_ref: np.ndarray) -> dict:
    probs = softmax(np.array(path))
    pi_ref = softmax(z_ref)
    best = r == r.max()
    return {"pi_correct": probs[:, best].sum(axis=1),
            "kl": np.array([kl_divergence(p, pi_ref) for p in probs])}


def leash_run(leash: str, beta: float = 1.0, G: int = 8, steps: int = 60, lr: float = 1.0, seed: int = 0,
              logits=LOGITS, rewards=REWARDS, ref_logits=None) -> dict:
    """The toy trained on samples with a KL leash to pi_ref (the start, unless ``ref_logits``), seeded (chapter 17).

    Each step draws G answers from pi, then takes one gradient step of size ``lr`` on the loss, by
    autograd: mean_i [-A_i ln pi(y_i) + beta leash_term(y_i)] with leave-one-out advantages A of the
    rewards (unbiased, chapter 9); for ``"k1_reward"`` the advantages are those of the shaped rewards
    r_i - beta k1(y_i) instead, and no term is added. Returns ``pi_correct`` (the mass on the
    best-rewarded answers) and ``kl`` KL(pi || pi_ref), both of length steps + 1.
    """
    leash, beta, steps, lr, z, r, z_ref = _run_settings(leash, beta, steps, lr, logits, rewards, ref_logits)
    G = integer_at_least(G, "G", 2)
    rng = np.random.default_rng(integer_at_least(seed, "seed", 0))
    ref = torch.from_numpy(log_softmax(z_ref))
    ones = np.ones(G, dtype=int)
    path = [z.copy()]
    for _ in range(steps):
        ys = torch.from_numpy(sample_groups(softmax(z), G, 1, rng)[0])
        zt = torch.tensor(z, dtype=torch.float64, requires_grad=True)
        logp = torch.log_softmax(zt, dim=0)[ys]
        shaped = r[ys.numpy()]
        if leash == "k1_reward":
            shaped = shaped - beta * (logp - ref[ys]).detach().numpy()
        A = torch.from_numpy(advantages(shaped, ones, "rloo"))
        per_sample = -A * logp
        if leash != "k1_reward":
            per_sample = per_sample + beta * leash_term(logp, ref[ys], leash)
        per_sample.mean().backward()
        z = z - lr * zt.grad.numpy()
        path.append(z.copy())
    return _record(path, r, z_ref)


def leash_exact_run(leash: str, beta: float = 1.0, steps: int = 60, lr: float = 1.0, logits=LOGITS,
                    rewards=REWARDS, ref_logits=None) -> dict:
    """What ``leash_run`` follows on average: z <- z + lr (grad J - beta ``leash_gradient``(z)), exact
    gradients, no sampling (chapter 17). Same outputs as ``leash_run``."""
    leash, beta, steps, lr, z, r, z_ref = _run_settings(leash, beta, steps, lr, logits, rewards, ref_logits)
    path = [z.copy()]
    for _ in range(steps):
        z = z + lr * (policy_gradient(z, r) - beta * leash_gradient(z, z_ref, leash))
        path.append(z.copy())
    return _record(path, r, z_ref)


def moved_policy(pi_correct: float, logits=LOGITS, correct: int = CORRECT) -> np.ndarray:
    """Logits of the toy's pi moved to pi(correct) = ``pi_correct``, the other answers scaled together
    (chapter 17's slider): ln of (1 - pi_correct) pi_other / (1 - pi(correct)), and ln pi_correct."""
    p = real_in_range(pi_correct, "pi_correct", 0.0, 1.0, low_open=True, high_open=True)
    pi = softmax(logits_vector(logits))
    moved = pi * (1 - p) / (1 - pi[correct])
    moved[correct] = p
    return np.log(moved)
