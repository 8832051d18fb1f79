"""Re-grade an nbgrader assignment out of process and write the scores into nbgrader's gradebook.

Run it after ``nbgrader autograde <assignment>``, from anywhere:

    python -m rl4llm.grading autograde <course dir> <assignment> [--student NAME] [--timeout SECONDS]

For each student's submitted notebook (``submitted/<student>/<assignment>/*.ipynb``) and each graded
exercise of the instructor's source assignment, the student's solution cell is graded by
:func:`rl4llm.grading.sandbox.grade`; the test cell's ``auto_score`` in ``gradebook.db`` becomes its
points or 0, the solution cell's ``auto_comment`` the verdict, and the test cell's output in the
autograded notebook the verdict (what ``nbgrader generate_feedback`` shows). Whatever the student's
code did inside nbgrader's kernel (patching the checks, say) therefore does not count.
"""
from __future__ import annotations

import json
from pathlib import Path

from .notebooks import registry, student_cells
from .sandbox import TIMEOUT, Grade, grade


def _feedback(notebook: Path, grades: dict[str, Grade]) -> None:
    """Replace each graded test cell's outputs in the autograded notebook by the grader's verdict."""
    if not notebook.is_file():
        return
    nb = json.loads(notebook.read_text())
    for cell in nb["cells"]:
        grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id", "").removesuffix("-check")
        if cell.get("cell_type") == "code" and cell["metadata"]["nbgrader"].get("grade") and grade_id in grades:
            cell["outputs"] = [{"output_type": "stream", "name": "stdout",
                                "text": f"Graded out of process: {grades[grade_id].message}\n"}]
    notebook.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")


def autograde(course: Path, assignment: str, students: list[str] | None = None,
              timeout: float = TIMEOUT) -> dict[tuple[str, str], Grade]:
    """Grade every submission of ``assignment`` in the nbgrader course at ``course`` out of process
    and write the scores into its gradebook (see the module's docstring); returns the grades by
    (student, grade id). Submissions nbgrader has not autograded yet are refused with ValueError."""
    from nbgrader.api import Gradebook, MissingEntry

    course = Path(course)
    source = course / "source" / assignment
    if not source.is_dir():
        raise ValueError(f"assignment must name a folder of {course / 'source'}, got {assignment!r}")
    known = {path.name: registry(path) for path in sorted(source.glob("*.ipynb"))}
    submitted = course / "submitted"
    names = students or (sorted(p.name for p in submitted.iterdir() if (p / assignment).is_dir())
                         if submitted.is_dir() else [])
    results: dict[tuple[str, str], Grade] = {}
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        for student in names:
            for notebook, exercises in known.items():
                path = submitted / student / assignment / notebook
                cells = student_cells(path)
                grades = {}
                for e in exercises.values():
                    if e.grade_id in cells:
                        grades[e.grade_id] = grade(e.check_id, cells[e.grade_id], e.function, timeout=timeout)
                    else:
                        grades[e.grade_id] = Grade(e.check_id, False, f"Not yet: the cell of {e.name} is "
                                                                      f"missing from {notebook}.", 0.0)
                    try:
                        cell = gradebook.find_grade(f"{e.grade_id}-check", path.stem, assignment, student)
                    except MissingEntry as err:
                        raise ValueError(f"run nbgrader autograde {assignment} first: {err}") from None
                    cell.auto_score = e.points if grades[e.grade_id].correct else 0.0
                    try:
                        gradebook.find_comment(e.grade_id, path.stem, assignment, student).auto_comment = \
                            grades[e.grade_id].message
                    except MissingEntry:
                        pass
                    results[(student, e.grade_id)] = grades[e.grade_id]
                gradebook.db.commit()
                _feedback(course / "autograded" / student / assignment / notebook, grades)
    return results
