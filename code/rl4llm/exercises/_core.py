"""The two kinds of checked exercise, and the verdicts they give.

- A **function exercise**: the student writes a function with the signature of the library function
  of the same name. The check runs it on copies of the toy and of seeded random cases, each optional
  argument varied by name, and compares it with the library's reference. A correct function gets a
  one-line confirmation; one that raises, returns None or changes its inputs in place is told so;
  a wrong one gets the first diagnosis that explains every case (each exercise lists the mistakes
  students make, as functions), else a stray common factor (G, 1/G, ...), else the first case where
  it differs. ``rl4llm.course.grading`` runs the same judgement on a run made in a separate process.
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
from dataclasses import dataclass, field
from numbers import Real
from typing import Callable

import numpy as np

from .._checks import checked, positive_real

CORRECT, NOT_YET = "Correct:", "Not yet:"

#: What a by-hand answer may look like: a decimal (0.25, -.5, 1e-3) or a fraction of two (1/4).
NUMBER = r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
_NUMBER_OR_FRACTION = re.compile(rf"\s*({NUMBER})\s*(?:/\s*({NUMBER})\s*)?")

# Its examples are no answer of the book (the student site shows this message in clear).
MALFORMED = (f"{NOT_YET} enter one number: a decimal (0.5, \u22120.5 or 0,5), scientific notation (5e-1) "
             "or a fraction (1/2).")


#: Characters a keypad or a word processor types for a minus sign, read as "-" (as the answer boxes do).
_MINUS_SIGNS = str.maketrans({"\u2212": "-", "\u2012": "-", "\u2013": "-", "\ufe63": "-", "\uff0d": "-"})


def parse_number(answer) -> float | None:
    """A by-hand answer as a float: a real number, or text holding a decimal or a fraction a/b;
    None when it is none of these (or not finite). The answer boxes' script parses the same way."""
    if isinstance(answer, bool):
        return None
    if isinstance(answer, Real) or (isinstance(answer, np.ndarray) and answer.ndim == 0):
        value = float(answer)
    elif isinstance(answer, str):
        answer = answer.translate(_MINUS_SIGNS)
        answer = answer if "." in answer else answer.replace(",", ".", 1)   # a decimal comma: 0,25
        match = _NUMBER_OR_FRACTION.fullmatch(answer)
        if match is None:
            return None
        numerator, denominator = match.groups()
        value = float(numerator) if denominator is None else (
            float(numerator) / float(denominator) if float(denominator) != 0 else math.nan)
    else:
        return None
    return value if math.isfinite(value) else None


#: What a wrong number that is no known slip is told to do: a by-hand number, and an experiment's result.
BY_HAND_RETRY = "Recompute it step by step from the chapter's formula."
EXPERIMENT_RETRY = ("Check your runs against the exercise's settings (the seeds, the steps, the column or step you "
                    "read) and compute it again.")


class NumericExercise:
    """A number to derive by hand: ``value`` within ``tolerance`` (absolute) is right.

    ``quantity`` names the number asked for (it labels the answer box); ``mistakes`` pairs each
    common wrong value with what went wrong, in words; each lies more than 2 tolerances from the answer and
    from every other wrong value with another message, so that no answer is both right and a slip, or two
    slips at once. ``value`` and ``mistakes`` may also be given
    as zero-argument functions that compute them: they then run on first use, so that an answer
    computed with torch does not load torch in the chapters that never use it. ``retry`` is what a wrong number
    that matches no slip is told to do (an experiment's result gets :data:`EXPERIMENT_RETRY`).
    """

    @checked(tolerance=positive_real)
    def __init__(self, chapter: int, quantity: str, value: float | Callable[[], float], tolerance: float,
                 mistakes: tuple[tuple[float, str], ...] | Callable[[], tuple] = (), retry: str = BY_HAND_RETRY):
        self.chapter, self.quantity, self.tolerance, self.retry = chapter, quantity, tolerance, retry
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
        for i, (wrong, explanation) in enumerate(mistakes):      # else an answer between two gets the first's
            for other, other_explanation in mistakes[i + 1:]:
                if abs(wrong - other) <= 2 * self.tolerance and explanation != other_explanation:
                    raise ValueError(f"the wrong values {wrong} and {other} are within 2 tolerances of each other: "
                                     "an answer between them could be either slip (merge their messages)")
        return mistakes

    @property
    def correct_message(self) -> str:
        digits = 4       # 4 significant digits, more where those would round off more than half the tolerance
        while abs(float(f"{self.value:.{digits}g}") - self.value) > self.tolerance / 2 and digits < 12:
            digits += 1
        return f"{CORRECT} {self.quantity} is {self.value:.{digits}g} (answers within ±{self.tolerance:g} count)."

    @property
    def decimals(self) -> int:
        """The decimals an answer keeps so that rounding alone stays well inside the tolerance: one more than
        rounding to d decimals (an error up to 0.5 x 10^-d) needs."""
        return max(0, math.ceil(math.log10(0.5 / self.tolerance))) + 1

    @property
    def wrong_message(self) -> str:
        return (f"{NOT_YET} that is not within ±{self.tolerance:g} of {self.quantity}. If you rounded, keep "
                f"{self.decimals} decimal{'s' if self.decimals > 1 else ''}. {self.retry}")

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
                "tolerance": float(self.tolerance), "decimals": self.decimals, "correct": self.correct_message,
                "wrong": self.wrong_message, "malformed": MALFORMED, "pattern": _NUMBER_OR_FRACTION.pattern,
                "mistakes": [[float(wrong), f"{NOT_YET} {explanation}."] for wrong, explanation in self.mistakes]}


@dataclass(frozen=True)
class Call:
    """One call of a function exercise: positional ``args`` and keyword ``kwargs`` (the optional
    arguments a check varies are passed by name, as a caller would)."""
    args: tuple
    kwargs: dict = field(default_factory=dict)


def as_call(case) -> Call:
    """A case as a :class:`Call` (a plain tuple is positional arguments only)."""
    return case if isinstance(case, Call) else Call(tuple(case))


#: Building blocks a student's function may import from ``rl4llm`` while it is graded (see
#: ``rl4llm.course.grading``): a softmax and the toy's constants; never the function being checked.
HELPERS = ("softmax", "log_softmax", "LOGITS", "REWARDS", "CORRECT", "VOCAB", "EOS_MARKER")


@dataclass(frozen=True)
class FunctionExercise:
    """Write the library function ``reference`` from its formula.

    ``cases()`` gives the calls to try (the toy first, then seeded random cases): tuples of positional
    arguments, or :class:`Call` for keyword arguments; ``mistakes`` pairs what went wrong, in words,
    with a function that makes that mistake (called like the reference). ``output`` says how a
    returned value is compared (:func:`rl4llm.course.grading.runner.as_output`); ``helpers`` are the
    building blocks of ``rl4llm`` the function may import while graded; ``first_case`` names the first
    case in the verdict ("the toy" unless an exercise's first case is something else).

    The verdict comes from two steps that the grader also runs apart: the function runs on copies of
    every call (:meth:`run`, here in this process; the grader runs it in a sandbox), then
    :meth:`judge` compares what came back with the reference's values, computed here.
    """
    chapter: int
    reference: Callable
    cases: Callable[[], list]
    mistakes: tuple[tuple[str, Callable], ...] = ()
    output: str = "first"
    helpers: tuple[str, ...] = HELPERS
    first_case: str = "the toy"

    def calls(self) -> list[Call]:
        return [as_call(case) for case in self.cases()]

    def run(self, answer, calls: list[Call]) -> list[dict]:
        """``answer`` on copies of each call, in this process (what the grader's sandbox does)."""
        from ..course.grading.runner import call_on_copy
        return [call_on_copy(answer, call.args, call.kwargs, self.output) for call in calls]

    def _values(self, function, calls: list[Call]) -> list:
        """``function``'s comparable outputs on copies of ``calls``; None where it raised."""
        from ..course.grading.runner import call_on_copy
        return [r.get("output") if isinstance(r.get("output"), np.ndarray) else None
                for r in (call_on_copy(function, call.args, call.kwargs, self.output) for call in calls)]

    def verdict(self, answer) -> str:
        if not callable(answer):
            return f"{NOT_YET} the answer should be a function, got {type(answer).__name__}."
        calls = self.calls()
        return self.judge(calls, self.run(answer, calls))

    def crash_message(self, call: Call, kind: str, message: str) -> str:
        return f"{NOT_YET} your function raised {kind}: {message} (on arguments {_show(call)})."

    def judge(self, calls: list[Call], results: list[dict]) -> str:
        """The verdict on ``results`` (one record per call, as :meth:`run` gives); never raises."""
        for call, result in zip(calls, results):
            if "raised" in result:
                return self.crash_message(call, *result["raised"])
        for call, result in zip(calls, results):
            if result.get("mutated"):
                return (f"{NOT_YET} your function modifies its inputs in place ({', '.join(result['mutated'])}, "
                        f"on arguments {_show(call)}): the caller's arrays must come back as they went in. "
                        "Work on a copy (np.array(x, dtype=float)), and write results to new arrays (no out= "
                        "argument, no x[...] = or x += on an input).")
        for call, result in zip(calls, results):
            out = result.get("output")
            if isinstance(out, str) and out == "none":
                return (f"{NOT_YET} your function returned None (on arguments {_show(call)}): is its return "
                        "statement missing?")
            if isinstance(out, str):
                return (f"{NOT_YET} your function returned something that is not numbers ({out.split(': ')[-1]}, "
                        f"on arguments {_show(call)}).")
        outputs = [result["output"] for result in results]
        expected = self._values(self.reference, calls)
        if all(_close(o, e) for o, e in zip(outputs, expected)):
            return (f"{CORRECT} your function matches the reference on {self.first_case} and on {len(calls) - 1} "
                    "other cases.")
        for explanation, mistake in self.mistakes:
            replica = self._values(mistake, calls)
            if all(r is not None and _close(o, r) for o, r in zip(outputs, replica)):
                return f"{NOT_YET} {explanation}."
        factor = _common_factor(outputs, expected)
        if factor is not None:
            return f"{NOT_YET} your values are the reference's times {factor:g} on every case (a stray factor)."
        i = next(i for i, (o, e) in enumerate(zip(outputs, expected)) if not _close(o, e))
        return f"{NOT_YET} on arguments {_show(calls[i])} {_difference(expected[i], outputs[i])}."


def imported_on_call(module: str, name: str) -> Callable:
    """``rl4llm.<module>.<name>``, imported when first called: a reference that lives in a module that
    imports torch (``grpo``, ``method_runs``) stays out of the chapters that never load torch."""
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
        from ..toy.five_token import CORRECT, LOGITS
        return LOGITS, CORRECT
    K = int(rng.integers(3, 7))
    return rng.normal(size=K), int(rng.integers(K))


def _close(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and bool(np.allclose(a, b, rtol=1e-6, atol=1e-9, equal_nan=True))


def _common_factor(outputs, expected) -> float | None:
    """c if every output is c times its reference (c != 1), else None."""
    ratios = []
    for o, e in zip(outputs, expected):
        if o.shape != e.shape or not np.any(np.abs(e) > 1e-9):
            return None
        k = np.argmax(np.abs(e))
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):   # inf / inf: no warning in the
            ratios.append(o.flat[k] / e.flat[k])                             # student's cell; c is then NaN
    c = ratios[0]
    if not math.isfinite(c) or abs(c - 1) < 1e-9 or abs(c) < 1e-12:
        return None
    return c if all(_close(o, c * e) for o, e in zip(outputs, expected)) else None


def _round(a: np.ndarray):
    return np.round(a, 4).tolist()


#: Arrays with more entries than this are described, not printed, in a verdict.
_SHOWN = 8


def _difference(expected: np.ndarray, yours: np.ndarray) -> str:
    """Where ``yours`` differs from ``expected``, in a few words (whole arrays only when small)."""
    if expected.shape != yours.shape:
        return (f"the reference returns shape {expected.shape} and yours {yours.shape}"
                + (f" ({_round(yours)})" if yours.size <= _SHOWN else ""))
    if expected.size <= _SHOWN:
        return f"the reference gives {_round(expected)} and yours {_round(yours)}"
    wrong = ~np.isclose(yours, expected, rtol=1e-6, atol=1e-9, equal_nan=True)
    first = tuple(int(i) for i in np.argwhere(wrong)[0])
    return (f"{int(wrong.sum())} of the {expected.size} entries differ; the first, at index {first}, is "
            f"{_round(expected[first])} in the reference and {_round(yours[first])} in yours")


def _show(call) -> str:
    call = as_call(call)

    def one(a):
        if hasattr(a, "detach"):
            a = a.detach().numpy()
        if isinstance(a, (np.ndarray, list, tuple)) and np.ndim(a):
            a = np.asarray(a)
            if a.size > 2 * _SHOWN:
                return f"a {'x'.join(map(str, a.shape))} array"
            return np.array2string(a, precision=3)
        return f"{a:g}" if isinstance(a, Real) and not isinstance(a, bool) else repr(a)
    return ", ".join([one(a) for a in call.args] + [f"{k}={one(v)}" for k, v in call.kwargs.items()])
