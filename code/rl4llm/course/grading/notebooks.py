"""A submitted notebook's graded exercises: which ones, and the student's source for each.

The list of exercises comes from the instructor's source assignments (``course/source/<part>/*.ipynb``,
written by ``scripts/make_course.py``), never from the submission: each graded test cell there,
``<grade id>-check``, names its check and what the student defines: a coding exercise's function
(``assert_correct("gae", my_gae)``) or a by-hand exercise's answer (``assert_correct("ex-ch12-by-hand",
answer_12_1)``, or a checked experiment's result, under ``<grade id>-result``); the markdown cell
``<grade id>-text`` gives its number ("Exercise 12.2"). A
submission is either an nbgrader notebook (the student's cell is the solution cell ``<grade id>``) or
a chapter of the student edition (the cell tagged ``exercise-code`` after the exercise labelled
``ex-<grade id>``; a chapter has no cell for a by-hand answer, which its answer box checks and the
nbgrader assignment collects).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from ..assignments import exercises
from ...exercises import SPECS, NumericExercise
from .sandbox import Grade, grade

ASSERT = re.compile(r'assert_correct\("([\w.-]+)",\s*(\w+)\)')
_NUMBER = re.compile(r"^## Exercise ([0-9]+\.[0-9]+)")


@dataclass(frozen=True)
class GradedExercise:
    """One graded exercise: its nbgrader ``grade_id`` ("ch12-write-gae"), ``number`` ("12.2"), the
    check it is graded by, the name the student defines (their function, or the variable that holds
    a by-hand answer), and its points."""
    grade_id: str
    number: str
    check_id: str
    function: str
    points: float

    @property
    def by_hand(self) -> bool:
        return isinstance(SPECS.get(self.check_id), NumericExercise)

    @property
    def name(self) -> str:
        return f"Exercise {self.number} ({self.grade_id})"


def _meta(cell) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {})


def registry(source: Path) -> dict[str, GradedExercise]:
    """Every graded exercise of the source assignments at ``source`` (a notebook, or a folder of them
    such as ``course/source`` or ``course/source/part3``), by grade id."""
    found, source = {}, Path(source)
    for path in [source] if source.is_file() else sorted(source.rglob("*.ipynb")):
        cells = json.loads(path.read_text())["cells"]
        numbers = {_meta(c).get("grade_id", "").removesuffix("-text"): m.group(1) for c in cells
                   if (m := _NUMBER.match("".join(c["source"])))}
        for cell in cells:
            meta, match = _meta(cell), ASSERT.search("".join(cell["source"]))
            if meta.get("grade") and match and meta.get("grade_id", "").endswith("-check"):
                grade_id = meta["grade_id"].removesuffix("-check")
                number = numbers.get(grade_id, numbers.get(grade_id.removesuffix("-result"), "?"))
                found[grade_id] = GradedExercise(grade_id, number, *match.groups(),
                                                 float(meta.get("points", 1)))
    return found


def student_cells(path: Path) -> dict[str, str]:
    """The student's source for each exercise in the notebook at ``path``, by grade id: nbgrader's
    solution cells, or a chapter's exercise-code cells (by the label of the exercise above them)."""
    path = Path(path)
    try:
        cells = json.loads(path.read_text())["cells"]
    except (OSError, ValueError, KeyError, TypeError):
        return {}
    found = {_meta(c)["grade_id"]: "".join(c["source"]) for c in cells
             if c.get("cell_type") == "code" and _meta(c).get("solution") and _meta(c).get("grade_id")}
    if not found:
        try:
            found = {e.label.removeprefix("ex-"): e.starter for e in exercises(path) if e.kind == "coding"}
        except (ValueError, KeyError, IndexError, AttributeError, TypeError):
            return {}
    return found


def exercises_in(path: Path, source: Path) -> list[GradedExercise]:
    """The exercises the notebook at ``path`` was handed out with, from the source assignments under
    ``source``: all of part N's for ``partN.ipynb``, all of chapter NN's coding exercises for a chapter
    ``NN_*.ipynb`` (so that a deleted cell scores 0, not nothing), else those whose cells it holds."""
    stem, source = Path(path).stem, Path(source)
    if (source / stem).is_dir():
        return list(registry(source / stem).values())
    known = registry(source)
    if stem[:2].isdigit():
        return [e for e in known.values() if e.grade_id.startswith(f"ch{stem[:2]}-") and not e.by_hand]
    cells = student_cells(path)
    return [e for e in known.values() if e.grade_id in cells]


def grade_exercise(path: Path, exercise: GradedExercise, timeout: float | None = None) -> Grade:
    """The grader's verdict on one exercise of the submitted notebook at ``path`` (out of process)."""
    source = student_cells(path).get(exercise.grade_id)
    if source is None:
        return Grade(exercise.check_id, False, f"Not yet: the cell of {exercise.name} is missing from "
                                               f"{Path(path).name}.", 0.0)
    return grade(exercise.check_id, source, exercise.function, **({} if timeout is None else {"timeout": timeout}))
