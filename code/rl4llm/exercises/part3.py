"""Checked exercises of Part III (chapters 10-14): reusing samples, trust regions, GRPO and its choices."""
from __future__ import annotations

import numpy as np

from ..math.credit import EXAMPLE_REWARDS, EXAMPLE_VALUES, gae, group_advantages, td_errors
from ..math.distributions import log_softmax, softmax
from ..math.importance_sampling import importance_ratios
from ..math.ppo_clip import clipped_objective
from ..toy.five_token import CORRECT, LOGITS
from ._core import Call, FunctionExercise, NumericExercise, toy_and_random



# ----------------------------------------------------------------------------- chapter 10
#: Exercise 10's update: the logit of 5 raised by ln 2, the others unchanged (e^z = 1, 4, 4, 2, 1).
BOOSTED_LOGITS = LOGITS + np.log(2.0) * (np.arange(LOGITS.size) == CORRECT)


def _ratio_cases():
    """The boosted toy against the toy, then random pairs of nearby policies; the last has logits
    spread over thousands of nats, so that every answer but the likeliest underflows to
    probability 0 (as a long sequence's probability does) while the log-ratios stay small."""
    rng = np.random.default_rng(0)
    cases = [(BOOSTED_LOGITS, LOGITS)]
    for spread in (1.0, 1.0, 3.0, 1000.0):
        K = int(rng.integers(3, 7))
        old = spread * rng.normal(size=K)
        cases.append((old + rng.normal(scale=0.5, size=K), old))
    return cases


def _quietly(f):
    """``f`` with numpy's warnings about 0/0 and overflow silenced (a mistake may divide by 0)."""
    def wrapped(*args):
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            return f(*args)
    return wrapped


def _ratio_mistakes():
    as_float = lambda z: np.asarray(z, dtype=float)
    return (
        ("the ratio is upside down: rho = pi_new / pi_old (the policy being trained over the one that "
         "drew the samples), not pi_old / pi_new", lambda new, old: importance_ratios(old, new)),
        ("that is a ratio of logits, z_new / z_old; rho is a ratio of probabilities, softmax(z_new) / "
         "softmax(z_old) (a logit can be 0 or negative, a probability cannot)",
         _quietly(lambda new, old: as_float(new) / as_float(old))),
        ("that is the log-ratio ln pi_new - ln pi_old; exponentiate it: rho = exp(ln pi_new - ln pi_old)",
         lambda new, old: log_softmax(new) - log_softmax(old)),
        ("the softmax's normaliser is missing: exp(z_new - z_old) is the ratio of the e^z, but "
         "pi = e^z / sum e^z and the two sums differ; subtract each one's log-sum-exp (log_softmax) first",
         _quietly(lambda new, old: np.exp(as_float(new) - as_float(old)))),
        ("the formula is right, but dividing probabilities fails where they underflow to 0 (0/0 = nan on "
         "the last random case, whose logits span thousands of nats, like a long sequence's log-probability); "
         "compute in log space: rho = exp(log_softmax(z_new) - log_softmax(z_old))",
         _quietly(lambda new, old: softmax(new) / softmax(old))),
        ("e^z overflows for the large logits of the last random case (inf / inf = nan); subtract the "
         "largest logit before exponentiating, or better, compute in log space: "
         "rho = exp(log_softmax(z_new) - log_softmax(z_old))", _quietly(_naive_softmax_ratio)),
    )


def _naive_softmax_ratio(new, old):
    """softmax(new) / softmax(old) with e^z taken as it comes (no max subtracted)."""
    e_new, e_old = np.exp(np.asarray(new, dtype=float)), np.exp(np.asarray(old, dtype=float))
    return (e_new / e_new.sum()) / (e_old / e_old.sum())


def _weight_mistakes() -> tuple[tuple[float, str], ...]:
    rho = importance_ratios(BOOSTED_LOGITS, LOGITS)[CORRECT]
    return (
        (1 / rho, "the ratio is upside down: rho(5) = pi_new(5) / pi_old(5), not pi_old(5) / pi_new(5)"),
        (float(np.exp(BOOSTED_LOGITS[CORRECT] - LOGITS[CORRECT])),
         "2 is the ratio of the e^z (or of the logits) of 5: e^z(5) doubled, but so did one term of the "
         "softmax's sum, 10 -> 12, so pi_new(5) = 4/12, not 4/10"),
        (float(np.log(rho)), "that is ln rho(5), the log-ratio; exponentiate it"),
        (float(softmax(BOOSTED_LOGITS)[CORRECT]),
         "that is pi_new(5) itself; the ratio divides it by pi_old(5) = 0.2"),
        (float(importance_ratios(BOOSTED_LOGITS, LOGITS)[0]),
         "10/12 = 5/6 is the ratio of every OTHER answer: their e^z stay, the sum grows from 10 to 12. The "
         "e^z of 5 doubled as well, so rho(5) = 2 x 10/12"),
        (1.6, "1.6 is neither 5/3 rounded (1.667, to three decimals) nor 2 x 10/12: if you took 2 x (1 - 0.2), "
              "the normaliser does not lose pi_old(5)'s share, it grows from 10 to 12 (e^z of 5: 2 -> 4), so "
              "rho(5) = 2 x 10/12 = 5/3"),
    )


# ----------------------------------------------------------------------------- chapter 11
#: Exercise 11's by-hand case: a wrong answer already pushed below the band.
NEGATIVE_CASE = {"ratio": 0.6, "advantage": -0.5, "eps": 0.2}


def _negative_mistakes() -> tuple[tuple[float, str], ...]:
    rho, A, eps = NEGATIVE_CASE["ratio"], NEGATIVE_CASE["advantage"], NEGATIVE_CASE["eps"]
    value = float(clipped_objective(rho, A, eps))
    return (
        (float(_clip_wrong_side(rho, A, eps)),
         "that is the unclipped rho A = 0.6 x (-0.5), which a clip on the wrong side (or max for min) "
         "gives; for A < 0 the bound that matters is 1 - eps = 0.8, and min(rho A, clip(rho) A) picks "
         "the clipped term"),
        (-value, "the sign is flipped: that is the loss -L_CLIP that a trainer minimises; the objective "
                 "min(rho A, clip(rho) A) is negative for A < 0"),
        ((1 + eps) * A, "that clips rho to the upper edge 1 + eps = 1.2; rho = 0.6 is below the band, so "
                        "clip(0.6, 0.8, 1.2) = 0.8"),
    )


# ----------------------------------------------------------------------------- chapter 12
#: Exercise 12's by-hand setting, on the chapter's episode r = (0, 0, 1), V = (0.5, 0.6, 0.7).
BY_HAND_GAMMA, BY_HAND_LAMBDA = 0.9, 0.5


def _by_hand_gae_mistakes() -> tuple[tuple[float, str], ...]:
    r, v, g, lam = EXAMPLE_REWARDS, EXAMPLE_VALUES, BY_HAND_GAMMA, BY_HAND_LAMBDA
    no_gamma_in_delta = td_errors(r, v, 1.0)
    return (
        (float(_gae_variant(r, v, g, lam, shift=1)[0]),
         "the discounting is off by one: delta_0 itself has weight 1 (A_0 = delta_0 + gamma lambda A_1), "
         "not gamma lambda"),
        (float(gae(r, v, g, 1.0)[0]),
         "lambda is missing: that is the lambda = 1 advantage G_0 - V(s_0) = 0.81 - 0.5; the weights are "
         "(gamma lambda)^l = 0.45^l, not 0.9^l"),
        (float(sum((g * lam) ** l * d for l, d in enumerate(no_gamma_in_delta))),
         "gamma is missing from the TD errors: delta_t = r_t + gamma V(s_{t+1}) - V(s_t) = (0.04, 0.03, "
         "0.3) with gamma = 0.9, not (0.1, 0.1, 0.3)"),
        (float(_gae_variant(r, v, g, lam, use_gamma=False)[0]),
         "gamma is missing from the weights: A_t = delta_t + gamma lambda A_{t+1}, so the weights are "
         "0.45^l, not 0.5^l"),
        (float(_gae_variant(r, v, 1.0, lam)[0]),
         "gamma is missing everywhere (that is gamma = 1): the TD errors are (0.04, 0.03, 0.3) with gamma = "
         "0.9, not (0.1, 0.1, 0.3), and the weights are (gamma lambda)^l = 0.45^l, not 0.5^l"),
    )


def _gae_forward(rewards, values, gamma=1.0, lam=1.0, last_value=0.0):
    """The recursion run forwards in time, A_t = delta_t + gamma lambda A_{t-1}: a typical slip."""
    delta = td_errors(rewards, values, gamma, last_value)
    out, running = np.empty_like(delta), 0.0
    for t in range(delta.size):
        running = delta[t] + gamma * lam * running
        out[t] = running
    return out


def _gae_no_gamma_in_delta(rewards, values, gamma=1.0, lam=1.0, last_value=0.0):
    delta = td_errors(rewards, values, 1.0, last_value)
    out, running = np.empty_like(delta), 0.0
    for t in range(delta.size - 1, -1, -1):
        running = delta[t] + gamma * lam * running
        out[t] = running
    return out


# ----------------------------------------------------------------------------- chapter 13
#: Exercise 13's group under chapter 7's lenient verifier: "5", "15", "4", "4".
PARTIAL_CREDIT_GROUP = np.array([1.0, 0.5, 0.0, 0.0])
_FIFTEEN_IN_GROUP = 1


def _advantage_mistakes() -> tuple[tuple[float, str], ...]:
    r, i = PARTIAL_CREDIT_GROUP, _FIFTEEN_IN_GROUP
    return (
        (float(_std_advantages(r, 1, "outside")[i]),
         "that uses the sample std (ddof=1, divide by G - 1 = 3, TRL's choice); the book's default is the "
         "population std, ddof=0: divide the squared deviations by G = 4"),
        (float(r[i] / r.std()), "the baseline is missing: subtract the group's mean reward 0.375 from r(15) = "
                                "0.5 before dividing by the std"),
        (float(r[i] - r.mean()), "the division by the group's std is missing: that is r - mean (Dr. GRPO's "
                                 "scale=False); divide by the std, 0.4146"),
        (float((r[i] - r.mean()) / r.var()), "that divides by the variance 0.1719; divide by its square root, "
                                             "the std 0.4146"),
        (float((r.mean() - r[i]) / r.std()), "the sign is flipped: the advantage is r - mean, and r(15) = 0.5 is "
                                             "above the group's mean 0.375, so it is positive"),
    )


def _group_rewards(rng):
    if rng is None:      # the toy's group, and a nearly flat one (where eps's place shows)
        return (np.array([[0.0, 1.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0 + 1e-6]]),)
    return (rng.integers(0, 2, size=(3, 6)).astype(float) + rng.normal(scale=0.2, size=(3, 6)),)


def _advantage_cases():
    """The toy's group and random groups at the defaults, then each setting given by name: scale=False
    (Dr. GRPO), ddof=1 (TRL), a large eps (and ddof=1 with eps=0.05) on groups with a nearly flat one."""
    rng = np.random.default_rng(13)
    cases = toy_and_random(_group_rewards, 2)()
    flat = np.array([[1.0, 1.0, 1.0, 1.02]])
    for settings in ({"scale": False}, {"ddof": 1}, {"eps": 0.1}, {"ddof": 1, "eps": 0.05}):
        rewards = np.concatenate([_group_rewards(rng)[0][:, :4], flat])
        cases.append(Call((rewards,), settings))
    return cases


def _advantages(rewards, scale=True, ddof=0, eps=1e-8, *, where="outside", centre=True, axis=-1):
    """(r - mean) / (std + eps) with the typical slips: eps ``where="sqrt"`` (inside the root), no
    ``centre``, statistics over ``axis=None`` (the whole batch)."""
    r = np.asarray(rewards, dtype=float)
    keep = axis is not None
    centred = r - r.mean(axis=axis, keepdims=keep) if centre else r
    if not scale:
        return centred
    if where == "sqrt":
        return centred / np.sqrt(r.var(axis=axis, ddof=ddof, keepdims=keep) + eps)
    return centred / (r.std(axis=axis, ddof=ddof, keepdims=keep) + eps)


def _episode(rng):
    if rng is None:
        return np.array([0.0, 0.0, 1.0]), np.array([0.5, 0.6, 0.7]), 0.9, 0.5
    T = int(rng.integers(3, 7))
    return rng.normal(size=T), rng.normal(size=T), float(rng.uniform(0.5, 1.0)), float(rng.uniform(0.1, 0.9))


def _gae_cases():
    """The chapter's episode, random ones, then a truncated episode (last_value, the critic's V(s_T),
    given by name) and the defaults gamma = lambda = 1."""
    rng = np.random.default_rng(12)
    cases = toy_and_random(_episode, 3)()
    for last_value in (0.8, -0.4):
        cases.append(Call(_episode(rng), {"last_value": last_value}))
    cases.append(Call(_episode(rng)[:2]))
    return cases


def _ratios_advantages(rng):
    if rng is None:
        return np.array([0.5, 1.0, 2.0, 0.5, 2.0]), np.array([0.8, 0.8, 0.8, -0.2, -0.2]), 0.2
    return rng.uniform(0.3, 2.0, size=8), rng.normal(size=8), 0.2


def _clip_cases():
    """The toy, random ratios at eps = 0.2, then other eps, and an asymmetric band (DAPO's
    eps_high, given by name)."""
    rng = np.random.default_rng(11)
    cases = toy_and_random(_ratios_advantages, 2)()
    cases += [(rng.uniform(0.3, 2.0, size=8), rng.normal(size=8), eps) for eps in (0.1, 0.35)]
    cases += [Call((rng.uniform(0.3, 2.0, size=8), rng.normal(size=8), eps), {"eps_high": high})
              for eps, high in ((0.2, 0.28), (0.1, 0.4))]
    return cases


def _band(eps, eps_high=None):
    return 1 - eps, 1 + (eps if eps_high is None else eps_high)


def _std_advantages(rewards, ddof, where, eps=1e-8):
    r = np.asarray(rewards, dtype=float)
    centred = r - r.mean(axis=-1, keepdims=True)
    if where == "sqrt":
        return centred / np.sqrt(r.var(axis=-1, ddof=ddof, keepdims=True) + eps)
    return centred / (r.std(axis=-1, ddof=ddof, keepdims=True) + eps)


def _gae_variant(rewards, values, gamma=1.0, lam=1.0, last_value=0.0, shift=0, use_lam=True, use_gamma=True):
    r, v = np.asarray(rewards, float), np.asarray(values, float)
    nxt = np.append(v[1:], last_value)
    delta = r + gamma * nxt - v
    decay = (gamma if use_gamma else 1.0) * (lam if use_lam else 1.0)
    out, running = np.empty_like(delta), 0.0
    for t in range(len(delta) - 1, -1, -1):
        running = delta[t] + decay * running
        out[t] = running
    return out * decay if shift else out


def _clip_wrong_side(ratio, advantage, eps, eps_high=None):
    """The clip on the wrong side for a negative advantage: rho capped at 1 + eps whatever the sign of
    A. Right for A > 0; for A < 0 it shields a mistake the model now favours (rho > 1 + eps) and keeps
    pushing down one already below 1 - eps, the opposite of min(rho A, clip(rho) A)."""
    rho, A = np.asarray(ratio, float), np.asarray(advantage, float)
    return np.minimum(rho, _band(eps, eps_high)[1]) * A


# ----------------------------------------------------------------------------- chapter 14
#: Exercise 14's group: one right answer among four; TRL divides by the sample std (ddof=1) plus 1e-4.
TRL_GROUP, TRL_EPS = np.array([1.0, 0.0, 0.0, 0.0]), 1e-4


def _trl_advantage_mistakes() -> tuple[tuple[float, str], ...]:
    """Each slip with TRL's eps = 1e-4 and without it (by hand one often drops it): the answer's tolerance,
    1e-4, is finer than the eps's effect (3e-4 at the right value), so both values are named."""
    r, trl = TRL_GROUP, float(_std_advantages(TRL_GROUP, 1, "outside", TRL_EPS)[0])
    slips = (
        (lambda eps: float(_std_advantages(r, 0, "outside", eps)[0]),
         "that uses the population std (ddof=0, divide by G = 4), the book's default; TRL uses the sample std: "
         "divide the squared deviations by G - 1 = 3"),
        (lambda eps: float(r[0] / (r.std(ddof=1) + eps)),
         "the baseline is missing: subtract the group's mean reward 0.25 from r = 1 before dividing by the std"),
        (lambda eps: float(r[0] - r.mean()),
         "the division by the group's std is missing: that is r - mean (Dr. GRPO's scale=False); divide by the "
         "sample std, 0.5"),
        (lambda eps: float((r[0] - r.mean()) / r.var(ddof=1)),
         "that divides by the sample variance 0.25; divide by its square root, the std 0.5"),
        (lambda eps: -float(_std_advantages(r, 1, "outside", eps)[0]),
         "the sign is flipped: the advantage is r - mean, and the right answer is above the group's mean "
         "0.25, so it is positive"),
    )
    mistakes = [(float((r[0] - r.mean()) / r.std(ddof=1)),
                 "that is 0.75 / 0.5 without TRL's eps: TRL divides by the sample std plus 1e-4, 0.75 / 0.5001")]
    for slip, explanation in slips:
        for eps in (TRL_EPS, 0.0):
            if all(abs(slip(eps) - wrong) > 1e-12 for wrong, _ in mistakes):
                mistakes.append((slip(eps), explanation))
    assert trl not in (wrong for wrong, _ in mistakes)
    return tuple(mistakes)


SPECS: dict[str, FunctionExercise | NumericExercise] = {
    "ex-ch10-weight": NumericExercise(
        10, "rho(5) = pi_new(5) / pi_old(5) after z(5) is raised by ln 2",
        float(importance_ratios(BOOSTED_LOGITS, LOGITS)[CORRECT]), 5e-4, _weight_mistakes()),
    "importance_ratios": FunctionExercise(10, importance_ratios, _ratio_cases, _ratio_mistakes()),
    "ex-ch11-negative": NumericExercise(
        11, "L_CLIP(rho = 0.6, A = -0.5) with eps = 0.2", float(clipped_objective(**NEGATIVE_CASE)), 5e-4,
        _negative_mistakes()),
    "ex-ch12-by-hand": NumericExercise(
        12, "the GAE advantage A_0 at gamma = 0.9, lambda = 0.5",
        float(gae(EXAMPLE_REWARDS, EXAMPLE_VALUES, BY_HAND_GAMMA, BY_HAND_LAMBDA)[0]), 5e-4,
        _by_hand_gae_mistakes()),
    "ex-ch13-advantage": NumericExercise(
        13, 'the advantage of "15" in the group ("5", "15", "4", "4") with partial credit',
        # the library's formula, (r - mean) / (std + eps) with ddof 0, in numpy: group_advantages itself
        # lives in rl4llm.llm.grpo, which imports torch (tests/test_exercises_part3.py checks they agree)
        float(_std_advantages(PARTIAL_CREDIT_GROUP, 0, "outside")[_FIFTEEN_IN_GROUP]), 5e-4, _advantage_mistakes()),
    "ex-ch14-trl-advantage": NumericExercise(
        14, "TRL's advantage of the right answer in the group (1, 0, 0, 0)",
        # within 1e-4: 1.5 (the eps left out) is 3e-4 away and is named as a mistake
        float(_std_advantages(TRL_GROUP, 1, "outside", TRL_EPS)[0]), 1e-4, _trl_advantage_mistakes()),
    "group_advantages": FunctionExercise(13, group_advantages, _advantage_cases, (
        ("the std uses ddof=1 (the sample std, TRL's choice) even when ddof=0 is asked for; the book's "
         "default is ddof=0, the population std", lambda r, scale=True, ddof=0, eps=1e-8: _advantages(r, scale, 1, eps)),
        ("eps is in the wrong place: it is added to the std, (r - mean) / (std + eps), not inside the square "
         "root", lambda *a, **k: _advantages(*a, **k, where="sqrt")),
        ("the baseline is missing: subtract the group's mean reward before dividing by its std",
         lambda *a, **k: _advantages(*a, **k, centre=False)),
        ("the division by the group's std is missing (that is Dr. GRPO's r - mean, scale=False)",
         lambda r, scale=True, ddof=0, eps=1e-8: _advantages(r, False)),
        ("the mean and std are taken over the whole batch, not within each group (the last axis)",
         lambda *a, **k: _advantages(*a, **k, axis=None)),
        ("scale is ignored: scale=False (Dr. GRPO) returns r - mean, without dividing by the std",
         lambda r, scale=True, ddof=0, eps=1e-8: _advantages(r, True, ddof, eps)),
        ("ddof is ignored: ddof=1 asks for the sample std (divide the squared deviations by G - 1)",
         lambda r, scale=True, ddof=0, eps=1e-8: _advantages(r, scale, 0, eps)),
        ("eps is ignored: the std is divided as std + eps with the eps passed in, not a fixed 1e-8",
         lambda r, scale=True, ddof=0, eps=1e-8: _advantages(r, scale, ddof)),
    )),
    "gae": FunctionExercise(12, gae, _gae_cases, (
        ("the discounting is off by one: A_t = delta_t + gamma lambda A_{t+1}, so delta_t itself gets weight "
         "1, not gamma lambda", lambda *a, **k: _gae_variant(*a, **k, shift=1)),
        ("lambda is missing from the recursion: A_t = delta_t + gamma * lambda * A_{t+1}",
         lambda *a, **k: _gae_variant(*a, **k, use_lam=False)),
        ("gamma is missing from the recursion: A_t = delta_t + gamma * lambda * A_{t+1}",
         lambda *a, **k: _gae_variant(*a, **k, use_gamma=False)),
        ("last_value is ignored: an episode cut off before its end bootstraps from the critic, V(s_T) = "
         "last_value, so the last TD error is r_{T-1} + gamma last_value - V(s_{T-1})",
         lambda r, v, g=1.0, l=1.0, last_value=0.0: gae(r, v, g, l)),
        ("gamma is missing from the TD errors: delta_t = r_t + gamma * V(s_{t+1}) - V(s_t)",
         _gae_no_gamma_in_delta),
        ("the recursion runs forwards in time: A_t = delta_t + gamma * lambda * A_{t+1} folds in the steps "
         "AFTER t, so loop from the last step back to the first", _gae_forward),
    )),
    "clipped_objective": FunctionExercise(11, clipped_objective, _clip_cases, (
        ("the clip is on the wrong side for a negative advantage: with A < 0 the bound that matters is "
         "rho < 1 - eps (min(rho A, clip(rho) A) picks it)", _clip_wrong_side),
        ("max instead of min: PPO keeps the pessimistic (smaller) of rho A and clip(rho) A",
         lambda p, a, e, eps_high=None: np.maximum(np.asarray(p) * a, np.clip(p, *_band(e, eps_high)) * np.asarray(a))),
        ("the unclipped term is missing: the objective is min(rho A, clip(rho) A), not clip(rho) A",
         lambda p, a, e, eps_high=None: np.clip(p, *_band(e, eps_high)) * np.asarray(a)),
        ("the clip is missing: rho A alone is the plain importance-weighted objective of chapter 10; PPO "
         "takes min(rho A, clip(rho, 1 - eps, 1 + eps) A)",
         lambda p, a, e, eps_high=None: np.asarray(p, float) * np.asarray(a, float)),
        ("eps_high is ignored: when it is given, the band is [1 - eps, 1 + eps_high] (DAPO's asymmetric "
         "clip); only when it is None is the upper edge 1 + eps", lambda p, a, e, eps_high=None: clipped_objective(p, a, e)),
        ("eps is ignored: the band is [1 - eps, 1 + eps], with the eps passed in, not a fixed 0.2",
         lambda p, a, e, eps_high=None: clipped_objective(p, a, 0.2, eps_high)),
    )),
}


# ----------------------------------------------------------------------------- chapter 14: the GRPO loss
def _loss_batch(rng):
    import torch
    gen = np.random.default_rng(0) if rng is None else rng
    B, T = 6, 5
    lengths = gen.integers(1, T + 1, size=B)
    mask = (np.arange(T)[None, :] < lengths[:, None]).astype(np.float32)
    logp = gen.normal(-1.0, 0.3, size=(B, T)).astype(np.float32)
    old = (logp + gen.normal(0.0, 0.3, size=(B, T))).astype(np.float32)
    adv = gen.normal(size=B).astype(np.float32)
    return tuple(torch.as_tensor(x) for x in (logp, old, adv, mask))


def _loss_cases():
    """The defaults on three random padded batches, then each setting given by name: every loss_type
    (dr_grpo with a max_completion_length of 8 > T = 5), an asymmetric clip, and the k3 penalty
    (beta, ref_logp) under two aggregations."""
    import torch
    rng = np.random.default_rng(14)
    cases = toy_and_random(_loss_batch, 2)()

    def batch():
        logp, old, adv, mask = _loss_batch(rng)
        return (logp, old, adv, mask), (logp + torch.as_tensor(rng.normal(0.0, 0.4, size=logp.shape),
                                                                dtype=logp.dtype))
    for settings in ({"loss_type": "bnpo"}, {"loss_type": "dapo"}, {"loss_type": "dr_grpo", "max_completion_length": 8},
                     {"eps_low": 0.1, "eps_high": 0.3}, {"beta": 0.1}, {"loss_type": "dr_grpo", "beta": 0.2,
                                                                         "max_completion_length": 7}):
        args, ref = batch()
        cases.append(Call(args, {**settings, "ref_logp": ref} if "beta" in settings else settings))
    return cases


def _grpo_loss_value(*args, **kwargs) -> float:
    from ..llm.grpo import grpo_loss
    return float(grpo_loss(*args, **kwargs)[0])


def _grpo_variant(logp, old_logp, advantages, mask, *, eps_low=0.2, eps_high=None, beta=0.0, ref_logp=None,
                  loss_type="grpo", max_completion_length=None, sign=1.0, pick="min", kl="k3", as_type=None,
                  padding=False, ignore_length=False, symmetric=False):
    """grpo_loss with the typical slips: ``pick="max"``, ``kl="k1"``, ``as_type`` (a dict mapping
    the loss type asked for to the one computed), ``padding`` (the mask ignored), ``ignore_length``
    (dr_grpo divides by B T), ``symmetric`` (eps_high ignored); beta 0 when ``kl=None``."""
    import torch
    high = eps_low if (eps_high is None or symmetric) else eps_high
    ratio = torch.exp(logp - old_logp)
    a = advantages.to(logp.dtype).unsqueeze(1)
    terms = (ratio * a, torch.clamp(ratio, 1 - eps_low, 1 + high) * a)
    per_token = -(torch.minimum(*terms) if pick == "min" else torch.maximum(*terms))
    if kl is not None and beta > 0:
        x = ref_logp - logp
        per_token = per_token + beta * (torch.exp(x) - x - 1 if kl == "k3" else -x)
    per_token = sign * per_token
    m = torch.ones_like(mask) if padding else mask.to(logp.dtype)
    kind = (as_type or {}).get(loss_type, loss_type)
    total = (per_token * m).sum()
    if kind == "grpo":
        return float(((per_token * m).sum(1) / m.sum(1).clamp(min=1)).mean())
    if kind in ("bnpo", "dapo"):
        return float(total / m.sum().clamp(min=1))
    length = mask.shape[1] if ignore_length or max_completion_length is None else max_completion_length
    return float(total / (mask.shape[0] * length))


def _grpo(**slip):
    return lambda *args, **kwargs: _grpo_variant(*args, **kwargs, **slip)


SPECS["grpo_loss"] = FunctionExercise(14, _grpo_loss_value, _loss_cases, (
    ("the sign is flipped: grpo_loss returns the NEGATED clipped objective, a loss to minimise", _grpo(sign=-1.0)),
    ("the aggregation is per token over the whole batch (bnpo/dapo); loss_type 'grpo' averages each "
     "sequence over its own tokens first, then averages the sequences", _grpo(as_type={"grpo": "bnpo"})),
    ("the padding is counted: average over the unmasked tokens only (the mask)", _grpo(padding=True)),
    ("max instead of min: the loss is -min(rho A, clip(rho) A), the pessimistic term (max lets the ratio run "
     "past the band)", _grpo(pick="max")),
    ("the KL penalty uses k1 = ln(pi / pi_ref) = logp - ref_logp; GRPO's is k3 = exp(ref_logp - logp) - "
     "(ref_logp - logp) - 1, which is never negative", _grpo(kl="k1")),
    ("beta is ignored: with beta > 0 each token's loss adds beta times k3 (measured against ref_logp)",
     _grpo(kl=None)),
    ("loss_type is ignored: bnpo and dapo average over every unmasked token of the batch, dr_grpo divides "
     "the token sum by B * max_completion_length; only grpo averages per sequence first",
     _grpo(as_type={"bnpo": "grpo", "dapo": "grpo", "dr_grpo": "grpo"})),
    ("dr_grpo is computed as a token mean (bnpo): its normaliser is the constant B * max_completion_length, "
     "not the number of unmasked tokens", _grpo(as_type={"dr_grpo": "bnpo"})),
    ("max_completion_length is ignored: dr_grpo divides by B * max_completion_length (the longest "
     "completion allowed), not B * T (the padded width of this batch)", _grpo(ignore_length=True)),
    ("eps_high is ignored: the band is [1 - eps_low, 1 + eps_high] when eps_high is given", _grpo(symmetric=True)),
))
