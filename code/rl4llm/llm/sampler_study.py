"""Chapter 20's measurements: how far a rollout engine's log-probs are from the trainer's, by precision and
by staleness, what TRL's corrections do to the weights, and a model of those weights.

:func:`engine_gaps` samples one batch with a :class:`~rl4llm.llm.rollout_engine.RolloutEngine` and has the
trainer's policy rescore it; :func:`staleness_gaps` trains a synchronous run while engines k updates behind
follow it, then measures each; :func:`gap_summary` and :func:`weight_summary` reduce a batch to the numbers
the chapter prints. :func:`lognormal_weight_moments` is the closed form behind the chapter's chart: if the
log-ratio of a weight is normal, what the cap does to its mean and variance. :func:`async_clip_view` reads a
stale batch as TRL's ``AsyncGRPOTrainer`` does, with the generator's log-probs in the ratio's denominator;
:func:`bf16_gap_by_size` measures how a bf16 engine's gap grows with the model's depth and width and the
sequence's length.
"""
from __future__ import annotations

import math

import numpy as np
import torch

from .._checks import at_least, checked, in_range, one_of
from .model import GPT, GPTConfig, completion_logprobs, sample
from .rollout_correction import IMPORTANCE_SAMPLING_MODES, importance_weights, sampler_gap
from .rollout_engine import EngineModel, RolloutEngine
from .tasks import MAX_COMPLETION_LEN, AdditionTask
from .trainer import GRPOConfig, GRPOTrainer, torch_threads


def engine_gaps(policy: GPT, engine: RolloutEngine, task: AdditionTask, *, n_prompts: int = 64,
                group_size: int = 8, seed: int = 0) -> dict:
    """One batch drawn by ``engine`` (``n_prompts`` training prompts from ``seed``, ``group_size`` each)
    and rescored by ``policy``: ``trainer_logp``, ``sampler_logp`` and ``mask``, shaped (B, T) (chapter 20)."""
    tok = task.tokenizer
    chosen = np.random.default_rng(seed).choice(len(task.train_pairs), n_prompts, replace=False)
    prompts = torch.as_tensor(task.train_prompt_ids[chosen])
    rollout = sample(engine.model, prompts, group_size=group_size, max_new_tokens=MAX_COMPLETION_LEN, eos_id=tok.eos_id,
                     pad_id=tok.pad_id, generator=torch.Generator().manual_seed(seed))
    with torch.no_grad():
        trainer_logp, _ = completion_logprobs(policy, rollout.tokens, rollout.prompt_len, 1.0, group_size)
    return {"trainer_logp": trainer_logp, "sampler_logp": rollout.logp, "mask": rollout.mask}


def staleness_gaps(policy: GPT, task: AdditionTask, config: GRPOConfig, stalenesses, **batch) -> dict:
    """The gap at each staleness k of ``stalenesses`` after ``config.steps`` synchronous GRPO steps from
    ``policy`` (chapter 20): one float32 engine per k follows the run (synced before every step, as the
    trainer syncs its own), then each draws a batch (``batch``: :func:`engine_gaps`' options) that the
    trained policy rescores. Returns ``{k: engine_gaps(...)}``."""
    trainer = GRPOTrainer(policy, task, config)
    engines = {k: RolloutEngine(trainer.policy, "float32", k) for k in stalenesses}
    with torch_threads(config.num_threads):
        for _ in range(config.steps):
            for engine in engines.values():
                engine.sync(trainer.policy)
            trainer.step()
        for engine in engines.values():
            engine.sync(trainer.policy)
        return {k: engine_gaps(trainer.policy, engine, task, **batch) for k, engine in engines.items()}


def gap_summary(trainer_logp: torch.Tensor, sampler_logp: torch.Tensor, mask: torch.Tensor) -> dict:
    """A batch's gap d = log pi_old - log pi_samp (chapter 20): TRL's ``sampling/sampling_logp_difference``
    ``mean`` and ``max`` (of |d| over completion tokens), ``token_std`` (std of d over them), and per
    sequence ``sequence_std`` and ``sequence_max`` (of the log-ratio sum_t d_it and its |.|)."""
    gap = sampler_gap(trainer_logp, sampler_logp, mask)
    tokens, sequences = gap[mask > 0], gap.sum(dim=1)
    return {"mean": float(tokens.abs().mean()), "max": float(tokens.abs().max()), "token_std": float(tokens.std()),
            "sequence_std": float(sequences.std()), "sequence_max": float(sequences.abs().max())}


def weight_summary(trainer_logp: torch.Tensor, sampler_logp: torch.Tensor, mask: torch.Tensor, *,
                   clip_max: float = 3.0) -> dict:
    """For each of TRL's four modes at cap ``clip_max`` (chapter 20): ``changed``, the share of weights
    (completion tokens, or sequences) the cap truncates or masks, and ``std``, the spread of the weights
    (over the same), as ``{mode: {"changed": ..., "std": ...}}``."""
    out = {}
    for mode in IMPORTANCE_SAMPLING_MODES:
        raw = importance_weights(trainer_logp, sampler_logp, mask, mode=mode, clip_max=None,
                                 clip_min=0.0 if mode.endswith("truncate") else None)
        capped = importance_weights(trainer_logp, sampler_logp, mask, mode=mode, clip_max=clip_max)
        counted = torch.ones_like(raw, dtype=torch.bool) if mode.startswith("sequence") else mask > 0
        out[mode] = {"changed": float((raw != capped)[counted].float().mean()), "std": float(capped[counted].std())}
    return out


#: What a weight becomes outside the cap: kept as it is (no correction), truncated to the cap, or masked to 0.
CAP_RULES = ("none", "truncate", "mask")


def _phi(x: float) -> float:
    """The standard normal CDF (with phi(+-inf) = 1, 0)."""
    return 0.5 * (1.0 + math.erf(x / math.sqrt(2.0))) if math.isfinite(x) else float(x > 0)


@checked(log_std=in_range(0.0, math.inf, high_open=True), cap=in_range(1.0, math.inf, high_open=True),
         rule=one_of(CAP_RULES))
def lognormal_weight_moments(log_std: float, cap: float, rule: str) -> tuple[float, float]:
    """Mean and variance of a weight w whose ratio r = pi_old / pi_samp is log-normal under the sampler
    (chapter 20): ln r ~ N(-s^2/2, s^2) with s = ``log_std``, so that E[r] = 1 (importance sampling is
    unbiased). With z_j = (ln C + s^2/2 - j s^2) / s and Phi the normal CDF,

        E[r; r <= C] = Phi(z_1),   E[r^2; r <= C] = e^{s^2} Phi(z_2),   P(r > C) = 1 - Phi(z_0),

    ``"none"``: w = r (mean 1, variance e^{s^2} - 1, chapter 10's exploding variance); ``"truncate"``:
    w = min(r, C), mean Phi(z_1) + C P(r > C); ``"mask"``: w = r [r <= C], mean Phi(z_1). A token's
    weight has s = sigma, a sequence's of L such tokens s = sigma sqrt(L). Returns ``(mean, variance)``.
    """
    s2 = log_std ** 2
    if s2 == 0:
        return 1.0, 0.0
    if rule == "none":
        return 1.0, math.expm1(s2)
    z = [(math.log(cap) + s2 / 2 - j * s2) / log_std for j in range(3)]
    above, first, second = 1.0 - _phi(z[0]), _phi(z[1]), math.exp(s2) * _phi(z[2])
    if rule == "truncate":
        first, second = first + cap * above, second + cap ** 2 * above
    return first, second - first ** 2


@checked(eps_low=in_range(0.0, 1.0, low_open=True, high_open=True),
         eps_high=in_range(0.0, math.inf, low_open=True, high_open=True))
def async_clip_view(trainer_logp: torch.Tensor, sampler_logp: torch.Tensor, mask: torch.Tensor, *,
                    eps_low: float = 0.2, eps_high: float = 0.2) -> dict:
    """The clip's view of a batch drawn by a sampler, as TRL 1.16's ``AsyncGRPOTrainer`` computes it
    (chapter 20). That trainer does not rescore: the denominator of its ratio is the generator's
    log-prob, and it takes one step on each sample, so with ``trainer_logp`` the policy's log-probs at
    that step, rho_t = exp(log pi_theta - log pi_samp) = e^{d_t}. (``GRPOTrainer`` rescores, so its
    rho_t is exactly 1 at the first inner step.) Over completion tokens: ``ratio``, the mean rho, and
    ``kl``, the mean of (rho - 1) - ln rho (what ``AsyncGRPOTrainer`` logs as ``ratio`` and ``kl``; the
    second is the k3 estimate of KL(pi_samp || pi_theta)); ``below`` and ``above``, the shares with
    rho < 1 - eps_low and rho > 1 + eps_high, where the clip holds the term at its bound (and takes
    its gradient away when the advantage pushes rho further out; TRL's ``clip_ratio/low_mean`` and
    ``high_mean`` count only those, A < 0 below and A > 0 above)."""
    rho = torch.exp(sampler_gap(trainer_logp, sampler_logp, mask))[mask > 0]
    return {"ratio": float(rho.mean()), "kl": float((rho - 1 - rho.log()).mean()),
            "below": float((rho < 1 - eps_low).float().mean()), "above": float((rho > 1 + eps_high).float().mean())}


@checked(n_layer=at_least(1), n_embd=at_least(4), length=at_least(2), n_seq=at_least(2), vocab_size=at_least(2))
def bf16_gap_by_size(n_layer: int, n_embd: int, length: int, *, n_seq: int = 16, vocab_size: int = 64,
                     seed: int = 0) -> dict:
    """How far a bf16 engine's log-probs are from fp32's on a tiny GPT of random weights (chapter 20).

    A :class:`~rl4llm.llm.model.GPT` of ``n_layer`` layers, width ``n_embd`` (4 heads) and chapter 15's
    initialisation (``torch.manual_seed(seed)``) reads ``n_seq`` sequences of ``length`` random tokens;
    each position's next token is scored in fp32 and by the bf16 engine
    (:class:`~rl4llm.llm.rollout_engine.EngineModel`), d = log p_fp32 - log p_bf16. Returns ``token``,
    the mean |d| over the ``length - 1`` scored positions of every sequence, and ``sequence``, the
    std over sequences of their summed d (the log of a sequence's ratio).
    """
    torch.manual_seed(seed)
    model = GPT(GPTConfig(vocab_size=vocab_size, block_size=length, n_layer=n_layer, n_head=4, n_embd=n_embd))
    engine = EngineModel(model, "bfloat16")
    tokens = torch.randint(vocab_size, (n_seq, length))
    with torch.no_grad():
        d = torch.stack([torch.log_softmax(m(tokens[:, :-1])[0], dim=-1).gather(2, tokens[:, 1:, None])[..., 0]
                         for m in (model, engine)])
    gap = d[0] - d[1]                                                       # (n_seq, length - 1)
    return {"token": float(gap.abs().mean()), "sequence": float(gap.sum(dim=1).std())}
