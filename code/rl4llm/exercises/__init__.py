"""Auto-checks for the book's exercises: ``check(exercise_id, answer)``.

Every chapter (1-19) closes with exercises; the checked ones have an id here:

- a **function exercise** has the name of the library function the student writes, with the same
  signature (``"softmax"``, ``"policy_gradient"``, ``"gae"``, ...): ``answer`` is the student's
  function, run beside the reference on the toy and on seeded random cases;
- a **by-hand exercise** has the label of the exercise in the book (``"ex-ch07-partial-credit"``):
  ``answer`` is the student's number (or text such as ``"1/4"``).

``check`` returns a verdict starting with ``"Correct:"`` or ``"Not yet:"`` (a ``str``, which Jupyter
displays as plain text), saying in words what is wrong for the mistakes students make; it never
raises on a wrong, malformed or crashing answer. ``assert_correct`` is the same check for
autograders (nbgrader, pytest): it prints the verdict and raises ``AssertionError`` with it unless
the answer is correct. Both run in the student's kernel, so a grade comes from ``rl4llm.grading``,
which runs the student's cell in a separate process and judges it with the same messages. ``answer_key()`` gives the by-hand
answers with all their messages, which the static book's answer boxes read at build time.
"""
from __future__ import annotations

from .._checks import checked
from . import part1, part2, part3, part4, part5
from ._core import CORRECT, NOT_YET, FunctionExercise, NumericExercise, parse_number


class Verdict(str):
    """A check's message. Jupyter shows it as plain text (no quotes) when it ends a cell."""

    def _repr_pretty_(self, printer, cycle) -> None:
        printer.text(str(self))

    @property
    def correct(self) -> bool:
        return self.startswith(CORRECT)


def _merge(*parts) -> dict[str, FunctionExercise | NumericExercise]:
    merged: dict = {}
    for part in parts:
        clash = merged.keys() & part.SPECS.keys()
        if clash:
            raise RuntimeError(f"exercise ids defined twice: {sorted(clash)}")
        merged.update(part.SPECS)
    return merged


SPECS = _merge(part1, part2, part3, part4, part5)

#: Every exercise id with its chapter.
EXERCISES: dict[str, int] = {name: spec.chapter for name, spec in SPECS.items()}


def _known_exercise(exercise_id, name: str) -> str:
    if not isinstance(exercise_id, str) or exercise_id not in SPECS:
        raise ValueError(f"{name} must be one of {sorted(SPECS)}, got {exercise_id!r}")
    return exercise_id


@checked(exercise_id=_known_exercise)
def check(exercise_id: str, answer) -> Verdict:
    """Check ``answer`` (a number, or the student's function) for ``exercise_id``; return the verdict
    (Jupyter displays it). An unknown ``exercise_id`` raises ``ValueError``; a wrong answer never raises."""
    return Verdict(SPECS[exercise_id].verdict(answer))


def assert_correct(exercise_id: str, answer) -> None:
    """``check`` for autograders: print the verdict, and raise ``AssertionError`` with it unless correct."""
    verdict = check(exercise_id, answer)
    print(verdict)
    if not verdict.correct:
        raise AssertionError(verdict)


def answer_key() -> dict[str, dict]:
    """Every by-hand exercise's answer, tolerance and messages (for the static book's answer boxes)."""
    return {name: spec.key() for name, spec in SPECS.items() if isinstance(spec, NumericExercise)}


__all__ = ["CORRECT", "NOT_YET", "EXERCISES", "SPECS", "FunctionExercise", "NumericExercise", "Verdict", "answer_key",
           "assert_correct", "check", "parse_number"]
