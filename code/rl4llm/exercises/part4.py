"""Checked exercises of Part IV (chapters 15-16: GRPO on a real model, TRL) and of the summary (chapter 21).

- Chapter 15: how many seeds a comparison needs (by hand); the safe verifier ``addition_reward``.
- Chapter 16: ``bnpo`` on two processes (by hand); the all-reduced loss ``data_parallel_loss``.
- Chapter 21: the k3 penalty of one token (by hand); when TRL computes the old log-probs (by hand); the
  exact-gradient learner ``run_exact_gradient``.

Every check here is plain arithmetic on small seeded inputs, so it prints the same verdict on every
CPU. The verifier's cases are strings only, each harmless even if a student's function hands it to
``eval`` (no names that do anything, no calls, no attributes, no large powers); the check itself
never evaluates any text: where it imitates a student who used ``eval``, it parses with ``ast`` and
computes sums and products of number literals only.
"""
from __future__ import annotations

import ast
import math
import re

import numpy as np

from ..math.distributions import softmax
from ..math.gradients import policy_gradient
from ..math.loss_types import loss_types_with
from ..toy.five_token import CORRECT, LOGITS
from ..toy.verifier import ASCII_WHITESPACE, EOS_MARKER, addition_reward
from ._core import (EXPERIMENT_RETRY, HELPERS, NOT_YET, Call, FunctionExercise, NumericExercise, imported_on_call,
                    toy_and_random)

run_exact_gradient = imported_on_call("studies.method_runs", "run_exact_gradient")   # rl4llm.studies.method_runs imports torch


# ============================================================================ chapter 15
# ---------------------------------------------------------------- ex-ch15-seeds (by hand)
#: The spread over seeds and the difference to detect in the by-hand question.
SEEDS_S, SEEDS_DIFFERENCE = 0.04, 0.03
_SEEDS_BOUND = 8 * SEEDS_S ** 2 / SEEDS_DIFFERENCE ** 2          # n > 2 t^2 s^2 / d^2 with t = 2


def seeds_by_hand(s: float, difference: float, t: float = 2.0, settings: int = 2) -> int:
    """The smallest whole n with t s sqrt(settings / n) < difference: the by-hand count of seeds per
    setting (``settings=2``: the standard error of a difference of two means; 1: of one mean)."""
    return math.floor(settings * t ** 2 * s ** 2 / difference ** 2) + 1


def _seeds_mistakes() -> tuple[tuple[float, str], ...]:
    s, d = SEEDS_S, SEEDS_DIFFERENCE
    return (
        (_SEEDS_BOUND, "that is the bound 8 s^2 / d^2 itself; a number of seeds is a whole number, the "
                       "smallest one above the bound"),
        (seeds_by_hand(s, d, settings=1), "the factor 2 under the square root is missing: the noise floor is "
                                          "for a DIFFERENCE of two means, each with variance s^2 / n, so its "
                                          "standard error is s sqrt(2 / n)"),
        (seeds_by_hand(s, d, t=1.0), "t is missing: one standard error is not a noise floor; the 5% test "
                                     "needs about two (t close to 2)"),
    )


# ---------------------------------------------------------------- addition_reward (coding)
_ARABIC_INDIC = str.maketrans("0123456789", "٠١٢٣٤٥٦٧٨٩")


def _prompt(a: int, b: int) -> str:
    return f"{a:02d}+{b:02d}="                  # chapter 15's zero-padded prompts


def _near_misses():
    """(name, completion(a, b), operand range) for each case: right answers written several ways,
    near misses, and garbage. Every string is harmless if passed to eval."""
    def inner_space(s):
        return f"{s[:1]} {s[1:]}"
    return (
        ("right, a one-digit operand", lambda a, b: f"{a + b}{EOS_MARKER}", (0, 10)),
        ("right, then padding", lambda a, b: f"{a + b}{EOS_MARKER}<pad>", (10, 100)),
        ("right, then more text", lambda a, b: f"{a + b}{EOS_MARKER}1", (10, 100)),
        ("right, no end marker", lambda a, b: f"{a + b}", (10, 100)),
        ("leading zero", lambda a, b: f"0{a + b}{EOS_MARKER}", (10, 100)),
        ("surrounding spaces", lambda a, b: f" {a + b} {EOS_MARKER}", (10, 100)),
        ("off by one", lambda a, b: f"{a + b + 1}{EOS_MARKER}", (10, 100)),
        ("a sign", lambda a, b: f"+{a + b}{EOS_MARKER}", (10, 100)),
        ("an inner space", lambda a, b: f"{inner_space(str(a + b))}{EOS_MARKER}", (10, 100)),
        ("an underscore", lambda a, b: f"{str(a + b)[:1]}_{str(a + b)[1:]}{EOS_MARKER}", (10, 100)),
        ("non-ASCII digits", lambda a, b: f"{str(a + b).translate(_ARABIC_INDIC)}{EOS_MARKER}", (10, 100)),
        ("a decimal point", lambda a, b: f"{a + b}.0{EOS_MARKER}", (10, 100)),
        ("an exponent", lambda a, b: f"{a + b}e0{EOS_MARKER}", (10, 100)),
        ("the sum written out", lambda a, b: f"{a}+{b}{EOS_MARKER}", (10, 100)),
        ("letters", lambda a, b: f"abc{EOS_MARKER}", (10, 100)),
        ("nothing", lambda a, b: EOS_MARKER, (10, 100)),
        ("an empty string", lambda a, b: "", (10, 100)),
        ("non-ASCII whitespace", lambda a, b: f"\u00a0{a + b}{EOS_MARKER}", (10, 100)),
    )


def reward_cases() -> list[tuple[str, str]]:
    """The toy ("2+3=", "5<eos>"), then one case of each kind with seeded random operands."""
    rng = np.random.default_rng(0)
    cases = [("2+3=", f"5{EOS_MARKER}")]
    for _, completion, (low, high) in _near_misses():
        a, b = (int(x) for x in rng.integers(low, high, size=2))
        cases.append((_prompt(a, b), completion(a, b)))
    return cases


def _answer(completion: str) -> str:
    return completion.split(EOS_MARKER, 1)[0]


def _prompt_sum(prompt: str) -> int:
    a, b = re.fullmatch(r"([0-9]+)\+([0-9]+)=", prompt).groups()
    return int(a) + int(b)


def _arithmetic(text: str):
    """The value a student's eval-based verifier would get when text is numbers joined by + - *,
    computed from the parse tree by ``ast`` (nothing is ever run); None where that verifier would
    raise or get something else (a student's try/except turns that into 0)."""
    try:
        tree = ast.parse(text.strip(" \t"), mode="eval")
    except (SyntaxError, ValueError):
        return None

    def value(node):
        if isinstance(node, ast.Constant) and type(node.value) in (int, float):
            return node.value
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.UAdd, ast.USub)):
            v = value(node.operand)
            return v if isinstance(node.op, ast.UAdd) else -v
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult)):
            left, right = value(node.left), value(node.right)
            return {ast.Add: left + right, ast.Sub: left - right, ast.Mult: left * right}[type(node.op)]
        raise LookupError
    try:
        return value(tree.body)
    except LookupError:
        return None


def _reads_with(read, prompt_sum=_prompt_sum):
    """A verifier that cuts at the first EOS, reads the answer with ``read`` (None: unreadable) and
    compares it with ``prompt_sum(prompt)`` (None: unreadable), returning 0.0 on anything unreadable."""
    def reward(prompt, completion):
        target, got = prompt_sum(prompt), read(_answer(completion))
        return float(target is not None and got is not None and got == target)
    return reward


def _int_or_none(text):
    try:
        return int(text)
    except ValueError:
        return None


def _float_or_none(text):
    try:
        return float(text)
    except ValueError:
        return None


def _ascii_digits(text, chars=ASCII_WHITESPACE):
    """The answer's value when, stripped of ``chars`` (None: any Unicode whitespace, as str.strip()
    strips; "": nothing), it is ASCII digits; else None."""
    text = text.strip(chars)
    return int(text) if re.fullmatch(r"[0-9]+", text) else None


def _eos_not_cut(prompt, completion):
    """Reads the whole completion with every marker removed: '76<eos><pad>' becomes '76<pad>'."""
    text = completion.replace(EOS_MARKER, "").strip(ASCII_WHITESPACE)
    return float(bool(re.fullmatch(r"[0-9]+", text)) and int(text) == _prompt_sum(prompt))


def _eos_kept(prompt, completion):
    """Demands digits only over the whole completion, end marker included."""
    text = completion.strip(ASCII_WHITESPACE)
    return float(bool(re.fullmatch(r"[0-9]+", text)) and int(text) == _prompt_sum(prompt))


def _strings_compared(prompt, completion):
    """Compares digit strings without removing leading zeros: '076' is not '76'."""
    text = _answer(completion).strip(ASCII_WHITESPACE)
    return float(bool(re.fullmatch(r"[0-9]+", text)) and text == str(_prompt_sum(prompt)))


def _unicode_digits(text):
    text = text.strip(ASCII_WHITESPACE)
    return int(text) if text.isdigit() else None


_EVAL = ("it evaluates text as code (eval): a model's output must never be run, and eval accepts '30+46', "
         "'76.0' and '7_6' as the answer 76; read ASCII digits with a regular expression instead")


class _VerifierExercise(FunctionExercise):
    """``addition_reward``: a verifier that raises on some completion gets its own message."""

    def crash_message(self, call, kind: str, message: str) -> str:
        if kind == "NotImplementedError":      # the starter's stub: the generic message says so
            return super().crash_message(call, kind, message)
        prompt, completion = call.args
        said = message if len(message) <= 80 else message[:77] + "..."
        return (f"{NOT_YET} your verifier raised {kind} ({said}) on the prompt {prompt!r} and the completion "
                f"{completion!r}. A reward function must return 0.0 for any text it cannot read, never raise: "
                "one crash stops a training run.")


_ADDITION_REWARD = _VerifierExercise(15, addition_reward, reward_cases, (
    (_EVAL, _reads_with(_arithmetic)),
    (_EVAL + " (and eval of the prompt rejects zero-padded operands such as '07')",
     _reads_with(_arithmetic, lambda prompt: _arithmetic(prompt[:-1]))),
    ("int() accepts more than digits: '+76', '7_6' and non-ASCII digits such as '٧٦' all read as 76; "
     "check that the answer is one or more ASCII digits first (re.fullmatch('[0-9]+', answer))",
     _reads_with(_int_or_none)),
    ("int() of the prompt's eval is the source text's verifier: eval rejects zero-padded operands such as "
     "'07', and int() accepts '+76', '7_6' and '٧٦'; parse the prompt with a regular expression and check "
     "that the answer is ASCII digits", _reads_with(_int_or_none, lambda prompt: _arithmetic(prompt[:-1]))),
    ("float() accepts '76.0', '76e0', '+76', '7_6' and non-ASCII digits: the answer must be ASCII digits "
     "only (re.fullmatch('[0-9]+', answer))", _reads_with(_float_or_none)),
    ("str.isdigit() (like \\d in a regular expression) accepts any Unicode digit, such as '٧٦'; use "
     "[0-9]+, which matches ASCII digits only", _reads_with(_unicode_digits)),
    ("the completion ends at its FIRST end-of-sequence marker: '76<eos><pad>' (how chapter 15's "
     "tokenizer decodes a finished row) and '76<eos>1' both answer 76; read "
     f"completion.split({EOS_MARKER!r})[0]", _eos_not_cut),
    (f"the end-of-sequence marker {EOS_MARKER!r} is not part of the answer: read the completion up to "
     "its first marker, then check the digits", _eos_kept),
    ("surrounding whitespace is ignored: ' 76 ' answers 76 (strip the answer before checking its "
     "digits); inner spaces are not", _reads_with(lambda text: _ascii_digits(text, chars=""))),
    ("str.strip() with no argument strips Unicode whitespace too, so '\\u00a076' (a no-break space, then "
     "76) scores 1: strip ASCII whitespace only, answer.strip(' \\t\\n\\r\\f\\v')",
     _reads_with(lambda text: _ascii_digits(text, chars=None))),
    ("leading zeros count: '076' is 76 (compare values, or strip leading zeros before comparing "
     "strings)", _strings_compared),
))


# ============================================================================ chapter 16
# ---------------------------------------------------------------- ex-ch16-split (by hand)
#: The by-hand batch: two prompts, G = 2 completions each (one right, one wrong: advantages +1, -1),
#: of 1, 1, 2 and 4 tokens; rows 1-2 on process 0, rows 3-4 on process 1; first inner step (rho = 1),
#: beta = 0, so every token of row i has the per-token loss -A_i.
SPLIT_LENGTHS, SPLIT_ADVANTAGES = (1, 1, 2, 4), (1.0, -1.0, 1.0, -1.0)


def split_batch(lengths=SPLIT_LENGTHS, advantages=SPLIT_ADVANTAGES):
    """(logp, old_logp, advantages, mask) of the by-hand batch, float64, with logp = old_logp."""
    import torch
    T = max(lengths)
    mask = torch.tensor([[1.0 if t < n else 0.0 for t in range(T)] for n in lengths], dtype=torch.float64)
    logp = torch.where(mask > 0, -0.5, 0.0).to(torch.float64)
    return logp, logp.clone(), torch.tensor(advantages, dtype=torch.float64), mask


def split_loss(loss_type: str, num_processes: int, *, combine=np.mean) -> float:
    """The by-hand batch's loss under ``loss_type`` ("bnpo" or "grpo") on ``num_processes`` processes,
    each holding a contiguous block of rows, with the per-process losses combined by ``combine``
    (the all-reduce's mean). With rho = 1 every token of row i contributes -A_i, so this is numpy
    arithmetic; tests/test_exercises_part4.py checks it against ``data_parallel_loss``, whose torch
    the chapters before 13 never load."""
    lengths, advantages = np.array(SPLIT_LENGTHS, float), np.array(SPLIT_ADVANTAGES)
    losses = []
    for rows in np.split(np.arange(len(lengths)), num_processes):
        token_losses = -advantages[rows] * lengths[rows]              # each row's summed token losses
        losses.append(token_losses.sum() / lengths[rows].sum() if loss_type == "bnpo"
                      else np.mean(token_losses / lengths[rows]))
    return float(combine(losses))


def _split_mistakes() -> tuple[tuple[float, str], ...]:
    bnpo = split_loss("bnpo", 2)
    return (
        (split_loss("bnpo", 1), "that is the one-process token mean S / N (it is also dapo's loss on two "
                                 "processes); under bnpo each process divides by its OWN token count, "
                                 "and the all-reduce averages the two"),
        (split_loss("bnpo", 2, combine=np.sum),
         "the all-reduce AVERAGES the processes' gradients: (L_0 + L_1) / 2, not their sum (a factor of P)"),
        (split_loss("grpo", 2), "that is the grpo (per-sequence) loss: each row's own token mean, then "
                                 "the mean over rows; bnpo averages tokens"),
        (-bnpo, "the sign is flipped: the loss is the NEGATED objective, so each token contributes -rho A"),
    )


# ---------------------------------------------------------------- data_parallel_loss (coding)
#: Every registered loss type of PPO's clip (chapter 16's; CISPO's objective is chapter 18's), the two that a
#: split can tell apart (token means) first.
_DP_CASE_TYPES = ("bnpo", "dapo") + tuple(t for t in loss_types_with("clip") if t not in ("bnpo", "dapo"))


def _dp_batch(rng, B=8, T=5):
    """(logp, old_logp, advantages, mask, ref_logp): B rows of random lengths, ratios away from 1 so
    that the clip binds on some tokens, and a reference policy for the KL term."""
    import torch
    lengths = rng.integers(1, T + 1, size=B)
    mask = (np.arange(T)[None, :] < lengths[:, None]).astype(float)
    logp = rng.normal(-1.0, 0.3, size=(B, T)) * mask
    old = (logp + rng.normal(0.0, 0.3, size=(B, T))) * mask
    ref = (logp + rng.normal(0.0, 0.3, size=(B, T))) * mask
    adv = rng.normal(size=B)
    return tuple(torch.tensor(x, dtype=torch.float64) for x in (logp, old, adv, mask, ref))


def _dp_cases():
    """The toy (the by-hand batch under bnpo on 2 processes), then every loss type on 2 and on 4
    processes, each on its own seeded random batch (dr_grpo's max_completion_length above the longest
    row), then the clip's bounds and the KL penalty varied."""
    import torch
    rng = np.random.default_rng(0)
    cases = [Call(split_batch(), {"num_processes": 2, "loss_type": "bnpo", "max_completion_length": max(SPLIT_LENGTHS)})]
    for P in (2, 4):
        for loss_type in _DP_CASE_TYPES:
            *batch, _ = _dp_batch(rng)
            cases.append(Call(tuple(batch), {"num_processes": P, "loss_type": loss_type, "max_completion_length": 7}))
    for loss_type, settings in (("dapo", {"eps_low": 0.1, "eps_high": 0.3}),
                                ("bnpo", {"beta": 0.1}), ("grpo", {"eps_low": 0.25, "beta": 0.05})):
        *batch, ref = _dp_batch(rng)
        if "beta" in settings:
            settings = {**settings, "ref_logp": ref}
        cases.append(Call(tuple(batch), {"num_processes": 2, "loss_type": loss_type, **settings}))
    assert all(isinstance(x, torch.Tensor) for case in cases for x in case.args)
    return cases


def _dp_variant(logp, old_logp, advantages, mask, *, num_processes, loss_type="grpo", max_completion_length=None,
                eps_low=0.2, eps_high=None, beta=0.0, ref_logp=None, dapo_local=False, dapo_no_p=False,
                bnpo_whole=False, summed=False, grpo_tokens=False, token_sequences=False, settings_dropped=False):
    """data_parallel_loss with one of the typical mistakes switched on."""
    import torch

    from ..llm.data_parallel import shard_slices
    from ..llm.grpo import grpo_loss
    if settings_dropped:
        eps_low, eps_high, beta, ref_logp = 0.2, None, 0.0, None
    settings = {"eps_low": eps_low, "eps_high": eps_high, "beta": beta}
    if bnpo_whole and loss_type == "bnpo":
        return grpo_loss(logp, old_logp, advantages, mask, loss_type="bnpo", ref_logp=ref_logp, **settings)[0]
    n_total = mask.sum().clamp(min=1)
    losses = []
    for rows in shard_slices(mask.shape[0], num_processes):
        local_type = {"dapo": "bnpo", "grpo": "bnpo" if grpo_tokens else "grpo"}.get(loss_type, loss_type)
        if token_sequences and loss_type in ("bnpo", "dapo"):
            local_type = "grpo"
        local, _ = grpo_loss(logp[rows], old_logp[rows], advantages[rows], mask[rows], loss_type=local_type,
                             max_completion_length=max_completion_length,
                             ref_logp=None if ref_logp is None else ref_logp[rows], **settings)
        if loss_type == "dapo" and not (dapo_local or token_sequences):
            n_local = mask[rows].sum().clamp(min=1)
            local = local * n_local * (1 if dapo_no_p else num_processes) / n_total
        losses.append(local)
    stacked = torch.stack(losses)
    return stacked.sum() if summed else stacked.mean()


def _dp(**mistake):
    return lambda *args, **kwargs: _dp_variant(*args, **kwargs, **mistake)


_DATA_PARALLEL_LOSS = FunctionExercise(16, imported_on_call("llm.data_parallel", "data_parallel_loss"), _dp_cases, (
    ("dapo's normaliser is the token count N of the WHOLE batch (gathered from every process) over P, "
     "not the process's own count n_p: with n_p each process computes a local token mean, which is bnpo",
     _dp(dapo_local=True)),
    ("under bnpo each process divides by its OWN token count n_p and the all-reduce averages the "
     "processes: (1/P) sum_p S_p / n_p, not the whole batch's token mean S / N", _dp(bnpo_whole=True)),
    ("dapo's per-process loss is S_p / (N / P): dividing by the global count N without the factor P makes "
     "the average P times too small", _dp(dapo_no_p=True)),
    ("the all-reduce AVERAGES the processes' gradients: take the mean of the per-process losses, not "
     "their sum (a factor of P)", _dp(summed=True)),
    ("grpo averages each row over its own tokens first, then the rows (per sequence); a token mean over "
     "the process's rows is bnpo", _dp(grpo_tokens=True)),
    ("bnpo and dapo are token means (every token weighs the same, whatever its row's length); averaging "
     "each row over its own tokens first, then the rows, is grpo's per-sequence aggregation",
     _dp(token_sequences=True)),
    ("the settings are not passed on to grpo_loss: eps_low, eps_high, beta and ref_logp (each process's "
     "rows of it) change every process's loss", _dp(settings_dropped=True)),
), helpers=HELPERS + ("llm.grpo.grpo_loss",))


# ============================================================================ chapter 21 (the summary)
# ---------------------------------------------------------------- ex-ch21-k3 (by hand)
#: The by-hand question: pi_theta(5) after RL, against the reference (the toy before RL), pi_ref(5) = 0.2.
K3_PI_5 = 0.8


def k3_of_sampled_5(pi_5: float = K3_PI_5) -> float:
    """GRPO's k3 penalty on a sampled 5 (``k3_loss_gradient``'s value), with pi_theta the toy's pi
    moved to pi_theta(5) = ``pi_5`` (the other answers scaled together) and pi_ref the toy's pi."""
    from ..math.importance_sampling import with_correct_mass
    from ..llm.grpo_toys import k3_loss_gradient
    pi = with_correct_mass(softmax(LOGITS), CORRECT, pi_5)
    return k3_loss_gradient(np.log(pi), LOGITS, np.array([CORRECT]))["value"]


def _k3_mistakes() -> tuple[tuple[float, str], ...]:
    x = math.log(softmax(LOGITS)[CORRECT] / K3_PI_5)      # ln(pi_ref / pi_theta) of the sampled 5
    p_ref = float(softmax(LOGITS)[CORRECT])                # the other answers are scaled together, so
    kl = K3_PI_5 * math.log(K3_PI_5 / p_ref) + (1 - K3_PI_5) * math.log((1 - K3_PI_5) / (1 - p_ref))   # 0.6 ln 4
    return (
        (1 / math.exp(x) + x - 1, "the ratio is upside down: k3 uses pi_ref / pi_theta (here 0.2 / 0.8), "
                                  "not pi_theta / pi_ref"),
        (-x, "that is k1 = ln(pi_theta / pi_ref), the plain log-ratio; k3 = ratio - ln(ratio) - 1 with "
             "ratio = pi_ref / pi_theta"),
        (math.exp(x) + x - 1, "the log term's sign is flipped: k3 = ratio - ln(ratio) - 1, which is never "
                              "negative"),
        (math.exp(x) - math.log10(math.exp(x)) - 1, "that uses log10; the book's logs are natural (ln)"),
        (x, "that is ln(ratio) = ln(pi_ref / pi_theta) = ln 0.25, k3's log term alone (k1 with its sign "
            "flipped); k3 = ratio - ln(ratio) - 1 = 0.25 + 1.3863 - 1"),
        (math.exp(x) - x, "the '- 1' is missing: k3 = ratio - ln(ratio) - 1 = 0.25 + 1.3863 - 1"),
        (-x - 1, "the ratio term is missing: k3 = ratio - ln(ratio) - 1 = 0.25 + 1.3863 - 1, with ratio = "
                 "pi_ref / pi_theta = 0.25"),
        (round(math.exp(x) - x - 1, 2), "that is k3 rounded to two decimals; enter it to four decimals"),
        (kl, "that is KL(pi_theta || pi_ref) = 0.6 ln 4, the average of k3 over all the answers pi_theta "
             "samples; the question asks what the sampled 5 alone pays, k3 at the ratio 0.2 / 0.8"),
    )


# ---------------------------------------------------------------- ex-ch21-ahead (by hand)
#: The by-hand question's five TRL 1.16 GRPOConfig settings (vLLM off, every other field at its default), as
#: ``old_logps_recomputed``'s keyword arguments. (d) and (e) set ``num_iterations = 2`` and still compute none,
#: so counting the settings with ``num_iterations`` above 1 does not give the answer.
AHEAD_SETTINGS = {
    "a": {"gradient_accumulation_steps": 4},
    "b": {"gradient_accumulation_steps": 1, "num_iterations": 2},
    "c": {"gradient_accumulation_steps": 4, "steps_per_generation": 8},
    "d": {"gradient_accumulation_steps": 2, "num_iterations": 2, "steps_per_generation": 1},
    "e": {"gradient_accumulation_steps": 8, "num_iterations": 2, "steps_per_generation": 2},
}


def settings_recomputed(settings: dict = AHEAD_SETTINGS, vllm_correction: bool = False) -> dict[str, bool]:
    """For each setting, whether TRL 1.16 computes the old log-probs (``rl4llm.trl.knobs.old_logps_recomputed``)."""
    from ..trl.knobs import old_logps_recomputed      # rl4llm.trl.knobs imports torch
    return {name: old_logps_recomputed(**kwargs, vllm_correction=vllm_correction) for name, kwargs in settings.items()}


def settings_ahead_count() -> int:
    """How many of :data:`AHEAD_SETTINGS` have TRL compute the old log-probs, so that its clip can act."""
    return sum(settings_recomputed().values())


def _ahead_mistakes() -> tuple[tuple[float, str], ...]:
    answer = settings_ahead_count()
    rule = "the rule is gradient_accumulation_steps % (steps_per_generation x num_iterations) != 0"
    return (
        (answer + 1, "one setting too many: (a), (d) or (e). Neither gradient_accumulation_steps above 1 nor "
                     f"num_iterations = 2 decides it alone: {rule}. In (a) steps_per_generation defaults to "
                     "gradient_accumulation_steps, 4 % (4 x 1) = 0; in (d) 2 % (1 x 2) = 0 and in (e) 8 % (2 x 2) = 0: "
                     "all of a generated batch's passes fall inside one optimizer step, so the policy is never ahead "
                     "of the sampler"),
        (answer + 2, "two settings too many: did you count every setting that sets num_iterations = 2 or "
                     f"steps_per_generation? {rule}, and only (b) and (c) leave a remainder: 1 % (1 x 2) = 1 and "
                     "4 % (8 x 1) = 4; (d) and (e) give 2 % (1 x 2) = 0 and 8 % (2 x 2) = 0"),
        (answer - 1, "one setting too few: (b) and (c) both count. In (b) one batch is used twice, 1 % (1 x 2) = 1; "
                     "in (c) one batch feeds 8 micro-batches, two optimizer steps, 4 % 8 = 4: steps_per_generation "
                     "above gradient_accumulation_steps puts the policy ahead even with num_iterations = 1. (Is the "
                     "modulo the wrong way round? TRL computes gradient_accumulation_steps % (steps_per_generation x "
                     "num_iterations).)"),
        (len(AHEAD_SETTINGS), "that counts all five, as if vLLM's importance-sampling correction were on (then "
                              "every setting computes the old log-probs); vLLM is off here, so only the rule "
                              "gradient_accumulation_steps % (steps_per_generation x num_iterations) != 0 decides"),
        (0, f"none: {rule}, and (b) gives 1 % (1 x 2) = 1, (c) 4 % (8 x 1) = 4"),
    )


# ---------------------------------------------------------------- ex-ch21-knobs (experiment)
def _grpo_after_five(lr_factor: float = 2.0, K: int | None = None, seeds=range(32), step: int = 5) -> float:
    """GRPO's pi(5) after 5 steps on the toy, mean over seeds 0-31, with its learning rate times ``lr_factor`` (and
    ``K`` inner steps where given): the exercise's doubled lr. ``seeds`` and ``step`` make slips."""
    import inspect
    from ..studies.method_runs import run_grpo
    from ..studies.toy_grpo import run_over_seeds
    lr = lr_factor * inspect.signature(run_grpo).parameters["lr"].default
    runs = run_over_seeds(run_grpo, seeds, steps=max(step, 5), lr=lr, **({} if K is None else {"K": K}))
    return float(runs[:, step].mean())


def _knobs_mistakes() -> tuple[tuple[float, str], ...]:
    return (
        (_grpo_after_five(1.0), "that is GRPO at its default lr; the box asks it with lr doubled"),
        (_grpo_after_five(0.5), "that is GRPO with lr halved; the box asks it with lr doubled"),
        (_grpo_after_five(1.0, K=8), "that is K doubled (K = 8) at the default lr; the box asks lr doubled, K = 4"),
        (_grpo_after_five(1.0, K=2), "that is K = 2 at the default lr; the box asks lr doubled, K = 4"),
        (_grpo_after_five(seeds=[0]), "that is one run (seed 0); one run is one draw of luck: average the 32 seeds, "
                                      "run_over_seeds(run, range(32), ...)"),
        (_grpo_after_five(step=4), "that is column 4, pi(5) after 4 steps: column 0 is the start, so after 5 steps "
                                   "is column 5"),
        (_grpo_after_five(step=30), "that is pi(5) after 30 steps; the exercise reads it after 5 (steps=5, column 5)"),
        (_grpo_after_five() - _grpo_after_five(1.0), "that is the rise over the default lr's mean; the box asks the "
                                                     "mean itself at the doubled lr"),
    )


# ---------------------------------------------------------------- ex-ch21-samples (experiment)
def _after_five(variant: str, seeds=range(32), step: int = 5) -> float:
    """pi(5) after 5 steps (or ``step``), mean over seeds 0-31 (or ``seeds``), of one of the exercise's variants (by
    its call)."""
    from ..studies import method_runs
    from ..studies.toy_grpo import run_over_seeds
    run, options = {"baseline": (method_runs.run_reinforce_baseline, {}),
                    "reuse": (method_runs.run_grpo, {"scale": False}), "scaling": (method_runs.run_grpo, {"K": 1}),
                    "grpo": (method_runs.run_grpo, {}),
                    "larger step": (method_runs.run_reinforce_baseline, {"lr": 4.0})}[variant]
    return float(run_over_seeds(run, seeds, steps=max(5, step), **options)[:, step].mean())


def _grpo_lead() -> float:
    """GRPO's head start: run_grpo()'s mean pi(5) after 5 steps less run_reinforce_baseline()'s (seeds 0-31)."""
    return _after_five("grpo") - _after_five("baseline")


def _grpo_lead_mistakes() -> tuple[tuple[float, str], ...]:
    base = _after_five("baseline")
    return (
        (_after_five("reuse") - base, "that is the reuse's lead alone, run_grpo(scale=False); the box asks GRPO's, "
                                      "run_grpo() with its scaling and its reuse"),
        (_after_five("scaling") - base, "that is the std scaling's lead alone, run_grpo(K=1); the box asks GRPO's, "
                                        "run_grpo() with its scaling and its reuse"),
        (_after_five("reuse") + _after_five("scaling") - 2 * base, "that is the reuse's and the scaling's leads "
                                                                   "summed; the box asks run_grpo()'s own lead, "
                                                                   "measured"),
        (_after_five("larger step") - base, "that is the lead of four times the step, "
                                            "run_reinforce_baseline(lr=4.0); the box asks run_grpo()'s"),
        (_after_five("grpo"), "that is GRPO's mean itself; the box asks its lead over run_reinforce_baseline()"),
        (-_grpo_lead(), "the sign is flipped: run_grpo()'s mean less run_reinforce_baseline()'s"),
        (_after_five("grpo", seeds=[0]) - _after_five("baseline", seeds=[0]),
         "that is one run of each (seed 0); one run is one draw of luck: average the 32 seeds, "
         "run_over_seeds(run, range(32), ...)"),
        (_after_five("grpo", step=4) - _after_five("baseline", step=4),
         "that is column 4, after 4 steps: column 0 is the start, so after 5 steps is column 5"),
        (_after_five("grpo", step=30) - _after_five("baseline", step=30),
         "that is the lead after 30 steps; the exercise reads it after 5 (steps=5, column 5)"),
    )


# ---------------------------------------------------------------- run_exact_gradient (coding)
def _exact_case(rng):
    if rng is None:
        return 30, 1.0, LOGITS, np.array([0.0, 0.0, 1.0, 0.0, 0.0])
    K = int(rng.integers(3, 7))
    return (int(rng.integers(3, 12)), float(rng.uniform(0.3, 2.0)), rng.normal(size=K),
            rng.uniform(0.0, 1.0, size=K))


def _exact_cases():
    """The toy and random cases with every argument given, then the defaults (30 steps of lr 1 on the
    toy) and steps and lr given by name."""
    rng = np.random.default_rng(16)
    _, _, z, r = _exact_case(rng)
    return toy_and_random(_exact_case)() + [Call(()), Call((), {"steps": 5, "lr": 0.5}),
                                            Call((), {"steps": 4, "logits": z, "rewards": r})]


def _exact_variant(steps=30, lr=1.0, logits=LOGITS, rewards=None, *, sign=1.0, baseline=True, start=True, track="best",
                   sft=False, ignore_lr=False, weighted=True):
    lr = 1.0 if ignore_lr else lr
    rewards = np.eye(len(LOGITS))[CORRECT] if rewards is None else rewards
    z, r = np.array(logits, dtype=float), np.asarray(rewards, dtype=float)
    best = int(np.argmax(r))

    def tracked(z):
        pi = softmax(z)
        return pi @ r if track == "J" else pi[best]
    curve = [tracked(z)] if start else []
    for _ in range(steps):
        pi = softmax(z)
        if sft:
            z = z - lr * (pi - np.eye(len(z))[best])
        elif not weighted:
            z = z + lr * (r - pi @ r)
        else:
            z = z + sign * lr * (policy_gradient(z, r) if baseline else pi * r)
        curve.append(tracked(z))
    return np.array(curve)


_RUN_EXACT_GRADIENT = FunctionExercise(21, run_exact_gradient, _exact_cases, (
    ("the sign is flipped: RL ASCENDS on J, z <- z + lr grad J (descent lowers pi(best))",
     lambda *a, **k: _exact_variant(*a, **k, sign=-1.0)),
    ("the -J term is missing: the score of y is e_y - pi, not e_y, so grad J = pi * (r - J), not pi * r",
     lambda *a, **k: _exact_variant(*a, **k, baseline=False)),
    ("the factor pi is missing: grad J = sum_y pi(y) r(y) (e_y - pi) = pi * (r - J), each answer's advantage "
     "weighted by its probability, not r - J alone", lambda *a, **k: _exact_variant(*a, **k, weighted=False)),
    ("the curve must start with pi(best) before the first step: steps + 1 values",
     lambda *a, **k: _exact_variant(*a, **k, start=False)),
    ("the curve tracks J = sum pi r, which equals pi(5) only on the toy's 0/1 rewards; track pi of the "
     "best-rewarded answer, argmax(r)", lambda *a, **k: _exact_variant(*a, **k, track="J")),
    ("that is SFT on the best answer, z <- z - lr (pi - onehot(best)); the exact-gradient learner follows "
     "grad J = pi * (r - J)", lambda *a, **k: _exact_variant(*a, **k, sft=True)),
    ("the learning rate is ignored: each step is z <- z + lr grad J with the lr passed in (these values "
     "are the steps at lr = 1)", lambda *a, **k: _exact_variant(*a, **k, ignore_lr=True)),
))


SPECS: dict[str, FunctionExercise | NumericExercise] = {
    "ex-ch15-seeds": NumericExercise(
        15, f"the number of seeds per setting (t = 2, s = {SEEDS_S}, difference {SEEDS_DIFFERENCE})",
        float(seeds_by_hand(SEEDS_S, SEEDS_DIFFERENCE)), 0.3, _seeds_mistakes()),
    "addition_reward": _ADDITION_REWARD,
    "ex-ch16-split": NumericExercise(
        16, "the bnpo loss that two data-parallel processes follow", split_loss("bnpo", 2), 5e-4,
        _split_mistakes()),
    "data_parallel_loss": _DATA_PARALLEL_LOSS,
    "ex-ch21-k3": NumericExercise(
        21, f"k3 on a sampled 5 at pi_theta(5) = {K3_PI_5}, pi_ref(5) = 0.2", k3_of_sampled_5, 5e-4,
        _k3_mistakes()),
    "ex-ch21-ahead": NumericExercise(
        21, "the number of the five TRL settings in which GRPOTrainer computes the old log-probs",
        settings_ahead_count, 0.3, _ahead_mistakes),
    "ex-ch21-knobs": NumericExercise(
        21, "GRPO's pi(5) after 5 steps with its learning rate doubled, mean over seeds 0-31", _grpo_after_five,
        5e-4, _knobs_mistakes, retry=EXPERIMENT_RETRY),
    "ex-ch21-samples": NumericExercise(
        21, "GRPO's head start: run_grpo()'s mean pi(5) after 5 steps less run_reinforce_baseline()'s, seeds 0-31",
        _grpo_lead, 5e-4, _grpo_lead_mistakes, retry=EXPERIMENT_RETRY),
    "run_exact_gradient": _RUN_EXACT_GRADIENT,
}
