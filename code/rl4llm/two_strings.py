"""The "5" vs "05" toy under training: what SFT and RL do to the two correct strings (chapter 5).

Only the first step is trained: its logits z are the parameters, pi = softmax(z). The later
conditionals of the two-token extension (chapter 3) stay fixed, so

    P("5")  = pi(5) P(EOS | 5)                 = 0.8 pi(5),
    P("05") = pi(0) P(5 | 0) P(EOS | 05)       = 0.2 pi(0).

Every other string of one or two tokens is wrong (the verifier says so, see the tests), so the
expected reward of the first token y is r(y) = P(rest of a correct string | y): 0.8 for "5",
0.2 for "0", 0 for the others.
"""
from __future__ import annotations

import numpy as np

from ._checks import finite_real, integer_at_least, logits_array
from .distributions import sequence_probability, softmax
from .gradients import policy_gradient_step, sft_step
from .toy import CORRECT, LOGITS, PROMPT, VOCAB, two_token_paths
from .verifier import addition_reward


def _first_step_logits(logits) -> np.ndarray:
    z = logits_array(logits)
    if z.shape != (len(VOCAB),):
        raise ValueError(f"logits must be a vector of {len(VOCAB)} first-step logits (one per VOCAB token), "
                         f"got shape {z.shape}")
    return z


#: For each correct string: (index of its first token, product of its later, fixed conditionals).
_FIRST_AND_TAIL = {text: (VOCAB.index(text[0]), sequence_probability(steps[1:]))
                   for text, steps in two_token_paths().items()}


def string_probabilities(logits=LOGITS) -> dict[str, float]:
    """{"5": P("5"), "05": P("05")} when the first step has these logits (chapters 3, 5).

    Each is the product of its conditionals: pi(first token) = softmax(logits)[first] times the
    fixed later factors (0.8 for "5"; 0.2 x 1.0 for "05").
    """
    pi = softmax(_first_step_logits(logits))
    return {text: float(pi[first] * tail) for text, (first, tail) in _FIRST_AND_TAIL.items()}


def first_token_rewards(prompt: str = PROMPT) -> np.ndarray:
    """r(y) = sum over correct strings s starting with y of P(s | y): the verifier's expected score
    of each first token, the rest of the string drawn from the fixed conditionals (chapter 5).

    Each string's score comes from ``addition_reward(prompt, s)``; on the toy, r = (0.2, 0, 0.8, 0, 0).
    """
    rewards = np.zeros(len(VOCAB))
    for text, (first, tail) in _FIRST_AND_TAIL.items():
        rewards[first] += addition_reward(prompt, text) * tail
    return rewards


def training_curves(lr: float, steps: int, logits=LOGITS) -> dict[str, np.ndarray]:
    """P("5") and P("05") after 0, 1, ..., ``steps`` exact updates of the first-step logits (chapter 5).

    - ``"sft"``: descent on -ln pi(5), the label "5": z <- z - lr (pi - onehot(5));
    - ``"rl"``: ascent on the verifier's expected reward J = sum_y pi(y) r(y) with
      r = ``first_token_rewards()``: z <- z + lr pi (r - J).

    Returns {"step", "sft_5", "sft_05", "rl_5", "rl_05"}, each an array of length steps + 1.
    """
    lr = finite_real(lr, "lr")
    steps = integer_at_least(steps, "steps", 0)
    rewards = first_token_rewards()
    z_sft = z_rl = _first_step_logits(logits)
    curves = {key: np.zeros(steps + 1) for key in ("sft_5", "sft_05", "rl_5", "rl_05")}
    for t in range(steps + 1):
        if t > 0:
            z_sft, z_rl = sft_step(z_sft, CORRECT, lr), policy_gradient_step(z_rl, rewards, lr)
        for name, z in (("sft", z_sft), ("rl", z_rl)):
            probs = string_probabilities(z)
            curves[f"{name}_5"][t], curves[f"{name}_05"][t] = probs["5"], probs["05"]
    curves["step"] = np.arange(steps + 1)
    return curves
