"""Checked exercises of Part V (after GRPO).

- Chapter 17: the k2 estimate of one token and the gradient weight of TRL's ratio-corrected k3 (by
  hand); the group-mean estimate's mean squared error, the weight dapo gives a long answer, the weight
  SAPO gives a token that moved, the reward of an answer under DAPO's soft overlong punishment and the answers'
  KL gradient a per-token penalty misses (by hand);
  the three estimators ``kl_estimators`` (coding).
- Chapter 19: a run's model state on one GPU and under ZeRO-2, a step's KV cache, one decoding step, dapo's loss
  and the gradient's norm at a run's first step, LoRA's trainable state of Qwen2.5-7B, and two failure
  signatures' thresholds: the entropy floor and the share of capped completions, the weight sync a split run adds
  and the share of flat groups a sparse reward leaves (by hand); the KV cache's bytes per token
  ``kv_bytes_per_token`` (coding).
- Chapter 18: GSPO's ratio of a two-token answer, DAPO's groups drawn per kept group, the unbiased pass@k
  estimate from n samples, two prompt sets' pass@64, the prompts a pre-filter keeps, CISPO's weights on three
  tokens, Holm's adjusted p of one knob (by hand);
  ``pass_at_k_estimate`` (coding).
- Chapter 20: TRL's truncated weight of an answer a separate sampler drew (above the cap, where the mask
  differs), the off-policy mask's measure of one sequence, a log-normal weight's std (by hand); the capped weight's mean and variance
  ``lognormal_weight_moments`` (coding).

Every check here is plain arithmetic on small seeded inputs, so it prints the same verdict on every
CPU. The references that need torch are imported on first use.
"""
from __future__ import annotations

import math

import numpy as np

from ..math.memory import PRECISION_BYTES, kv_bytes_per_token, memory_budget
from ..math.pass_at_k import pass_at_k, pass_at_k_estimate
from ..math.step_time import NVLINK_ONE_WAY, generation_seconds, weight_sync_seconds
from ..studies.kl_penalties import kl_estimators
from ._core import EXPERIMENT_RETRY, Call, FunctionExercise, NumericExercise, imported_on_call, toy_and_random



# ============================================================================ chapter 17
#: The by-hand token: pi_theta(5) after RL against the reference pi_ref(5), the toy before RL.
TOKEN_PI, TOKEN_REF = 0.8, 0.2
_X = math.log(TOKEN_PI / TOKEN_REF)                # k1 = ln(pi / pi_ref) of the sampled 5


# ---------------------------------------------------------------- ex-ch17-k2 (by hand)
def _k2_mistakes() -> tuple[tuple[float, str], ...]:
    return (
        (_X ** 2, "the factor 1/2 is missing: k2 = (ln(pi / pi_ref))^2 / 2"),
        (_X, "that is k1 = ln(pi / pi_ref) itself; k2 squares it and halves it"),
        (math.exp(-_X) + _X - 1, "that is k3 = pi_ref / pi - ln(pi_ref / pi) - 1; k2 = (ln(pi / pi_ref))^2 / 2"),
        # (log10 4)^2 / 2 = 0.1812 and (0.8 - 0.2)^2 / 2 = 0.18 fall within the tolerance of each other
        (math.log10(TOKEN_PI / TOKEN_REF) ** 2 / 2, "that uses log10, or squares the difference of the "
                                                    "probabilities (0.18): k2 squares the difference of the natural "
                                                    "logs, ln pi - ln pi_ref"),
    )


# ---------------------------------------------------------------- ex-ch17-k3-weight (by hand)
def _weight_mistakes() -> tuple[tuple[float, str], ...]:
    ratio = TOKEN_REF / TOKEN_PI
    k3 = ratio - math.log(ratio) - 1
    return (
        (1 - ratio, "that is the weight of plain k3 in the loss, 1 - pi_ref / pi (the forward KL's); the ratio "
                    "rho = exp(ln pi - sg(ln pi)) adds k3 itself, so the weight is k3 + 1 - pi_ref / pi"),
        (k3, "that is the term the ratio adds (k3 grad ln pi) alone; the gradient of k3 itself, "
             "(1 - pi_ref / pi) grad ln pi, is still there"),
        (k3 + 1, "the gradient of k3 is (1 - pi_ref / pi) grad ln pi, not grad ln pi: pi_ref / pi depends on pi"),
        (-_X, "the sign is flipped: the weight is ln(pi / pi_ref), positive where pi gives the token more than "
              "pi_ref does, so descent lowers ln pi there"),
    )


# ---------------------------------------------------------------- ex-ch17-dapo-weight (by hand)
#: The by-hand group of the two-step toy: "05" (right, 3 tokens) and "4" (wrong, 2 tokens), group-mean
#: advantages +1/2 and -1/2, length cap L_max = 3; the weight is L_max times -d loss / d ln pi(token).
DAPO_LENGTHS, DAPO_ADVANTAGES, DAPO_CAP = (3, 2), (0.5, -0.5), 3


def _dapo_weight(loss_type: str) -> float:
    """L_max times the weight that ``loss_type`` gives each token of "05" in the by-hand group."""
    from ..studies.estimator_bias import token_weights
    return float(token_weights(np.array(DAPO_ADVANTAGES), np.array(DAPO_LENGTHS), loss_type, DAPO_CAP)[0])


def _dapo_mistakes() -> tuple[tuple[float, str], ...]:
    A, n = DAPO_ADVANTAGES[0], sum(DAPO_LENGTHS)
    return (
        (_dapo_weight("dr_grpo"), "that is the weight of dr_grpo, and of grpo on this answer (A / G, since "
                                   "L_max = |o| here); dapo divides by the batch's token count sum_j |o_j| = 5"),
        (A, "that is the advantage alone; dapo multiplies it by L_max / sum_j |o_j| = 3 / 5"),
        (A / n, "the factor L_max is missing: the weight asked for is L_max times A / sum_j |o_j|"),
        (A * DAPO_CAP / DAPO_LENGTHS[1], "that divides by the OTHER answer's length; dapo divides by the sum of "
                                          "every answer's length, 3 + 2"),
        (DAPO_CAP / n, "the advantage is missing: L_max / sum_j |o_j| multiplies A = +1/2"),
        (abs(DAPO_ADVANTAGES[1]) * DAPO_CAP / (len(DAPO_LENGTHS) * DAPO_LENGTHS[1]),
         'that is the size of grpo\'s weight on the tokens of "4" (A / (G |o|) times L_max); the question asks for '
         'dapo\'s on "05"'),
        (DAPO_ADVANTAGES[1] * DAPO_CAP / n, 'that is dapo\'s weight on the tokens of "4" (A = -1/2); the question asks '
                                            'for "05"\'s (A = +1/2)'),
    )


# ---------------------------------------------------------------- ex-ch17-shrink (by hand)
#: What the exercise gives, as the chapter's one-step table prints them (G = 8): RLOO's total variance and
#: |grad J|; the group-mean estimate is (1 - 1/G) = 7/8 of RLOO's on every group.
SHRINK_G, SHRINK_RLOO_VARIANCE, SHRINK_GRADIENT_NORM = 8, 0.0150, 0.1855


def _shrink_mse() -> float:
    """The group-mean estimate's exact mean squared error on the one-step toy at G = 8 (``estimator_moments``)."""
    from ..studies.estimator_bias import estimator_moments, one_step_task
    return estimator_moments(one_step_task(), SHRINK_G, "group_mean")["mean_squared_error"]


def _shrink_mistakes() -> tuple[tuple[float, str], ...]:
    c, v, g2 = 1 - 1 / SHRINK_G, SHRINK_RLOO_VARIANCE, SHRINK_GRADIENT_NORM ** 2
    return (
        (c ** 2 * v, "that is the variance alone, (7/8)^2 Var; the mean squared error adds the squared bias "
                     "|grad J / 8|^2 = |grad J|^2 / 64"),
        (c * v + (1 - c) ** 2 * g2, "a variance scales by the SQUARE of the factor: (7/8)^2 Var, not (7/8) Var"),
        (c ** 2 * (v + g2), "the bias is grad J / 8 (the expected step is 7/8 of grad J, 1/8 too short), not "
                            "(7/8) grad J"),
        (v, "that is RLOO's mean squared error (its variance: RLOO is unbiased); the group-mean estimate is 7/8 of "
            "RLOO's on every group"),
        (c ** 2 * v + (1 - c) * g2, "the squared bias is |grad J|^2 / 64: square the factor 1/8 too"),
        (0.7 ** 2 * v + 0.3 ** 2 * g2, "that is RLOO shrunk by 0.70, its best factor (printed beside the table); the "
                                       "group-mean estimate is RLOO shrunk by 7/8"),
    )


# ---------------------------------------------------------------- ex-ch17-beta (experiment)
#: The experiment's other strengths: the box asks for the fixed points' gap at the first.
BETA_STRENGTHS = (0.25, 4.0)


def _leash_end(leash: str, beta: float, steps: int = 1500) -> float:
    """pi(5) on the exact path of ``leash`` at strength ``beta`` after ``steps`` steps (1500: its fixed point)."""
    from ..studies.kl_penalties import leash_exact_run
    return float(leash_exact_run(leash, beta=beta, steps=steps)["pi_correct"][-1])


def _leash_gap(beta: float = BETA_STRENGTHS[0], steps: int = 1500) -> float:
    """The reverse leash's (k2 in the loss) fixed point less the forward one's (k3 in the loss): pi(5)."""
    return _leash_end("k2_loss", beta, steps) - _leash_end("k3_loss", beta, steps)


def _leash_gap_mistakes() -> tuple[tuple[float, str], ...]:
    from ..studies.kl_penalties import leash_run
    beta = BETA_STRENGTHS[0]
    seeds = {leash: np.mean([leash_run(leash, beta=beta, steps=40, seed=s)["pi_correct"][-1] for s in range(20)])
             for leash in ("k2_loss", "k3_loss")}
    return (
        (-_leash_gap(), "the sign is flipped: the reverse leash's fixed point less the forward one's"),
        (_leash_gap(steps=40), "that is the gap after 40 steps, where the reverse leash's exact path has not settled "
                               "(0.893 against its 0.932); the box asks the fixed points' gap"),
        (seeds["k2_loss"] - seeds["k3_loss"], "that is the 20 seeds' gap after 40 steps; the box asks the fixed "
                                              "points' gap (the exact paths run long, or the closed forms)"),
        (_leash_gap(1.0), "that is the gap at beta = 1, the chapter's run; the box asks it at beta = 0.25"),
        (_leash_gap(BETA_STRENGTHS[1]), "that is the gap at beta = 4; the box asks it at beta = 0.25"),
    )


# ---------------------------------------------------------------- ex-ch17-sapo-weight (by hand)
#: The by-hand token of the loss types: a one-token answer with A = +1 whose ratio pi / pi_old is 1.5
#: (the inner steps raised it by half since sampling), under TRL's default SAPO temperatures.
SAPO_RATIO = 1.5


def _sapo_weight() -> float:
    """-d loss / d ln pi that ``grpo_loss(loss_type="sapo")`` gives the by-hand token, by autograd."""
    import torch

    from ..llm.grpo import grpo_loss
    logp = torch.zeros(1, 1, dtype=torch.float64, requires_grad=True)
    loss, _ = grpo_loss(logp, -torch.log(torch.tensor([[SAPO_RATIO]], dtype=torch.float64)),
                        torch.ones(1, dtype=torch.float64), torch.ones_like(logp), loss_type="sapo")
    (grad,) = torch.autograd.grad(loss, logp)
    return -float(grad)


def _sapo_mistakes() -> tuple[tuple[float, str], ...]:
    rho, u = SAPO_RATIO, SAPO_RATIO - 1                       # u = tau (rho - 1) with tau = 1
    return (
        (rho, "that is CISPO's weight, rho A under its cap; SAPO multiplies rho A by the gate "
              "sech^2(tau (rho - 1) / 2)"),
        (0.0, "that is the clip's weight (rho = 1.5 is past 1 + 0.2 on the advantage's side); SAPO's gate fades "
              "smoothly instead of cutting"),
        (1 / math.cosh(u / 2) ** 2, "the factor rho is missing: the chain rule through rho = pi / pi_old gives "
                                    "d rho / d ln pi = rho"),
        (rho / math.cosh(u) ** 2, "the half is missing: sigma'(u) = sigma(u) (1 - sigma(u)) = sech^2(u / 2) / 4, so "
                                  "the gate is sech^2(tau (rho - 1) / 2)"),
        (rho / math.cosh(u / 2) ** 2 / 4, "the factor 4 / tau of SAPO's loss is missing (the chain rule's tau "
                                          "cancels its 1 / tau): the weight is 4 sigma(u) (1 - sigma(u)) rho A"),
        (rho / math.cosh(1.05 * u / 2) ** 2, "that uses sapo_temperature_neg = 1.05; a positive advantage takes "
                                             "sapo_temperature_pos = 1"),
        (-_sapo_weight(), "the sign is flipped: the weight is -d loss / d ln pi, positive for A > 0"),
    )


# ---------------------------------------------------------------- ex-ch17-soft-punishment (by hand)
#: The by-hand answer of §6: right (the verifier's reward 1), 10 tokens long, under DAPO's soft overlong
#: punishment with the chapter's cap L_max = 12 and buffer L_cache = 6 (the punishment ramps from 6 tokens).
PUNISHED_LENGTH, PUNISHED_REWARD = 10, 1.0


def _punished_reward() -> float:
    """The answer's reward plus ``soft_overlong_penalty`` of its length (the chapter's cap and buffer)."""
    from ..studies.length_drift import soft_overlong_penalty
    return PUNISHED_REWARD + float(soft_overlong_penalty(PUNISHED_LENGTH))


def _punishment_mistakes() -> tuple[tuple[float, str], ...]:
    from ..studies.length_drift import LENGTH_CAP, SOFT_BUFFER
    penalty = ((LENGTH_CAP - SOFT_BUFFER) - PUNISHED_LENGTH) / SOFT_BUFFER
    return (
        (penalty, "that is R_length alone; the reward the trainer uses is the verifier's 1 plus R_length"),
        (PUNISHED_REWARD, "10 tokens is under the cap 12, but the punishment starts at L_max - L_cache = 6 tokens"),
        (PUNISHED_REWARD - (PUNISHED_LENGTH - (LENGTH_CAP - SOFT_BUFFER)) / LENGTH_CAP,
         "R_length = ((L_max - L_cache) - |o|) / L_cache = (6 - 10) / 6: the tokens past 6 divided by the buffer "
         "6 (not by the cap 12, and not the tokens left before the cap)"),
        (0.0, "that scores the answer as overlong (R_length = -1, or reward 0); it is not truncated (10 <= 12), so "
              "it keeps its reward 1, less the ramp's (6 - 10) / 6"),
        (PUNISHED_REWARD - penalty, "the sign is flipped: the punishment lowers the reward"),
    )


# ---------------------------------------------------------------- ex-ch17-missed-kl (by hand)
#: The by-hand move of §10: the two-step toy with only P(EOS | 5) moved, from the reference's 0.8 to this.
MISSED_P_EOS = 0.3


def _missed_kl() -> float:
    """The answers' KL gradient in the first-step logit of "5" (``sequence_kl_gradients``), which per-token k2 and
    corrected k3 leave at 0: pi(5) KL_5 (1 - pi(5))."""
    from ..studies.sequence_kl import PARAMETERS, sequence_kl_gradients
    return float(sequence_kl_gradients(MISSED_P_EOS)["gradient"][PARAMETERS.index(("", "5"))])


def _missed_kl_mistakes() -> tuple[tuple[float, str], ...]:
    q, q_ref, pi5 = MISSED_P_EOS, 0.8, 0.2
    kl5 = q * math.log(q / q_ref) + (1 - q) * math.log((1 - q) / (1 - q_ref))
    forward = q_ref * math.log(q_ref / q) + (1 - q_ref) * math.log((1 - q_ref) / (1 - q))
    return (
        (0.0, "that is what per-token k2 and corrected k3 put on the first step (every first-step log-ratio is 0); "
              "the answers' KL pi(5) KL_5 still depends on pi(5)"),
        (pi5 * kl5, "that is the answers' KL itself, pi(5) KL_5; its gradient in the logit of 5 multiplies "
                    "KL_5 by d pi(5) / d z_5 = pi(5) (1 - pi(5))"),
        (kl5 * (1 - pi5), "the factor pi(5) is missing: d pi(5) / d z_5 = pi(5) (1 - pi(5))"),
        (kl5, "that is KL_5, the KL of the context after 5 alone; the answers' KL weighs it by pi(5)"),
        (pi5 * (1 - pi5) * forward, "that takes the forward KL, sum pi_ref ln(pi_ref / pi), after 5; the leash "
                                    "holds the reverse one, sum pi ln(pi / pi_ref)"),
        (-_missed_kl(), "the sign is flipped: raising z_5 makes 5, whose continuation has drifted, more likely, so "
                        "the KL grows"),
    )


# ---------------------------------------------------------------- kl_estimators (coding)
def _kl_case(rng):
    """The by-hand token, then random log-probabilities of a (B, T) batch under two policies."""
    if rng is None:
        return np.log([TOKEN_PI, 0.05]), np.log([TOKEN_REF, 0.2])
    shape = (int(rng.integers(1, 4)), int(rng.integers(2, 6)))
    logp = np.log(rng.uniform(0.02, 1.0, size=shape))
    return logp, np.log(rng.uniform(0.02, 1.0, size=shape))


def _kl_variant(logp, logp_ref, *, flip_k3=False, no_half=False, k1_flipped=False, log_sign=False):
    x = np.asarray(logp, dtype=float) - np.asarray(logp_ref, dtype=float)
    u = x if flip_k3 else -x                                       # the exponent of k3
    k3 = np.exp(u) + (u if log_sign else -u) - 1
    return (-x if k1_flipped else x), x ** 2 / (1 if no_half else 2), k3


_KL_ESTIMATORS = FunctionExercise(17, kl_estimators, toy_and_random(_kl_case), (
    ("k3's ratio is upside down: k3 = pi_ref / pi - ln(pi_ref / pi) - 1, with pi_ref / pi = exp(logp_ref - logp)",
     lambda a, b: _kl_variant(a, b, flip_k3=True)),
    ("k2 is HALF the squared log-ratio: (logp - logp_ref)^2 / 2", lambda a, b: _kl_variant(a, b, no_half=True)),
    ("k1's sign is flipped: k1 = logp - logp_ref = ln(pi / pi_ref), whose mean over samples of pi is "
     "KL(pi || pi_ref)", lambda a, b: _kl_variant(a, b, k1_flipped=True)),
    ("k3's log term has the wrong sign: k3 = ratio - ln(ratio) - 1 (never negative), ratio = pi_ref / pi",
     lambda a, b: _kl_variant(a, b, log_sign=True)),
), output="whole")


# ============================================================================ chapter 19
# Four by-hand numbers of a real run, each computed by the library function the chapter shows.
def _state_gb(n_params: float, **options) -> float:
    """GB of every part of memory_budget (only the model state, when no batch is given)."""
    return sum(memory_budget(n_params, **options).values()) / 1e9


def _kv_gb(n_kv_heads: int = 2, precision: str = "bf16", pairs: int = 2) -> float:
    """GB of Qwen2.5-1.5B's KV cache (28 layers, head_dim 128) for 64 sequences of 4096 tokens;
    ``pairs=1`` counts the keys only."""
    return kv_bytes_per_token(28, n_kv_heads, 128, precision) * pairs / 2 * 64 * 4096 / 1e9


def _decode_ms(sequences: int = 8, weight_bytes: float = 2, flops: float = 989e12) -> float:
    """Milliseconds of one decoding step of 7B parameters at 3.35 TB/s."""
    return 1e3 * generation_seconds(7e9, sequences, 0, 1, flops_per_second=flops, bandwidth=3.35e12,
                                    weight_bytes=weight_bytes)


def _bytes_mistakes() -> tuple[tuple[float, str], ...]:
    return (
        (_state_gb(3e9, reference=False), "the reference model is missing: 2 bytes a parameter more in bf16"),
        (_state_gb(3e9, master_weights=False), "the fp32 master copy is missing: mixed precision keeps one "
                                               "(4 bytes a parameter) for AdamW to update"),
        (_state_gb(3e9, optimizer="sgd"), "AdamW's two fp32 moments are missing (8 bytes a parameter)"),
        (_state_gb(3e9, reference=False) / 16 * 2, "that is the bf16 weights alone; the gradients, the master copy, "
                                                   "the moments and the reference come on top"),
        (_state_gb(3e9) * 1e9 / 2 ** 30, "that is in GiB (2^30 bytes); the question counts GB = 10^9 bytes"),
        (_state_gb(3e9, reference=False, master_weights=False), "the fp32 master copy (4 bytes a parameter) and the "
                                                                "bf16 reference (2 bytes a parameter) are both missing"),
        (_state_gb(3e9) + 3e9 * 2 / 1e9, "that holds the reference in fp32 (4 bytes a parameter); the question's "
                                         "reference is bf16, 2 bytes"),
    )


def _zero2_mistakes() -> tuple[tuple[float, str], ...]:
    def at(sharding):
        return _state_gb(7e9, reference=False, n_gpus=8, sharding=sharding)
    return (
        (at("zero3"), "that is ZeRO stage 3, which shards the weights too; stage 2 keeps the bf16 weights whole "
                      "on every GPU"),
        (at("zero1"), "that is ZeRO stage 1; stage 2 shards the gradients as well"),
        (at("none"), "that is the whole state, unsharded; stage 2 divides the gradients and the optimizer state "
                     "by the 8 GPUs"),
        (at("zero2") * 1e9 / 2 ** 30, "that is in GiB (2^30 bytes); the question counts GB = 10^9 bytes"),
        (2 * 7 + 12 * 7 / 8, "the gradients are missing: stage 2 shards them, it does not drop them: "
                             "2 Psi + (2 + 12) Psi / 8"),
        (_state_gb(7e9, n_gpus=8, sharding="zero2"), "that keeps a bf16 reference model too (2 bytes a parameter "
                                                     "whole on every GPU); the question has none"),
        (_state_gb(7e9, reference=False, master_weights=False, n_gpus=8, sharding="zero2"),
         "the fp32 master copy is missing: mixed precision keeps one (4 bytes a parameter, sharded by stage 2 "
         "like the moments): 2 Psi + (2 + 4 + 8) Psi / 8"),
        (14 * 7 / 8, "the bf16 weights are missing: stage 2 keeps them whole on every GPU (2 Psi) beside the sharded "
                     "(2 + 12) Psi / 8"),
    )


def _kv_mistakes() -> tuple[tuple[float, str], ...]:
    return (
        (_kv_gb(pairs=1), "the factor 2 is missing: each layer caches a key AND a value per key-value head"),
        (_kv_gb(n_kv_heads=12), "that counts the 12 query heads; the cache holds the 2 key-value heads only "
                                "(grouped-query attention)"),
        (_kv_gb() * 1e9 / 2 ** 30, "that is in GiB (2^30 bytes); the question counts GB = 10^9 bytes"),
        (_kv_gb(precision="fp32"), "bf16 takes 2 bytes a number, not 4"),
        (_kv_gb() / 28, "that is one layer's cache; each of the 28 layers keeps its own keys and values"),
    )


def _decode_mistakes() -> tuple[tuple[float, str], ...]:
    flops_ms = 1e3 * 2 * 7e9 * 8 / 989e12
    return (
        (flops_ms, "that is the FLOPs' time; reading the 14 GB of weights takes longer, so memory bandwidth sets "
                   "the step"),
        (8 * _decode_ms(), "the weights are read once per step for the whole batch, not once per sequence"),
        (_decode_ms(weight_bytes=1), "a bf16 weight is 2 bytes, not 1"),
        (_decode_ms() + flops_ms, "the reads and the FLOPs overlap: the step takes the larger of the two, not "
                                  "their sum"),
        (_decode_ms() / 1e3, "that is in seconds; the question asks for milliseconds"),
    )


# ---------------------------------------------------------------- kv_bytes_per_token (coding)
def _kv_case(rng):
    """Llama-2-7B in fp16 (the chapter's 0.5 MiB a token), then random shapes, the precision by name;
    the second random case leaves it at its default, bf16."""
    if rng is None:
        return Call((32, 32, 128), {"precision": "fp16"})
    shape = (int(rng.integers(1, 49)), int(rng.integers(1, 17)), int(rng.choice([64, 80, 128])))
    return Call(shape, {"precision": str(rng.choice(sorted(PRECISION_BYTES)))})


def _kv_cases() -> list:
    cases = toy_and_random(_kv_case)()
    return cases[:2] + [Call(cases[2].args)] + cases[3:]


def _kv_slip(n_layers, n_kv_heads, head_dim, precision="bf16", *, pairs=2, layers=True, number_bytes=None):
    b = PRECISION_BYTES[precision] if number_bytes is None else number_bytes
    return pairs * (n_layers if layers else 1) * n_kv_heads * head_dim * b


_KV_BYTES = FunctionExercise(19, kv_bytes_per_token, _kv_cases, (
    ("the factor 2 is missing: every layer caches a key AND a value for each key-value head",
     lambda *a, **k: _kv_slip(*a, pairs=1, **k)),
    ("that counts bits, not bytes: a bf16 number is 16 bits but 2 bytes (fp32 4, fp8 1)",
     lambda *a, **k: _kv_slip(*a, **k) * 8),
    ("that is one layer's cache; every one of the n_layers layers keeps its own keys and values",
     lambda *a, **k: _kv_slip(*a, layers=False, **k)),
    ("the precision is ignored: 2 bytes a number is bf16's (and fp16's); fp32 takes 4 and fp8 1",
     lambda *a, **k: _kv_slip(*a[:3], number_bytes=2)),
), first_case="Llama-2-7B in fp16")


# ---------------------------------------------------------------- ex-ch19-loss-at-start (by hand)
#: The by-hand group of reading a run: "05" (right, 3 tokens with EOS) and "4" (wrong, 2), rewards 1 and 0.
START_LENGTHS, START_REWARDS = DAPO_LENGTHS, (1.0, 0.0)


def _loss_at_start(loss_type: str = "dapo") -> float:
    """``grpo_loss`` of the by-hand group at the first inner step (ratio 1, beta = 0), by ``loss_type``."""
    import torch

    from ..llm.grpo import grpo_loss
    from ..math.credit import group_advantages
    mask = (torch.arange(max(START_LENGTHS))[None, :] < torch.tensor(START_LENGTHS)[:, None]).double()
    advantages = group_advantages(torch.tensor(START_REWARDS, dtype=torch.float64))
    logp = torch.zeros_like(mask)
    loss, _ = grpo_loss(logp, logp, advantages, mask, loss_type=loss_type, max_completion_length=max(START_LENGTHS))
    return float(loss)


def _loss_at_start_mistakes() -> tuple[tuple[float, str], ...]:
    return (
        (_loss_at_start("grpo"), "that is grpo's value: each answer's own token mean, then the mean over answers, "
                                 "which is -mean(A) = 0; dapo divides the token sum by all 5 tokens of the batch"),
        (-_loss_at_start(), "the sign is flipped: the loss is the NEGATED objective, -(sum_i A_i |o_i|) / sum_i |o_i|"),
        (_loss_at_start("dr_grpo"), "that is dr_grpo's normaliser, G x L_max = 6; dapo divides by the 5 tokens"),
        (_loss_at_start() * sum(START_LENGTHS) / len(START_LENGTHS),
         "that divides the token sum by the number of answers (2); dapo divides by the number of tokens (5)"),
        (_loss_at_start() / math.sqrt(2), "that takes TRL's advantages, divided by the group's sample std (+-0.7071); "
                                          "the question gives the book's, +1 and -1"),
    )


# ---------------------------------------------------------------- ex-ch19-gradient-at-start (by hand)
#: The by-hand group of the one-step toy: "5", "5" (right), "4", "0" (the body's group is "5", "4", "4", "0").
START_GROUP, START_GROUP_REWARDS = (2, 2, 1, 0), (1.0, 1.0, 0.0, 0.0)
#: The body's group, "5" (right), "4", "4", "0": its norm, printed in the chapter, is a slip here.
BODY_GROUP, BODY_GROUP_REWARDS = (2, 1, 1, 0), (1.0, 0.0, 0.0, 0.0)


def _start_gradient_norm(group=START_GROUP, rewards=START_GROUP_REWARDS) -> float:
    from ..llm.run_reading import first_step
    return float(np.linalg.norm(first_step(group, rewards)[1]))


def _start_gradient_mistakes() -> tuple[tuple[float, str], ...]:
    r = np.array(START_GROUP_REWARDS)
    G = len(r)

    def norm(advantages, factor=1.0):      # |-(1/G) sum_i A_i onehot(y_i)|, the gradient at ratio 1
        return factor * float(np.linalg.norm(np.bincount(START_GROUP, weights=advantages, minlength=5))) / G
    centred = r - r.mean()
    return (
        (0.0, "that is the loss's value (the advantages sum to 0, so -sum_i A_i / G = 0); its gradient "
              "-(1/G) sum_i A_i grad log pi(y_i) is not 0, since the answers differ"),
        (norm(centred / r.std(), G), "the 1/G of the mean over the group is missing"),
        (norm(centred / r.std(ddof=1)), "that divides by the sample std (ddof 1, TRL's); the book's "
                                         "group_advantages divides by the population std (ddof 0)"),
        (norm(centred), "the advantages are not divided by the group's std: that is Dr. GRPO's r - mean"),
        (body := _start_gradient_norm(BODY_GROUP, BODY_GROUP_REWARDS),
         f"{body:.4f} is the chapter's group (5, 4, 4, 0); this exercise's group is 5, 5, 4, 0"),
    )



# ---------------------------------------------------------------- ex-ch19-lora-bytes (by hand)
#: The by-hand LoRA run: Qwen2.5-7B (its shape is in the question), rank 16 (the recipes' ``LORA_RANK``) on all
#: seven linear layers of every block.
LORA_RANK_BY_HAND = 16


def _lora_gb(bytes_per_param: float | None = None, square_kv: bool = False, layers: bool = True) -> float:
    """GB of LoRA's trainable parameters with their AdamW state (``ADAPTER_BYTES``, 16 bytes each) for
    Qwen2.5-7B at rank 16; ``square_kv`` takes k and v as h x h, ``layers=False`` counts one block."""
    from ..math.memory import ADAPTER_BYTES, QWEN25_7B, lora_params
    params = lora_params(QWEN25_7B, LORA_RANK_BY_HAND)
    if square_kv:      # k_proj and v_proj as 3584 x 3584: r (h + h) each instead of r (h + n_kv d_head)
        kv = QWEN25_7B.n_kv_heads * QWEN25_7B.head_dim
        params += QWEN25_7B.n_layers * 2 * LORA_RANK_BY_HAND * (QWEN25_7B.hidden_size - kv)
    size = sum(ADAPTER_BYTES.values()) if bytes_per_param is None else bytes_per_param
    return params * size / (1 if layers else QWEN25_7B.n_layers) / 1e9


def _lora_mistakes() -> tuple[tuple[float, str], ...]:
    return (
        (_lora_gb(square_kv=True), "k_proj and v_proj are not 3584 x 3584: with 4 key-value heads of 128 they map "
                                   "3584 to 512, so each adds r (3584 + 512) parameters"),
        (_lora_gb(2), "that is the adapters' bf16 weights alone (2 bytes a parameter); training them keeps an fp32 "
                      "value, an fp32 gradient and two fp32 moments, 16 bytes a trainable parameter"),
        (_lora_gb(12), "that is 12 bytes a trainable parameter (the fp32 value and the two moments); the fp32 "
                       "gradient adds 4: 16 bytes"),
        (_lora_gb(layers=False), "that is one block's adapters; each of the 28 layers has its own seven"),
        (_lora_gb() * 1e9 / 2 ** 30, "that is in GiB (2^30 bytes); the question counts GB = 10^9 bytes"),
        (_lora_gb(4), "that is the fp32 value alone (4 bytes a trainable parameter); the fp32 gradient and the two "
                      "fp32 moments add 12: 16 bytes"),
        (_lora_gb(1), "that is the number of trainable parameters in billions; each takes 16 bytes"),
        (_lora_gb(8), "that is 8 bytes a trainable parameter; the fp32 value, the fp32 gradient and the two fp32 "
                      "moments make 16"),
    )


# ---------------------------------------------------------------- ex-ch19-entropy-floor (by hand)
#: The by-hand run of the entropy-collapse threshold: G = 16 completions a prompt of T = 4096 tokens.
FLOOR_G, FLOOR_T = 16, 4096
#: The unit the answer is asked in: 10^-5 nats a token.
FLOOR_UNIT = 1e-5


def _entropy_floor() -> float:
    from ..trl.recipes import failure_thresholds
    return failure_thresholds(FLOOR_G, FLOOR_T, 1)["entropy collapse"] / FLOOR_UNIT


def _entropy_floor_mistakes() -> tuple[tuple[float, str], ...]:
    G, T = FLOOR_G, FLOOR_T
    per_completion = math.log(2) / (G - 1) / FLOOR_UNIT            # 4620.98: typed to the unit as often, 4621
    completion_message = ("that is the floor of a whole completion's entropy, ln 2 / (G - 1); TRL's entropy is a "
                          "mean per token, T times smaller")
    return (
        (math.log(2) / (G * T) / FLOOR_UNIT, "that divides by G; the G samples are identical with probability "
                                             "at least e^(-(G - 1) H), so the floor is ln 2 / ((G - 1) T)"),
        (1 / ((G - 1) * T) / FLOOR_UNIT, "the ln 2 is missing: at least half the groups are flat where "
                                         "e^(-(G - 1) T H) >= 1/2, i.e. (G - 1) T H <= ln 2"),
        (per_completion, completion_message),
        (round(per_completion), completion_message),
        (math.log(2) / ((G - 1) * T), "that is in nats; the question asks for units of 10^-5 nats (times 10^5)"),
        (math.log(2) / (7 * 8192) / FLOOR_UNIT, "that is the chapter's printed floor, for G = 8 and T = 8192; here "
                                                "G = 16 and T = 4096"),
    )


# ---------------------------------------------------------------- ex-ch19-clipped (by hand)
#: The by-hand GPU of the length blow-up: it decodes n = 64 completions a step (16 groups of 4, say).
CLIPPED_N = 64


def _clipped_percent(n: int = CLIPPED_N) -> float:
    from ..trl.recipes import failure_thresholds
    return 100 * failure_thresholds(2, 1, n)["length blow-up"]


def _clipped_mistakes() -> tuple[tuple[float, str], ...]:
    n = CLIPPED_N
    return (
        (_clipped_percent(32), "that is the chapter's printed threshold, for 32 sequences a GPU; this GPU decodes "
                               "n = 64: 1 - 2^(-1/64)"),
        (100 / (2 * n), "that is 1/(2n), where a batch holds half a clipped completion on average; a batch runs to "
                        "the cap when ANY of its n completions does, with probability 1 - (1 - c)^n, which "
                        "passes 1/2 at c = 1 - 2^(-1/n)"),
        (_clipped_percent() / 100, "that is c as a fraction; the question asks for percent (times 100)"),
        (100 * 2 ** (-1 / n), "that is 2^(-1/n) = 1 - c, the share of completions that stop before the cap; c "
                              "is 1 - 2^(-1/n)"),
    )


# ---------------------------------------------------------------- ex-ch19-split (experiment)
#: The experiment's second completion length: the box asks for the best split there.
SPLIT_COMPLETION = 20480


def _split_walls(completion: int) -> dict[int, float]:
    """The one-step-off step's wall of a 7B run at each number of the 16 GPUs that sample (``schedule_walls``)."""
    from ..studies.run_schedules import schedule_walls
    return {split: schedule_walls(7e9, split, completion=completion)["one_step_off"]["wall"] for split in range(1, 16)}


def _best_split(completion: int = SPLIT_COMPLETION) -> int:
    """The number of the 16 GPUs that sample in the shortest one-step-off step of a 7B run."""
    walls = _split_walls(completion)
    return min(walls, key=walls.get)


def _split_mistakes() -> tuple[tuple[float, str], ...]:
    best, first = _best_split(), _best_split(4096)
    walls = _split_walls(SPLIT_COMPLETION)
    runner_up = sorted(walls, key=walls.get)[1]
    return (
        (runner_up, f"that split gives the second-shortest step ({walls[runner_up]:.1f} s against "
                    f"{walls[best]:.1f} s); compare the walls of the splits around it again"),
        (first, f"that is the best split at 4096 completion tokens; the box asks it at {SPLIT_COMPLETION}"),
        (16 - best, "that is the number of training GPUs; the box asks how many of the 16 sample"),
        (16 - first, "that is the number of training GPUs at 4096 completion tokens; the box asks how many of the "
                     f"16 sample at {SPLIT_COMPLETION}"),
    )


# ---------------------------------------------------------------- ex-ch19-sync (by hand)
#: The by-hand weight sync: a 7B model's bf16 weights over the 50 GB/s link of a run split across two machines, and
#: over NVLink one way (the colocated gather).
SYNC_PARAMS, SYNC_LINK = 7e9, 50e9


def _sync_gap(weight_bytes: int = 2, nvlink: float = NVLINK_ONE_WAY) -> float:
    """The split run's weight sync less the colocated run's gather, in seconds (chapter 19's schedules)."""
    return (weight_sync_seconds(SYNC_PARAMS, SYNC_LINK, weight_bytes=weight_bytes)
            - weight_sync_seconds(SYNC_PARAMS, nvlink, weight_bytes=weight_bytes))


def _sync_mistakes() -> tuple[tuple[float, str], ...]:
    split, colocated = (weight_sync_seconds(SYNC_PARAMS, bw) for bw in (SYNC_LINK, NVLINK_ONE_WAY))
    return (
        (_sync_gap(weight_bytes=4), "that sends fp32 weights (4 bytes); the sampler receives bf16, 2 bytes a "
                                    "parameter"),
        (_sync_gap(nvlink=2 * NVLINK_ONE_WAY), "that takes NVLink's 900 GB/s, quoted for both directions; one way "
                                               "it carries 450 GB/s"),
        (split, "that is the split run's sync alone (14 GB over 50 GB/s); the box asks how much longer it is than "
                "the colocated gather"),
        (colocated, "that is the colocated gather alone (14 GB over 450 GB/s); the box asks the split's sync less it"),
        (split + colocated, "that adds the two; the box asks the split's sync LESS the colocated gather"),
        (8 * _sync_gap(), "that reads GB/s as gigabits a second (8 times the seconds); the links carry gigabytes"),
    )


# ---------------------------------------------------------------- ex-ch19-flat-share (by hand)
#: The by-hand sparse reward: every prompt's chance of a right answer, and the group size.
FLAT_P, FLAT_G = 0.02, 8


def _flat_share(p: float = FLAT_P, G: int = FLAT_G) -> float:
    """The expected frac_reward_zero_std: chapter 18's P(flat) of a group of G 0/1 rewards, right with chance p."""
    from ..studies.dynamic_sampling import flat_probability
    return flat_probability(np.array([1 - p, p]), np.array([0, 1]), G)


def _flat_share_mistakes() -> tuple[tuple[float, str], ...]:
    p, G = FLAT_P, FLAT_G
    return (
        (1 - _flat_share(), "that is the share of informative groups; frac_reward_zero_std counts the flat ones, "
                            "(1 - p)^G + p^G"),
        (1 - G * p, "that subtracts G chances of p (a union bound); a group is all wrong with probability "
                    "(1 - p)^G"),
        (1 - p, "that is one answer's chance of being wrong; a group is flat when all G of its answers are"),
        (0.0, "a sparse reward still fires: at p = 0.02 most groups are flat, not none"),
        (1.0, "1.0 is the log of a reward that never fires (p = 0); at p = 0.02 some groups hold a right answer"),
    )


# ---------------------------------------------------------------- ex-ch19-vllm-share (by hand)
def _vllm_need(weights: bool = True, working: bool = True, cache: bool = True, prompt: bool = True,
               gib: bool = False, kv_heads: int | None = None, weight_bytes: int = 2,
               n_params: float | None = None) -> float:
    """Qwen2.5-7B colocated on 8 GPUs (chapter 19's recipe): the GB each GPU's vLLM engine holds, its bf16 weights,
    2 GB of working memory and the bf16 KV cache of the GPU's 32 sequences of 512 + 8192 tokens (the share of an
    80 GB GPU the recipe sets is this over 80, rounded up to a multiple of 0.05); the arguments make the slips
    (a part dropped, the prompt's tokens left out, GiB, the query heads cached, fp32 weights, the name's 7B taken
    for the parameter count)."""
    from ..math.memory import QWEN25_7B
    from ..trl.recipes import PROMPT_LENGTH, VLLM_WORKING_BYTES
    kv = kv_bytes_per_token(QWEN25_7B.n_layers, kv_heads or QWEN25_7B.n_kv_heads, QWEN25_7B.head_dim)
    total = (weight_bytes * (n_params or QWEN25_7B.n_params) * weights + VLLM_WORKING_BYTES * working
             + 32 * (PROMPT_LENGTH * prompt + 8192) * kv * cache)
    return total / (2 ** 30 if gib else 1e9)


def _vllm_need_mistakes() -> tuple[tuple[float, str], ...]:
    from ..math.memory import QWEN25_7B
    share = "that is a share of the GPU; enter the GB the engine holds (the share is that over 80 GB, rounded up)"
    return (
        (_vllm_need(prompt=False), "the prompts' tokens are cached too: each of the 32 sequences holds 512 + 8192 "
                                   "tokens, not 8192"),
        (_vllm_need(gib=True), "that is GiB (2^30 bytes); the question counts GB (10^9 bytes)"),
        (_vllm_need(working=False), "the 2 GB of working memory are missing"),
        (_vllm_need(cache=False), "the KV cache is missing: 32 sequences x 8704 tokens x 57,344 bytes a token"),
        (_vllm_need(working=False, cache=False), "that is the bf16 weights alone; the working memory and the "
                                                 "32 sequences' KV cache come on top"),
        (_vllm_need(kv_heads=QWEN25_7B.n_heads), f"that caches all {QWEN25_7B.n_heads} query heads; with "
                                                 f"grouped-query attention only the {QWEN25_7B.n_kv_heads} "
                                                 "key-value heads are cached"),
        (_vllm_need(weight_bytes=4), "the engine holds the weights in bf16, 2 bytes a parameter, not 4"),
        (_vllm_need(n_params=7e9), f"that counts 7e9 parameters, the name's 7B; Qwen2.5-7B has "
                                   f"{QWEN25_7B.n_params / 1e9:.2f}B (QWEN25_7B.n_params)"),
        (0.45, share), (_vllm_need() / 80, share),
    )


# ============================================================================ chapter 18
#: The by-hand answer: two tokens whose ratios pi / pi_old are 1.6 and 0.9.
GSPO_RATIOS = (1.6, 0.9)


def _gspo_ratio() -> float:
    from ..math.importance_sampling import sequence_ratio
    log_rho = np.log([GSPO_RATIOS])
    return float(sequence_ratio(log_rho, np.zeros_like(log_rho), np.ones_like(log_rho))[0])


def _gspo_mistakes() -> tuple[tuple[float, str], ...]:
    a, b = GSPO_RATIOS
    return (
        (a * b, "that is the product of the token ratios, the exact sequence weight pi(a) / pi_old(a); GSPO takes "
                "its |a|-th root, exp(mean of ln rho_t)"),
        ((a + b) / 2, "that is the arithmetic mean of the ratios; GSPO's is the geometric mean, exp(mean of ln rho_t)"),
        (math.log(a * b) / 2, "that is the mean log-ratio itself; GSPO's ratio is its exponential"),
        (1 / math.sqrt(a * b), "that is upside down, pi_old / pi; the ratio is s = (pi(a) / pi_old(a))^(1/|a|)"),
    )


#: DAPO's by-hand group: G = 3 answers of the toy, P(right) = 0.2, a 0/1 reward.
DRAWS_P, DRAWS_G = 0.2, 3


def _draws() -> float:
    from ..studies.dynamic_sampling import draws_per_kept_group
    return draws_per_kept_group([DRAWS_P, 1 - DRAWS_P], [1, 0], DRAWS_G)


def _draws_mistakes() -> tuple[tuple[float, str], ...]:
    p, G = DRAWS_P, DRAWS_G
    flat = p ** G + (1 - p) ** G
    return (
        (1 / (1 - (1 - p) ** G), "that counts only the all-wrong groups as flat; an all-right group (p^G) has "
                                 "zero advantages too"),
        (flat, "that is P(flat) itself; a kept group costs 1 / (1 - P(flat)) draws on average"),
        (1 - flat, "that is P(a group is kept); the number of draws per kept group is its inverse"),
        (G / (1 - flat), "that counts answers (G per group); the question asks for groups"),
        (1 / flat, "that is 1 / P(flat); a group is kept with probability 1 - P(flat), so a kept group costs "
                   "1 / (1 - P(flat)) draws"),
    )


#: The by-hand pass@k: n = 10 samples, c = 2 right, k = 4.
PASS_N, PASS_C, PASS_K = 10, 2, 4


def _pass_estimate() -> float:
    return pass_at_k_estimate(PASS_N, PASS_C, PASS_K)


def _pass_mistakes() -> tuple[tuple[float, str], ...]:
    n, c, k = PASS_N, PASS_C, PASS_K
    return (
        (1 - (1 - c / n) ** k, "that plugs c / n into 1 - (1 - p)^k, which is biased low; the unbiased estimate "
                               "is 1 - C(n - c, k) / C(n, k)"),
        (math.comb(n - c, k) / math.comb(n, k), "that is C(n - c, k) / C(n, k), the chance that k of the n samples "
                                                "drawn without replacement are all wrong; pass@k is 1 minus it"),
        (c / n, "that is pass@1, c / n; pass@k asks for at least one right answer among k"),
        (k * c / n, "that adds k chances of c / n (a union bound, which can exceed 1); pass@k is "
                    "1 - C(n - c, k) / C(n, k)"),
    )


#: The by-hand crossing: two prompts' chances of a right answer under a sharpened policy (set A) and a broad one
#: (set B), and the large k at which they are compared.
CROSSING_A, CROSSING_B, CROSSING_K = (0.6, 0.0), (0.3, 0.05), 64


def _set_pass(chances, k: int) -> float:
    """pass@k of a set of prompts: the mean over its prompts of 1 - (1 - p)^k (chapter 18)."""
    return float(np.mean(pass_at_k(np.array(chances), k)))


def _crossing() -> float:
    """pass@64 of set B less pass@64 of set A: the broad policy's lead at large k."""
    return _set_pass(CROSSING_B, CROSSING_K) - _set_pass(CROSSING_A, CROSSING_K)


def _crossing_mistakes() -> tuple[tuple[float, str], ...]:
    a, b, k = CROSSING_A, CROSSING_B, CROSSING_K
    return (
        (_set_pass(b, 1) - _set_pass(a, 1), "that is pass@1's difference (0.175 against 0.3: A leads there); the box "
                                            "asks it at k = 64"),
        (_set_pass([np.mean(b)], k) - _set_pass([np.mean(a)], k),
         "that averages the chances before the formula; pass@k of a set is the mean over its prompts of "
         "1 - (1 - p)^k, each prompt on its own"),
        (-_crossing(), "the sign is flipped: set B's pass@64 less set A's"),
        (_set_pass(b, k), "that is set B's pass@64 alone; the box asks how far it leads set A's"),
        (_set_pass(a, k), "that is set A's pass@64 alone; the box asks set B's lead over it"),
    )


#: The by-hand pre-filter: a pool of two kinds of prompts (how many, and each one's chance of a right answer
#: under the warm start) and the answers the filter samples of each.
PREFILTER_POOL, PREFILTER_N = ((500, 0.9), (500, 0.05)), 8


def _kept(pool=PREFILTER_POOL, n: int = PREFILTER_N) -> float:
    """The expected number of prompts a filter of n answers keeps (0 < c < n): the sum over the pool of
    1 - P(flat), a prompt's n answers being a group of n (:func:`_flat_share`)."""
    return float(sum(count * (1 - _flat_share(p, n)) for count, p in pool))


def _kept_mistakes() -> tuple[tuple[float, str], ...]:
    pool, n = PREFILTER_POOL, PREFILTER_N
    total = sum(count for count, _ in pool)
    mean_p = sum(count * p for count, p in pool) / total
    return (
        (sum(count * (1 - (1 - p) ** n) for count, p in pool),
         "that drops only the never-right prompts; a prompt right on all 8 answers is flat too (p^8 = 0.43 at p = 0.9)"),
        (sum(count * (1 - p ** n) for count, p in pool),
         "that drops only the always-right prompts; a prompt wrong on all 8 is flat too ((1 - p)^8 = 0.66 at p = 0.05)"),
        (total - _kept(), "that counts the dropped prompts; the box asks how many are kept"),
        (_kept(((total, mean_p),)), "that averages the chances first (0.475); each prompt is kept with its own "
                                    "1 - (1 - p)^8 - p^8"),
        (total * n / 64 / 8, "that is the filter's cost in the chapter's steps (8 answers of 1,000 prompts at 64 x "
                             "8 answers a step); the box asks for the prompts kept"),
    )


#: The by-hand clip: three tokens of one answer with A > 0, their ratios pi / pi_old, and the two rules' widths.
CLIP_RATIOS, CLIP_EPS, CLIP_CAP = (1.3, 0.9, 1.1), 0.2, 1.28


def _cispo_weights() -> float:
    """The sum of the weights CISPO (cap 1.28) puts on the three tokens' A grad ln pi, read from the gradient."""
    import torch

    from ..llm.grpo import cispo_loss
    logp = torch.log(torch.tensor([CLIP_RATIOS], dtype=torch.float64)).requires_grad_()
    zeros, ones = torch.zeros_like(logp).detach(), torch.ones_like(logp).detach()
    (grad,) = torch.autograd.grad(cispo_loss(logp, zeros, ones[:, 0], ones, eps_max=CLIP_CAP)[0], logp)
    return float(-grad.sum() * len(CLIP_RATIOS))          # token-mean: each weight is -N d loss / d ln pi


def _cispo_mistakes() -> tuple[tuple[float, str], ...]:
    rhos, eps, cap = CLIP_RATIOS, CLIP_EPS, CLIP_CAP
    return (
        (sum(rhos), "that is the sum of the raw token ratios; CISPO caps each weight at 1.28, so the 1.3 token "
                    "counts 1.28"),
        (sum(r for r in rhos if r <= 1 + eps), "that is PPO's clip, which zeroes the 1.3 token (A > 0, ratio "
                                               "above 1 + eps); CISPO keeps it, at the cap 1.28"),
        (sum(min(r, 1 + eps) for r in rhos), "that caps at 1 + eps = 1.2, the token clip's edge; the cap "
                                             "here is 1.28"),
        (sum(min(r, cap - 1) for r in rhos), "that caps at 0.28, DAPO's width read as the cap (the pitfall of "
                                             "TRL's epsilon_high); the cap here is 1.28"),
    )


#: The by-hand Holm adjustment: Welch's p of the four knobs against plain GRPO, the healthy run's late entropy
#: (the stored run's four-digit p-values, fixed here; the bonus of 0.05 is the smallest).
HOLM_P = {"entropy_coef 0.05": 0.0286, "adaptive, target 0.8": 0.5358, "top 20% of tokens": 0.0837,
          "Clip-Cov 2%": 0.3424}


def _holm_bonus() -> float:
    from ..math.statistics import holm
    return float(holm(np.array(list(HOLM_P.values())))[0])


def _holm_mistakes() -> tuple[tuple[float, str], ...]:
    p, m = HOLM_P["entropy_coef 0.05"], len(HOLM_P)
    return (
        (p, "that is Welch's p unadjusted (the test against the bonus's own noise floor); Holm multiplies the "
            "smallest of the m = 4 p-values by 4"),
        ((m - 1) * p, "that multiplies by m - 1 = 3, the factor of the second smallest; the smallest gets m = 4"),
        (p / m, "that divides by 4 (Bonferroni's level 0.05 / 4 turned on the p-value); an adjusted p multiplies"),
        (m * max(HOLM_P.values()), "that multiplies the largest p by 4; Holm multiplies the smallest by 4, the "
                                   "next by 3, and caps at 1"),
        (1.0, "that is 4 times the largest p, capped at 1; the bonus's p is the smallest, so it gets the factor 4"),
    )


# ---------------------------------------------------------------- ex-ch18-length (experiment)
def _chain_moments() -> tuple[float, float]:
    """1 + chi^2 and sum_y pi^4 / pi_old^3 of one token of chapter 18's chain, pi two steps ahead of pi_old."""
    from ..math.distributions import softmax
    from ..studies.sequence_ratios import LEAD_LR, chain_sequences
    from ..toy.five_token import LOGITS
    pi, pi_old = softmax(chain_sequences(1, 2, LEAD_LR).logp[:, 0]), softmax(LOGITS)
    return float(pi @ (pi / pi_old)), float(pi ** 4 @ (1 / pi_old ** 3))


def _length_to_ten(one_plus_chi2: float | None = None) -> float:
    """The length L at which the product weight's second moment (1 + chi^2)^L first reaches 10."""
    return math.ceil(math.log(10) / math.log(one_plus_chi2 or _chain_moments()[0]))


def _length_mistakes() -> tuple[tuple[float, str], ...]:
    chi = _chain_moments()[0]
    round_up = "L is a whole number of tokens, the first at which (1 + chi^2)^L reaches 10: round ln 10 / ln(1 + chi^2) up"
    return (
        (_length_to_ten(1.0094), "that comes from the four-decimal 1.0094; take 1 + chi^2 to five decimals, 1.00943"),
        (math.log(10) / math.log(chi), round_up), (math.floor(math.log(10) / math.log(chi)), round_up),
        (math.log10(10) / math.log(chi), "that mixes logarithms: ln 10 / ln(1 + chi^2), both natural (or both base 10)"),
        (math.log(10) / math.log10(chi), "that mixes logarithms: ln 10 / ln(1 + chi^2), both natural (or both base 10)"),
    )


# ---------------------------------------------------------------- ex-ch18-group-mean (experiment)
def _group_mean_gain(advantage: str = "group_mean") -> float:
    """How much higher J ends after chapter 18's run with dynamic sampling than with the static batch, on the two
    exact paths (``dynamic_sampling_exact``), with Dr. GRPO's group-mean advantage."""
    from ..studies.dynamic_sampling import CHAPTER_18_RUN, dynamic_sampling_exact
    ends = [dynamic_sampling_exact(dynamic, advantage=advantage, **CHAPTER_18_RUN)["J"][-1] for dynamic in (True, False)]
    return float(ends[0] - ends[1])


def _group_mean_mistakes() -> tuple[tuple[float, str], ...]:
    from ..studies.dynamic_sampling import CHAPTER_18_RUN, dynamic_sampling_exact, dynamic_sampling_run
    from ..studies.toy_grpo import run_over_seeds
    exact = {d: dynamic_sampling_exact(d, advantage="group_mean", **CHAPTER_18_RUN)["J"][-1] for d in (True, False)}
    seeds = {d: run_over_seeds(dynamic_sampling_run, range(20), dynamic=d, advantage="group_mean",
                               **CHAPTER_18_RUN)["J"][:, -1].mean() for d in (True, False)}
    one_path = "that is one path's J; the box asks the gain, dynamic's J minus static's, on the exact paths"
    return (
        (_group_mean_gain("grpo"), "that is the gain with GRPO's advantage (divided by the std), the chapter's run; "
                                   "this exercise sets advantage=\"group_mean\""),
        (seeds[True] - seeds[False], "that is the gain of the 20 seeds' means, which carries their sampling noise; "
                                     "the box asks it on the exact paths, dynamic_sampling_exact"),
        (exact[True], one_path), (exact[False], one_path),
        (exact[False] - exact[True], "the sign is flipped: dynamic's J minus static's"),
    )


# ---------------------------------------------------------------- pass_at_k_estimate (coding)
def _pass_cases() -> list[tuple[int, int, int]]:
    """The by-hand samples; the edges (no right sample, all right, k = 1, k = n, and k above the wrong ones, where
    every draw of k holds a right one); then six random (n, c, k) with 1 <= c <= n - 1 and 2 <= k <= n - 1."""
    rng = np.random.default_rng(0)
    edges = [(PASS_N, 0, PASS_K), (PASS_N, PASS_N, PASS_K), (PASS_N, PASS_C, 1), (PASS_N, PASS_C, PASS_N),
             (PASS_N, 7, 5)]
    randoms = []
    for _ in range(6):
        n = int(rng.integers(4, 21))
        randoms.append((n, int(rng.integers(1, n)), int(rng.integers(2, n))))
    return [(PASS_N, PASS_C, PASS_K), *edges, *randoms]


_PASS_AT_K = FunctionExercise(18, pass_at_k_estimate, _pass_cases, (
    ("that plugs c / n into 1 - (1 - p)^k, which is biased low; the unbiased estimate is "
     "1 - C(n - c, k) / C(n, k)", lambda n, c, k: 1 - (1 - c / n) ** k),
    ("that returns C(n - c, k) / C(n, k), the chance that k samples drawn from the n are all wrong; "
     "pass@k is 1 minus it", lambda n, c, k: math.comb(n - c, k) / math.comb(n, k)),
    ("the right and wrong counts are swapped: the k samples must avoid the c right ones, so the numerator is "
     "C(n - c, k)", lambda n, c, k: 1 - math.comb(c, k) / math.comb(n, k)),
    ("that adds k chances of c / n (a union bound, capped at 1); pass@k is 1 - C(n - c, k) / C(n, k)",
     lambda n, c, k: min(1.0, k * c / n)),
))


# ============================================================================ chapter 20
lognormal_weight_moments = imported_on_call("llm.sampler_study", "lognormal_weight_moments")   # it imports torch

#: The by-hand answer: the engine's and the trainer's probabilities of its two tokens, and TRL's cap. Their
#: ratio, 5, is above the cap, so sequence_truncate (3) and sequence_mask (0) differ.
ENGINE_PROBS, TRAINER_PROBS, IS_CAP = (0.2, 0.4), (0.5, 0.8), 3.0


def _sequence_ratio() -> float:
    return math.prod(t / e for t, e in zip(TRAINER_PROBS, ENGINE_PROBS))


def _sequence_weight() -> float:
    """TRL's ``sequence_truncate`` weight of the by-hand answer: the exact ratio, clamped to the cap (its
    ``sequence_mask`` weight, the default, is 0: the ratio is above the cap)."""
    return min(_sequence_ratio(), IS_CAP)


def _sequence_weight_mistakes() -> tuple[tuple[float, str], ...]:
    ratios = [t / e for t, e in zip(TRAINER_PROBS, ENGINE_PROBS)]
    product = _sequence_ratio()
    return (
        (0.0, f"that is masking, not truncation: sequence_mask sets the ratio {product:.4f}, above the cap "
              f"{IS_CAP:g}, to 0; sequence_truncate clamps it to the cap"),
        (product, f"that is the exact ratio; it is above the cap {IS_CAP:g}, so sequence_truncate clamps it to "
                  f"the cap"),
        (math.sqrt(product), "that is the geometric mean of the token ratios (GSPO's length normalisation); TRL's "
                             "sequence modes sum the log gaps, so the ratio is the product of the token ratios"),
        (1 / product, "that is upside down: the ratio is pi_old / pi_samp, the trainer's probability over the "
                      "engine's"),
        (sum(ratios) / 2, "that averages the token ratios; a sequence's ratio is their product"),
        (math.log(product), "that is the summed log gap, the log of the ratio; take its exponential"),
        (ratios[0], "that is the first token's weight in a token mode; the sequence modes give the whole answer one "
                    "weight, from the product of its token ratios"),
        (ratios[1], "that is the second token's weight in a token mode; the sequence modes give the whole answer "
                    "one weight, from the product of its token ratios"),
        (sum(ratios), "that adds the token ratios; a sequence's ratio is their product (its log is the sum of the "
                      "log gaps)"),
    )


#: The by-hand sequence: its advantage, the engine's and the current policy's log-probs of its tokens.
OPSM_ADVANTAGE, OPSM_ENGINE, OPSM_POLICY = -1.0, (-0.1, -0.3, -0.2), (-0.9, -1.0, -0.8)


def _opsm_measure() -> float:
    return float(np.mean(np.subtract(OPSM_ENGINE, OPSM_POLICY)))


def _opsm_mistakes() -> tuple[tuple[float, str], ...]:
    gaps = np.subtract(OPSM_ENGINE, OPSM_POLICY)
    return (
        (float(gaps.sum()), "that is the sum over the tokens; the mask compares the mean per token with delta"),
        (-_opsm_measure(), "the sign is flipped: the measure is log pi_samp - log pi_theta, positive when the "
                           "policy has moved away from the engine's answer"),
        (float(np.mean(np.exp(gaps))), "that averages the ratios pi_samp / pi_theta; the measure averages the "
                                      "log-probability gaps (a k1 estimate of the KL)"),
        (float(np.mean(np.abs(np.log(-np.array(OPSM_ENGINE)) - np.log(-np.array(OPSM_POLICY))))),
         "that compares the logs of the log-probabilities; subtract the log-probabilities themselves"),
        (1.0, "that is the mask's value for a kept sequence (1; this one is dropped: 0); the question asks for the "
              "measure the mask compares with delta, the mean of log pi_samp - log pi_theta over the tokens"),
        (0.0, "that is the mask's value (0: this sequence is dropped); the question asks for the measure the mask "
              "compares with delta, the mean of log pi_samp - log pi_theta over the tokens"),
        (float(np.mean(np.expm1(-gaps) + gaps)), "that is chapter 17's k3 estimate; the mask averages the plain "
                                                  "log-probability gap (k1), log pi_samp - log pi_theta"),
    )


# ---------------------------------------------------------------- ex-ch20-one-step-off (the by-hand part)
#: The per-sequence std s of the log-ratio one step off at lr 1e-3, as the stored page prints it.
ONE_STEP_S = 0.3495


def _weight_std(s: float = ONE_STEP_S) -> float:
    """The std of a log-normal weight whose log has std s and mean -s^2/2: sqrt(exp(s^2) - 1) (chapter 20)."""
    return math.sqrt(math.expm1(s ** 2))


def _weight_std_mistakes() -> tuple[tuple[float, str], ...]:
    s = ONE_STEP_S
    return (
        (s, "that is s, the log-ratio's std; the weight exp(log-ratio) spreads by sqrt(exp(s^2) - 1)"),
        (math.expm1(s ** 2), "that is the weight's variance, exp(s^2) - 1; its std is the square root"),
        (math.sqrt(math.expm1(s)), "that exponentiates s, not s^2: the variance is exp(s^2) - 1"),
        (math.exp(s ** 2 / 2), "that is exp(s^2 / 2), the root of E[w^2] = exp(s^2); the std takes off the mean's "
                               "square, 1: sqrt(exp(s^2) - 1)"),
    )


# ---------------------------------------------------------------- ex-ch20-async-clip
#: A token's log-probability under the engine (some steps old) and under the trainer's current policy.
ASYNC_ENGINE_LOGP, ASYNC_POLICY_LOGP = -0.5, -0.9


def _async_ratio() -> float:
    """The ratio AsyncGRPOTrainer's clip sees: pi_theta / pi_engine = exp(log pi_theta - log pi_engine) (chapter 20)."""
    return math.exp(ASYNC_POLICY_LOGP - ASYNC_ENGINE_LOGP)


_ASYNC_CLIP_MISTAKES = (
    (math.exp(ASYNC_ENGINE_LOGP - ASYNC_POLICY_LOGP), "that is the ratio inverted, pi_engine / pi_theta; the clip's "
                                                      "ratio is the current policy's probability over the engine's"),
    (1.0, "that is GRPOTrainer's ratio at its first inner step (it rescores the batch, so pi_old is the current "
          "policy); AsyncGRPOTrainer does not rescore: its ratio is against the engine's log-probability"),
    (0.8, "that is the clipped value clip(rho, 0.8, 1.2); the question asks for the ratio rho itself"),
    (ASYNC_POLICY_LOGP - ASYNC_ENGINE_LOGP, "that is the log-ratio, log pi_theta - log pi_engine; the ratio is its "
                                            "exponential"),
    (ASYNC_ENGINE_LOGP - ASYNC_POLICY_LOGP, "that is the log-ratio with its sign flipped; the ratio is "
                                            "exp(log pi_theta - log pi_engine)"),
)


# ---------------------------------------------------------------- lognormal_weight_moments (coding)
def _moments_case(rng):
    """The chapter's sequence (spread 0.5 a token, four tokens, TRL's cap 3, truncated), then random ones."""
    if rng is None:
        return 1.0, 3.0, "truncate"
    return float(rng.uniform(0.1, 2.0)), float(rng.uniform(1.5, 5.0)), str(rng.choice(["none", "truncate", "mask"]))


def _moments_slip(log_std, cap, rule, *, mu=None, raw_second=False, std=False, truncate_as_mask=False,
                  mask_mean_one=False):
    """The moments with a slip: ln r centred at ``mu`` (the right one is -s^2/2), E[w^2] or the standard
    deviation for the variance, the mass above the cap dropped when truncating, or the masked weight's mean
    taken as 1 (an importance weight's mean, which the mask no longer keeps)."""
    s2 = log_std ** 2
    mu = -s2 / 2 if mu is None else mu
    phi = lambda x: 0.5 * (1 + math.erf(x / math.sqrt(2)))          # noqa: E731
    above = 1 - phi((math.log(cap) - mu) / log_std)
    first, second = math.exp(mu + s2 / 2), math.exp(2 * mu + 2 * s2)
    if rule != "none":
        first *= phi((math.log(cap) - mu - s2) / log_std)
        second *= phi((math.log(cap) - mu - 2 * s2) / log_std)
    if rule == "truncate" and not truncate_as_mask:
        first, second = first + cap * above, second + cap ** 2 * above
    if rule == "mask" and mask_mean_one:
        first = 1.0
    return first, second if raw_second else math.sqrt(second - first ** 2) if std else second - first ** 2


_LOGNORMAL_MOMENTS = FunctionExercise(20, lognormal_weight_moments, toy_and_random(_moments_case, n_random=8), (
    ("the log-ratio's mean -s^2/2 is missing: with ln r ~ N(0, s^2), E[r] = e^(s^2/2) > 1, and importance "
     "sampling is no longer unbiased", lambda s, c, rule: _moments_slip(s, c, rule, mu=0.0)),
    ("the second value is E[w^2]; the variance is E[w^2] - E[w]^2",
     lambda s, c, rule: _moments_slip(s, c, rule, raw_second=True)),
    ("the second value is the standard deviation; the variance is its square, E[w^2] - E[w]^2",
     lambda s, c, rule: _moments_slip(s, c, rule, std=True)),
    ("truncating keeps the mass above the cap at C: add C P(r > C) to the mean and C^2 P(r > C) to E[w^2] (that "
     "is what masking drops)", lambda s, c, rule: _moments_slip(s, c, rule, truncate_as_mask=True)),
    ("the masked weight's mean is not 1: masking drops the ratios above the cap, so E[w] = E[r; r <= C] < 1, and "
     "the variance is E[w^2] - E[w]^2 with that mean", lambda s, c, rule: _moments_slip(s, c, rule, mask_mean_one=True)),
), output="pair")


SPECS: dict[str, FunctionExercise | NumericExercise] = {
    "ex-ch17-k2": NumericExercise(
        17, f"k2 of the sampled 5 (pi = {TOKEN_PI}, pi_ref = {TOKEN_REF})", _X ** 2 / 2, 0.002, _k2_mistakes()),
    "ex-ch17-k3-weight": NumericExercise(
        17, "the weight on grad ln pi(5) in the gradient of TRL's ratio-corrected k3", _X, 0.002,
        _weight_mistakes()),
    "ex-ch17-dapo-weight": NumericExercise(
        17, 'dapo\'s weight (times L_max) on each token of "05"', lambda: _dapo_weight("dapo"), 0.002,
        _dapo_mistakes),
    "ex-ch17-shrink": NumericExercise(
        17, "the group-mean estimate's mean squared error on the one-step toy at G = 8", _shrink_mse, 0.0001,
        _shrink_mistakes()),
    "ex-ch17-beta": NumericExercise(
        17, f"the reverse leash's fixed point less the forward one's, pi(5) at beta = {BETA_STRENGTHS[0]}", _leash_gap,
        1e-3, _leash_gap_mistakes),
    "ex-ch17-sapo-weight": NumericExercise(
        17, f"SAPO's weight -d loss / d ln pi on a token with A = +1 and rho = {SAPO_RATIO}", _sapo_weight, 0.002,
        _sapo_mistakes),
    "ex-ch17-soft-punishment": NumericExercise(
        17, f"the reward of a right answer of {PUNISHED_LENGTH} tokens under the soft overlong punishment",
        _punished_reward, 0.002, _punishment_mistakes),
    "ex-ch17-missed-kl": NumericExercise(
        17, "the answers' KL gradient in the first-step logit of 5 (only P(EOS | 5) moved, 0.8 to 0.3)", _missed_kl,
        0.002, _missed_kl_mistakes),
    "kl_estimators": _KL_ESTIMATORS,
    "ex-ch19-bytes": NumericExercise(
        19, "the GB of a 3B model's state on one GPU (AdamW in bf16 mixed precision, a bf16 reference)",
        lambda: _state_gb(3e9), 0.5, _bytes_mistakes),
    "ex-ch19-zero2": NumericExercise(
        19, "the GB per GPU of a 7B model's state under ZeRO-2 on 8 GPUs, no reference",
        lambda: _state_gb(7e9, reference=False, n_gpus=8, sharding="zero2"), 0.02, _zero2_mistakes),
    "ex-ch19-kv": NumericExercise(
        19, "the GB of Qwen2.5-1.5B's bf16 KV cache for 64 sequences of 4096 tokens", _kv_gb, 0.05, _kv_mistakes),
    "ex-ch19-decode": NumericExercise(
        19, "the milliseconds of one decoding step of 7B parameters in bf16 for 8 sequences", _decode_ms, 0.005,
        _decode_mistakes),
    "kv_bytes_per_token": _KV_BYTES,
    "ex-ch19-loss-at-start": NumericExercise(
        19, 'dapo\'s loss at the first inner step for "05" (right) and "4" (wrong)', _loss_at_start, 0.01,
        _loss_at_start_mistakes),
    "ex-ch19-gradient-at-start": NumericExercise(
        19, "the norm of the first step's gradient in the logits (group 5, 5, 4, 0)", _start_gradient_norm, 0.004,
        _start_gradient_mistakes),
    "ex-ch19-lora-bytes": NumericExercise(
        19, "the GB of Qwen2.5-7B's LoRA parameters (r = 16, every linear layer) with their AdamW state",
        _lora_gb, 0.005, _lora_mistakes),
    "ex-ch19-entropy-floor": NumericExercise(
        19, f"the mean token entropy, in 10^-5 nats, below which half the groups are flat (G = {FLOOR_G}, "
            f"T = {FLOOR_T})", _entropy_floor, 0.01, _entropy_floor_mistakes),
    "ex-ch19-split": NumericExercise(
        19, f"the number of the 16 GPUs that sample in the shortest one-step-off step at {SPLIT_COMPLETION} completion "
            "tokens", _best_split, 0.3, _split_mistakes, retry=EXPERIMENT_RETRY),
    "ex-ch19-sync": NumericExercise(
        19, "the seconds a 7B split run's weight sync over a 50 GB/s link takes beyond a colocated run's NVLink "
            "gather", _sync_gap, 0.002, _sync_mistakes),
    "ex-ch19-flat-share": NumericExercise(
        19, f"the frac_reward_zero_std a run should log when every prompt's answers are right with p = {FLAT_P} "
            f"(G = {FLAT_G})", _flat_share, 0.002, _flat_share_mistakes),
    "ex-ch19-vllm-share": NumericExercise(
        19, "the GB that vLLM's engine holds on each GPU for Qwen2.5-7B colocated on 8 GPUs (32 sequences of "
            "512 + 8192 tokens)", _vllm_need, 0.05, _vllm_need_mistakes),
    "ex-ch19-clipped": NumericExercise(
        19, f"the percent of completions at the cap above which most batches of {CLIPPED_N} run to it",
        _clipped_percent, 0.01, _clipped_mistakes),
    "ex-ch18-gspo-ratio": NumericExercise(
        18, "GSPO's sequence ratio s of the two-token answer (token ratios 1.6 and 0.9)", _gspo_ratio, 0.002,
        _gspo_mistakes),
    "ex-ch18-draws": NumericExercise(
        18, "the expected number of groups drawn per kept group (G = 3, P(right) = 0.2)", _draws, 0.002,
        _draws_mistakes),
    "ex-ch18-pass-at-k": NumericExercise(
        18, "the unbiased pass@4 estimate from 10 samples with 2 right", _pass_estimate, 0.002, _pass_mistakes),
    "ex-ch18-crossing": NumericExercise(
        18, "set B's pass@64 less set A's (A: chances 0.6 and 0; B: 0.3 and 0.05)", _crossing, 0.002,
        _crossing_mistakes),
    "ex-ch18-prefilter": NumericExercise(
        18, "the prompts a pre-filter of 8 answers keeps, on average, from 500 prompts at p = 0.9 and 500 at "
            "p = 0.05", _kept, 2.5, _kept_mistakes),     # 2.5: keep chances rounded to 0.57 and 0.34 give 455
    "ex-ch18-cispo-weights": NumericExercise(
        18, "the sum of CISPO's weights (cap 1.28) on three tokens with ratios 1.3, 0.9, 1.1 and A > 0",
        _cispo_weights, 0.002, _cispo_mistakes),
    "ex-ch18-holm": NumericExercise(
        18, "the bonus's Holm-adjusted p over the four knobs (p-values 0.0286, 0.5358, 0.0837, 0.3424)",
        _holm_bonus, 0.002, _holm_mistakes),
    "ex-ch18-length": NumericExercise(
        18, "the length L at which the product weight's second moment (1 + chi^2)^L reaches 10", _length_to_ten, 0.3,
        _length_mistakes),
    "ex-ch18-group-mean": NumericExercise(
        18, "how much higher J ends with dynamic sampling than without, on the exact paths with Dr. GRPO's "
            "advantage", _group_mean_gain, 5e-4, _group_mean_mistakes, retry=EXPERIMENT_RETRY),
    "pass_at_k_estimate": _PASS_AT_K,
    "ex-ch20-sequence-weight": NumericExercise(
        20, "TRL's sequence_truncate weight of the answer (at TRL's default cap)", _sequence_weight, 0.002,
        _sequence_weight_mistakes),
    "ex-ch20-opsm-kl": NumericExercise(
        20, "the off-policy mask's measure of the sequence (mean of log pi_samp - log pi_theta)", _opsm_measure,
        0.002, _opsm_mistakes),
    "ex-ch20-one-step-off": NumericExercise(
        20, f"the std of the weight one step off at lr 1e-3, from the page's s = {ONE_STEP_S}", _weight_std, 0.002,
        _weight_std_mistakes),
    "ex-ch20-async-clip": NumericExercise(
        20, f"the ratio AsyncGRPOTrainer's clip sees for a token of log-probability {ASYNC_ENGINE_LOGP} under the "
            f"engine and {ASYNC_POLICY_LOGP} under the current policy", _async_ratio, 5e-4, _ASYNC_CLIP_MISTAKES),
    "lognormal_weight_moments": _LOGNORMAL_MOMENTS,
}
