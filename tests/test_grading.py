"""Grading a class: the nbgrader course matches the chapters; nbgrader's generate_assignment and
autograde, followed by the out-of-process re-grade (``python -m rl4llm.grading autograde``), score a
correct, a partly wrong, an untouched and an adversarial submission as they should; the pytest route
(course/test_submissions.py) gives the same verdicts without nbgrader, one test per exercise."""
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
from make_course import assignments  # noqa: E402

from rl4llm.syllabus import POINTS  # noqa: E402
from rl4llm.coursework import BEGIN, END, PARTS  # noqa: E402

#: Seconds an exercise may run in these tests (a hanging one costs this, once).
HANG = 10
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
            code += (f"\n\n\n_reference = {name}\n\n\ndef {name}(*args, **kwargs):\n"
                     f"    return -_reference(*args, **kwargs)\n")
        cell["source"] = code
    return nb


#: Part I's five exercises as a student who tries to game the grader writes them: (how, the cell).
ADVERSARIAL = {
    "patches the grader": "import rl4llm.exercises as x\nx.assert_correct = lambda *a, **k: print(\"Correct:\")\n\n"
                          "def my_softmax(logits, temperature=1.0):\n    return 0\n",
    "calls the library": "import rl4llm\n\nmy_decode_probs = rl4llm.decode_probs\n",
    "hangs": "def my_sequence_probability(step_probs):\n    while True:\n        pass\n",
    "floods output": None,           # the reference solution, printing 800k lines
    "mutates its inputs": "import numpy as np\n\n\ndef my_kl_divergence(p, q):\n    p = np.asarray(p)\n"
                          "    np.clip(p, 1e-300, None, out=p)\n    return 0.0\n",
}


def _adversarial(release: dict, source: dict) -> dict:
    """Part I's release with the cells of ADVERSARIAL, in order (the flood is a correct function)."""
    nb = json.loads(json.dumps(release))
    for cell, answer, code in zip(_solution_cells(nb), _solution_cells(source), ADVERSARIAL.values()):
        cell["source"] = code or MARKERS.sub("", "".join(answer["source"])) + \
            "\nfor _ in range(800_000):\n    print(\"flood\")\n"
    return nb


@pytest.fixture(scope="module")
def graded_course(tmp_path_factory):
    """Every part generated with nbgrader, three submissions each, autograded; the gradebook's scores."""
    from nbgrader.api import Gradebook

    course = tmp_path_factory.mktemp("course")
    shutil.copytree(ROOT / "course", course, dirs_exist_ok=True)
    students = {"alice": {}, "bob": {"wrong": 0}, "carol": {"blank": True}}
    seconds = {}
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
        if part == "part1":
            path = course / "submitted" / "dave" / part / f"{part}.ipynb"
            path.parent.mkdir(parents=True)
            path.write_text(json.dumps(_adversarial(release, source)))
        hang = [f"--ExecutePreprocessor.timeout={HANG}"] if part == "part1" else []   # dave's loop: 10 s, not 60
        result = subprocess.run(["nbgrader", "autograde", part, "--force", *hang], cwd=course, capture_output=True,
                                text=True)
        assert result.returncode == 0, result.stderr[-3000:]
        start = time.perf_counter()
        hang = ["--timeout", str(HANG)] if part == "part1" else []
        result = subprocess.run([sys.executable, "-m", "rl4llm.grading", "autograde", str(course), part, *hang],
                                capture_output=True, text=True)
        assert result.returncode == 0, result.stderr[-3000:]
        seconds[part] = time.perf_counter() - start
    print(f"out-of-process re-grade, seconds per part (all its submissions): {seconds}")
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        return {(part, student): (gradebook.find_submission(part, student).score,
                                  gradebook.find_submission(part, student).max_score)
                for part in PARTS for student in [*students, *(["dave"] if part == "part1" else [])]}, course


def test_nbgrader_scores_a_correct_a_wrong_and_a_blank_submission(graded_course):
    scores, course = graded_course
    for part in PARTS:
        full = scores[(part, "alice")][1]
        assert full >= len(PARTS[part][1])
        assert scores[(part, "alice")][0] == full, part
        assert scores[(part, "bob")][0] == full - POINTS["coding"], part            # one function returns its negative
        assert scores[(part, "carol")][0] == 0, part                 # stubs only
    assert scores[("part1", "dave")][0] == POINTS["coding"]                        # only the correct, chatty function counts
    gamed = json.loads((course / "autograded" / "dave" / "part1" / "part1.ipynb").read_text())
    said = [o["text"] for c in _graded(gamed) for o in c["outputs"]]
    for text, expected in zip(said, ["uses the library's own function (rl4llm.exercises)",
                                     "uses the library's own function (rl4llm.decode_probs)",
                                     f"did not finish within {HANG} s", "Correct:", "modifies its inputs in place"]):
        assert text.startswith("Graded out of process:") and expected in text, (expected, text)
    feedback = json.loads((course / "autograded" / "bob" / "part2" / "part2.ipynb").read_text())
    said = [o.get("text", "") for c in _graded(feedback) for o in c["outputs"]]
    assert sum(text.startswith("Graded out of process: Not yet:") for text in said) == 1, said


def test_the_pytest_route_grades_a_folder_of_submissions(graded_course, tmp_path):
    """One test per exercise, named by its number; the adversarial submission loses exactly the four
    exercises it games, each once, with the grader's message (not a printed "Correct:")."""
    _, course = graded_course
    for student, part in (("alice", "part2"), ("bob", "part2"), ("dave", "part1")):
        (tmp_path / student).mkdir(exist_ok=True)
        shutil.copy(course / "submitted" / student / part / f"{part}.ipynb", tmp_path / student / f"{part}.ipynb")
    start = time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rA", "-o", "addopts=",
                             str(ROOT / "course" / "test_submissions.py"), "--submissions", str(tmp_path),
                             "--timeout-per-exercise", str(HANG)], cwd=ROOT, capture_output=True, text=True,
                            env={**os.environ, "COLUMNS": "4000"})
    print(f"pytest route: {time.perf_counter() - start:.1f} s for three submissions")
    n = len(_graded(assignments()["part2"]))
    assert f"5 failed, {2 * n - 1 + 1} passed" in result.stdout, result.stdout[-3000:]
    assert "PASSED course/test_submissions.py::test_exercise[alice/part2.ipynb::Exercise 6.5 (ch06-write-jhat-" \
           "distribution)]" in result.stdout, result.stdout[-3000:]
    failed = [line for line in result.stdout.splitlines() if line.startswith("FAILED")]
    assert any("bob/part2.ipynb::Exercise 6.5" in line and "Not yet:" in line for line in failed), failed
    for number, says in (("1.4", "rl4llm.exercises"), ("2.5", "rl4llm.decode_probs"), ("3.4", "did not finish"),
                         ("5.6", "modifies its inputs")):
        assert sum(f"dave/part1.ipynb::Exercise {number} " in line and says in line for line in failed) == 1, failed


# ----------------------------------------------------------------------------- the sandbox, one exercise at a time
SOFTMAX = ("import numpy as np\n\n\ndef my_softmax(logits, temperature=1.0):\n"
           "    z = np.asarray(logits, dtype=float) / temperature\n    z = z - z.max(axis=-1, keepdims=True)\n"
           "    return np.exp(z) / np.exp(z).sum(axis=-1, keepdims=True)\n")


@pytest.mark.parametrize("how, exercise, function, source, correct, says", [
    ("correct", "softmax", "my_softmax", SOFTMAX, True, "Correct:"),
    ("patches the grader", "softmax", "my_softmax", ADVERSARIAL["patches the grader"], False,
     "uses the library's own function (rl4llm.exercises)"),
    ("calls the library", "softmax", "my_softmax", "import rl4llm\n\nmy_softmax = rl4llm.softmax\n", False,
     "uses the library's own function (rl4llm.softmax)"),
    ("imports a module of the library", "gae", "my_gae", "from rl4llm.credit import gae as my_gae\n", False,
     "uses the library's own function (rl4llm.credit)"),
    ("gets round the block", "softmax", "my_softmax",
     "import sys\n\ndel sys.modules['rl4llm']\nsys.meta_path.pop(0)\nimport rl4llm\n\nmy_softmax = rl4llm.softmax\n",
     False, "uses the library's own function (rl4llm)"),
    ("mutates its inputs", "clipped_objective", "my_clipped_objective",
     "import numpy as np\n\n\ndef my_clipped_objective(ratio, advantage, eps, eps_high=None):\n"
     "    high = eps if eps_high is None else eps_high\n    unclipped = ratio * advantage\n"
     "    np.clip(ratio, 1 - eps, 1 + high, out=ratio)\n    return np.minimum(unclipped, ratio * advantage)\n",
     False, "modifies its inputs in place"),
    ("hangs", "softmax", "my_softmax", "def my_softmax(logits, temperature=1.0):\n    while True:\n        pass\n",
     False, "did not finish within 3 s"),
    ("floods output", "softmax", "my_softmax", SOFTMAX + "\nfor _ in range(800_000):\n    print('flood')\n", True,
     "printed 4,800,000 characters"),
    ("writes past the cap", "softmax", "my_softmax", "import os\nwhile True:\n    os.write(1, b'x' * 65536)\n",
     False, "more than 8 MB of output"),
    ("a typo in an import", "softmax", "my_softmax", "import nump as np\n\n\ndef my_softmax(z, t=1.0):\n    return z\n",
     False, "your cell raised ModuleNotFoundError on line 1 before defining my_softmax"),
    ("returns None", "softmax", "my_softmax", "def my_softmax(logits, temperature=1.0):\n    pass\n", False,
     "returned None"),
    ("names another function", "softmax", "my_softmax", SOFTMAX.replace("my_softmax", "softmax"), False,
     "does not define a function named my_softmax"),
    ("imports an allowed building block", "score", "my_score",
     "import numpy as np\nfrom rl4llm import softmax\n\n\ndef my_score(logits, y):\n"
     "    return np.eye(len(logits))[y] - softmax(logits)\n", True, "Correct:"),
])
def test_the_sandbox_grades_each_way_a_submission_can_go(how, exercise, function, source, correct, says):
    from rl4llm.grading.sandbox import grade
    result = grade(exercise, source, function, timeout=3 if how == "hangs" else HANG)
    print(f"{how}: {result.seconds:.2f} s")
    assert result.correct is correct and says in result.message, (how, result.message)


def test_the_sandbox_lets_data_parallel_loss_call_grpo_loss():
    """Exercise 15.6 may call grpo_loss (from rl4llm.grpo, as its starter does), and nothing else there."""
    from rl4llm.grading.sandbox import grade
    nb = json.loads((ROOT / "course" / "source" / "part4" / "part4.ipynb").read_text())
    cell = next(c for c in _solution_cells(nb) if c["metadata"]["nbgrader"]["grade_id"] == "ch16-write-data-parallel")
    source = MARKERS.sub("", "".join(cell["source"]))
    assert grade("data_parallel_loss", source, "my_data_parallel_loss", timeout=HANG * 3).correct
    cheat = "from rl4llm.data_parallel import data_parallel_loss as my_data_parallel_loss\n"
    assert "rl4llm.data_parallel" in grade("data_parallel_loss", cheat, "my_data_parallel_loss", timeout=HANG * 3).message


def test_grade_refuses_what_is_not_a_coding_exercise():
    from rl4llm.grading.sandbox import grade
    with pytest.raises(ValueError, match="exercise_id"):
        grade("ex-ch07-partial-credit", SOFTMAX, "my_softmax")
    with pytest.raises(ValueError, match="function"):
        grade("softmax", SOFTMAX, "not a name")
