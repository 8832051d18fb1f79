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

Each placement's gradient on a token y is one coefficient times the score grad ln pi(y)
(``leash_coefficient``: x, 1, x, 1 - e^(-x), x). ``kl_estimators`` is the formula;
``kl_estimator_moments`` its exact bias and variance on a tabular policy; ``leash_gradient`` the expected
(or sampled) gradient of each leash, in closed form (``tests/test_kl_penalties.py`` checks it by autograd);
``leash_run`` and ``leash_exact_run`` train the toy with each, sampled and exactly.
"""
from __future__ import annotations

import numpy as np

from .._checks import (as_float_array, at_least, checked, in_range, index_in_range, logits_vector, one_of, optional,
                      positive_real, reward_array, same_shapes, sample_indices)
from ..math.distributions import kl_divergence, log_softmax, softmax
from ..math.estimators import sample_groups
from ..math.gradients import policy_gradient
from ..toy.five_token import CORRECT, LOGITS, REWARDS
from .estimator_bias import advantages

#: Where a trainer puts the KL, and how (see the module docstring).
LEASHES = ("k1_reward", "k1_loss", "k2_loss", "k3_loss", "k3_corrected")
#: The KL whose gradient each leash follows in expectation on samples from pi: "reverse" is
#: KL(pi || pi_ref), "forward" is KL(pi_ref || pi), "none" is a zero expected gradient.
LEASH_DIRECTIONS = {"k1_reward": "reverse", "k1_loss": "none", "k2_loss": "reverse", "k3_loss": "forward",
                    "k3_corrected": "reverse"}
ESTIMATORS = ("k1", "k2", "k3")


def _log_probs(x, name):
    return as_float_array(x, name, ndim_min=0)


@checked(same_shapes("logp", "logp_ref"), logp=_log_probs, logp_ref=_log_probs)
def kl_estimators(logp, logp_ref):
    """``(k1, k2, k3)`` elementwise, with x = logp - logp_ref (chapter 17):
    k1 = x, k2 = x^2 / 2, k3 = exp(logp_ref - logp) - (logp_ref - logp) - 1.

    ``logp`` and ``logp_ref`` are the log-probabilities of the same sampled tokens under pi and pi_ref,
    of one shape (numpy arrays, lists or numbers; numpy comes back). Over tokens sampled from pi, k1 and
    k3 average to KL(pi || pi_ref). (In the loss, :data:`rl4llm.llm.grpo.KL_ESTIMATORS` computes them on
    tensors.)
    """
    x = logp - logp_ref
    return tuple(np.asarray(k) for k in (x, x ** 2 / 2, np.exp(-x) + x - 1))      # a 0-d result stays an array


@checked(same_shapes("logits", "ref_logits"), logits=logits_vector, ref_logits=logits_vector)
def kl_estimator_moments(logits, ref_logits=LOGITS) -> dict:
    """Each estimator's exact mean, bias and variance as an estimate of KL(pi || pi_ref), one token y ~ pi.

    By enumeration over the answers of the tabular policies pi = softmax(``logits``) and
    pi_ref = softmax(``ref_logits``): ``kl`` KL(pi || pi_ref), and for each of "k1", "k2", "k3" a dict
    with ``mean`` E[k], ``bias`` E[k] - KL and ``variance`` Var[k] (of one sample; a mean of n
    samples has variance / n).
    """
    pi = softmax(logits)
    kl = kl_divergence(pi, softmax(ref_logits))
    out = {"kl": float(kl)}
    for name, k in zip(ESTIMATORS, kl_estimators.unchecked(log_softmax(logits), log_softmax(ref_logits))):
        mean = float(pi @ k)
        out[name] = {"mean": mean, "bias": mean - float(kl), "variance": float(pi @ (k - mean) ** 2)}
    return out


def leash_coefficient(x, leash: str):
    """c(x) with grad(penalty at token y) = c(x) grad ln pi(y), x = ln pi(y) - ln pi_ref(y), for each placement
    of ``LEASHES`` (validated inputs; see the module's docstring): ``"k1_reward"`` (sg(k1) ln pi) x;
    ``"k1_loss"`` 1; ``"k2_loss"`` (grad x^2 / 2) x; ``"k3_loss"`` (grad of e^(-x) + x - 1) 1 - e^(-x);
    ``"k3_corrected"`` (rho k3, rho = exp(ln pi - sg(ln pi))) k3 + 1 - e^(-x) = x."""
    if leash == "k1_loss":
        return np.ones_like(x)
    if leash == "k3_loss":
        return 1 - np.exp(-x)
    return x


def _samples_of_logits(args):
    """Relation: ``samples`` (when given) is a non-empty 1-D array of answer indices of ``logits``."""
    if args["samples"] is not None:
        size = args["logits"].size
        samples = sample_indices(args["samples"], size)
        if samples.ndim != 1:
            raise ValueError(f"samples must be a non-empty 1-D array of answer indices in [0, {size - 1}]")
        args["samples"] = samples


@checked(same_shapes("logits", "ref_logits"), _samples_of_logits, logits=logits_vector, ref_logits=logits_vector,
         leash=one_of(LEASHES))
def leash_gradient(logits, ref_logits, leash: str, samples=None) -> np.ndarray:
    """d/dz of the leash's penalty: its expectation over y ~ pi when ``samples`` is None (every answer
    weighted by pi(y), the weights held fixed), sum_y pi(y) c(x_y) (onehot(y) - pi), else its mean over the
    sampled answer indices ``samples``, mean_i c(x_i) (onehot(y_i) - pi) (a Monte Carlo estimate of that
    expectation), with c = ``leash_coefficient``. A DESCENT direction: the trainer subtracts beta times it
    from its ascent on J (chapter 17).
    """
    pi = softmax(logits)
    scores = np.eye(pi.size) - pi                                   # row y: grad ln pi(y)
    c = leash_coefficient(log_softmax(logits) - log_softmax(ref_logits), leash)
    if samples is None:
        return (pi * c) @ scores
    return c[samples] @ scores[samples] / samples.size


def _default_reference(args):
    if args["ref_logits"] is None:
        args["ref_logits"] = args["logits"].copy()


#: The checks of the two runs' common arguments.
_RUN = dict(leash=one_of(LEASHES), beta=in_range(0.0, np.inf, high_open=True), steps=at_least(1), lr=positive_real,
            logits=logits_vector, rewards=reward_array, ref_logits=optional(logits_vector))
_RUN_RELATIONS = (same_shapes("logits", "rewards"), _default_reference, same_shapes("logits", "ref_logits"))


def _record(path: list, r: np.ndarray, z_ref: np.ndarray) -> dict:
    probs = softmax(np.array(path))
    pi_ref = softmax(z_ref)
    best = r == r.max()
    return {"pi_correct": probs[:, best].sum(axis=1),
            "kl": np.array([kl_divergence(p, pi_ref) for p in probs])}


@checked(*_RUN_RELATIONS, G=at_least(2), seed=at_least(0), **_RUN)
def leash_run(leash: str, beta: float = 1.0, G: int = 8, steps: int = 60, lr: float = 1.0, seed: int = 0,
              logits=LOGITS, rewards=REWARDS, ref_logits=None) -> dict:
    """The toy trained on samples with a KL leash to pi_ref (the start, unless ``ref_logits``), seeded (chapter 17).

    Each step draws G answers from pi, then takes one gradient step of size ``lr`` on the loss
    mean_i [-A_i ln pi(y_i) + beta penalty(y_i)], whose gradient is mean_i (-A_i + beta c_i) grad ln pi(y_i)
    (c_i = ``leash_coefficient``), with leave-one-out advantages A of the rewards (unbiased, chapter 9);
    for ``"k1_reward"`` the advantages are those of the shaped rewards r_i - beta k1(y_i) instead, and no
    term is added. Returns ``pi_correct`` (the mass on the best-rewarded answers) and ``kl``
    KL(pi || pi_ref), both of length steps + 1.
    """
    rng = np.random.default_rng(seed)
    z, ones = logits.copy(), np.ones(G, dtype=int)
    path = [z.copy()]
    for _ in range(steps):
        pi = softmax(z)
        ys = sample_groups(pi, G, 1, rng)[0]
        x = (log_softmax(z) - log_softmax(ref_logits))[ys]
        shaped = rewards[ys] - beta * x if leash == "k1_reward" else rewards[ys]
        weight = -advantages(shaped, ones, "rloo")
        if leash != "k1_reward":
            weight = weight + beta * leash_coefficient(x, leash)
        z = z - lr * weight @ (np.eye(pi.size)[ys] - pi) / G
        path.append(z.copy())
    return _record(path, rewards, ref_logits)


@checked(*_RUN_RELATIONS, **_RUN)
def leash_exact_run(leash: str, beta: float = 1.0, steps: int = 60, lr: float = 1.0, logits=LOGITS,
                    rewards=REWARDS, ref_logits=None) -> dict:
    """What ``leash_run`` follows on average: z <- z + lr (grad J - beta ``leash_gradient``(z)), exact
    gradients, no sampling (chapter 17). Same outputs as ``leash_run``."""
    z = logits.copy()
    path = [z.copy()]
    for _ in range(steps):
        z = z + lr * (policy_gradient(z, rewards) - beta * leash_gradient.unchecked(z, ref_logits, leash))
        path.append(z.copy())
    return _record(path, rewards, ref_logits)


def _index_of_logits(args):
    """Relation: ``correct`` indexes ``logits``."""
    args["correct"] = index_in_range(args["correct"], "correct", args["logits"].size)


@checked(_index_of_logits, pi_correct=in_range(0.0, 1.0, low_open=True, high_open=True), logits=logits_vector)
def moved_policy(pi_correct: float, logits=LOGITS, correct: int = CORRECT) -> np.ndarray:
    """Logits of the toy's pi moved to pi(correct) = ``pi_correct``, the other answers scaled together
    (chapter 17's slider): ln of (1 - pi_correct) pi_other / (1 - pi(correct)), and ln pi_correct."""
    pi = softmax(logits)
    moved = pi * (1 - pi_correct) / (1 - pi[correct])
    moved[correct] = pi_correct
    return np.log(moved)
