"""Grade a folder of submitted notebooks without JupyterHub or nbgrader: one test per exercise.

    python -m pytest -p no:cacheprovider -o addopts= course/test_submissions.py --submissions path/to/folder -rA

Every ``*.ipynb`` under the folder (an nbgrader assignment ``partN.ipynb`` from course/release, or a
chapter of the student edition) gets one test per exercise it was handed out with that a grader
checks (an assignment's coding and by-hand exercises; a chapter's coding exercises, since a chapter
has no cell for a by-hand answer), named like ``alice/part1.ipynb::Exercise 1.4 (ch01-write-softmax)``.
Written work and experiments are graded by hand (nbgrader's formgrader). Each test grades the
student's cell out of process (``rl4llm.course.grading``: a fresh Python in a bubblewrap sandbox, without
the library, a time limit per exercise) and passes or fails on the grader's verdict, whose message
the failure shows. Nothing else in the
notebook runs, so a hanging or crashing cell costs only its own exercise. `-o addopts=` turns off
the book's own nbval options; `--junitxml=grades.xml` writes the results for a spreadsheet.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from rl4llm.course.grading.notebooks import exercises_in, grade_exercise

SOURCE = Path(__file__).resolve().parent / "source"


def pytest_generate_tests(metafunc):
    if "submission" not in metafunc.fixturenames:
        return
    folder = metafunc.config.getoption("--submissions")
    if folder is None:
        pytest.exit("pass --submissions FOLDER (a folder of submitted notebooks)", returncode=4)
    params, ids = [], []
    for path in sorted(Path(folder).rglob("*.ipynb")):
        if ".ipynb_checkpoints" in path.parts:
            continue
        for exercise in exercises_in(path, SOURCE):
            params.append((str(path), exercise))
            ids.append(f"{path.relative_to(folder)}::{exercise.name}")
    metafunc.parametrize("submission", params, ids=ids)


def test_exercise(submission, request):
    path, exercise = submission
    result = grade_exercise(Path(path), exercise, request.config.getoption("--timeout-per-exercise"))
    assert result.correct, result.message
