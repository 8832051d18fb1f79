"""Every group gradient estimator against the exact gradient, by enumerating every group (chapter 17).

A *task* is a finite set of answers a with their probabilities P(a), rewards r(a), lengths |a| (in
tokens, end-of-sequence included) and scores g(a) = grad_theta ln P(a) over every logit of the policy.
The exact gradient is the score-function identity written out, grad J = sum_a P(a) r(a) g(a). Two
tasks: the one-step toy (``one_step_task``: five answers of one token) and the two-step "5" / "05"
toy (``two_step_task``: seven answers of two or three tokens, nine logits).

A group of G answers a_1..a_G ~ P gives each answer an advantage A_i (``ADVANTAGES``) and each of
its tokens the weight that ``grpo_loss``'s aggregation (``LOSS_TYPES``) gives it at rho = 1. Every
token of answer i then carries the same weight, so the ascent direction -grad loss is
sum_i w_i g(a_i). Multiplied by the length cap L_max, so that ``dr_grpo`` is exactly the
score-function estimate (1/G) sum_i A_i g(a_i), the three aggregations give

    grpo:        X = (1/G) sum_i A_i (L_max / |a_i|) g(a_i)
    bnpo, dapo:  X = (G L_max / sum_j |a_j|) (1/G) sum_i A_i g(a_i)
    dr_grpo:     X = (1/G) sum_i A_i g(a_i).

The law of a group is multinomial over the answers (``group_count_law``), so E[X], its bias
E[X] - grad J, its total variance E|X - E X|^2 (the trace of the covariance) and its mean squared
error E|X - grad J|^2 = variance + |bias|^2 are exact sums over every group composition
(``estimator_moments``); ``sample_estimates`` draws the same estimates at random, for the Monte
Carlo check. ``dapo_batch_moments`` is ``dapo``'s exact mean when several groups share its divisor, the token
count of the whole batch, as in TRL.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._checks import (at_least, checked, integer_at_least, logits_vector, one_of, one_reward_per_answer,
                       sample_indices)
from ..math.credit import group_advantages
from ..math.distributions import softmax
from ..math.estimators import group_count_law, sample_groups
from ..math.loss_types import LOSS_TYPES
from ..math.two_step import answer_probabilities
from ..toy.five_token import LOGITS, PROMPT, REWARDS, VOCAB
from ..toy.two_step import CHOICES, TOKENS, two_step_logits
from ..toy.verifier import addition_reward

#: The advantages of a group's answers, each a function of the group's rewards (and lengths):
#: ``"reinforce"`` A_i = r_i (no baseline); ``"group_mean"`` r_i - mean_j r_j (GRPO without the std,
#: Dr. GRPO); ``"rloo"`` r_i - mean_{j != i} r_j (leave one out); ``"grpo"`` (r_i - mean) / (std + eps)
#: (``group_advantages``, ddof 0); ``"reinforce_pp"`` REINFORCE++'s batch normalisation of the rewards,
#: (r_i - m) / (s + eps) with m and s the mean and std over every TOKEN of the batch (each answer's
#: reward counted once per token).
ADVANTAGES = ("reinforce", "group_mean", "rloo", "grpo", "reinforce_pp")
_EPS = 1e-8


@dataclass(frozen=True)
class Task:
    """Answers with ``probs`` P(a), ``rewards`` r(a), ``lengths`` |a| (tokens), ``scores`` g(a) (one row
    per answer, one column per logit) and the exact ``gradient`` sum_a P(a) r(a) g(a). ``kept`` (default:
    every answer) marks the answers whose tokens the loss keeps: an answer not kept still counts in its
    group's advantages, but its tokens are masked (DAPO's overlong filtering, ``length_drift``)."""
    answers: tuple
    probs: np.ndarray
    rewards: np.ndarray
    lengths: np.ndarray
    scores: np.ndarray
    kept: np.ndarray | None = None

    @property
    def gradient(self) -> np.ndarray:
        return (self.probs * self.rewards) @ self.scores

    @property
    def max_length(self) -> int:
        return int(self.lengths.max())


@checked(one_reward_per_answer(), logits=logits_vector)
def one_step_task(logits=LOGITS, rewards=REWARDS) -> Task:
    """The one-step toy: answers ``VOCAB``, P = softmax(z), one token each, g(y) = onehot(y) - pi (chapter 7)."""
    pi = softmax(logits)
    n = logits.size
    answers = VOCAB if n == len(VOCAB) else tuple(str(k) for k in range(n))
    return Task(answers, pi, rewards, np.ones(n, dtype=int), np.eye(n) - pi[None, :])


def two_step_task(logits: dict | None = None, prompt: str = PROMPT) -> Task:
    """The two-step toy of chapters 3 and 13: seven answers, rewards from the verifier ("5" and "05" score 1).

    The logits are those of the three choosing contexts "", "5" and "0" (5 + 2 + 2 = 9, in that order);
    g(a) adds onehot(t) - pi_c at every context c where answer a chooses its token t. "5" is 2 tokens
    ("5", EOS), "05" is 3 ("0", "5", EOS).
    """
    params = two_step_logits() if logits is None else logits
    probs = answer_probabilities(params)
    offsets = np.cumsum([0] + [len(CHOICES[c]) for c in CHOICES])
    start = dict(zip(CHOICES, offsets[:-1]))
    answers = tuple(TOKENS)
    scores = np.zeros((len(answers), offsets[-1]))
    for row, answer in enumerate(answers):
        tokens = TOKENS[answer]
        for t, token in enumerate(tokens):
            context = "".join(tokens[:t])
            if context in CHOICES:
                choices = CHOICES[context]
                columns = slice(start[context], start[context] + len(choices))
                scores[row, columns] += np.eye(len(choices))[choices.index(token)] - softmax(params[context])
    return Task(answers, np.array([probs[a] for a in answers]),
                np.array([addition_reward(prompt, a) for a in answers]),
                np.array([len(TOKENS[a]) for a in answers]), scores)


def _check_task(task, name: str = "task") -> Task:
    """Rule: a :class:`Task`."""
    if not isinstance(task, Task):
        raise ValueError(f"{name} must be a Task (one_step_task() or two_step_task()), got {type(task).__name__}")
    return task


def _group_size_and_cap(args):
    """Relation: G >= 2 for leave-one-out advantages (>= 1 otherwise); ``max_completion_length`` at least
    the task's longest answer, the longest by default."""
    args["G"] = integer_at_least(args["G"], "G", 2 if args["advantage"] == "rloo" else 1)
    cap, longest = args["max_completion_length"], args["task"].max_length
    args["max_completion_length"] = longest if cap is None else integer_at_least(cap, "max_completion_length", longest)


#: The checks of the studies' common arguments.
_STUDY = dict(task=_check_task, advantage=one_of(ADVANTAGES), loss_type=one_of(LOSS_TYPES))


def advantages(rewards: np.ndarray, lengths: np.ndarray, advantage: str) -> np.ndarray:
    """Each answer's advantage in groups of rewards and lengths shaped (..., G) (validated inputs)."""
    if advantage == "reinforce":
        return rewards
    if advantage == "group_mean":
        return group_advantages(rewards, scale=False)
    if advantage == "grpo":
        return group_advantages(rewards)
    G = rewards.shape[-1]
    if advantage == "rloo":
        return rewards - (rewards.sum(axis=-1, keepdims=True) - rewards) / (G - 1)
    tokens = lengths.sum(axis=-1, keepdims=True)                       # "reinforce_pp"
    mean = (lengths * rewards).sum(axis=-1, keepdims=True) / tokens
    std = np.sqrt((lengths * (rewards - mean) ** 2).sum(axis=-1, keepdims=True) / tokens)
    return np.where(std > 0, (rewards - mean) / (std + _EPS), 0.0)


def token_weights(advantage_values: np.ndarray, lengths: np.ndarray, loss_type: str,
                  max_completion_length: int) -> np.ndarray:
    """L_max times the weight -d loss / d logp that ``grpo_loss`` gives every token of answer i at rho = 1
    (validated inputs, groups shaped (..., G)): the loss type's own ``token_weight``
    (:data:`rl4llm.math.loss_types.LOSS_TYPES`), e.g. A_i L_max / (G |a_i|) for ``grpo``, A_i L_max / sum_j |a_j|
    for ``bnpo``/``dapo``, A_i / G for ``dr_grpo``. ``lengths`` are the unmasked token counts: an answer
    of length 0 (all its tokens masked) gets weight 0, and a group with no token left gets 0 everywhere
    (``grpo_loss`` clamps its normalisers at 1). ``tests/test_loss_types.py`` checks every loss type's
    weight against autograd through ``grpo_loss``."""
    weight = LOSS_TYPES[loss_type].token_weight(advantage_values, lengths, max_completion_length)
    return np.where(lengths > 0, max_completion_length * weight, 0.0)


def group_estimates(task: Task, samples: np.ndarray, advantage: str, loss_type: str,
                    max_completion_length: int) -> np.ndarray:
    """X for every group of answer indices ``samples`` (..., G): sum_i w_i g(a_i), shape (..., n_logits)."""
    r, lengths = task.rewards[samples], task.lengths[samples]
    kept = lengths if task.kept is None else lengths * task.kept[samples]
    w = token_weights(advantages(r, lengths, advantage), kept, loss_type, max_completion_length)
    return np.einsum("...g,...gk->...k", w, task.scores[samples])


def _groups_of_counts(counts: np.ndarray) -> np.ndarray:
    """Each composition (row of answer counts) as one group of answer indices, in increasing order."""
    return np.array([np.repeat(np.arange(counts.shape[1]), row) for row in counts])


@checked(_group_size_and_cap, **_STUDY)
def estimator_moments(task: Task, G: int, advantage: str = "group_mean", loss_type: str = "dr_grpo",
                      max_completion_length: int | None = None) -> dict:
    """The exact mean, bias, total variance and mean squared error of X, over every group of G (chapter 17).

    Enumerates the C(G + n - 1, n - 1) compositions of a group of G among the task's n answers, each
    with its multinomial probability. Returns ``mean`` E[X], ``gradient`` grad J, ``bias`` E[X] - grad J,
    ``bias_norm`` |bias|, ``relative_bias`` |bias| / |grad J|, ``cosine`` the cosine between E[X] and
    grad J (1: the right direction, whatever the scale), ``scale`` E[X] . grad J / |grad J|^2 (the
    multiple of grad J that E[X] projects onto: 1 - 1/G for ``group_mean``), ``variance`` E|X - E X|^2 and
    ``mean_squared_error`` E|X - grad J|^2. ``max_completion_length`` (L_max) defaults to the task's
    longest answer.
    """
    counts, law = group_count_law(task.probs, G)
    estimates = group_estimates(task, _groups_of_counts(counts), advantage, loss_type, max_completion_length)
    mean = law @ estimates
    grad = task.gradient
    bias = mean - grad
    variance = float(law @ ((estimates - mean) ** 2).sum(axis=1))
    return {"mean": mean, "gradient": grad, "bias": bias, "bias_norm": float(np.linalg.norm(bias)),
            "relative_bias": float(np.linalg.norm(bias) / np.linalg.norm(grad)),
            "cosine": float(mean @ grad / (np.linalg.norm(mean) * np.linalg.norm(grad))),
            "scale": float(mean @ grad / (grad @ grad)),
            "variance": variance, "mean_squared_error": variance + float(bias @ bias)}


@checked(_group_size_and_cap, n_groups=at_least(1), seed=at_least(0), **_STUDY)
def sample_estimates(task: Task, G: int, n_groups: int, seed: int, advantage: str = "group_mean",
                     loss_type: str = "dr_grpo", max_completion_length: int | None = None) -> np.ndarray:
    """``n_groups`` Monte Carlo draws of X, groups of G answers ~ P (seeded), shape (n_groups, n_logits).

    Their mean and total variance (``estimators.total_variance_and_standard_error``) estimate what
    ``estimator_moments`` computes exactly.
    """
    samples = sample_groups(task.probs, G, n_groups, np.random.default_rng(seed))
    return group_estimates(task, samples, advantage, loss_type, max_completion_length)


def _one_group(args):
    """Relation: ``group`` is a 1-D array of answer indices into ``task.answers``, of a size that suits
    the advantage (``_group_size_and_cap``)."""
    group = sample_indices(args["group"], len(args["task"].answers))
    if group.ndim != 1:
        raise ValueError(f"group must be a 1-D array of answer indices, got shape {group.shape}")
    args["group"] = group
    sized = args | {"G": group.size}
    _group_size_and_cap(sized)
    args["max_completion_length"] = sized["max_completion_length"]


@checked(_one_group, **_STUDY)
def estimate_of_group(task: Task, group, advantage: str = "group_mean", loss_type: str = "dr_grpo",
                      max_completion_length: int | None = None) -> np.ndarray:
    """X for one group ``group`` (answer indices into ``task.answers``), shape (n_logits,)."""
    return group_estimates(task, group, advantage, loss_type, max_completion_length)


def _batch_of_groups(args):
    """Relation: G and the cap as for one group (``_group_size_and_cap``); ``"reinforce_pp"`` only with one
    group, since its token-counted statistics span the whole batch and so couple the groups."""
    _group_size_and_cap(args)
    if args["advantage"] == "reinforce_pp" and args["n_groups"] > 1:
        raise ValueError("advantage 'reinforce_pp' normalises over the whole batch, so it couples the groups: "
                         "dapo_batch_moments takes it only with n_groups = 1")


@checked(_batch_of_groups, n_groups=at_least(1), task=_check_task, advantage=one_of(ADVANTAGES))
def dapo_batch_moments(task: Task, G: int, n_groups: int, advantage: str = "group_mean",
                       max_completion_length: int | None = None) -> dict:
    """``dapo``'s exact mean when ``n_groups`` = B groups of G share one token-count divisor (chapter 17).

    TRL 1.16's ``dapo`` (and ``cispo``, ``vespo``: the ``elif self.loss_type in ["cispo", "dapo", "vespo"]``
    branch of ``GRPOTrainer._compute_loss``, ``grpo_trainer.py``) divides each micro-batch's token sum by
    ``num_items_in_batch``, the unmasked completion tokens of the whole generation batch gathered over every
    process (``_generate_and_score_completions``), times ``gradient_accumulation_steps / (num_processes *
    steps_per_generation)``; the optimiser step sums its accumulation window's gradients and averages over the
    processes. So the step's gradient is the token sum of every answer the step uses over (that generation
    batch's token count) x ``gradient_accumulation_steps / steps_per_generation``: with TRL's default
    ``steps_per_generation`` = ``gradient_accumulation_steps``, the token count of all the answers of the step,
    all its groups. ``estimator_moments(..., "dapo")`` is the case B = 1. With B groups, in ``dr_grpo``'s units,

        X_B = (L_max / S) sum_b sum_i A_{b,i} g(a_{b,i}),    S = sum_b sum_i |a_{b,i}| (the batch's token count)

    (the advantages within each group; an answer masked by ``task.kept`` counts neither in S nor in the sum).
    By symmetry E[X_B] = B L_max E[ sum_i A_{1,i} g(a_{1,i}) / (S_1 + S_rest) ], and S_rest, the token count of
    the other B - 1 groups, is independent of group 1, its law the (B - 1)-fold convolution of one group's. So
    the sum runs over group 1's compositions c (as ``estimator_moments``), each's sum_i A_i g(a_i) = G times
    its ``dr_grpo`` estimate, weighted by B L_max E[1 / (s_c + S_rest)]. As B grows S / B tends to E[S_1] and
    the direction to ``dr_grpo``'s. Returns ``mean``, ``gradient``, ``bias``, ``bias_norm``,
    ``relative_bias``, ``cosine`` and ``scale``, as ``estimator_moments`` does. ``advantage="reinforce_pp"``
    (statistics over the whole batch) only with B = 1.
    """
    counts, law = group_count_law(task.probs, G)
    sum_Ag = G * group_estimates(task, _groups_of_counts(counts), advantage, "dr_grpo", max_completion_length)
    kept = task.lengths if task.kept is None else task.lengths * task.kept
    s = counts @ kept                                           # each composition's token count
    one_group = np.bincount(s, weights=law)                     # its law, indexed by the count
    rest = np.ones(1)                                           # S_rest's law: B - 1 convolutions of one group's
    for _ in range(n_groups - 1):
        rest = np.convolve(rest, one_group)
    totals = s[:, None] + np.arange(rest.size)[None, :]         # S = s_c + S_rest, every value
    inverse = (rest[None, :] / np.maximum(totals, 1)).sum(axis=1)   # E[1 / S | group 1 = c] (TRL clamps at 1)
    mean = (n_groups * max_completion_length * law * inverse) @ sum_Ag
    grad = task.gradient
    bias = mean - grad
    return {"mean": mean, "gradient": grad, "bias": bias, "bias_norm": float(np.linalg.norm(bias)),
            "relative_bias": float(np.linalg.norm(bias) / np.linalg.norm(grad)),
            "cosine": float(mean @ grad / (np.linalg.norm(mean) * np.linalg.norm(grad))),
            "scale": float(mean @ grad / (grad @ grad))}
