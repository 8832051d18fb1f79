"""Checked exercises of Part II (chapters 6-9): the RL core."""
from __future__ import annotations

import math

import numpy as np

from ..math.distributions import softmax
from ..math.estimators import (estimator_variance, group_mean_baseline_gradient, jhat_distribution,
                          leave_one_out_gradient, optimal_baseline, sample_groups)
from ..math.gradients import expected_reward, policy_gradient, score
from ..toy.five_token import LOGITS, REWARDS, VOCAB
from ._core import Call, FunctionExercise, NumericExercise, logits_and_token, toy_and_random


def _logits_rewards(rng):
    if rng is None:
        return LOGITS, REWARDS
    K = int(rng.integers(3, 7))
    return rng.normal(size=K), rng.integers(0, 2, size=K).astype(float) + rng.normal(scale=0.1, size=K)


#: Chapter 7's lenient verifier: 1 for "5", 0.5 for "15" (the digits of 5 with a stray 1), else 0.
PARTIAL_CREDIT = np.array([0.0, 0.0, 1.0, 0.0, 0.5])
_FIFTEEN = VOCAB.index("15")
_PI = softmax(LOGITS)


def _partial_credit_mistakes() -> tuple[tuple[float, str], ...]:
    pi, r = _PI[_FIFTEEN], PARTIAL_CREDIT[_FIFTEEN]
    J = expected_reward(LOGITS, PARTIAL_CREDIT)
    return (
        (-pi * (r - J), "the sign is flipped: dJ/dz(15) = pi(15) (r(15) - J), and r(15) = 0.5 is above J = 0.25"),
        (pi * r, "the baseline is missing: pi(15) r(15) is not the derivative; subtract J = 0.25 from r(15) first"),
        (pi * (1 - pi) * r, "only the own-logit term pi(15) (1 - pi(15)) r(15) is there; raising z(15) also "
                            "lowers pi(5), which costs pi(15) pi(5) r(5)"),
        (J, "that is J itself; the question asks for the derivative dJ/dz(15) = pi(15) (r(15) - J)"),
        (float(policy_gradient(LOGITS, PARTIAL_CREDIT)[VOCAB.index("5")]),
         "that is dJ/dz(5) = pi(5) (r(5) - J) = 0.2 x 0.75, the derivative in the logit of 5; the question "
         "asks for the logit of 15"),
    )


# ----------------------------------------------------------------------------- chapter 6
def _p_and_G(rng):
    if rng is None:
        return 0.2, 4
    return float(rng.uniform(0.05, 0.95)), int(rng.integers(1, 13))


def _binomial_coefficients(G: int) -> np.ndarray:
    return np.array([math.comb(G, k) for k in range(G + 1)], dtype=float)


def _jhat_no_binomial_coefficient(p, G):
    k = np.arange(G + 1)
    return k / G, p ** k * (1 - p) ** (G - k)


def _jhat_counts(p, G):
    return np.arange(G + 1).astype(float), jhat_distribution(p, G)[1]


def _jhat_swapped(p, G):
    k = np.arange(G + 1)
    return k / G, _binomial_coefficients(G) * (1 - p) ** k * p ** (G - k)


def _jhat_only_probs(p, G):
    return jhat_distribution(p, G)[1]


#: Chapter 6's by-hand exercise: the standard error of J-hat at G = 4 under chapter 7's lenient verifier.
_G6 = 4
_J_LENIENT = float(_PI @ PARTIAL_CREDIT)
_VAR_LENIENT = float(_PI @ PARTIAL_CREDIT ** 2) - _J_LENIENT ** 2


def _lenient_se_mistakes() -> tuple[tuple[float, str], ...]:
    coin = _J_LENIENT * (1 - _J_LENIENT)
    return (
        (math.sqrt(coin / _G6), "J (1 - J) is the variance of a 0/1 reward only; with a reward of 0.5, "
                                "r^2 is not r, so use E[r^2] - J^2 = 0.225 - 0.0625"),
        (_VAR_LENIENT / _G6, "that is the variance of J-hat; its standard error is the square root"),
        (math.sqrt(_VAR_LENIENT), "that is the standard deviation of ONE reward; the mean of G = 4 has "
                                  "it divided by sqrt(4)"),
        (math.sqrt(_VAR_LENIENT) / _G6, "the standard deviation was divided by G = 4; averaging G samples "
                                        "divides the variance by G, so the standard deviation by sqrt(G)"),
    )


# ----------------------------------------------------------------------------- chapter 8
def _variance_case(rng):
    if rng is None:
        return LOGITS, REWARDS, 0.2, 4
    z, r = _logits_rewards(rng)
    return z, r, float(rng.uniform(-1.0, 2.0)), int(rng.integers(2, 17))


def _variance_cases():
    """The toy and random cases with every argument given, then the defaults (baseline 0, G = 1) and
    each of baseline and G given by name alone."""
    rng = np.random.default_rng(8)
    return toy_and_random(_variance_case)() + [Call(_logits_rewards(rng)), Call(_logits_rewards(rng), {"G": 5}),
                                               Call(_logits_rewards(rng), {"baseline": 0.4})]


def _second_moment(z, r, baseline=0.0, G=1):
    b = baseline
    pi = softmax(z)
    r = np.asarray(r, dtype=float)
    return float(pi @ ((r - b) ** 2 * (1 - 2 * pi + pi @ pi))) / G


def _variance_own_coordinate_only(z, r, baseline=0.0, G=1):
    b = baseline
    pi = softmax(z)
    r = np.asarray(r, dtype=float)
    grad = policy_gradient(z, r)
    return float(pi @ ((r - b) ** 2 * (1 - pi) ** 2) - grad @ grad) / G


def _optimal_baseline_mistakes() -> tuple[tuple[float, str], ...]:
    g_sq = 1 - 2 * _PI + _PI @ _PI
    own = (1 - _PI) ** 2
    return (
        (_J_LENIENT, "that is the mean reward J = 0.25, the usual baseline but not the best one: b* weights "
                     "each reward by pi(y) |g(y)|^2, and the rewarded answers 5 and 15 have longer score "
                     "vectors (|g|^2 = 0.86 and 1.06) than the average E[|g|^2] = 0.74, so b* lies above J"),
        (float(g_sq @ PARTIAL_CREDIT / g_sq.sum()), "the weights pi(y) are missing: b* = E[r |g|^2] / "
                                                    "E[|g|^2], expectations under pi"),
        (float(_PI @ (PARTIAL_CREDIT * g_sq)), "that is only the numerator E[r |g|^2]; divide it by "
                                               "E[|g|^2] = 0.74"),
        (float(_PI[2] * PARTIAL_CREDIT[2] * g_sq[2] / (_PI @ g_sq)),
         "the answer 15 is left out of the numerator: it earns 0.5 too, so E[r |g|^2] = 0.2 x 1 x 0.86 + "
         "0.1 x 0.5 x 1.06 = 0.225, not 0.172"),
        (float((_PI * own) @ PARTIAL_CREDIT / (_PI @ own)),
         "|g(y)|^2 is not (1 - pi(y))^2: the score onehot(y) - pi has the entry -pi(i) at every other "
         "answer i too, so |g(y)|^2 = 1 - 2 pi(y) + |pi|^2"),
    )


# ----------------------------------------------------------------------------- chapter 9
#: The chapter's group of 8 at the toy's start (seed 3): 0, 4, 6, 5, 0, 4, 4, 4.
_CHAPTER_GROUP = sample_groups(_PI, 8, 1, np.random.default_rng(3))[0]
#: Chapter 9's by-hand group of G = 4: the answers 5, 4, 4, 0.
_HAND_GROUP = np.array([VOCAB.index(a) for a in ("5", "4", "4", "0")])
_FOUR = VOCAB.index("4")


def _group_case(rng):
    if rng is None:
        return LOGITS, _CHAPTER_GROUP, REWARDS
    z, r = _logits_rewards(rng)
    return z, rng.integers(z.size, size=int(rng.integers(2, 11))), r


def _group_no_baseline(z, samples, r):
    pi = softmax(z)
    y = np.asarray(samples)
    return (np.asarray(r, dtype=float)[y][:, None] * (np.eye(pi.size)[y] - pi)).mean(axis=0)


def _group_sum(z, samples, r):
    return len(samples) * group_mean_baseline_gradient(z, samples, r)


def _hand_group_mistakes() -> tuple[tuple[float, str], ...]:
    value = float(group_mean_baseline_gradient(LOGITS, _HAND_GROUP, REWARDS)[_FOUR])
    return (
        (float(_group_no_baseline(LOGITS, _HAND_GROUP, REWARDS)[_FOUR]),
         "the baseline is missing: the weights are the advantages r_i - rbar (0.75 and -0.25), not the "
         "rewards r_i"),
        (-value, "the sign is flipped: the two samples of 4 have a negative advantage, so the step lowers "
                 "the logit of 4"),
        (len(_HAND_GROUP) * value, "that is the sum over the group; the estimate is the mean, (1/G) times "
                                   "the sum, with G = 4"),
        (float(leave_one_out_gradient(LOGITS, _HAND_GROUP, REWARDS)[_FOUR]),
         "that is the leave-one-out (RLOO) estimate, G/(G-1) = 4/3 times the group-mean one; here the "
         "baseline is the mean of all four rewards, rbar = 0.25"),
        (float(_group_std_scaled(LOGITS, _HAND_GROUP, REWARDS)[_FOUR]),
         "the advantages are divided by the group's std (GRPO's (r - rbar) / std, chapter 13): here the "
         "advantage is the plain r_i - rbar, 0.75 for the 5 and -0.25 for each 4 and the 0"),
        (value / 2, "that is one sample's worth, -0.25/4: it counts only one of the two 4s (or it is the entry "
                    "of 0, sampled once). Each sample of 4 adds its advantage -0.25 to the logit of 4 (the "
                    "-pi(4) terms of the four samples cancel, as the advantages sum to 0), so the estimate "
                    "is (1/4)(-0.25 - 0.25)"),
    )


def _group_std_scaled(z, samples, r):
    """The group-mean estimate with GRPO's std-scaled advantages (r_i - rbar) / std (ddof 0) in place of
    the plain r_i - rbar: chapter 13's advantage where chapter 9's is asked for."""
    pi = softmax(z)
    y = np.asarray(samples)
    rewards = np.asarray(r, dtype=float)[y]
    std = rewards.std()
    advantages = (rewards - rewards.mean()) / (std if std > 0 else 1.0)
    return (advantages[:, None] * (np.eye(pi.size)[y] - pi)).mean(axis=0)


SPECS: dict[str, FunctionExercise | NumericExercise] = {
    # chapter 7
    "ex-ch07-partial-credit": NumericExercise(
        7, "dJ/dz(15) under the lenient verifier", float(policy_gradient(LOGITS, PARTIAL_CREDIT)[_FIFTEEN]),
        5e-4, _partial_credit_mistakes()),
    "score": FunctionExercise(7, score, toy_and_random(logits_and_token), (
        ("the sign is flipped: grad ln pi(y) is onehot(y) - pi (pi - onehot(y) is the SFT loss's gradient)",
         lambda z, y: -score(z, y)),
        ("the -pi term is missing: softmax couples every logit, so grad ln pi(y) = onehot(y) - pi",
         lambda z, y: np.eye(len(z))[y]),
    )),
    "policy_gradient": FunctionExercise(7, policy_gradient, toy_and_random(_logits_rewards), (
        ("the sign is flipped: that is the descent direction; grad J = pi * (r - J) points uphill",
         lambda z, r: -policy_gradient(z, r)),
        ("the baseline is missing: pi * r is not the gradient; subtract J = sum pi r from r first "
         "(the entries of grad J sum to zero)", lambda z, r: softmax(z) * np.asarray(r, float)),
        ("the weight pi is missing: each token's term is pi(y) (r(y) - J), not r(y) - J",
         lambda z, r: np.asarray(r, float) - softmax(z) @ np.asarray(r, float)),
    )),
    # chapter 6
    "ex-ch06-lenient-se": NumericExercise(
        6, "the standard error of J-hat at G = 4 under the lenient verifier", math.sqrt(_VAR_LENIENT / _G6),
        5e-4, _lenient_se_mistakes()),
    "jhat_distribution": FunctionExercise(6, jhat_distribution, toy_and_random(_p_and_G), (
        ("the binomial coefficient C(G, k) is missing: p^k (1 - p)^(G - k) is the probability of ONE "
         "particular order of k correct answers, and C(G, k) orders give the same count",
         _jhat_no_binomial_coefficient),
        ("the values are the counts k = 0..G; J-hat is the FRACTION correct, k / G",
         _jhat_counts),
        ("p and 1 - p are swapped: k correct answers have probability p^k, the G - k wrong ones "
         "(1 - p)^(G - k)", _jhat_swapped),
        ("only the probabilities came back: return the pair (values, probs), values = k / G",
         _jhat_only_probs),
    ), output="pair"),
    # chapter 8
    "ex-ch08-lenient-baseline": NumericExercise(
        8, "the optimal constant baseline b* under the lenient verifier", optimal_baseline(LOGITS, PARTIAL_CREDIT),
        5e-4, _optimal_baseline_mistakes()),
    "estimator_variance": FunctionExercise(8, estimator_variance, _variance_cases, (
        ("the factor 1/G is missing: that is the variance of ONE sample; the mean of G independent "
         "estimates has 1/G of it", lambda z, r, baseline=0.0, G=1: estimator_variance(z, r, baseline, 1)),
        ("the variance is multiplied by G; averaging G independent estimates DIVIDES it by G",
         lambda z, r, baseline=0.0, G=1: G * estimator_variance(z, r, baseline, 1)),
        ("the variance is divided by sqrt(G): that is how the standard deviation shrinks; the variance "
         "of a mean of G shrinks by G", lambda z, r, baseline=0.0, G=1: estimator_variance(z, r, baseline, 1) / math.sqrt(G)),
        ("the baseline is missing: each estimate is (r(y) - b) score(y), not r(y) score(y)",
         lambda z, r, baseline=0.0, G=1: estimator_variance(z, r, 0.0, G)),
        ("|grad J|^2 is not subtracted: sum_y pi(y) (r(y) - b)^2 |g(y)|^2 is the second moment E|X|^2; "
         "the variance is E|X|^2 - |E X|^2, and E X = grad J", _second_moment),
        ("|g(y)|^2 is not (1 - pi(y))^2: the score onehot(y) - pi has the entry -pi(i) at every other "
         "answer i too, so |g(y)|^2 = 1 - 2 pi(y) + |pi|^2", _variance_own_coordinate_only),
    )),
    # chapter 9
    "ex-ch09-group-step": NumericExercise(
        9, "the group-mean estimate of dJ/dz(4) for the group 5, 4, 4, 0",
        float(group_mean_baseline_gradient(LOGITS, _HAND_GROUP, REWARDS)[_FOUR]), 5e-4, _hand_group_mistakes()),
    "group_mean_baseline_gradient": FunctionExercise(9, group_mean_baseline_gradient, toy_and_random(_group_case), (
        ("the sign is flipped: that is the descent direction; the step ASCENDS along "
         "(1/G) sum_i (r_i - rbar) (onehot(y_i) - pi)", lambda z, y, r: -group_mean_baseline_gradient(z, y, r)),
        ("the baseline is missing: the weights are the advantages r_i - rbar, rbar the group's mean "
         "reward, not the rewards r_i", _group_no_baseline),
        ("that is the sum over the group; the estimate is the mean, (1/G) times the sum", _group_sum),
        ("the advantages are divided by the group's std, as GRPO does (chapter 13): the weights here are the "
         "plain advantages r_i - rbar", _group_std_scaled),
        ("that is the leave-one-out (RLOO) baseline, the mean of the OTHER rewards, which gives G/(G-1) "
         "times the estimate; here the baseline is the mean of all G rewards, r_i included",
         lambda z, y, r: leave_one_out_gradient(z, y, r)),
    )),
}
