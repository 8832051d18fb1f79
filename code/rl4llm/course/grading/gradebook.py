"""Grade a class with one command: nbgrader's pass, sandboxed, one student at a time.

    python -m rl4llm.course.grading autograde <course dir> <assignment> [--student NAME] [--timeout SECONDS]

For each student with a submission (``submitted/<student>/<assignment>/``), in turn, :func:`autograde`
runs nbgrader's ``autograde`` with the course's configuration (``course/nbgrader_config.py``): the
submission's kernel runs in the bubblewrap sandbox, and each autograded test cell gets the verdict of
the out-of-process grader (:mod:`rl4llm.course.grading.nbgrader_sandbox`), which nbgrader records in
``gradebook.db``. Then, from outside any sandbox, it writes each verdict into the gradebook as the
solution cell's comment and prints the student's score. A student whose notebook nbgrader cannot
grade (not a notebook, say) gets 0 on every autograded cell and a line in the log saying why; the
other students are graded as usual. An added scratch cell, a copied solution cell (nbgrader grades
the last copy) or a renamed grade id changes that student's grades alone.

Re-running this command, ``nbgrader autograde`` alone, or formgrader's button gives the same scores:
each of them computes the scores in the sandbox.
"""
from __future__ import annotations

import re
import time
import warnings
from pathlib import Path

from . import bubblewrap
from .nbgrader_sandbox import verdicts
from .notebooks import registry
from .sandbox import TIMEOUT


def _config(course: Path, timeout: float):
    """The course's nbgrader configuration, rooted at ``course``, with ``timeout`` per exercise."""
    from traitlets.config.loader import PyFileConfigLoader

    config = PyFileConfigLoader("nbgrader_config.py", path=str(course)).load_config()
    config.CourseDirectory.root = str(course)
    config.OutOfProcessGrades.timeout = int(max(1, round(timeout)))
    config.Execute.timeout = int(max(1, round(timeout)))
    return config


#: The last line of a Python traceback: an exception's dotted name, then its message.
_EXCEPTION = re.compile(r"^\s*([A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt))(?::\s*(.*))?$")


def cause(result: dict) -> str:
    """Why nbgrader could not grade a submission: the last exception its log's traceback names (its
    own closing ``NbGraderException`` says only "see the above traceback"), with the message's first
    line, else the last line of its error."""
    lines = result.get("log", "").splitlines()
    found = [(i, m) for i, line in enumerate(lines) if (m := _EXCEPTION.match(line))
             and not m.group(1).endswith("NbGraderException")]
    if found:
        i, match = found[-1]
        after = lines[i + 1].strip() if i + 1 < len(lines) else ""
        message = (match.group(2) or "").strip()
        if after.startswith("The message was:"):            # a cell's timeout says which on its next line
            message += " " + after
        return f"{match.group(1)}: {message}" if message else match.group(1)
    return (result.get("error") or "nbgrader failed").strip().splitlines()[-1]


def _zero(gradebook, course: Path, assignment: str, student: str, reason: str) -> None:
    """Every autograded cell of the student's submission scores 0, each with ``reason`` as its comment."""
    from nbgrader.api import MissingEntry

    for path in sorted((course / "source" / assignment).glob("*.ipynb")):
        notebook = path.stem
        for e in registry(path).values():
            try:
                cell = gradebook.find_grade(f"{e.grade_id}-check", notebook, assignment, student)
            except MissingEntry:
                continue
            cell.auto_score, cell.needs_manual_grade = 0.0, False
            try:
                gradebook.find_comment(e.grade_id, notebook, assignment, student).auto_comment = reason
            except MissingEntry:
                pass
    gradebook.db.commit()


def unreadable(folder: Path, notebooks: list[str]) -> list[str]:
    """Why each of ``notebooks`` in the submission ``folder`` is not a notebook nbgrader can read."""
    import nbformat

    found = []
    for name in notebooks:
        if (folder / name).is_file():
            try:
                nbformat.read(folder / name, as_version=4)
            except Exception as err:             # noqa: BLE001 (any failure to read is reported)
                found.append(f"{name} is not a notebook nbgrader can read: {str(err).splitlines()[0][:200]}")
    return found


def autograde(course: Path, assignment: str, students: list[str] | None = None, timeout: float = TIMEOUT,
              say=print) -> dict[str, tuple[float, float]]:
    """Grade ``assignment`` of the nbgrader course at ``course`` (see the module's docstring): every
    submission, or those of ``students``. Returns each student's (score, max score) from the gradebook;
    ``say`` gets one line of progress per student. Raises ``ValueError`` for an unknown assignment and
    :class:`~rl4llm.course.grading.bubblewrap.SandboxUnavailable` where the sandbox cannot run."""
    from nbgrader.api import Gradebook, MissingEntry
    from nbgrader.apps import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory

    course = Path(course).resolve()
    source = course / "source" / assignment
    if not source.is_dir():
        raise ValueError(f"assignment must name a folder of {course / 'source'}, got {assignment!r}")
    bubblewrap.require()
    submitted = course / "submitted"
    names = students or (sorted(p.name for p in submitted.iterdir() if (p / assignment).is_dir())
                         if submitted.is_dir() else [])
    config = _config(course, timeout)
    api = NbGraderAPI(CourseDirectory(config=config), config=config)
    notebooks = sorted(p.name for p in source.glob("*.ipynb"))
    scores = {}
    for i, student in enumerate(names, 1):
        start = time.perf_counter()
        with warnings.catch_warnings():                  # nbgrader's own SQLAlchemy session notices
            warnings.filterwarnings("ignore", message="Object of type <Submitted")
            result = api.autograde(assignment, student, force=True, create=True)
        failure = [] if result["success"] else (unreadable(course / "submitted" / student / assignment, notebooks) or
                                                [cause(result)])
        problems = failure + [line.split("] ", 1)[-1] for line in result.get("log", "").splitlines()
                              if "graded as an ordinary cell" in line or "No submitted file" in line]
        with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
            if not result["success"]:
                try:
                    _zero(gradebook, course, assignment, student, f"Not graded: nbgrader could not grade this "
                                                                  f"submission ({failure[0]}); scored 0.")
                except MissingEntry:
                    pass
            else:
                for notebook in notebooks:
                    path = course / "autograded" / student / assignment / notebook
                    if not path.is_file():
                        continue
                    for grade_id, message in verdicts(path).items():
                        try:
                            gradebook.find_comment(grade_id, Path(notebook).stem, assignment, student).auto_comment = message
                        except MissingEntry:
                            pass
                gradebook.db.commit()
            try:
                submission = gradebook.find_submission(assignment, student)
                scores[student] = (submission.score, submission.max_score)
            except MissingEntry:
                scores[student] = (0.0, 0.0)
        note = "" if not problems else " (" + "; ".join(dict.fromkeys(problems)) + ")"
        say(f"[{i}/{len(names)}] {student}: {scores[student][0]:g} of {scores[student][1]:g} points, "
            f"{time.perf_counter() - start:.1f} s{note}")
    return scores


def feedback_texts(course: Path, assignment: str, student: str) -> dict[str, str]:
    """The verdict each autograded test cell shows in ``student``'s autograded notebooks, by grade id."""
    found = {}
    for path in sorted((Path(course) / "autograded" / student / assignment).glob("*.ipynb")):
        found.update(verdicts(path))
    return found
