"""The "5" vs "05" toy's formulas: the two-step policy, and what SFT and RL do to it (chapters 3, 5).

Chapter 3's extension of the toy is a policy that writes at most two tokens; its tree (``CHOICES``,
``ANSWERS``) and logits are defined once in :mod:`rl4llm.toy.two_step`. Three contexts choose
their next token, each with a softmax over its own logits (chapter 13 uses the same tree):

    context ""  (the prompt)  chooses among (0, 4, 5, 6, 15):  pi = softmax(z), (0.1, 0.4, 0.2, 0.2, 0.1)
    context "5"               chooses among (EOS, 0):          P(EOS | 5) = 0.8
    context "0"               chooses among (5, EOS):          P(5 | 0)   = 0.2

Every other context stops surely (after "05", "50", "4", "6" or "15" comes EOS, with probability 1).
So there are seven answers, "0", "4", "5", "6", "15", "05", "50"; the verifier accepts "5" and "05":

    P("5")  = pi(5) P(EOS | 5)                 = 0.2 x 0.8       = 0.16,
    P("05") = pi(0) P(5 | 0) P(EOS | 05)       = 0.1 x 0.2 x 1.0 = 0.02.

A *policy* below is a dict {context: logits} over the three choosing contexts. Every function also
accepts a vector of the first step's five logits instead; the later steps then keep the toy's 0.8
and 0.2. Chapter 5 trains every logit of the policy, by SFT on the label "5" and by RL on the
verifier's expected reward.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from .._checks import at_least, checked, finite_real, in_range, logits_array, one_of
from .distributions import sequence_probability, softmax
from ..toy.five_token import CORRECT, EOS, LOGITS, P_5_AFTER_0, P_EOS_AFTER_05, P_EOS_AFTER_5, PROMPT, VOCAB
from ..toy.two_step import ANSWERS, CHOICES, two_step_logits
from ..toy.verifier import addition_reward


def two_token_paths() -> dict[str, list[float]]:
    """The per-step conditionals of the two correct strings of the extended toy (chapter 3).

    ``"5"``  = pi(5) x P(EOS | 5)               = 0.2 x 0.8       = 0.16
    ``"05"`` = pi(0) x P(5 | 0) x P(EOS | 05)   = 0.1 x 0.2 x 1.0 = 0.02
    """
    pi = softmax(LOGITS)
    return {
        "5": [float(pi[CORRECT]), P_EOS_AFTER_5],
        "05": [float(pi[VOCAB.index("0")]), P_5_AFTER_0, P_EOS_AFTER_05],
    }


def _first_step_logits(logits, name: str = "logits") -> np.ndarray:
    """Rule: one first-step logit per VOCAB token."""
    first = logits_array(logits, name)
    if first.shape != (len(VOCAB),):
        raise ValueError(f"{name} must be a vector of {len(VOCAB)} first-step logits (one per VOCAB token), "
                         f"got shape {first.shape}")
    return first


@checked(logits=_first_step_logits)
def two_step_policy(logits=LOGITS) -> dict[str, np.ndarray]:
    """The two-step policy of chapter 3: first-step ``logits`` (the toy's by default), then
    P(EOS | 5) = 0.8 and P(5 | 0) = 0.2, i.e. logits ln(0.8, 0.2) after "5" and ln(0.2, 0.8) after "0".
    """
    return two_step_logits() | {"": logits.copy()}


def _policy(logits, name: str = "logits") -> dict[str, np.ndarray]:
    """Rule: a policy dict (one logit vector per context of CHOICES), copied, or a first-step logit vector,
    made its two-step policy."""
    if not isinstance(logits, dict):
        return two_step_policy.unchecked(_first_step_logits(logits, name))
    if set(logits) != set(CHOICES):
        raise ValueError(f"{name} must be a dict with one logit vector per context {sorted(CHOICES)}, "
                         f"got keys {sorted(logits)!r}")
    policy = {}
    for context, tokens in CHOICES.items():
        z = logits_array(logits[context], f"{name}[{context!r}]")
        if z.shape != (len(tokens),):
            raise ValueError(f"{name}[{context!r}] must hold {len(tokens)} logits, one per token of "
                             f"{tokens}, got shape {z.shape}")
        policy[context] = z.copy()
    return policy


@checked(logits=_policy)
def answer_probabilities(logits=LOGITS) -> dict[str, float]:
    """P(answer) for each of the seven answers: the product of its conditionals (chapter 3).

    P(a) = prod over the choices (c, t) that write a of softmax(logits[c])[index of t]; the seven
    probabilities sum to 1.
    """
    pis = {context: softmax(z) for context, z in logits.items()}
    return {answer: sequence_probability([pis[c][CHOICES[c].index(t)] for c, t in choices])
            for answer, choices in ANSWERS.items()}


def string_probabilities(logits=LOGITS) -> dict[str, float]:
    """{"5": P("5"), "05": P("05")}, the two correct answers of the two-step policy (chapters 3, 5).

    P("5") = pi(5) P(EOS | 5) and P("05") = pi(0) P(5 | 0); at the toy, 0.16 and 0.02.
    """
    probs = answer_probabilities(logits)
    return {"5": probs["5"], "05": probs["05"]}


def answer_rewards(prompt: str = PROMPT) -> dict[str, float]:
    """The verifier's score ``addition_reward(prompt, answer)`` of each of the seven answers (chapter 5)."""
    return dict(_rewards(prompt))


def _rewards(prompt) -> dict[str, float]:
    """``answer_rewards``, computed once per prompt string (the training loop asks at every
    step). The dict is shared: read only."""
    if not isinstance(prompt, str):        # unhashable or not text: the verifier raises ValueError
        return {answer: addition_reward(prompt, answer + EOS) for answer in ANSWERS}
    return _rewards_of_text(prompt)


@lru_cache(maxsize=64)
def _rewards_of_text(prompt: str) -> dict[str, float]:
    return {answer: addition_reward(prompt, answer + EOS) for answer in ANSWERS}


def expected_verifier_reward(logits=LOGITS, prompt: str = PROMPT) -> float:
    """J = sum over answers a of P(a) r(a): the probability that the policy's answer is correct (chapter 5).

    At the toy, J = P("5") + P("05") = 0.16 + 0.02 = 0.18.
    """
    probs, rewards = answer_probabilities(logits), answer_rewards(prompt)
    return float(sum(probs[a] * rewards[a] for a in ANSWERS))


@checked(logits=_policy)
def continuation_values(logits=LOGITS, prompt: str = PROMPT) -> dict[str, np.ndarray]:
    """Q_c(t): the expected verifier reward once context c has chosen token t (chapter 5).

    A token that ends the answer is worth the answer's reward; a token that leads to another choosing
    context c' is worth V_c' = sum_t' pi_c'(t') Q_c'(t'). At the toy, Q_"" = (0.2, 0, 0.8, 0, 0): a
    first token 0 becomes "05" one time in five, a first token 5 stays "5" four times in five.
    """
    rewards = _rewards(prompt)
    q = {}

    def values(context: str) -> np.ndarray:
        out = np.empty(len(CHOICES[context]))
        for i, token in enumerate(CHOICES[context]):
            written = context if token == EOS else context + token
            out[i] = (softmax(logits[written]) @ values(written) if token != EOS and written in CHOICES
                      else rewards[written])
        q[context] = out
        return out

    values("")
    return q


def first_token_rewards(prompt: str = PROMPT, logits=LOGITS) -> np.ndarray:
    """r(y) = Q_""(y): the verifier's expected score of each first token y, the rest of the answer
    drawn from the policy's later steps (chapter 5). At the toy, r = (0.2, 0, 0.8, 0, 0).
    """
    return continuation_values(logits, prompt)[""]


@checked(logits=_policy)
def two_step_policy_gradient(logits=LOGITS, prompt: str = PROMPT) -> dict:
    """The exact gradient of J in every logit of the two-step policy (chapter 5;
    chapter 7 derives the one-step form).

    At each choosing context c, with V_c = sum_t pi_c(t) Q_c(t):

        dJ/dz_c = P(reach c) pi_c (Q_c - V_c),

    the one-step pi (r - J) of chapter 7 applied where the choice is made, weighted by
    how often the policy gets there: P(reach "") = 1, P(reach "5") = pi(5),
    P(reach "0") = pi(0). Exact, from the seven answers' probabilities: nothing is
    sampled.
    """
    q = continuation_values.unchecked(logits, prompt)
    pi = softmax(logits[""])
    reach = {"": 1.0, "5": pi[VOCAB.index("5")], "0": pi[VOCAB.index("0")]}
    grads = {}
    for context, z in logits.items():
        pi_c = softmax(z)
        grads[context] = reach[context] * pi_c * (q[context] - pi_c @ q[context])
    return grads


_label = one_of(tuple(ANSWERS), " (the answers)")


@checked(logits=_policy, label=_label)
def two_step_sft_loss(logits=LOGITS, label: str = "5") -> float:
    """The teacher-forced SFT loss of ``label``: -sum over its choices (c, t) of ln pi_c(t) (chapter 5).

    For "5": -ln pi(5) - ln P(EOS | 5); it equals -ln P(label), and at the toy it is -ln 0.16.
    """
    return float(-sum(np.log(softmax(logits[c])[CHOICES[c].index(t)]) for c, t in ANSWERS[label]))


@checked(logits=_policy, label=_label)
def two_step_sft_gradient(logits=LOGITS, label: str = "5") -> dict[str, np.ndarray]:
    """The gradient of ``two_step_sft_loss`` in every logit (chapters 4, 5).

    pi_c - onehot(t) at each context c on the label's path; zero at a context the label never visits
    (for "5", the context "0": SFT on "5" leaves P(5 | 0) where it is).
    """
    grads = {context: np.zeros_like(z) for context, z in logits.items()}
    for context, token in ANSWERS[label]:
        grads[context] = softmax(logits[context]) - np.eye(len(CHOICES[context]))[CHOICES[context].index(token)]
    return grads


def _watch(policy: dict[str, np.ndarray]) -> dict[str, float]:
    """What ``training_curves`` records of a policy: the products of chapter 3, written out."""
    pi, after_5, after_0 = softmax(policy[""]), softmax(policy["5"]), softmax(policy["0"])
    eos_after_5, five_after_0 = after_5[CHOICES["5"].index(EOS)], after_0[CHOICES["0"].index("5")]
    pi0, pi5 = pi[VOCAB.index("0")], pi[CORRECT]
    return {"5": float(pi5 * eos_after_5), "05": float(pi0 * five_after_0), "pi0": float(pi0),
            "pi5": float(pi5), "eos_after_5": float(eos_after_5), "5_after_0": float(five_after_0)}


@checked(lr=finite_real, steps=at_least(0), logits=_policy)
def training_curves(lr: float, steps: int, logits=LOGITS) -> dict[str, np.ndarray]:
    """Exact SFT and RL updates of every logit of the two-step policy, from ``logits`` (chapter 5).

    - ``"sft"``: gradient descent on the teacher-forced loss of the label "5",
      -ln pi(5) - ln P(EOS | 5): z_c <- z_c - lr (pi_c - onehot) at "" and "5" (``two_step_sft_gradient``);
    - ``"rl"``: gradient ascent on the verifier's expected reward J = P("5") + P("05"):
      z_c <- z_c + lr P(reach c) pi_c (Q_c - V_c) at all three contexts (``two_step_policy_gradient``).

    Both are exact (no sampling). Returns arrays of length steps + 1 (entry t: after t updates):
    ``"step"``, and for each name in ("sft", "rl"): ``name_5`` = P("5"), ``name_05`` = P("05"),
    ``name_pi0`` = pi(0), ``name_pi5`` = pi(5), ``name_eos_after_5`` = P(EOS | 5),
    ``name_5_after_0`` = P(5 | 0).
    """
    policies = {"sft": logits, "rl": logits}
    watched = ("5", "05", "pi0", "pi5", "eos_after_5", "5_after_0")
    curves = {f"{name}_{key}": np.zeros(steps + 1) for name in policies for key in watched}
    for t in range(steps + 1):
        if t > 0:
            sft = two_step_sft_gradient.unchecked(policies["sft"], "5")
            rl = two_step_policy_gradient.unchecked(policies["rl"], PROMPT)
            policies["sft"] = {c: z - lr * sft[c] for c, z in policies["sft"].items()}
            policies["rl"] = {c: z + lr * rl[c] for c, z in policies["rl"].items()}
        for name, policy in policies.items():
            for key, value in _watch(policy).items():
                curves[f"{name}_{key}"][t] = value
    curves["step"] = np.arange(steps + 1)
    return curves


@checked(pi_0=in_range(0.0, 1.0), p_5_after_0=in_range(0.0, 1.0))
def two_spellings(pi_0: float = 0.1, p_5_after_0: float = P_5_AFTER_0) -> dict[str, float]:
    """P("5"), P("05") and P(correct) when the first step gives "0" probability ``pi_0`` (chapter 3's slider).

    Only the logit of 0 moves, so the other first tokens keep their ratios 4 : 2 : 2 : 1 and share
    1 - pi_0: pi(5) = (1 - pi_0) x 2/9. Then, by the product rule,
    P("5") = pi(5) x P(EOS | 5) = pi(5) x 0.8 and P("05") = pi_0 x P(5 | 0) x 1. Returns
    {"pi_5", "5", "05", "correct"} with correct = P("5") + P("05").
    """
    weights = np.exp(LOGITS)
    pi_5 = (1.0 - pi_0) * weights[CORRECT] / (weights.sum() - weights[VOCAB.index("0")])
    p5 = sequence_probability([pi_5, P_EOS_AFTER_5])
    p05 = sequence_probability([pi_0, p_5_after_0, 1.0])
    return {"pi_5": float(pi_5), "5": p5, "05": p05, "correct": p5 + p05}
