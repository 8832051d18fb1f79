"""Auto-checks for the book's exercises: ``check(exercise_id, answer)``.

Every chapter (1-21) closes with exercises; a checked one's id is its label in the book
(``"ex-ch07-partial-credit"``, ``"ex-ch07-write-score"``):

- a **function exercise** (coding) asks for a library function, with the same signature: ``answer``
  is the student's function, run beside the reference on the toy and on seeded random cases. The
  name of that function (``"score"``, ``"policy_gradient"``, ``"gae"``, ...: the ids that api.md
  fixes) is an alias of the label, accepted wherever an id is (:data:`ALIASES`);
- a **by-hand exercise**: ``answer`` is the student's number (or text such as ``"1/4"``).

The part modules (and any chapter module of ``chapters/`` that declares ``SPECS``) register a function
exercise under its function's name; its label is derived from that name and the exercise's chapter
(:func:`coding_label`), so the aliases are one table, made once here from the registration.

``check`` returns a verdict starting with ``"Correct:"`` or ``"Not yet:"`` (a ``str``, which Jupyter
displays as plain text), saying in words what is wrong for the mistakes students make; it never
raises on a wrong, malformed or crashing answer. ``assert_correct`` is the same check for
autograders (nbgrader, pytest): it prints the verdict and raises ``AssertionError`` with it unless
the answer is correct. Both run in the student's kernel, so a grade comes from ``rl4llm.course.grading``,
which runs the student's cell in a separate process and judges it with the same messages. ``answer_key()`` gives the by-hand
answers with all their messages, which the static book's answer boxes read at build time.
"""
from __future__ import annotations

from collections.abc import Mapping

import importlib
import pkgutil

from .._checks import checked
from . import chapters, part1, part2, part3, part4, part5
from ._core import CORRECT, NOT_YET, FunctionExercise, NumericExercise, parse_number


class Verdict(str):
    """A check's message. Jupyter shows it as plain text (no quotes) when it ends a cell."""

    def _repr_pretty_(self, printer, cycle) -> None:
        printer.text(str(self))

    @property
    def correct(self) -> bool:
        return self.startswith(CORRECT)


#: The label of a coding exercise is ``ex-chNN-write-`` and its function's name with dashes, except
#: for these functions (the label's part after ``ex-chNN-``).
LABEL_SLUGS = {"kl_divergence": "write-kl", "group_mean_baseline_gradient": "write-group-gradient",
               "addition_reward": "verifier", "data_parallel_loss": "write-data-parallel",
               "pass_at_k_estimate": "write-pass-at-k", "kv_bytes_per_token": "write-kv-bytes",
               "run_exact_gradient": "write-exact-gradient"}


def coding_label(function: str, chapter: int) -> str:
    """The book's label of the coding exercise of chapter ``chapter`` that writes ``function``."""
    return f"ex-ch{chapter:02d}-" + LABEL_SLUGS.get(function, "write-" + function.replace("_", "-"))


def _by_label(*parts) -> tuple[dict, dict[str, str]]:
    """Every part's exercises by label, and each function id with its label (a part registers a
    function exercise under its function's name)."""
    specs: dict[str, FunctionExercise | NumericExercise] = {}
    aliases: dict[str, str] = {}
    for part in parts:
        for name, spec in part.SPECS.items():
            label = name
            if isinstance(spec, FunctionExercise):
                label = aliases[name] = coding_label(name, spec.chapter)
            if label in specs:
                raise RuntimeError(f"exercise id defined twice: {label}")
            specs[label] = spec
    return specs, aliases


#: The chapters that declare their exercises' checks beside their plan (``chapters/<stem>.py``'s ``SPECS``).
_CHAPTER_CHECKS = [module for module in (importlib.import_module(f"{chapters.__name__}.{m.name}")
                                         for m in pkgutil.iter_modules(chapters.__path__)) if hasattr(module, "SPECS")]
_SPECS, ALIASES = _by_label(part1, part2, part3, part4, part5, *_CHAPTER_CHECKS)
#: Each coding exercise's label and the library function it writes (the inverse of ``ALIASES``).
FUNCTIONS: dict[str, str] = {label: function for function, label in ALIASES.items()}


def label_of(exercise_id: str) -> str:
    """The label an id names: the id itself, or the label that a function id aliases."""
    return ALIASES.get(exercise_id, exercise_id)


class ByLabel(Mapping):
    """A table keyed by exercise label, each exercise once, whose lookups also take a function id
    for its label (``SPECS["score"] is SPECS["ex-ch07-write-score"]``)."""

    def __init__(self, by_label: dict):
        self._by_label = by_label

    def __getitem__(self, exercise_id):
        return self._by_label[label_of(exercise_id)]

    def __iter__(self):
        return iter(self._by_label)

    def __len__(self) -> int:
        return len(self._by_label)


#: Every checked exercise, by label.
SPECS = ByLabel(_SPECS)

#: Every id ``check`` accepts (each label, and each function id) with its chapter.
EXERCISES: dict[str, int] = {**{name: spec.chapter for name, spec in SPECS.items()},
                             **{function: SPECS[function].chapter for function in ALIASES}}


def _known_exercise(exercise_id, name: str) -> str:
    """Rule: an exercise's label, or a coding exercise's function id; the label it names."""
    if not isinstance(exercise_id, str) or exercise_id not in EXERCISES:
        raise ValueError(f"{name} must be an exercise label (one of {sorted(SPECS)}) or the function id of a "
                         f"coding exercise (one of {sorted(ALIASES)}), got {exercise_id!r}")
    return label_of(exercise_id)


@checked(exercise_id=_known_exercise)
def check(exercise_id: str, answer) -> Verdict:
    """Check ``answer`` (a number, or the student's function) for ``exercise_id``, a label or a function id;
    return the verdict (Jupyter displays it). An unknown ``exercise_id`` raises ``ValueError``; a wrong
    answer never raises."""
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


__all__ = ["ALIASES", "CORRECT", "FUNCTIONS", "NOT_YET", "EXERCISES", "SPECS", "ByLabel", "FunctionExercise",
           "NumericExercise", "Verdict", "answer_key", "assert_correct", "check", "coding_label", "label_of", "parse_number"]
