"""A safe verifier for addition prompts (chapter 5; the reward of chapter 15).

The source text scores a completion by calling ``int`` on it and Python's ``eval`` on the prompt
without its ``=``. That is unsafe (``eval`` runs whatever the prompt holds) and fragile (``int`` raises on garbage, and accepts
``"+5"``, ``" 5 "``, ``"5_0"`` and non-ASCII digits such as ``"٥"``). This verifier parses both sides
as plain ASCII digit strings and compares them as strings, so it never runs text as code, never
raises on any completion and takes time linear in the completion's length.
"""
from __future__ import annotations

import re

import numpy as np

from .._checks import checked

#: The text marker that ends a completion (the tokenizer of chapter 15 decodes EOS to it).
EOS_MARKER = "<eos>"
#: Longest operand a prompt may hold, in digits (bounds the work done on a prompt).
MAX_OPERAND_DIGITS = 1000

_PROMPT = re.compile(r"([0-9]+)\+([0-9]+)=")
_DIGITS = re.compile(r"[0-9]+")
#: The whitespace a completion may carry around its digits: ASCII space, tab, newline, CR, FF, VT.
#: (``str.strip()`` with no argument would also strip Unicode spaces and separators such as
#: U+00A0, U+2028 and the control characters U+001C-U+001F.)
ASCII_WHITESPACE = " \t\n\r\f\v"


def _addition_prompt(prompt, name: str = "prompt") -> re.Match:
    """Rule: a prompt ``"a+b="`` with 1 to MAX_OPERAND_DIGITS ASCII digits per operand; the function receives
    its match."""
    if not isinstance(prompt, str):
        raise ValueError(f"{name} must be a string of the form 'a+b=', got {type(prompt).__name__}")
    match = _PROMPT.fullmatch(prompt)
    if match is None or max(len(match.group(1)), len(match.group(2))) > MAX_OPERAND_DIGITS:
        raise ValueError(f"{name} must look like 'a+b=' with 1 to {MAX_OPERAND_DIGITS} ASCII digits per "
                         f"operand, got {prompt[:40]!r}")
    return match


@checked(prompt=_addition_prompt)
def parse_addition_prompt(prompt: str) -> tuple[int, int]:
    """The operands (a, b) of a prompt ``"a+b="`` (ASCII digits, possibly zero-padded)."""
    return int(prompt.group(1)), int(prompt.group(2))


def addition_reward(prompt: str, completion) -> float:
    """r = 1.0 if the completion is the sum asked by the prompt, else 0.0 (chapter 5).

    The completion is read up to the first ``EOS_MARKER``, surrounding ASCII whitespace
    (``ASCII_WHITESPACE``) ignored, and must then be one or more ASCII digits whose value
    is a + b. Leading zeros count, any number of them (``"05"`` is 5); a sign, decimal
    point, exponent, inner space, non-ASCII digit or non-ASCII whitespace does not. The comparison is on digit strings (leading zeros
    stripped), never ``int()`` of the completion and never ``eval``, so a million
    digits cost one linear scan and nothing raises.
    """
    a, b = parse_addition_prompt(prompt)
    if not isinstance(completion, str):
        return 0.0
    end = completion.find(EOS_MARKER)
    answer = (completion if end < 0 else completion[:end]).strip(ASCII_WHITESPACE)
    if not _DIGITS.fullmatch(answer):
        return 0.0
    return 1.0 if (answer.lstrip("0") or "0") == str(a + b) else 0.0


#: The most digits of a completion whose value :func:`addition_rewards_of_ids` reads as an integer (int64);
#: any digit further left must be a leading zero for the answer to be a sum of two int64 operands.
_INT64_DIGITS = 18


def addition_rewards_of_ids(sums, completion_ids, digit_values, eos_id: int) -> np.ndarray:
    """:func:`addition_reward` of a whole batch of completions at once, on token ids (chapter 15).

    ``completion_ids`` (N, T) are token ids, ``sums`` (N,) the sum each prompt asks for,
    ``digit_values`` maps a token id to the digit it writes (-1 for any other token) and ``eos_id``
    is the end-of-sequence token. Row i scores 1.0 when its tokens before the first EOS (all T when
    it has none) are one or more digits and their decimal value, leading zeros allowed, is
    ``sums[i]``; any other token there (a PAD, a sign, a second '=') scores 0.0. The same rule as
    :func:`addition_reward` on the decoded text, for a tokenizer without whitespace tokens, in a few
    array operations instead of a Python loop (the verifier runs on every sampled completion).
    """
    ids = np.asarray(completion_ids)
    n_rows, width = ids.shape
    values = np.asarray(digit_values)[ids]                                # (N, T): digit, or -1
    is_eos = ids == eos_id
    end = np.where(is_eos.any(axis=1), is_eos.argmax(axis=1), width)      # tokens before the first EOS
    before = np.arange(width)[None, :] < end[:, None]
    place = end[:, None] - 1 - np.arange(width)[None, :]                  # each digit's power of ten
    low = before & (place < _INT64_DIGITS)
    number = (np.where(low, values, 0) * 10 ** np.where(low, place, 0)).sum(axis=1)
    all_digits = (end > 0) & ~(before & (values < 0)).any(axis=1)
    leading_zeros = ~(before & ~low & (values != 0)).any(axis=1)
    return (all_digits & leading_zeros & (number == np.asarray(sums))).astype(np.float64)
