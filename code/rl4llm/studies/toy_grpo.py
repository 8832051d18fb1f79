"""GRPO assembled on the toy (chapter 13), and the choices the one-token toy hides (chapter 14).

Three pieces, each built from the library's own functions (no formula is re-derived here):

- ``grpo_toy_run``: the full GRPO loop on the five-answer toy. Each step freezes pi_old, samples
  a group of G answers (``sample_groups``), scores them with the verifier's rewards, turns the
  rewards into ``group_advantages`` and takes K clipped inner steps
  (``clipped_surrogate_gradient``), optionally with a KL-to-reference penalty (weight beta) and an
  entropy bonus. It logs pi(5), the entropy, KL(pi || pi_ref), whether each group was flat, and
  the clip fraction and the length of every inner step (so a saturated clip shows).
- The KL-to-reference term: GRPO adds beta * k3 per sampled token, k3 = ref/pi - ln(ref/pi) - 1.
  The VALUE of k3 averages to the reverse KL(pi || pi_ref), but its expected GRADIENT (samples held
  fixed, as autograd sees them) is the gradient of the FORWARD KL(pi_ref || pi) = pi - pi_ref.
  ``k3_loss_gradient`` measures it through ``grpo_loss`` and autograd (and, with
  ``bias_correction=True``, TRL's rho * k3, whose gradient is the reverse KL's);
  ``forward_kl_gradient`` and ``reverse_kl_gradient`` are the two candidates.
- The two-step "5" / "05" toy (chapter 3's extension, with every path spelled out) for per-token
  ratios (``two_step_inner_steps``), and ``aggregation_weights``: the gradient that each
  ``loss_type`` of ``grpo_loss`` puts on each token of a group of short and long answers.
"""
from __future__ import annotations

import math

import numpy as np
import torch

from .._checks import (at_least, checked, clip_range, in_range, integer_at_least, logits_vector, one_of, optional,
                      positive_real, reward_array, same_shape, same_shapes, std_ddof)
from ..math.distributions import entropy, kl_divergence, log_softmax, softmax
from ..math.estimators import sample_groups
from ..llm.grpo import group_advantages, grpo_loss
from ..math.importance_sampling import importance_ratios
from ..math.loss_types import LOSS_TYPES
from ..math.ppo_clip import clip_binds_mask, clip_fraction, clipped_surrogate_gradient
from ..toy.five_token import EOS, LOGITS, P_5_AFTER_0, P_EOS_AFTER_5, PROMPT, REWARDS
from ..toy.verifier import addition_reward


# ----------------------------------------------------------------------------- the KL and entropy terms
def forward_kl_gradient(logits, ref_logits) -> np.ndarray:
    """grad_z KL(pi_ref || pi_z) = pi - pi_ref, for a tabular softmax policy pi = softmax(z) (chapter 14).

    KL(pi_ref || pi) = sum_y pi_ref ln pi_ref - sum_y pi_ref(y) ln pi(y), and
    grad_z ln pi(y) = onehot(y) - pi, so the gradient is -(pi_ref - pi sum_y pi_ref(y)) = pi - pi_ref.
    This is the expected gradient of GRPO's k3 penalty (``k3_loss_gradient``).
    """
    z = logits_vector(logits, "logits")
    z_ref = logits_vector(ref_logits, "ref_logits")
    same_shape(z, z_ref, "logits", "ref_logits")
    return softmax(z) - softmax(z_ref)


def reverse_kl_gradient(logits, ref_logits) -> np.ndarray:
    """grad_z KL(pi_z || pi_ref) = pi * (ln(pi / pi_ref) - KL(pi || pi_ref)) (chapter 14).

    The mode-seeking direction the source text names for the RLHF leash. GRPO's k3 estimator
    estimates this KL's VALUE but, in the loss, follows the other direction's gradient.
    """
    z = logits_vector(logits, "logits")
    z_ref = logits_vector(ref_logits, "ref_logits")
    same_shape(z, z_ref, "logits", "ref_logits")
    pi = softmax(z)
    log_ratio = log_softmax(z) - log_softmax(z_ref)
    return pi * (log_ratio - pi @ log_ratio)


def entropy_gradient(logits) -> np.ndarray:
    """grad_z H(softmax(z)) = -pi * (ln pi + H), the ascent direction of an entropy bonus (chapter 14).

    From H = -sum_y pi ln pi and d pi_y / d z_k = pi_y (1[y = k] - pi_k). Its entries sum to 0, and it
    vanishes at the uniform policy (maximum entropy).
    """
    z = logits_vector(logits, "logits")
    pi = softmax(z)
    log_pi = log_softmax(z)
    return -pi * (log_pi - pi @ log_pi)


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
    z = logits_vector(logits, "logits")
    z_ref = logits_vector(ref_logits, "ref_logits")
    same_shape(z, z_ref, "logits", "ref_logits")
    ys = np.asarray(samples)
    if (ys.ndim != 1 or ys.size == 0 or not np.issubdtype(ys.dtype, np.integer)
            or ys.min() < 0 or ys.max() >= z.size):
        raise ValueError(f"samples must be a non-empty 1-D array of answer indices in [0, {z.size - 1}]")
    if not isinstance(bias_correction, (bool, np.bool_)):
        raise ValueError(f"bias_correction must be True or False, got {bias_correction!r}")
    zt = torch.tensor(z, dtype=torch.float64, requires_grad=True)
    index = torch.as_tensor(ys)
    logp = torch.log_softmax(zt, dim=0)[index].unsqueeze(1)
    ref_logp = torch.tensor(log_softmax(z_ref)[ys], dtype=torch.float64).unsqueeze(1)
    if bias_correction:
        x = ref_logp - logp
        rho = torch.exp(logp - logp.detach())
        loss = (rho * (torch.exp(x) - x - 1)).mean()
    else:
        loss, _ = grpo_loss(logp, logp.detach(), torch.zeros(ys.size, dtype=torch.float64),
                            torch.ones_like(logp), beta=1.0, ref_logp=ref_logp, loss_type="grpo")
    loss.backward()
    return {"value": float(loss.detach()), "gradient": zt.grad.numpy().copy()}


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
    kl_gradient = {"forward": forward_kl_gradient,
                   "reverse": reverse_kl_gradient}[kl_direction]

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
                ascent = ascent + entropy_coef * entropy_gradient(z)
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


def run_over_seeds(run, seeds, **kwargs):
    """Call ``run(seed=s, **kwargs)`` for every seed and stack the results (chapters 13, 14, 17).

    A run returning an array gives an array shaped (n_seeds, ...); a run returning a dict of arrays
    gives a dict of such stacks. Use it to draw a mean with a spread instead of one lucky seed.
    """
    seeds = [integer_at_least(s, "seeds", 0) for s in np.atleast_1d(seeds).tolist()]
    if not seeds:
        raise ValueError("seeds must hold at least one seed (an integer >= 0)")
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


# ----------------------------------------------------------------------------- the "5" / "05" toy
#: Every answer of the two-step toy, as its tokens. A context (the tokens so far, joined) listed in
#: ``TWO_STEP_NEXT`` chooses its next token with a softmax; every other context stops (EOS) surely.
TWO_STEP_ANSWERS = {
    "0": ("0", EOS), "4": ("4", EOS), "5": ("5", EOS), "6": ("6", EOS), "15": ("15", EOS),
    "05": ("0", "5", EOS), "50": ("5", "0", EOS),
}
#: The contexts that choose, and the tokens each chooses among (same order as its logits).
TWO_STEP_NEXT = {"": ("0", "4", "5", "6", "15"), "5": (EOS, "0"), "0": ("5", EOS)}
#: Longest answer, in tokens (EOS included).
TWO_STEP_MAX_TOKENS = 3


def two_step_logits() -> dict[str, np.ndarray]:
    """The two-step toy's logits per choosing context (chapters 3, 13).

    Step 1 is the toy's pi = (0.1, 0.4, 0.2, 0.2, 0.1); after "5": P(EOS) = 0.8, P("0") = 0.2;
    after "0": P("5") = 0.2, P(EOS) = 0.8. So P("5") = 0.2 x 0.8 = 0.16 and P("05") = 0.1 x 0.2 = 0.02.
    """
    return {"": LOGITS.copy(),
            "5": np.log([P_EOS_AFTER_5, 1 - P_EOS_AFTER_5]),
            "0": np.log([P_5_AFTER_0, 1 - P_5_AFTER_0])}


def _answer_list(answers) -> list[str]:
    answers = list(answers) if not isinstance(answers, str) else [answers]
    if not answers or any(a not in TWO_STEP_ANSWERS for a in answers):
        raise ValueError(f"answers must be a non-empty list of answers among {sorted(TWO_STEP_ANSWERS)}, got {answers!r}")
    return answers


def _two_step_logp(params: dict, answers: list[str]) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-token log-probabilities (B, T) and mask of ``answers`` under torch logits ``params``."""
    log_probs = {ctx: torch.log_softmax(z, dim=0) for ctx, z in params.items()}
    rows, masks = [], []
    for answer in answers:
        tokens = TWO_STEP_ANSWERS[answer]
        row = []
        for t, token in enumerate(tokens):
            context = "".join(tokens[:t])
            row.append(log_probs[context][TWO_STEP_NEXT[context].index(token)] if context in TWO_STEP_NEXT
                       else torch.zeros((), dtype=torch.float64))
        pad = TWO_STEP_MAX_TOKENS - len(row)
        rows.append(torch.stack(row + [torch.zeros((), dtype=torch.float64)] * pad))
        masks.append([1.0] * len(row) + [0.0] * pad)
    return torch.stack(rows), torch.tensor(masks, dtype=torch.float64)


def two_step_answer_probs(logits: dict | None = None) -> dict[str, float]:
    """P(answer) for every answer of the two-step toy: the product of its per-token conditionals."""
    params = {ctx: torch.tensor(z, dtype=torch.float64) for ctx, z in (logits or two_step_logits()).items()}
    answers = list(TWO_STEP_ANSWERS)
    logp, _ = _two_step_logp(params, answers)
    return {a: float(p) for a, p in zip(answers, logp.sum(dim=1).exp())}


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
    ``grpo_loss``'s stats, and ``answer_probs`` (K+1 dicts, ``two_step_answer_probs``).
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
                                max_completion_length=TWO_STEP_MAX_TOKENS)
        ratios.append(torch.exp(logp - old_logp).detach().numpy() * mask.numpy() + (1 - mask.numpy()))
        clip_fractions.append(stats["clip_fraction"])
        probs.append(two_step_answer_probs({c: z.detach().numpy() for c, z in params.items()}))
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
        "tokens": [TWO_STEP_ANSWERS[x] for x in answers],
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

