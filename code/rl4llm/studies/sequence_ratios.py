"""Sequence-level ratios: GSPO's length-normalised ratio, the token ratios and their product, and the
clips of PPO, GSPO and CISPO, measured against the exact gradient by enumerating every answer (chapter 18).

Answers a are drawn from the old policy pi_old, the gradient is wanted at pi, one or a few steps ahead.
Each token t of a has the ratio rho_t = pi(a_t | a_<t) / pi_old(a_t | a_<t) and the score
g_t = grad_theta ln pi(a_t | a_<t); the answer's advantage is A(a) = r(a) - J(pi_old), a constant
baseline (what a group mean estimates). One answer gives the estimate X = sum_t c_t A g_t, whose token
coefficient c_t is set by the ``WEIGHTINGS``:

    "sequence_is"  c_t = prod_s rho_s                      the exact IS weight P(a) / P_old(a): unbiased
    "token"        c_t = rho_t                             PPO / GRPO's token ratio, before any clip
    "gspo"         c_t = s = exp(mean_s ln rho_s)          GSPO's ratio (``grpo.sequence_ratio``)
    "token_clip"   c_t = rho_t, 0 where the clip binds     PPO's clipped surrogate (``ppo_clip.clip_binds``)
    "gspo_clip"    c_t = s, 0 on every token where it binds for s   GSPO's sequence-level clip
    "cispo"        c_t = min(rho_t, eps_max), never 0       CISPO's detached, capped weight
                                                           (``grpo_loss(loss_type="cispo")``; its ``eps_high`` here is the
                                                           absolute cap eps_max, as TRL's ``epsilon_high``)

Every weighting sums over tokens (the constant ``dr_grpo`` aggregation, times the length cap), so that
only the weight differs between them; GSPO's own loss also divides by |a|, a length normaliser whose
effect chapter 17 measured. The exact mean E_old[X], its bias E_old[X] - grad J(pi), its total
variance E_old|X - E X|^2 and the share of tokens whose gradient is zero are sums over every answer
(``reweighted_moments``); ``sample_reweighted`` draws X at random for the Monte Carlo check.

Two tasks: the two-step "5" / "05" toy (``two_step_sequences``) and the *digit chain* of L tokens
(``chain_sequences``), each token an independent draw from the one-step toy's softmax at its own
position, scored by the share of 5s: its L grows while every answer stays enumerable (5^L of them).
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from .._checks import at_least, checked, clip_width, integer_in_range, one_of, positive_real
from ..math.distributions import log_softmax, softmax
from ..math.gradients import policy_gradient_step
from ..math.importance_sampling import sequence_ratio
from ..math.ppo_clip import clip_binds_mask
from ..toy.five_token import CORRECT, LOGITS, REWARDS
from ..toy.two_step import CHOICES, MAX_TOKENS, TOKENS, two_step_logits
from .estimator_bias import two_step_task

WEIGHTINGS = ("sequence_is", "token", "gspo", "token_clip", "gspo_clip", "cispo")
#: The clip widths of the chapter: PPO's 0.2 for token ratios, GSPO's paper's 3e-4 / 4e-4 for its
#: sequence ratio (which sits far closer to 1), and CISPO's cap: 1.28, MiniMax-M1's clip from above at
#: DAPO's clip-higher width 0.28, no lower bound (TRL: ``epsilon_high=1.28``; TRL and ScaleRL use 5).
TOKEN_EPS, GSPO_EPS, CISPO_MAX = (0.2, 0.2), (3e-4, 4e-4), 1.28
#: The longest digit chain that the chapter enumerates (5^6 = 15625 answers).
CHAIN_MAX_EXACT = 6
#: The chapter's step size for the lead, pi ahead of pi_old by exact steps of this size (chapter 7's exact step).
LEAD_LR = 0.5


@dataclass(frozen=True)
class SequenceTask:
    """Answers as token arrays (n answers, T tokens, ``mask`` 1 on real tokens): per-token log-probs
    ``logp`` under pi and ``logp_old`` under pi_old, per-token scores ``token_scores`` (n, T, n_logits)
    = grad ln pi(token) at pi, and ``rewards``; ``baseline`` is the exact J(pi_old), so that every
    answer's advantage is A = r - baseline. ``probs`` and ``probs_old`` are each answer's P(a)."""
    answers: tuple
    logp: np.ndarray
    logp_old: np.ndarray
    mask: np.ndarray
    token_scores: np.ndarray
    rewards: np.ndarray
    baseline: float

    @property
    def probs(self) -> np.ndarray:
        return np.exp((self.mask * self.logp).sum(axis=1))

    @property
    def probs_old(self) -> np.ndarray:
        return np.exp((self.mask * self.logp_old).sum(axis=1))

    @property
    def gradient(self) -> np.ndarray:
        """The exact on-policy gradient at pi, grad J = sum_a P(a) r(a) sum_t g_t(a)."""
        return (self.probs * self.rewards) @ self.token_scores.sum(axis=1)


def _chain_logits(L: int, steps: int, lr: float) -> tuple[np.ndarray, np.ndarray]:
    """pi_old: the toy's logits at every position; pi: them after ``steps`` of chapter 7's exact step."""
    z = LOGITS.copy()
    for _ in range(steps):
        z = policy_gradient_step(z, REWARDS, lr)
    return np.tile(z, (L, 1)), np.tile(LOGITS, (L, 1))


def _chain_from_tokens(tokens: np.ndarray, steps: int, lr: float) -> SequenceTask:
    n, L = tokens.shape
    z, z_old = _chain_logits(L, steps, lr)
    positions = np.arange(L)
    scores = np.zeros((n, L, L, LOGITS.size))                     # (answer, token, position, logit)
    scores[:, positions, positions, :] = np.eye(LOGITS.size)[tokens] - softmax(z)[None]
    return SequenceTask(tuple(map(tuple, tokens)), log_softmax(z)[positions, tokens],
                        log_softmax(z_old)[positions, tokens], np.ones((n, L)),
                        scores.reshape(n, L, L * LOGITS.size), (tokens == CORRECT).mean(axis=1),
                        float(softmax(LOGITS)[CORRECT]))


#: The checks of the policy's move: ``steps`` exact ascent steps of size ``lr``.
_STEPS = dict(steps=at_least(0), lr=positive_real)


@checked(L=integer_in_range(1, CHAIN_MAX_EXACT), **_STEPS)
def chain_sequences(L: int, steps: int = 1, lr: float = 1.0) -> SequenceTask:
    """Every answer of the digit chain of ``L`` tokens (5^L of them, L <= ``CHAIN_MAX_EXACT``): token t
    ~ softmax(z_t), reward the share of 5s. pi_old has the toy's logits at every position; pi has them
    after ``steps`` exact policy-gradient steps of size ``lr`` (chapter 7's ``policy_gradient_step``),
    so each token ratio is the one-step toy's, whatever L."""
    tokens = np.array(list(itertools.product(range(LOGITS.size), repeat=L)))
    return _chain_from_tokens(tokens, steps, lr)


@checked(L=at_least(1), n=at_least(1), seed=at_least(0), **_STEPS)
def sample_chain(L: int, n: int, seed: int, steps: int = 1, lr: float = 1.0) -> SequenceTask:
    """``n`` answers of the digit chain of ``L`` tokens drawn from pi_old (seeded), as a SequenceTask
    (one row per draw): the Monte Carlo counterpart of ``chain_sequences`` for any L."""
    rng = np.random.default_rng(seed)
    tokens = rng.choice(LOGITS.size, size=(n, L), p=softmax(LOGITS))
    return _chain_from_tokens(tokens, steps, lr)


def _two_step_params(steps: int, lr: float) -> dict:
    params = two_step_logits()
    for _ in range(steps):
        flat = two_step_task(params).gradient
        sizes = np.cumsum([0] + [len(CHOICES[c]) for c in CHOICES])
        params = {c: params[c] + lr * flat[a:b] for c, a, b in zip(CHOICES, sizes[:-1], sizes[1:])}
    return params


@checked(**_STEPS)
def two_step_sequences(steps: int = 1, lr: float = 1.0) -> SequenceTask:
    """The seven answers of the two-step "5" / "05" toy (chapters 3, 13, 17), padded to 3 tokens: pi_old
    is the toy, pi is it after ``steps`` exact ascent steps of size ``lr`` on J (all nine logits)."""
    new, old = _two_step_params(steps, lr), two_step_logits()
    sizes = np.cumsum([0] + [len(CHOICES[c]) for c in CHOICES])
    start = dict(zip(CHOICES, sizes[:-1]))
    answers = tuple(TOKENS)
    shape = (len(answers), MAX_TOKENS)
    logp, logp_old, mask = np.zeros(shape), np.zeros(shape), np.zeros(shape)
    scores = np.zeros(shape + (sizes[-1],))
    for i, answer in enumerate(answers):
        tokens = TOKENS[answer]
        for t, token in enumerate(tokens):
            context = "".join(tokens[:t])
            if context in CHOICES:                      # a context with one continuation is not a choice
                k = CHOICES[context].index(token)
                logp[i, t], logp_old[i, t] = log_softmax(new[context])[k], log_softmax(old[context])[k]
                columns = slice(start[context], start[context] + len(CHOICES[context]))
                scores[i, t, columns] = np.eye(len(CHOICES[context]))[k] - softmax(new[context])
            mask[i, t] = 1.0
    rewards = two_step_task(new).rewards
    return SequenceTask(answers, logp, logp_old, mask, scores, rewards, float(two_step_task(old).probs @ rewards))


def _clip_settings(args):
    """Relation: the weighting's clip widths (its defaults where None); CISPO's ``eps_high`` is its cap, > 0,
    and it has no ``eps_low``."""
    weighting, eps_low, eps_high = args["weighting"], args["eps_low"], args["eps_high"]
    default = {"gspo_clip": GSPO_EPS, "cispo": (None, CISPO_MAX)}.get(weighting, TOKEN_EPS)
    if weighting == "cispo" and eps_low is not None:
        raise ValueError(f"eps_low must be None for cispo, whose cap eps_high is one-sided, got {eps_low!r}")
    args["eps_low"] = default[0] if eps_low is None else clip_width(eps_low, "eps_low")
    args["eps_high"] = default[1] if eps_high is None else positive_real(eps_high, "eps_high")


def token_coefficients(logp, logp_old, mask, advantages, weighting: str, eps_low: float, eps_high: float
                       ) -> np.ndarray:
    """c_t of ``weighting`` for every token, where one answer's estimate is X = sum_t c_t A g_t (chapter 18):
    rho_t = exp(logp_t - logp_old_t), s = exp(mean_t ln rho_t); "sequence_is" prod_t rho_t, "token" rho_t,
    "gspo" s, "token_clip" rho_t or 0 where PPO's clip binds, "gspo_clip" s or 0 where the clip binds for s,
    "cispo" min(rho_t, eps_high). Validated inputs, arrays (n, T), ``advantages`` (n,); masked tokens get 0."""
    log_rho = mask * (logp - logp_old)
    rho = np.exp(log_rho)
    A = advantages[:, None] * np.ones_like(rho)
    if weighting == "sequence_is":
        c = np.exp(log_rho.sum(axis=1, keepdims=True)) * np.ones_like(rho)
    elif weighting == "token":
        c = rho
    elif weighting == "token_clip":
        c = np.where(clip_binds_mask(rho, A, eps_low, eps_high), 0.0, rho)
    elif weighting == "cispo":
        c = np.minimum(rho, eps_high)
    else:
        s = sequence_ratio(logp, logp_old, mask)[:, None] * np.ones_like(rho)
        c = np.where(clip_binds_mask(s, A, eps_low, eps_high), 0.0, s) if weighting == "gspo_clip" else s
    return c * mask


def _estimates(task: SequenceTask, weighting: str, eps_low: float, eps_high: float):
    advantages = task.rewards - task.baseline
    c = token_coefficients(task.logp, task.logp_old, task.mask, advantages, weighting, eps_low, eps_high)
    X = np.einsum("nt,ntk->nk", c * advantages[:, None], task.token_scores)
    zero = task.mask * ((c == 0) | (advantages[:, None] == 0))
    return X, zero


def _check_task(task, name: str = "task") -> SequenceTask:
    """Rule: a :class:`SequenceTask`."""
    if not isinstance(task, SequenceTask):
        raise ValueError(f"{name} must be a SequenceTask (chain_sequences, sample_chain or two_step_sequences), "
                         f"got {type(task).__name__}")
    return task


#: The checks of the estimate's arguments.
_WEIGHTING = dict(task=_check_task, weighting=one_of(WEIGHTINGS))


@checked(_clip_settings, **_WEIGHTING)
def reweighted_moments(task: SequenceTask, weighting: str, eps_low: float | None = None,
                       eps_high: float | None = None) -> dict:
    """The exact moments of one answer's estimate X under pi_old, every answer of ``task`` enumerated
    (chapter 18). The baseline is ``task.baseline`` = J(pi_old). Returns ``mean`` E_old[X], ``gradient`` grad J(pi),
    ``bias`` and ``bias_norm``, ``relative_bias`` |bias| / |grad J|, ``variance`` E_old|X - E X|^2,
    ``mean_squared_error`` and ``zero_share``: the expected share of tokens whose gradient is 0 because
    the clip binds (tokens of answers with A = 0 excluded from the count, as they carry no gradient under
    any weighting; A = 0 up to rounding: J(pi_old) computed by a softmax can miss a reward of 1/5 by 3e-17). Clip widths default to ``TOKEN_EPS`` or ``GSPO_EPS``, CISPO's cap (``eps_high``) to
    ``CISPO_MAX``."""
    p_old = task.probs_old
    X, zero = _estimates(task, weighting, eps_low, eps_high)
    mean = p_old @ X
    grad = task.gradient
    bias = mean - grad
    variance = float(p_old @ ((X - mean) ** 2).sum(axis=1))
    counted = task.mask * ~np.isclose(task.rewards, task.baseline)[:, None]     # A = 0 up to rounding: no gradient
    clipped = zero * counted
    return {"mean": mean, "gradient": grad, "bias": bias, "bias_norm": float(np.linalg.norm(bias)),
            "relative_bias": float(np.linalg.norm(bias) / np.linalg.norm(grad)), "variance": variance,
            "mean_squared_error": variance + float(bias @ bias),
            "zero_share": float(p_old @ clipped.sum(axis=1) / (p_old @ counted.sum(axis=1)))}


def _sampled(args):
    """Relation: the ``task`` holds at least 2 sampled answers (a sample variance needs two)."""
    if args["task"].rewards.size < 2:
        raise ValueError(f"task must hold at least 2 sampled answers, got {args['task'].rewards.size}")


@checked(_clip_settings, _sampled, **_WEIGHTING)
def sample_reweighted(task: SequenceTask, weighting: str, eps_low: float | None = None,
                      eps_high: float | None = None) -> dict:
    """The Monte Carlo counterpart of ``reweighted_moments`` on answers drawn from pi_old (``sample_chain``):
    the sample ``mean`` with its ``mean_se`` (per logit), the sample ``variance`` (trace, ddof 1) with its
    standard error ``variance_se`` (the standard error of the mean of |X - mean|^2) and ``zero_share``.
    The baseline is the task's exact J(pi_old), as in the enumeration."""
    n = task.rewards.size
    X, zero = _estimates(task, weighting, eps_low, eps_high)
    mean = X.mean(axis=0)
    squared = ((X - mean) ** 2).sum(axis=1)
    counted = task.mask * ~np.isclose(task.rewards, task.baseline)[:, None]     # A = 0 up to rounding: no gradient
    return {"mean": mean, "mean_se": X.std(axis=0, ddof=1) / np.sqrt(n),
            "variance": float(squared.sum() / (n - 1)), "variance_se": float(squared.std(ddof=1) / np.sqrt(n)),
            "zero_share": float((zero * counted).sum() / counted.sum())}


@checked(task=_check_task)
def product_weight_split(task: SequenceTask) -> dict:
    """The product weight's variance, split into three terms under pi_old, every answer of ``task``
    enumerated (chapter 18, section *As the answer grows longer*). The estimate is X = w Y, with w = P(a) / P_old(a)
    and Y = A sum_t g_t (the score of the whole answer), so that

        variance = E[w^2] E|Y|^2  +  Cov(w^2, |Y|^2)  -  |E X|^2

    the first term is what the second moment E|X|^2 would be if w were independent of the score, the second is
    what their dependence adds, and E X = grad J(pi) since the product is unbiased. Returns ``w2`` E[w^2],
    ``score2`` E|Y|^2, ``independent`` E[w^2] E|Y|^2, ``covariance`` Cov(w^2, |Y|^2), ``second_moment`` E|X|^2
    and ``mean_squared`` |E X|^2."""
    p_old = task.probs_old
    w = task.probs / p_old
    Y = np.einsum("nt,ntk->nk", task.mask * (task.rewards - task.baseline)[:, None], task.token_scores)
    y2 = (Y ** 2).sum(axis=1)
    w2, score2, second = float(p_old @ w ** 2), float(p_old @ y2), float(p_old @ (w ** 2 * y2))
    mean = p_old @ (w[:, None] * Y)
    return {"w2": w2, "score2": score2, "independent": w2 * score2, "covariance": second - w2 * score2,
            "second_moment": second, "mean_squared": float(mean @ mean)}
