"""Entropy control, the formulas (chapter 18): TRL 1.16's adaptive entropy coefficient, and the token
covariance that Clip-Cov and KL-Cov (Cui et al. 2025) select their tokens by.

The adaptive rule (Skywork-OR1; TRL's ``use_adaptive_entropy``) keeps a coefficient c and the entropy
H_prev measured at the previous optimizer step (+inf before the first). At optimizer step u, with H_u the
mean entropy over the tokens the loss acts on:

    applied_u = c_u  if H_prev <= target  else 0            (the bonus this step's loss subtracts)
    c_{u+1}   = min(c_u + delta, c_max)  if H_u <= target  else  max(c_u - delta, c_min),   H_prev <- H_u

so the bonus switches on one step after the entropy first falls to the target, and its coefficient then
climbs by delta a step while the entropy stays at or below the target.

Clip-Cov and KL-Cov rank the unmasked tokens t by the centred product

    Cov_t = (A_t - mean(A)) (log pi(y_t) - mean(log pi)),      means over the unmasked tokens,

one token's term of the covariance between the advantage and the log-probability, which Cui et al. show
drives the entropy's fall under a policy gradient. Clip-Cov draws, uniformly at random, round(ratio * n)
(at least 1) of the tokens with clip_cov_lb < Cov_t < clip_cov_ub whose clip does not already bind, and
detaches them (their gradient is 0); KL-Cov takes the round(ratio * n) (at least 1) tokens of largest
Cov_t and adds kl_coef |log pi - log pi_old| to their loss. n is the number of unmasked tokens and round
is Python's ``int`` (toward 0), as in verl's ``compute_policy_loss_clip_cov`` / ``_kl_cov``.
"""
from __future__ import annotations

import numpy as np


def adaptive_entropy_step(coef: float, last_entropy: float, entropy: float, target: float, delta: float,
                          coef_min: float, coef_max: float) -> tuple[float, float]:
    """One optimizer step of TRL's adaptive entropy control (trusted inputs): returns (the coefficient the
    step's loss applies, the coefficient after the step's update). ``last_entropy`` is the previous step's
    measured entropy (+inf at the first step), ``entropy`` this step's."""
    applied = coef if last_entropy <= target else 0.0
    updated = min(coef + delta, coef_max) if entropy <= target else max(coef - delta, coef_min)
    return applied, updated


def token_covariance(advantages: np.ndarray, logp: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Cov_t = (A_t - mean A)(log pi_t - mean log pi) of every token, the means over the unmasked tokens
    (``mask`` 1); arrays (B, T), ``advantages`` broadcast per token. Masked tokens get -inf."""
    real = mask > 0
    centred = (advantages - advantages[real].mean()) * (logp - logp[real].mean())
    return np.where(real, centred, -np.inf)


def selected_count(ratio: float, n_tokens: int) -> int:
    """How many tokens Clip-Cov or KL-Cov acts on: max(1, int(ratio * n_tokens))."""
    return max(1, int(ratio * n_tokens))


def clip_cov_tokens(cov: np.ndarray, eligible: np.ndarray, ratio: float, low: float, high: float,
                    rng: np.random.Generator) -> np.ndarray:
    """Clip-Cov's detached tokens (boolean, the shape of ``cov``): ``selected_count(ratio, n)`` drawn
    uniformly without replacement among the ``eligible`` tokens (unmasked, clip not binding) with
    ``low`` < Cov_t < ``high``; n counts the unmasked tokens (those with a finite Cov_t)."""
    candidates = np.flatnonzero(eligible & (cov > low) & (cov < high))
    chosen = rng.permutation(candidates)[:selected_count(ratio, int(np.isfinite(cov).sum()))]
    out = np.zeros(cov.size, dtype=bool)
    out[chosen] = True
    return out.reshape(cov.shape)


def kl_cov_tokens(cov: np.ndarray, ratio: float) -> np.ndarray:
    """KL-Cov's penalised tokens (boolean): the ``selected_count(ratio, n)`` unmasked tokens of largest
    Cov_t (masked tokens hold -inf and are never among them)."""
    k = selected_count(ratio, int(np.isfinite(cov).sum()))
    top = np.argsort(-cov, axis=None, kind="stable")[:k]
    out = np.zeros(cov.size, dtype=bool)
    out[top] = True
    return out.reshape(cov.shape)
