"""GRPO's loss on the toys, by autograd (chapters 13, 14): what ``grpo_loss`` does to the one-token toy's k3
penalty, to a group of the two-step "5" / "05" toy over K inner steps, and to the tokens of a group of
short and long answers under each loss type.

- ``k3_loss_gradient``: the k3 penalty on one-token answers and its gradient by autograd through
  ``grpo_loss`` (with ``bias_correction=True``, TRL's rho * k3); its expected value is the numpy
  ``rl4llm.studies.toy_grpo.forward_kl_gradient`` (``reverse_kl_gradient`` with the correction).
- ``two_step_inner_steps``: per-token ratios and the clip on the two-step toy (:mod:`rl4llm.toy.two_step`).
- ``aggregation_weights``: the weight -d loss / d logp each ``loss_type`` puts on each token, measured
  by autograd: the independent route to the registry's ``token_weight`` (:mod:`rl4llm.math.loss_types`).
"""
from __future__ import annotations

import numpy as np
import torch

from .._checks import (at_least, checked, clip_range, flag, integer_at_least, logits_vector, one_of, positive_real,
                      reward_array, same_shapes, sample_indices, std_ddof)
from ..math.credit import group_advantages
from ..math.distributions import log_softmax
from ..math.loss_types import LOSS_TYPES
from ..math.ppo_clip import clip_binds_mask
from ..math.two_step import answer_probabilities
from ..toy.five_token import PROMPT
from ..toy.two_step import CHOICES, MAX_TOKENS, TOKENS, two_step_logits
from ..toy.verifier import addition_reward
from .grpo import grpo_loss


# ----------------------------------------------------------------------------- the k3 penalty on the one-token toy
def _answers_of_logits(args):
    """Relation: ``samples`` is a non-empty 1-D array of answer indices of ``logits``."""
    z = args["logits"]
    samples = sample_indices(args["samples"], z.size)
    if samples.ndim != 1:
        raise ValueError(f"samples must be a non-empty 1-D array of answer indices in [0, {z.size - 1}]")
    args["samples"] = samples


@checked(same_shapes("logits", "ref_logits"), _answers_of_logits, logits=logits_vector, ref_logits=logits_vector,
         bias_correction=flag)
def k3_loss_gradient(logits, ref_logits, samples, bias_correction: bool = False) -> dict:
    """The k3 penalty on one-token answers, and its gradient by autograd (chapter 14).

    Each sampled answer y_i is a row of length 1 with advantage 0, so ``grpo_loss`` (beta = 1,
    loss_type "grpo") is exactly the mean of
    k3(y_i) = pi_ref(y_i)/pi(y_i) - ln(pi_ref(y_i)/pi(y_i)) - 1.
    Returns ``value`` (that mean: an estimate of the reverse KL(pi || pi_ref) when y_i ~ pi) and
    ``gradient`` (d value / d z by autograd: an estimate of grad KL(pi_ref || pi) = pi - pi_ref,
    the FORWARD direction). With ``samples`` holding each answer in proportion to pi, both are
    exact.

    ``bias_correction=True`` is TRL's ``use_bias_correction_kl``: the mean of rho_i k3(y_i) with
    rho_i = exp(ln pi(y_i) - sg(ln pi(y_i))) (1 in value, so the value is unchanged). The gradient
    through rho adds k3(y_i) grad ln pi(y_i), and the sum estimates grad KL(pi || pi_ref): the
    REVERSE direction (``reverse_kl_gradient``).
    """
    zt = torch.tensor(logits, dtype=torch.float64, requires_grad=True)
    index = torch.as_tensor(samples)
    logp = torch.log_softmax(zt, dim=0)[index].unsqueeze(1)
    ref_logp = torch.tensor(log_softmax(ref_logits)[samples], dtype=torch.float64).unsqueeze(1)
    if bias_correction:
        x = ref_logp - logp
        rho = torch.exp(logp - logp.detach())
        loss = (rho * (torch.exp(x) - x - 1)).mean()
    else:
        loss, _ = grpo_loss(logp, logp.detach(), torch.zeros(samples.size, dtype=torch.float64),
                            torch.ones_like(logp), beta=1.0, ref_logp=ref_logp, loss_type="grpo")
    loss.backward()
    return {"value": float(loss.detach()), "gradient": zt.grad.numpy().copy()}


# ----------------------------------------------------------------------------- the "5" / "05" toy
def _answer_list(answers) -> list[str]:
    answers = list(answers) if not isinstance(answers, str) else [answers]
    if not answers or any(a not in TOKENS for a in answers):
        raise ValueError(f"answers must be a non-empty list of answers among {sorted(TOKENS)}, got {answers!r}")
    return answers


def _two_step_logp(params: dict, answers: list[str]) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-token log-probabilities (B, T) and mask of ``answers`` under torch logits ``params``."""
    log_probs = {ctx: torch.log_softmax(z, dim=0) for ctx, z in params.items()}
    rows, masks = [], []
    for answer in answers:
        tokens = TOKENS[answer]
        row = []
        for t, token in enumerate(tokens):
            context = "".join(tokens[:t])
            row.append(log_probs[context][CHOICES[context].index(token)] if context in CHOICES
                       else torch.zeros((), dtype=torch.float64))
        pad = MAX_TOKENS - len(row)
        rows.append(torch.stack(row + [torch.zeros((), dtype=torch.float64)] * pad))
        masks.append([1.0] * len(row) + [0.0] * pad)
    return torch.stack(rows), torch.tensor(masks, dtype=torch.float64)


def _group_of_answers(answers, name):
    answers = _answer_list(answers)
    if len(answers) < 2:
        raise ValueError(f"{name} must hold a group of G >= 2 answers, got {len(answers)}")
    return answers


@checked(clip_range(), answers=_group_of_answers, K=at_least(1), lr=positive_real, ddof=std_ddof,
         loss_type=one_of(LOSS_TYPES))
def two_step_inner_steps(answers, K: int = 3, lr: float = 2.0, eps_low: float = 0.2,
                         eps_high: float | None = None, loss_type: str = "grpo", scale: bool = True,
                         ddof: int = 0) -> dict:
    """K GRPO inner steps on one group of the two-step toy, through ``grpo_loss`` (chapter 13).

    The rewards come from the verifier (``addition_reward(PROMPT, answer)``: "5" and "05" score 1),
    the advantages from ``group_advantages``, and every inner step minimises ``grpo_loss`` (per-token
    ratio rho_t = pi(token_t | context) / pi_old(token_t | context), clipped per token) by one
    gradient-descent step of size ``lr`` on the logits of every choosing context.

    Returns, with row k = before inner step k (k = 0..K, row K = after the last step):
    ``tokens`` (each answer's tokens), ``rewards``, ``advantages``, ``mask`` (B, T),
    ``ratios`` (K+1, B, T) per-token rho (1 where masked), ``clipped`` (K+1, B, T) where the clip
    binds (rho < 1 - eps_low with A < 0, rho > 1 + eps_high with A > 0), ``sequence_ratios``
    (K+1, B) = prod_t rho_t = pi(answer) / pi_old(answer), ``clip_fraction`` (K+1,) from
    ``grpo_loss``'s stats, and ``answer_probs`` (K+1 dicts, ``rl4llm.math.two_step.answer_probabilities``).
    """
    rewards = np.array([addition_reward(PROMPT, a) for a in answers])
    advantages = group_advantages(rewards, scale=bool(scale), ddof=ddof)
    params = {ctx: torch.tensor(z, dtype=torch.float64, requires_grad=True) for ctx, z in two_step_logits().items()}
    with torch.no_grad():
        old_logp, mask = _two_step_logp(params, answers)
    A = torch.tensor(advantages, dtype=torch.float64)
    ratios, clip_fractions, probs = [], [], []
    for k in range(K + 1):
        logp, _ = _two_step_logp(params, answers)
        loss, stats = grpo_loss(logp, old_logp, A, mask, eps_low=eps_low, eps_high=eps_high, loss_type=loss_type,
                                max_completion_length=MAX_TOKENS)
        ratios.append(torch.exp(logp - old_logp).detach().numpy() * mask.numpy() + (1 - mask.numpy()))
        clip_fractions.append(stats["clip_fraction"])
        probs.append(answer_probabilities({c: z.detach().numpy() for c, z in params.items()}))
        if k == K:
            break
        for z in params.values():
            z.grad = None
        loss.backward()
        with torch.no_grad():
            for z in params.values():
                z -= lr * z.grad
    ratios = np.array(ratios)
    a = advantages[None, :, None]
    clipped = clip_binds_mask(ratios, a, eps_low, eps_high) & (mask.numpy() > 0)
    return {
        "tokens": [TOKENS[x] for x in answers],
        "rewards": rewards,
        "advantages": advantages,
        "mask": mask.numpy(),
        "ratios": ratios,
        "clipped": clipped,
        "sequence_ratios": ratios.prod(axis=2),
        "clip_fraction": np.array(clip_fractions),
        "answer_probs": probs,
    }


# ----------------------------------------------------------------------------- loss aggregation
def _group_rewards(rewards, name):
    r = reward_array(rewards, name)
    if r.ndim != 1 or r.size < 2:
        raise ValueError(f"{name} must be a 1-D group of G >= 2 rewards, got shape {r.shape}")
    return r


def _lengths_and_cap(args):
    lengths, r = np.asarray(args["lengths"]), args["rewards"]
    if lengths.shape != r.shape or not np.issubdtype(lengths.dtype, np.integer) or lengths.min() < 1:
        raise ValueError(f"lengths must be integers >= 1, one per reward (shape {r.shape}), got {args['lengths']!r}")
    args["lengths"] = lengths
    if args["max_completion_length"] is not None:
        integer_at_least(args["max_completion_length"], "max_completion_length", int(lengths.max()))


@checked(_lengths_and_cap, rewards=_group_rewards, loss_type=one_of(LOSS_TYPES), ddof=std_ddof)
def aggregation_weights(rewards, lengths, loss_type: str, max_completion_length: int | None = None,
                        scale: bool = True, ddof: int = 0) -> dict:
    """The weight each ``loss_type`` of ``grpo_loss`` gives each answer's tokens, by autograd (chapter 14).

    One group with per-answer ``rewards`` and ``lengths`` (tokens), at rho = 1 (the first inner
    step). The ascent direction is sum_it w_it grad ln pi(token_it), with w_it = -d loss / d logp_it;
    every token of answer i gets the same w_i, so w_i is also the weight on grad ln pi(answer i):

    - ``"grpo"``: w_i = A_i / (B |o_i|)  (a long answer's tokens are pushed less, right or wrong);
    - ``"bnpo"``/``"dapo"``: w_i = A_i / sum_j |o_j|  (equal per token; depends on the batch);
    - ``"dr_grpo"``: w_i = A_i / (B L_max)  (equal per token; a constant).

    Returns ``advantages`` (``group_advantages``), ``per_token`` (w_i) and ``per_answer``
    (|o_i| w_i, the total over the answer's tokens).
    """
    r, T = rewards, int(lengths.max())
    advantages = group_advantages(r, scale=bool(scale), ddof=ddof)
    logp = torch.zeros((r.size, T), dtype=torch.float64, requires_grad=True)
    mask = (torch.arange(T)[None, :] < torch.as_tensor(lengths)[:, None]).to(torch.float64)
    loss, _ = grpo_loss(logp, logp.detach(), torch.tensor(advantages, dtype=torch.float64), mask,
                        loss_type=loss_type, max_completion_length=max_completion_length)
    loss.backward()
    per_token = -logp.grad[:, 0].numpy().copy()
    return {"advantages": advantages, "per_token": per_token, "per_answer": per_token * lengths}

