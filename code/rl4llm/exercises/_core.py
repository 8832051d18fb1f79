"""The two kinds of checked exercise, and the verdicts they give.

- A **function exercise**: the student writes a function with the signature of the library function
  of the same name. The check runs it beside the library's reference on the toy and on seeded random
  cases. A correct function gets a one-line confirmation; a wrong one gets the first diagnosis that
  explains every case (each exercise lists the mistakes students make, as functions), else a stray
  common factor (G, 1/G, ...), else the first case where it differs, with both values.
- A **numeric exercise** (by hand): the student derives one number on the toy. The answer is right
  within a stated tolerance; the common wrong values (the sign flipped, the baseline forgotten,
  ddof 1 for 0, ...) each have their message. The static book's answer boxes show the same messages,
  read from :func:`answer_key` at build time.

Neither ever raises on a wrong, malformed or crashing answer: the verdict says what happened.
Every verdict starts with ``"Correct:"`` or ``"Not yet:"``.
"""
from __future__ import annotations

import functools
import importlib
import math
import re
from dataclasses import dataclass
from numbers import Real
from typing import Callable

import numpy as np

CORRECT, NOT_YET = "Correct:", "Not yet:"

#: What a by-hand answer may look like: a decimal (0.25, -.5, 1e-3) or a fraction of two (1/4).
NUMBER = r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
_NUMBER_OR_FRACTION = re.compile(rf"\s*({NUMBER})\s*(?:/\s*({NUMBER})\s*)?")

MALFORMED = (f"{NOT_YET} enter one number: a decimal (0.25), scientific notation (2.5e-1) "
             "or a fraction (1/4).")


def parse_number(answer) -> float | None:
    """A by-hand answer as a float: a real number, or text holding a decimal or a fraction a/b;
    None when it is none of these (or not finite). The answer boxes' script parses the same way."""
    if isinstance(answer, bool):
        return None
    if isinstance(answer, Real) or (isinstance(answer, np.ndarray) and answer.ndim == 0):
        value = float(answer)
    elif isinstance(answer, str):
        match = _NUMBER_OR_FRACTION.fullmatch(answer)
        if match is None:
            return None
        numerator, denominator = match.groups()
        value = float(numerator) if denominator is None else (
            float(numerator) / float(denominator) if float(denominator) != 0 else math.nan)
    else:
        return None
    return value if math.isfinite(value) else None


class NumericExercise:
    """A number to derive by hand: ``value`` within ``tolerance`` (absolute) is right.

    ``quantity`` names the number asked for (it labels the answer box); ``mistakes`` pairs each
    common wrong value with what went wrong, in words. ``value`` and ``mistakes`` may also be given
    as zero-argument functions that compute them: they then run on first use, so that an answer
    computed with torch does not load torch in the chapters that never use it.
    """

    def __init__(self, chapter: int, quantity: str, value: float | Callable[[], float], tolerance: float,
                 mistakes: tuple[tuple[float, str], ...] | Callable[[], tuple] = ()):
        if not tolerance > 0:
            raise ValueError(f"tolerance must be > 0, got {tolerance}")
        self.chapter, self.quantity, self.tolerance = chapter, quantity, tolerance
        self._value, self._mistakes = value, mistakes
        if not (callable(value) or callable(mistakes)):
            self.mistakes                                  # noqa: B018 (validates now, not on first use)

    @functools.cached_property
    def value(self) -> float:
        value = float(self._value() if callable(self._value) else self._value)
        if not math.isfinite(value):
            raise ValueError(f"value must be finite, got {value}")
        return value

    @functools.cached_property
    def mistakes(self) -> tuple[tuple[float, str], ...]:
        mistakes = tuple((float(wrong), explanation) for wrong, explanation in
                         (self._mistakes() if callable(self._mistakes) else self._mistakes))
        for wrong, _ in mistakes:
            if abs(wrong - self.value) <= 2 * self.tolerance:
                raise ValueError(f"the wrong value {wrong} is within 2 tolerances of the answer {self.value}")
        return mistakes

    @property
    def correct_message(self) -> str:
        return f"{CORRECT} {self.quantity} is {self.value:.4g} (answers within ±{self.tolerance:g} count)."

    @property
    def wrong_message(self) -> str:
        return (f"{NOT_YET} that is not within ±{self.tolerance:g} of {self.quantity}. Recompute it step "
                "by step from the chapter's formula.")

    def verdict(self, answer) -> str:
        value = parse_number(answer)
        if value is None:
            return MALFORMED
        if abs(value - self.value) <= self.tolerance:
            return self.correct_message
        for wrong, explanation in self.mistakes:
            if abs(value - wrong) <= self.tolerance:
                return f"{NOT_YET} {explanation}."
        return self.wrong_message

    def key(self) -> dict:
        """What the static book's answer box needs: the answer, its tolerance and every message."""
        return {"chapter": self.chapter, "quantity": self.quantity, "value": float(self.value),
                "tolerance": float(self.tolerance), "correct": self.correct_message, "wrong": self.wrong_message,
                "malformed": MALFORMED, "pattern": _NUMBER_OR_FRACTION.pattern,
                "mistakes": [[float(wrong), f"{NOT_YET} {explanation}."] for wrong, explanation in self.mistakes]}


@dataclass(frozen=True)
class FunctionExercise:
    """Write the library function ``reference`` from its formula.

    ``cases()`` gives the positional arguments to try (the toy first, then seeded random cases);
    ``mistakes`` pairs what went wrong, in words, with a function that makes that mistake.
    """
    chapter: int
    reference: Callable
    cases: Callable[[], list[tuple]]
    mistakes: tuple[tuple[str, Callable], ...] = ()

    def verdict(self, answer) -> str:
        if not callable(answer):
            return f"{NOT_YET} the answer should be a function, got {type(answer).__name__}."
        cases = self.cases()
        outputs = []
        for args in cases:
            try:
                outputs.append(_as_array(answer(*args)))
            except Exception as err:      # a student's crash is reported, never raised
                return f"{NOT_YET} your function raised {type(err).__name__}: {err} (on arguments {_show(args)})."
        expected = [_as_array(self.reference(*args)) for args in cases]
        if all(_close(o, e) for o, e in zip(outputs, expected)):
            return f"{CORRECT} your function matches the reference on the toy and on {len(cases) - 1} other cases."
        for explanation, mistake in self.mistakes:
            if all(_close(o, _as_array(mistake(*args))) for o, args in zip(outputs, cases)):
                return f"{NOT_YET} {explanation}."
        factor = _common_factor(outputs, expected)
        if factor is not None:
            return f"{NOT_YET} your values are the reference's times {factor:g} on every case (a stray factor)."
        i = next(i for i, (o, e) in enumerate(zip(outputs, expected)) if not _close(o, e))
        return (f"{NOT_YET} on arguments {_show(cases[i])} the reference gives {_round(expected[i])} "
                f"and yours {_round(outputs[i])}.")


def imported_on_call(module: str, name: str) -> Callable:
    """``rl4llm.<module>.<name>``, imported when first called: a reference that lives in a module that
    imports torch (``grpo``, ``methods``) stays out of the chapters that never load torch."""
    def reference(*args, **kwargs):
        return getattr(importlib.import_module(f"rl4llm.{module}"), name)(*args, **kwargs)
    reference.__name__ = reference.__qualname__ = name
    return reference


def toy_and_random(make: Callable[[np.random.Generator | None], tuple], n_random: int = 4
                   ) -> Callable[[], list[tuple]]:
    """Cases for a function exercise: ``make(None)`` (the toy), then ``n_random`` seeded random ones."""
    def cases():
        rng = np.random.default_rng(0)
        return [make(None)] + [make(rng) for _ in range(n_random)]
    return cases


def logits_and_token(rng: np.random.Generator | None) -> tuple:
    """A case for a (logits, token) function: the toy's logits and its correct answer, or random ones."""
    if rng is None:
        from ..toy import CORRECT, LOGITS
        return LOGITS, CORRECT
    K = int(rng.integers(3, 7))
    return rng.normal(size=K), int(rng.integers(K))


def _as_array(out) -> np.ndarray:
    out = out[0] if isinstance(out, tuple) else out          # grpo_loss returns (loss, stats)
    out = out.detach() if hasattr(out, "detach") else out
    try:
        return np.asarray(out, dtype=float)
    except (TypeError, ValueError):
        return np.asarray(np.nan)


def _close(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and bool(np.allclose(a, b, rtol=1e-6, atol=1e-9, equal_nan=True))


def _common_factor(outputs, expected) -> float | None:
    """c if every output is c times its reference (c != 1), else None."""
    ratios = []
    for o, e in zip(outputs, expected):
        if o.shape != e.shape or not np.any(np.abs(e) > 1e-9):
            return None
        k = np.argmax(np.abs(e))
        ratios.append(o.flat[k] / e.flat[k])
    c = ratios[0]
    if not math.isfinite(c) or abs(c - 1) < 1e-9 or abs(c) < 1e-12:
        return None
    return c if all(_close(o, c * e) for o, e in zip(outputs, expected)) else None


def _round(a: np.ndarray):
    return np.round(a, 4).tolist()


def _show(args) -> str:
    def one(a):
        if hasattr(a, "detach"):
            a = a.detach().numpy()
        if isinstance(a, (np.ndarray, list, tuple)) and np.ndim(a):
            return np.array2string(np.asarray(a), precision=3)
        return f"{a:g}" if isinstance(a, Real) and not isinstance(a, bool) else repr(a)
    return ", ".join(one(a) for a in args)
