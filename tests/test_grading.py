"""Grading a class: the nbgrader course matches the chapters, and nbgrader's own generate_assignment
and autograde score a correct, a partly wrong and an untouched submission as they should; the pytest
route (course/test_submissions.py) gives the same verdicts without nbgrader."""
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
from make_course import assignments  # noqa: E402

from rl4llm.coursework import BEGIN, END, PARTS  # noqa: E402

MARKERS = re.compile(rf"^[ \t]*({re.escape(BEGIN)}|{re.escape(END)})\n", re.M)


def _solution_cells(nb):
    return [c for c in nb["cells"] if c["metadata"].get("nbgrader", {}).get("solution")]


def _graded(nb):
    return [c for c in nb["cells"] if c["metadata"].get("nbgrader", {}).get("grade")]


def test_the_course_is_written_from_the_chapters():
    for part, nb in assignments().items():
        stored = json.loads((ROOT / "course" / "source" / part / f"{part}.ipynb").read_text())
        assert stored == nb, f"course/source/{part} is stale: run python scripts/make_course.py"
        assert len(_graded(nb)) >= len(PARTS[part][1]), f"{part}: fewer graded exercises than chapters"


def _submission(release: dict, source: dict, wrong: int | None = None, blank: bool = False) -> dict:
    """The released notebook with its solution cells filled from the source (markers removed); the
    ``wrong``-th function made to return its negative; nothing filled when ``blank``."""
    nb = json.loads(json.dumps(release))
    for k, (cell, answer) in enumerate(zip(_solution_cells(nb), _solution_cells(source))):
        if blank:
            continue
        code = MARKERS.sub("", "".join(answer["source"]))
        if k == wrong:
            name = re.search(r"^def (\w+)\(", code, re.M).group(1)
            code += (f"\n\n\n_reference = {name}\n\n\ndef {name}(*args):\n"
                     f"    return -_reference(*args)\n")
        cell["source"] = code
    return nb


@pytest.fixture(scope="module")
def graded_course(tmp_path_factory):
    """Every part generated with nbgrader, three submissions each, autograded; the gradebook's scores."""
    from nbgrader.api import Gradebook

    course = tmp_path_factory.mktemp("course")
    shutil.copytree(ROOT / "course", course, dirs_exist_ok=True)
    students = {"alice": {}, "bob": {"wrong": 0}, "carol": {"blank": True}}
    for part in PARTS:
        subprocess.run(["nbgrader", "generate_assignment", part, "--force"], cwd=course, check=True,
                       capture_output=True)
        release = json.loads((course / "release" / part / f"{part}.ipynb").read_text())
        source = json.loads((course / "source" / part / f"{part}.ipynb").read_text())
        assert "raise NotImplementedError()" in "".join("".join(c["source"]) for c in _solution_cells(release))
        assert BEGIN not in json.dumps(release)
        for student, how in students.items():
            path = course / "submitted" / student / part / f"{part}.ipynb"
            path.parent.mkdir(parents=True)
            path.write_text(json.dumps(_submission(release, source, **how)))
        result = subprocess.run(["nbgrader", "autograde", part, "--force"], cwd=course, capture_output=True,
                                text=True)
        assert result.returncode == 0, result.stderr[-3000:]
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        return {(part, student): (gradebook.find_submission(part, student).score,
                                  gradebook.find_submission(part, student).max_score)
                for part in PARTS for student in students}, course


def test_nbgrader_scores_a_correct_a_wrong_and_a_blank_submission(graded_course):
    scores, course = graded_course
    for part in PARTS:
        full = scores[(part, "alice")][1]
        assert full >= len(PARTS[part][1])
        assert scores[(part, "alice")][0] == full, part
        assert scores[(part, "bob")][0] == full - 1, part            # one function returns its negative
        assert scores[(part, "carol")][0] == 0, part                 # stubs only
    feedback = json.loads((course / "autograded" / "bob" / "part2" / "part2.ipynb").read_text())
    errors = [o for c in feedback["cells"] for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert any("Not yet:" in o["evalue"] for o in errors), errors


def test_the_pytest_route_grades_a_folder_of_submissions(graded_course, tmp_path):
    _, course = graded_course
    for student in ("alice", "bob"):
        shutil.copy(course / "submitted" / student / "part2" / "part2.ipynb", tmp_path / f"{student}_part2.ipynb")
    result = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-o", "addopts=",
                             str(ROOT / "course" / "test_submissions.py"), "--submissions", str(tmp_path)],
                            cwd=ROOT, capture_output=True, text=True)
    n = len(_graded(assignments()["part2"]))
    assert f"1 failed, {2 * n - 1} passed" in result.stdout, result.stdout[-3000:]
    assert "bob_part2.ipynb" in result.stdout and "Not yet:" in result.stdout
