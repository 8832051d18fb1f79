"""Grading a class: the nbgrader course matches the chapters; its release holds no solution and no
by-hand answer; the pytest route (course/test_submissions.py) grades a folder of submissions without
nbgrader, one test per exercise; the sandbox grades each way a coding or a by-hand cell can go. The
round trip through nbgrader, one part a file, is in tests/test_grading_part*.py (tests/grading_course.py)."""
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from grading_course import (ADVERSARIAL, ADVERSARIAL_BY_HAND, HANG, MARKERS, adversarial, answers,  # noqa: F401
                            generated_course, graded_cells, solution_cells, submission)

from rl4llm.course.assignments import BEGIN, PARTS, answer_name
from rl4llm.exercises import SPECS, NumericExercise

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
from make_course import assignments  # noqa: E402


def test_the_course_is_written_from_the_chapters():
    for part, nb in assignments().items():
        stored = json.loads((ROOT / "course" / "source" / part / f"{part}.ipynb").read_text())
        assert stored == nb, f"course/source/{part} is stale: run python scripts/make_course.py"
        assert len(graded_cells(nb)) >= len(PARTS[part][1]), f"{part}: fewer graded exercises than chapters"


def test_every_by_hand_exercise_is_a_graded_cell_of_its_part():
    """Each by-hand exercise of the book, and each assigned experiment whose result an answer box checks, is in
    the part of its chapter: a solution cell that sets its answer's name, then a graded test cell worth a by-hand
    answer's points."""
    from rl4llm.course.assignments import checked_result, exercises
    from rl4llm.course.syllabus import POINTS, assigned

    found = {}
    for part, nb in assignments().items():
        for cell in graded_cells(nb):
            if "assert_correct(" not in "".join(cell["source"]):
                continue                               # graded by hand
            call = "".join(cell["source"]).rsplit("assert_correct(", 1)[1]
            label = json.loads(call.split(",")[0])
            if isinstance(SPECS.get(label), NumericExercise):
                found[label] = part
                assert cell["metadata"]["nbgrader"]["points"] == POINTS["by hand"]
    chapters = sorted((ROOT / "book").glob("[0-9][0-9]_*.ipynb"))
    everything = [e for path in chapters for e in exercises(path)]
    checked = {e.label for e in everything if checked_result(e)}
    assigned_checked = {e.label for path in chapters for e in assigned(exercises(path)) if checked_result(e)}
    assert checked - assigned_checked, "no checked experiment outside the syllabus's choice: the test sees none"
    assert set(found) == {k for k, v in SPECS.items() if isinstance(v, NumericExercise)} - (checked - assigned_checked)
    assert all(SPECS[label].chapter in PARTS[part][1] for label, part in found.items()), found


def test_each_assignment_holds_what_the_syllabus_assigns_with_its_points():
    """A part's graded cells are the exercises the syllabus assigns from its chapters, each worth the
    syllabus's points: autograded cells for by-hand and coding work, manually graded answer cells for
    written work and experiments; so the plans and the gradebook add up the same."""
    from rl4llm.course.assignments import checked_result, exercises
    from rl4llm.course.syllabus import CHECKED_RESULT, RUBRICS, assigned, kind, points

    chapters = sorted((ROOT / "book").glob("[0-9][0-9]_*.ipynb"))
    for part, nb in assignments().items():
        planned = {e.label.removeprefix("ex-"): e for path in chapters if int(path.name[:2]) in PARTS[part][1]
                   for e in assigned(exercises(path))}
        cells = {c["metadata"]["nbgrader"]["grade_id"].removesuffix("-check"): c for c in graded_cells(nb)}
        results = {f"{grade_id}-result" for grade_id, e in planned.items() if checked_result(e)}
        assert set(cells) == set(planned) | results, part
        for grade_id, e in planned.items():
            meta = cells[grade_id]["metadata"]["nbgrader"]
            result = cells.get(f"{grade_id}-result", {"metadata": {"nbgrader": {"points": 0}}})
            assert meta["points"] + result["metadata"]["nbgrader"]["points"] == points(e), grade_id
            assert (cells[grade_id]["cell_type"], meta["solution"]) == (
                ("markdown", True) if kind(e) in RUBRICS else ("code", False)), grade_id
            if checked_result(e):
                assert result["metadata"]["nbgrader"]["points"] == CHECKED_RESULT.points
                assert (result["cell_type"], result["metadata"]["nbgrader"]["solution"]) == ("code", False)


def _by_hand_lines(source: dict) -> list[str]:
    """The lines between nbgrader's markers in a source assignment's by-hand cells (each sets an answer)."""
    lines = []
    for cell in solution_cells(source):
        text = "".join(cell["source"])
        if text.startswith("# Exercise") and BEGIN in text:
            lines += [line for line in text.split(BEGIN)[1].split("\n")[1:-2] if line.strip()]
    return lines


def test_the_release_holds_no_solution_and_no_by_hand_answer(generated_course):
    """nbgrader's release of every part: each solution cell is its stub, no marker is left, and no
    by-hand answer is there: neither the source's answer line nor check()'s message for it, nor the
    answer's full value where it has too many digits to be one of the text's numbers."""
    for part in PARTS:
        release, source, exercises = answers(generated_course, part)
        text = json.dumps(release, ensure_ascii=False)
        assert BEGIN not in text
        assert all("raise NotImplementedError()" in "".join(c["source"]) if c["cell_type"] == "code" else
                   "".join(c["source"]) == "YOUR ANSWER HERE" for c in solution_cells(release))
        lines = _by_hand_lines(source)
        assert len(lines) == sum(e.by_hand for e in exercises.values()) > 0, part
        values = [SPECS[e.check_id].value for e in exercises.values() if e.by_hand]
        forms = lines + [f"is {v:.4g} (answers within" for v in values] + [repr(v) for v in values if len(repr(v)) > 8]
        assert not [form for form in forms if form in text], part


def test_the_pytest_route_grades_a_folder_of_submissions(generated_course, tmp_path):
    """One test per exercise, named by its number; the adversarial submission loses exactly the
    exercises it games, each once, with the grader's message (not a printed "Correct:")."""
    for student, part, nb in (("alice", "part2", submission(generated_course, "part2")),
                              ("bob", "part2", submission(generated_course, "part2", wrong=True)),
                              ("dave", "part1", adversarial(generated_course))):
        (tmp_path / student).mkdir()
        (tmp_path / student / f"{part}.ipynb").write_text(json.dumps(nb))
    start = time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rA", "-o", "addopts=",
                             str(ROOT / "course" / "test_submissions.py"), "--submissions", str(tmp_path),
                             "--timeout-per-exercise", str(HANG)], cwd=ROOT, capture_output=True, text=True,
                            env={**os.environ, "COLUMNS": "4000"})
    print(f"pytest route: {time.perf_counter() - start:.1f} s for three submissions")
    n, m = (len(answers(generated_course, part)[2]) for part in ("part2", "part1"))
    lost = len(ADVERSARIAL) - 1 + len(ADVERSARIAL_BY_HAND) - 1           # dave keeps the chatty function and the comma
    assert f"{2 + lost} failed, {2 * n - 2 + m - lost} passed" in result.stdout, result.stdout[-3000:]
    assert "PASSED course/test_submissions.py::test_exercise[alice/part2.ipynb::Exercise 6.5 (ch06-write-jhat-" \
           "distribution)]" in result.stdout, result.stdout[-3000:]
    failed = [line for line in result.stdout.splitlines() if line.startswith("FAILED")]
    assert sum("bob/part2.ipynb::Exercise " in line and "Not yet:" in line for line in failed) == 2, failed
    for number, says in (("1.4", "rl4llm.exercises"), ("2.5", "rl4llm.decode_probs"), ("3.4", "did not finish"),
                         ("5.6", "modifies its inputs"), ("1.3", "uses the library (rl4llm.exercises)"),
                         ("2.4", "enter one number")):
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
    ("imports a module of the library", "gae", "my_gae", "from rl4llm.math.credit import gae as my_gae\n", False,
     "uses the library's own function (rl4llm.math)"),
    ("gets round the block", "softmax", "my_softmax",
     "import sys\n\ndel sys.modules['rl4llm']\nsys.meta_path.pop(0)\nimport rl4llm\n\nmy_softmax = rl4llm.softmax\n",
     False, "No module named 'rl4llm'"),
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
    ("returns complex numbers", "softmax", "my_softmax",
     "import numpy as np\n\n\ndef my_softmax(logits, temperature=1.0):\n    return np.exp(np.asarray(logits) * 1j)\n",
     False, "the reference gives"),
    ("returns a structured array", "softmax", "my_softmax",
     "import numpy as np\n\n\ndef my_softmax(logits, temperature=1.0):\n"
     "    return np.zeros(len(logits), dtype=[('a', 'f8'), ('b', 'i4')])\n", False, "not numbers"),
    ("forges its result file and exits", "softmax", "my_softmax",
     "import os\n\n\ndef my_softmax(logits, temperature=1.0):\n"
     "    open('result.json', 'w').write('{\"calls\": [{\"output\": \"../../etc/passwd\"}]}')\n    os._exit(0)\n",
     False, "could not be read back"),
    ("imports an allowed building block", "score", "my_score",
     "import numpy as np\nfrom rl4llm import softmax\n\n\ndef my_score(logits, y):\n"
     "    return np.eye(len(logits))[y] - softmax(logits)\n", True, "Correct:"),
])
def test_the_sandbox_grades_each_way_a_submission_can_go(how, exercise, function, source, correct, says):
    from rl4llm.course.grading.sandbox import grade
    result = grade(exercise, source, function, timeout=3 if how == "hangs" else HANG)
    print(f"{how}: {result.seconds:.2f} s")
    assert result.correct is correct and says in result.message, (how, result.message)


def test_the_sandbox_lets_data_parallel_loss_call_grpo_loss():
    """Exercise 16.6 may call grpo_loss (from rl4llm.llm.grpo, as its starter does), and nothing else there."""
    from rl4llm.course.grading.sandbox import grade
    nb = json.loads((ROOT / "course" / "source" / "part4" / "part4.ipynb").read_text())
    cell = next(c for c in solution_cells(nb) if c["metadata"]["nbgrader"]["grade_id"] == "ch16-write-data-parallel")
    source = MARKERS.sub("", "".join(cell["source"]))
    assert grade("data_parallel_loss", source, "my_data_parallel_loss", timeout=HANG * 3).correct
    cheat = "from rl4llm.llm.data_parallel import data_parallel_loss as my_data_parallel_loss\n"
    assert "rl4llm.llm.data_parallel" in grade("data_parallel_loss", cheat, "my_data_parallel_loss", timeout=HANG * 3).message


GRADE_AT_ONCE = """
import json, sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from rl4llm.course.grading.notebooks import grade_exercise, registry
assert "torch" not in sys.modules
jobs = [(path, e) for path in sorted(Path(sys.argv[1]).glob("part*/part*.ipynb")) for e in registry(path).values()
        if not e.by_hand]
with ThreadPoolExecutor(4) as pool:
    grades = list(pool.map(lambda job: grade_exercise(*job), jobs))
print(json.dumps({g.exercise_id: [g.correct, g.message] for g in grades}))
"""


def test_exercises_graded_side_by_side_in_a_fresh_process_are_all_right():
    """Every coding exercise's reference solution (the course's source notebooks), graded four at a
    time in one fresh process, as nbgrader's pass grades a notebook's exercises side by side: each is
    correct. Before the grader kept its in-process work to one thread at a time, two threads importing
    torch at once for the references (group_advantages', grpo_loss') scored a right answer 0 about one
    grade in eight ("partially initialized module 'torch'"), and failed a whole submission in CI."""
    result = subprocess.run([sys.executable, "-c", GRADE_AT_ONCE, str(ROOT / "course" / "source")],
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    grades = json.loads(result.stdout)
    assert len(grades) >= 20 and {"group_advantages", "grpo_loss", "data_parallel_loss", "kl_estimators"} <= set(grades)
    assert all(correct for correct, _ in grades.values()), {k: m for k, (c, m) in grades.items() if not c}


def test_the_grader_holds_its_lock_only_outside_the_sandbox(monkeypatch):
    """The lock that keeps the grader's in-process work to one thread is free while the student's code
    runs, so a submission that hangs until its timeout delays no other exercise's grade."""
    from rl4llm.course.grading import sandbox

    held, run = [], sandbox._run
    monkeypatch.setattr(sandbox, "_run", lambda folder, timeout: held.append(sandbox._IN_PROCESS.locked()) or
                        run(folder, timeout))
    assert sandbox.grade("softmax", SOFTMAX, "my_softmax", timeout=HANG).correct
    assert held == [False] and not sandbox._IN_PROCESS.locked()


#: A by-hand cell as the release has it (the stub), and Exercise 7.1's answer's name and slips.
STUB = "# Exercise 7.1: dJ/dz(15) under the lenient verifier.\n# YOUR CODE HERE\nraise NotImplementedError()\n"
PARTIAL = SPECS["ex-ch07-partial-credit"]
NAME = answer_name("7.1")


@pytest.mark.parametrize("how, source, correct, says", [
    ("right", f"{NAME} = {PARTIAL.value:.4f}\n", True, PARTIAL.correct_message),
    ("right, as a fraction in text", f"{NAME} = \"1/40\"\n", True, PARTIAL.correct_message),
    ("right, by numpy's arithmetic", f"import numpy as np\n\n{NAME} = np.float64(0.1) * (0.5 - 0.25)\n", True,
     PARTIAL.correct_message),
    ("a common wrong number", f"{NAME} = {PARTIAL.mistakes[0][0]!r}\n", False, f"Not yet: {PARTIAL.mistakes[0][1]}."),
    ("another wrong number", f"{NAME} = 0.5\n", False, PARTIAL.wrong_message),
    ("empty: the release's stub", STUB, False, "no answer yet: the cell still holds the stub"),
    ("emptied", "", False, f"your cell does not set {NAME}"),
    ("None", f"{NAME} = None\n", False, f"{NAME} is None"),
    ("not numeric: words", f"{NAME} = \"a fortieth\"\n", False, "enter one number"),
    ("not numeric: a list", f"{NAME} = [0.025]\n", False, f"{NAME} holds a list, not one number"),
    ("not numeric: a bool", f"{NAME} = True\n", False, f"{NAME} holds a bool, not one number"),
    ("reads the answer key", f"import rl4llm.exercises\n\n{NAME} = rl4llm.exercises.answer_key()"
                             f"[\"ex-ch07-partial-credit\"][\"value\"]\n", False,
     "uses the library (rl4llm.exercises)"),
    ("imports a building block", f"from rl4llm import softmax\n\n{NAME} = 0.025\n", False, "uses the library"),
    ("raises", f"{NAME} = 1 / 0\n", False, "your cell raised ZeroDivisionError on line 1"),
    ("hangs", "while True:\n    pass\n", False, "did not finish within 3 s"),
])
def test_the_sandbox_grades_each_way_a_by_hand_answer_can_go(how, source, correct, says):
    """A by-hand cell runs alone, with nothing of the library importable; the number (or text) it
    leaves in its answer's name gets check()'s verdict, computed in the grader's process."""
    from rl4llm.course.grading.sandbox import grade
    result = grade("ex-ch07-partial-credit", source, NAME, timeout=3 if how == "hangs" else HANG)
    assert result.correct is correct and says in result.message, (how, result.message)


def test_grade_refuses_what_is_not_a_checked_exercise():
    from rl4llm.course.grading.sandbox import grade
    with pytest.raises(ValueError, match="exercise_id"):
        grade("ex-ch07-sum-zero", SOFTMAX, "my_softmax")
    with pytest.raises(ValueError, match="function"):
        grade("softmax", SOFTMAX, "not a name")


def test_exercise_16_6_cannot_reach_the_answer_through_the_copied_modules():
    """16.6's sandbox holds grpo_loss and the library modules it imports, folders and all (llm/, math/,
    toy/ under ``_allowed``): searching grpo_loss's globals, every loaded module and every Python file on
    the sandbox's path and in the job's folder finds no data_parallel_loss (its module is not copied; asking
    the stand-in ``rl4llm`` for it by attribute would itself be recorded as a use of the library)."""
    from rl4llm.course.grading.sandbox import grade
    source = ("import glob, os, sys\nfrom rl4llm.llm.grpo import grpo_loss\n\n"
              "found = [v for v in grpo_loss.__globals__.values() if getattr(v, '__name__', '') == 'data_parallel_loss']\n"
              "found += [vars(m)['data_parallel_loss'] for m in list(sys.modules.values())\n"
              "          if 'data_parallel_loss' in getattr(m, '__dict__', {})]\n"
              "files = [f for root in [os.getcwd(), *sys.path] if root and os.path.isdir(root)\n"
              "         for f in glob.glob(os.path.join(root, '**', '*.py'), recursive=True)\n"
              "         if 'def data_parallel_loss' in open(f, errors='replace').read()]\n"
              "if found or files:\n"
              "    my_data_parallel_loss = found[0] if found else files\n")
    result = grade("data_parallel_loss", source, "my_data_parallel_loss", timeout=HANG * 3)
    assert not result.correct and "does not define a function named my_data_parallel_loss" in result.message, \
        result.message


def test_a_checked_experiments_result_cannot_be_read_from_the_course_or_the_book():
    """An assigned experiment's result cell (18.7's ``answer_18_7``) is graded like a by-hand answer. A cell that
    searches the file system for the instructor's source assignment, the gradebook or the book's solution (where
    246 is written) finds none of them from inside the sandbox (outside it, the same search finds 246.0 in
    course/source/part5), and so scores nothing; the honest number passes."""
    from rl4llm.course.grading.sandbox import grade
    name = answer_name("18.7")
    attack = ("import glob, os, re\n\n"
              "found = []\n"
              "for root in [os.path.expanduser('~'), os.getcwd(), '/work', '/tmp', '/root', '/home', '/opt', '/srv']:\n"
              "    for pattern in ('**/part5.ipynb', '**/gradebook.db', '**/18_sequence_ratios.ipynb'):\n"
              "        for f in glob.glob(os.path.join(root, pattern), recursive=True):\n"
              "            text = open(f, errors='replace').read()\n"
              f"            found += re.findall(r'{name} = ([0-9.]+)', text) + re.findall(r'so (2[0-9][0-9]) tokens', text)\n"
              f"{name} = float(found[0]) if found else None\n")
    stolen = grade("ex-ch18-length", attack, name, timeout=HANG * 3)
    assert not stolen.correct and f"{name} is None" in stolen.message, stolen.message
    honest = grade("ex-ch18-length", f"{name} = 246\n", name, timeout=HANG)
    assert honest.correct, honest.message


def test_the_library_copied_under_another_name_gives_no_answer_in_the_sandbox(tmp_path):
    """A new attack on 18.4 (``ex-ch18-crossing``, added this stop): the cell looks for the library's source on
    disk (and asks the import system where an installed copy lives, without importing it), copies it under another package name (so that no module named ``rl4llm`` is imported) and reads the
    answer key from the copy. Outside the sandbox the same code finds /work's copy and the answer, 0.4812; inside,
    nothing of the library is on disk to copy (nor does the import system know where one is), the answer is None
    and scores 0, while the honest number passes."""
    from rl4llm.course.grading.sandbox import grade
    name = answer_name("18.4")
    attack = ("import glob, importlib, importlib.util, os, shutil, sys\n\n"
              "found = None\n"
              "roots = [os.path.expanduser('~'), os.getcwd(), '/work', '/tmp', '/root', '/home', '/opt', '/srv', *sys.path]\n"
              "try:                                  # where an installed copy lives, without importing it\n"
              "    roots.insert(0, os.path.dirname(os.path.dirname(importlib.util.find_spec('rl4llm').origin)))\n"
              "except Exception:                     # the sandbox's stand-in rl4llm has no spec\n"
              "    pass\n"
              "for root in roots:\n"
              "    if found is not None or not root or not os.path.isdir(root):\n"
              "        continue\n"
              "    for f in glob.glob(os.path.join(root, '**', 'rl4llm', 'exercises', 'part5.py'), recursive=True):\n"
              "        shutil.copytree(os.path.dirname(os.path.dirname(f)), os.path.join(os.getcwd(), 'renamed_lib'),\n"
              "                        dirs_exist_ok=True)\n"
              "        sys.path.insert(0, os.getcwd())\n"
              "        found = importlib.import_module('renamed_lib.exercises').answer_key()['ex-ch18-crossing']['value']\n"
              "        break\n"
              f"{name} = found\n")
    outside = subprocess.run([sys.executable, "-c", attack + f"print({name})"], cwd=tmp_path, capture_output=True,
                             text=True, timeout=600)
    assert round(float(outside.stdout.split()[-1]), 4) == 0.4812         # the attack works where the library is
    stolen = grade("ex-ch18-crossing", attack, name, timeout=HANG * 3)
    assert not stolen.correct and f"{name} is None" in stolen.message, stolen.message
    honest = grade("ex-ch18-crossing", f"{name} = 0.4812\n", name, timeout=HANG)
    assert honest.correct, honest.message
