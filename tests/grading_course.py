"""The nbgrader course as the grading tests use it, generated once per test session.

``generated_course`` runs ``nbgrader generate_assignment`` on every part once for all test files and
workers (under a file lock, in the folder pytest-xdist's workers share, as ``built_book`` does), and
hands each caller a copy of its own. ``graded`` autogrades one part (the ``PART`` of the test file
that asks, one part a file, so that pytest-xdist grades the parts side by side): two submissions (all
right; the first coding and by-hand exercises wrong and the last ones left as released, the rest
right), plus Part I's adversarial one, through the one command that grades a class
(``python -m rl4llm.course.grading autograde``: nbgrader's pass with its kernel in the bubblewrap sandbox and
each test cell scored out of process).
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from filelock import FileLock

from rl4llm.course.assignments import BEGIN, END
from rl4llm.exercises import SPECS
from rl4llm.course.grading.notebooks import registry

ROOT = Path(__file__).resolve().parents[1]
#: Seconds an exercise may run in these tests (a hanging one costs this, once).
HANG = 10
MARKERS = re.compile(rf"^[ \t]*({re.escape(BEGIN)}|{re.escape(END)})\n", re.M)


def solution_cells(nb: dict) -> list[dict]:
    return [c for c in nb["cells"] if c["metadata"].get("nbgrader", {}).get("solution")]


def graded_cells(nb: dict) -> list[dict]:
    return [c for c in nb["cells"] if c["metadata"].get("nbgrader", {}).get("grade")]


@pytest.fixture(scope="session")
def generated_course(tmp_path_factory) -> Path:
    """A copy of course/ with every part generated (``release/``, and ``gradebook.db`` knowing them)."""
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    generated, outcome = shared / "course-generated", shared / "course-generated.json"
    with FileLock(str(shared / "course-generated.lock")):
        if not outcome.exists():
            shutil.copytree(ROOT / "course", generated, dirs_exist_ok=True)
            result = subprocess.run(["nbgrader", "generate_assignment", "*", "--force"], cwd=generated,
                                    capture_output=True, text=True)
            outcome.write_text(json.dumps({"returncode": result.returncode, "log": result.stderr[-3000:]}))
    built = json.loads(outcome.read_text())
    assert built["returncode"] == 0, built["log"]
    course = tmp_path_factory.mktemp("course")
    shutil.copytree(generated, course, dirs_exist_ok=True)
    return course


def answers(course: Path, part: str) -> tuple[dict, dict, dict]:
    """Part ``part``'s release, its source and its graded exercises by grade id."""
    release = json.loads((course / "release" / part / f"{part}.ipynb").read_text())
    source = json.loads((course / "source" / part / f"{part}.ipynb").read_text())
    return release, source, registry(course / "source" / part)


def submission(course: Path, part: str, wrong: bool = False, blank: bool = False) -> dict:
    """The release with its solution cells filled from the source (markers removed); when ``wrong``,
    the first coding exercise's function returns its negative and the first by-hand answer is its
    exercise's first common wrong number; when ``blank``, the last coding and the last by-hand exercise
    keep the release's stub (every part has at least two of each)."""
    release, source, exercises = answers(course, part)
    nb = json.loads(json.dumps(release))
    graded_ids = [c["metadata"]["nbgrader"]["grade_id"] for c in solution_cells(nb)
                  if c["metadata"]["nbgrader"]["grade_id"] in exercises]
    stubs = {[g for g in graded_ids if exercises[g].by_hand is by_hand][-1] for by_hand in (False, True)} if blank else set()
    spoiled = set()
    for cell, answer in zip(solution_cells(nb), solution_cells(source)):
        grade_id = cell["metadata"]["nbgrader"]["grade_id"]
        exercise = exercises.get(grade_id)
        if grade_id in stubs:
            continue
        if exercise is None:                  # a written exercise or an experiment, graded by hand
            cell["source"] = "My prediction, my runs and what I make of them."
            continue
        code = MARKERS.sub("", "".join(answer["source"]))
        if wrong and exercise.by_hand not in spoiled:
            spoiled.add(exercise.by_hand)
            if exercise.by_hand:
                code = f"{exercise.function} = {SPECS[exercise.check_id].mistakes[0][0]!r}\n"
            else:
                name = exercise.function
                code += (f"\n\n\n_reference = {name}\n\n\ndef {name}(*args, **kwargs):\n"
                         f"    return -_reference(*args, **kwargs)\n")
        cell["source"] = code
    return nb


#: Part I's coding exercises as a student who tries to game the grader writes them: (how, the cell).
ADVERSARIAL = {
    "patches the grader": "import rl4llm.exercises as x\nx.assert_correct = lambda *a, **k: print(\"Correct:\")\n\n"
                          "def my_softmax(logits, temperature=1.0):\n    return 0\n",
    "calls the library": "import rl4llm\n\nmy_decode_probs = rl4llm.decode_probs\n",
    "hangs": "def my_sequence_probability(step_probs):\n    while True:\n        pass\n",
    "floods output": None,           # the reference solution, printing 800k lines
    "mutates its inputs": "import numpy as np\n\n\ndef my_kl_divergence(p, q):\n    p = np.asarray(p)\n"
                          "    np.clip(p, 1e-300, None, out=p)\n    return 0.0\n",
}
#: Part I's by-hand answers from the same student, with what the grader says of each ({name}: the
#: answer's variable, {label}: the exercise, {comma}: the right answer with a decimal comma).
ADVERSARIAL_BY_HAND = {
    "reads the answer key": ("from rl4llm.exercises import SPECS\n{name} = SPECS[\"{label}\"].value\n",
                             "uses the library (rl4llm.exercises)"),
    "not a number": ("{name} = \"about a tenth\"\n", "enter one number"),
    "an emptied cell": ("", "does not set {name}"),
    "None": ("{name} = None\n", "{name} is None"),
    "right, as text with a decimal comma": ("{name} = \"{comma}\"\n", "Correct:"),
}


def adversarial(course: Path) -> dict:
    """Part I's release with the cells of ADVERSARIAL and ADVERSARIAL_BY_HAND, in order (the flood is a
    correct function)."""
    release, source, exercises = answers(course, "part1")
    nb = json.loads(json.dumps(release))
    coding, by_hand = iter(ADVERSARIAL.values()), iter(ADVERSARIAL_BY_HAND.values())
    for cell, answer in zip(solution_cells(nb), solution_cells(source)):
        exercise = exercises.get(cell["metadata"]["nbgrader"]["grade_id"])
        if exercise is None:                  # graded by hand: left as released
            continue
        if exercise.by_hand:
            comma = f"{SPECS[exercise.check_id].value:.6f}".replace(".", ",")
            cell["source"] = next(by_hand)[0].format(name=exercise.function, label=exercise.check_id, comma=comma)
        else:
            code = next(coding)
            cell["source"] = code or MARKERS.sub("", "".join(answer["source"])) + \
                "\nfor _ in range(800_000):\n    print(\"flood\")\n"
    return nb


def write(course: Path, student: str, part: str, nb: dict) -> None:
    path = course / "submitted" / student / part / f"{part}.ipynb"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(nb))


def scores_in(course: Path, part: str, students) -> dict[str, tuple[float, float]]:
    """Each student's (score, max score) of ``part`` in the course's gradebook."""
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        return {student: (gradebook.find_submission(part, student).score,
                          gradebook.find_submission(part, student).max_score) for student in students}


def grade_class(course: Path, part: str, *options: str) -> subprocess.CompletedProcess:
    """``python -m rl4llm.course.grading autograde <course> <part> [options]``, as an instructor runs it."""
    return subprocess.run([sys.executable, "-m", "rl4llm.course.grading", "autograde", str(course), part, *options],
                          capture_output=True, text=True)


@pytest.fixture(scope="module")
def graded(request, generated_course) -> tuple[dict, Path]:
    """The test file's ``PART`` graded by the one command: each student's (score, max score) from the
    gradebook, and the course folder."""
    part, course = request.module.PART, generated_course
    students = {"alice": {}, "bob": {"wrong": True, "blank": True}}
    for student, how in students.items():
        write(course, student, part, submission(course, part, **how))
    if part == "part1":
        write(course, "dave", part, adversarial(course))
    start = time.perf_counter()
    hang = ["--timeout", str(HANG)] if part == "part1" else []          # dave's loop: 10 s, not 60
    result = grade_class(course, part, *hang)
    assert result.returncode == 0, result.stderr[-3000:]
    print(f"grading {part}: {time.perf_counter() - start:.1f} s for its submissions\n{result.stdout}")
    return scores_in(course, part, [*students, *(["dave"] if part == "part1" else [])]), course


def feedback(course: Path, student: str, part: str) -> dict[str, str]:
    """What the autograded notebook's test cells say, by grade id."""
    from rl4llm.course.grading.gradebook import feedback_texts

    return feedback_texts(course, part, student)


# ----------------------------------------------------------------------------- the tests each part's file runs
def test_nbgrader_scores_right_wrong_and_blank_answers(graded, request):
    """alice gets every point graded automatically (the written work and experiments wait for the
    instructor's grading, and count in the maximum); bob, whose first coding and by-hand exercises are
    wrong and whose last ones are the release's stubs, loses those four exercises' points and no other,
    each with its diagnosis in the feedback: the wrong by-hand number is named as its common slip, the
    stubbed by-hand exercise is told it has no answer yet, the stubbed function that it raised
    NotImplementedError."""
    scores, course = graded
    part = request.module.PART
    _, source, exercises = answers(course, part)
    full = sum(e.points for e in exercises.values())
    assert scores["alice"] == (full, sum(c["metadata"]["nbgrader"]["points"] for c in graded_cells(source))), scores
    of_kind = {by_hand: [e for e in exercises.values() if e.by_hand is by_hand] for by_hand in (False, True)}
    first, last = {k: v[0] for k, v in of_kind.items()}, {k: v[-1] for k, v in of_kind.items()}
    lost = [*first.values(), *last.values()]
    assert scores["bob"][0] == full - sum(e.points for e in lost), scores
    said = feedback(course, "bob", part)
    assert sorted(k for k, text in said.items() if "Not yet:" in text) == sorted(e.grade_id for e in lost), said
    assert set(said) == set(exercises), said
    slip = SPECS[first[True].check_id].mistakes[0][1]
    assert said[first[True].grade_id] == f"Not yet: {slip}."
    assert "no answer yet" in said[last[True].grade_id], said[last[True].grade_id]
    assert "NotImplementedError" in said[last[False].grade_id], said[last[False].grade_id]


def test_an_adversarial_submission_scores_only_what_it_earned(graded):
    """Part I's dave: of the coding exercises only the correct, chatty function counts; of the by-hand
    ones only the right number written as text with a decimal comma; each other cell says why it
    scores 0 (nbgrader's own kernel ran the patched checks and the answer key's number)."""
    from rl4llm.course.syllabus import POINTS

    scores, course = graded
    assert scores["dave"][0] == POINTS["coding"] + POINTS["by hand"], scores
    exercises = answers(course, "part1")[2]
    said = feedback(course, "dave", "part1")
    coding = [said[g] for g, e in exercises.items() if not e.by_hand]
    for text, expected in zip(coding, ["uses the library's own function (rl4llm.exercises)",
                                       "uses the library's own function (rl4llm.decode_probs)",
                                       f"did not finish within {HANG} s", "Correct:", "modifies its inputs in place"]):
        assert expected in text, (expected, text)
    by_hand = [(said[g], e.function) for g, e in exercises.items() if e.by_hand]
    assert len(by_hand) == len(ADVERSARIAL_BY_HAND)
    for (text, name), (_, expected) in zip(by_hand, ADVERSARIAL_BY_HAND.values()):
        assert expected.format(name=name) in text, (expected, text)
