"""The KL of whole answers, and what per-token KL penalties keep of its gradient (chapter 17).

On answers of several tokens the KL that a leash should hold is the answers' own,

    KL(pi || pi_ref) = sum_a pi(a) ln(pi(a) / pi_ref(a)) = E_a[sum_t x_t],   x_t = ln pi(a_t|c_t) - ln pi_ref(a_t|c_t),

and, since grad ln pi(a) = sum_t s_t with s_t = grad ln pi(a_t|c_t) and E[sum_t s_t] = 0, its gradient is

    grad KL = E_a[(sum_t x_t)(sum_t s_t)]:

each token's score meets the log-ratios of the whole answer, the later tokens' included. A penalty put
on each sampled token in the loss keeps only its own token's log-ratio (chapter 17, one token):

    k2 in the loss            grad of E[sum_t x_t^2 / 2]    = E[sum_t x_t s_t]
    ratio-corrected k3        grad of E[sum_t rho_t k3_t]   = E[sum_t x_t s_t]          (at pi = pi_old)
    k3 in the loss            grad of E[sum_t k3_t]         = E[sum_t (1 - e^{-x_t}) s_t]
    k1 in the loss            grad of E[sum_t x_t]          = E[sum_t s_t] = 0
    k1 in the reward (r - beta sum_t x_t, REINFORCE)        = E[(sum_t x_t)(sum_t s_t)] = grad KL

So the per-token k2 (and corrected k3) follow the reverse KL token by token, not answer by answer: they
miss E[(sum_{u>t} x_u) s_t], the effect of an earlier choice on the KL of what follows it (the
sequence-level pitfall of Tang & Munos, 2025, arXiv:2506.09477). :func:`sequence_kl_gradients`
computes each of these exactly on the two-step toy (``rl4llm.toy.two_step.ANSWERS``), every answer enumerated.
"""
from __future__ import annotations

import numpy as np

from .._checks import checked, in_range
from ..math.distributions import log_softmax, softmax
from ..math.two_step import two_step_policy
from ..toy.five_token import P_EOS_AFTER_5
from ..toy.two_step import ANSWERS, CHOICES

#: The per-token penalties whose gradients :func:`sequence_kl_gradients` returns, beside the answers' KL.
PER_TOKEN = ("k2_loss", "k3_corrected", "k3_loss", "k1_loss", "k1_reward")
#: The parameters' order: every context's logits, contexts in ``CHOICES``'s order.
PARAMETERS = tuple((context, token) for context, tokens in CHOICES.items() for token in tokens)


def _slices() -> dict[str, slice]:
    """Each context's entries of a vector over ``PARAMETERS``."""
    starts = np.cumsum([0] + [len(tokens) for tokens in CHOICES.values()])
    return {context: slice(starts[i], starts[i + 1]) for i, context in enumerate(CHOICES)}


def answer_kl(policy: dict, reference: dict) -> float:
    """KL(pi || pi_ref) over the seven answers of the two-step toy, ``policy`` and ``reference`` dicts of
    logits per context (validated by the caller): sum_a pi(a) ln(pi(a) / pi_ref(a))."""
    kl = 0.0
    for steps in ANSWERS.values():
        logp = sum(log_softmax(policy[c])[CHOICES[c].index(t)] for c, t in steps)
        logp_ref = sum(log_softmax(reference[c])[CHOICES[c].index(t)] for c, t in steps)
        kl += np.exp(logp) * (logp - logp_ref)
    return float(kl)


def _moved(p_eos_after_5: float) -> dict:
    policy = two_step_policy()
    policy["5"] = np.log([p_eos_after_5, 1.0 - p_eos_after_5])
    return policy


@checked(p_eos_after_5=in_range(0.0, 1.0, low_open=True, high_open=True))
def sequence_kl_gradients(p_eos_after_5: float = 0.3) -> dict:
    """The exact gradients, in every logit of the two-step toy (``PARAMETERS``), of the answers' KL and
    of each per-token penalty of ``PER_TOKEN`` (see the module's docstring), for pi = the toy with only
    the context after "5" moved, to P(EOS | 5) = ``p_eos_after_5`` in (0, 1), and pi_ref = the toy
    (P(EOS | 5) = 0.8). Returns ``kl`` (the answers' KL), ``kl_after_5`` (the KL of the context after
    "5" alone), ``gradient`` (grad KL, a vector over ``PARAMETERS``), ``per_token`` (each penalty's
    gradient), ``missed`` (each penalty's |g - grad KL| / |grad KL|; 0 when pi = pi_ref) and ``slices`` (each context's
    entries of the vectors)."""
    policy, reference = _moved(p_eos_after_5), two_step_policy()
    where = _slices()
    n = len(PARAMETERS)
    exact = np.zeros(n)
    per = {name: np.zeros(n) for name in PER_TOKEN}
    for steps in ANSWERS.values():
        x, scores, prob = [], [], 1.0
        for context, token in steps:
            k = CHOICES[context].index(token)
            pi = softmax(policy[context])
            prob *= pi[k]
            x.append(log_softmax(policy[context])[k] - log_softmax(reference[context])[k])
            s = np.zeros(n)
            s[where[context]] = np.eye(len(pi))[k] - pi
            scores.append(s)
        x, scores = np.array(x), np.array(scores)                    # (T,), (T, n)
        exact += prob * x.sum() * scores.sum(axis=0)
        per["k2_loss"] += prob * (x[:, None] * scores).sum(axis=0)
        per["k3_loss"] += prob * ((1 - np.exp(-x))[:, None] * scores).sum(axis=0)
        per["k1_loss"] += prob * scores.sum(axis=0)
    per["k3_corrected"] = per["k2_loss"].copy()
    per["k1_reward"] = exact.copy()
    norm = np.linalg.norm(exact)
    kl_5 = float(softmax(policy["5"]) @ (log_softmax(policy["5"]) - log_softmax(reference["5"])))
    return {"kl": answer_kl(policy, reference), "kl_after_5": kl_5, "gradient": exact, "per_token": per,
            "missed": {name: float(np.linalg.norm(g - exact) / norm) if norm > 0 else 0.0 for name, g in per.items()},
            "slices": where, "p_eos_after_5": p_eos_after_5, "p_eos_after_5_ref": P_EOS_AFTER_5}
