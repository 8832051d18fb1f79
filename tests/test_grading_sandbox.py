"""The grading sandbox (rl4llm.course.grading.bubblewrap, rl4llm.course.grading.nbgrader_sandbox): what a submission
can see and do there, and a class graded by the one command with attackers and careless students in
it: each attack scores 0 and changes no classmate's grade, each careless student's slip costs only
that student, re-running nbgrader alone changes no score, and the pytest route agrees cell by cell."""
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from xml.etree import ElementTree

import pytest
from grading_course import (HANG, MARKERS, answers, generated_course, grade_class, scores_in,  # noqa: F401
                            solution_cells, submission, write)

from rl4llm.course.grading import bubblewrap
from rl4llm.course.grading.gradebook import feedback_texts

ROOT = Path(__file__).resolve().parents[1]


def sandboxed(code: str, folder: Path, limits=bubblewrap.Limits(cpu_seconds=20)) -> subprocess.CompletedProcess:
    """Run ``code`` in the sandbox with ``folder`` as its writable folder."""
    folder.mkdir(exist_ok=True)
    bubblewrap.prepare(folder)
    return subprocess.run(bubblewrap.command([code], folder, limits), capture_output=True, text=True, timeout=120)


def test_the_sandbox_runs_as_nobody_without_the_course_the_repository_or_the_library(tmp_path):
    probe = f"""
import os, sys, json
status = dict(line.split(':', 1) for line in open('/proc/self/status').read().splitlines())
try:
    import rl4llm
    library = rl4llm.__file__
except ImportError:
    library = None
writable = []
for path in ['/usr/lib/x.py', {sys.prefix!r} + '/x', '/tmp/x', os.getcwd() + '/x']:
    try:
        open(path, 'w').write('x')
        writable.append(path)
    except OSError:
        pass
print(json.dumps({{"uid": os.getuid(), "gid": os.getgid(), "caps": status['CapEff'].strip(),
                  "nnp": status['NoNewPrivs'].strip(), "library": library, "writable": writable,
                  "seen": [p for p in [{str(ROOT)!r}, {str(ROOT / 'course' / 'source')!r}, {sys.prefix!r}, '/work',
                                       '/home'] if os.path.exists(p)],
                  "pids": sorted(int(p) for p in os.listdir('/proc') if p.isdigit())}}))
"""
    result = sandboxed(probe, tmp_path / "job")
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout)
    assert (seen["uid"], seen["gid"], seen["caps"], seen["nnp"]) == (65534, 65534, "0000000000000000", "1"), seen
    assert seen["library"] is None and seen["seen"] == [], seen
    assert seen["writable"] == ["/tmp/x", str(tmp_path / "job" / "x")], seen
    assert max(seen["pids"]) < 10, seen                   # its own PID namespace: none of the grader's processes


def test_the_sandbox_has_no_network(tmp_path):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]
    try:
        result = sandboxed(f"import socket\ntry:\n    socket.create_connection(('127.0.0.1', {port}), timeout=2)\n"
                           f"    print('reached')\nexcept OSError as err:\n    print('refused', err)\n", tmp_path / "job")
    finally:
        server.close()
    assert result.stdout.startswith("refused"), (result.stdout, result.stderr)


def test_the_limits_hold_inside_the_sandbox(tmp_path):
    """A 20 GB allocation fails; the limits are set and cannot be raised again."""
    limits = bubblewrap.Limits(memory=2 * 2 ** 30, processes=64, cpu_seconds=7, file_bytes=2 ** 20)
    code = """
import resource, json
try:
    big = bytearray(20 * 2 ** 30)
    allocated = True
except MemoryError:
    allocated = False
try:
    resource.setrlimit(resource.RLIMIT_AS, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    raised = True
except (ValueError, OSError):
    raised = False
print(json.dumps({"allocated": allocated, "raised": raised, "limits": [resource.getrlimit(r)[1] for r in
      (resource.RLIMIT_AS, resource.RLIMIT_NPROC, resource.RLIMIT_CPU, resource.RLIMIT_FSIZE)]}))
"""
    seen = json.loads(sandboxed(code, tmp_path / "job", limits).stdout)
    assert seen == {"allocated": False, "raised": False, "limits": [2 * 2 ** 30, 64, 7, 2 ** 20]}, seen


def _alive(marker: str) -> list[int]:
    """The pids of processes whose command line holds ``marker``."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if marker in Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace"):
                found.append(int(pid))
        except OSError:
            pass
    return found


def test_a_daemon_dies_with_its_sandbox(tmp_path):
    """A double-forked, setsid process that waits for the grader to leave dies with the PID namespace."""
    daemon = ("import os\nif os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n"
              "        os.execv('/bin/sh', ['sh', '-c', 'sleep 4242.25; echo owned'])\n    os._exit(0)\nprint('parent done')\n")
    result = sandboxed(daemon, tmp_path / "job")
    assert result.stdout == "parent done\n", result.stderr
    time.sleep(0.5)
    assert _alive("4242.25") == []


def test_grading_refuses_to_run_without_a_working_bwrap(tmp_path, monkeypatch):
    """No bwrap, or a bwrap that cannot make its namespaces: SandboxUnavailable, never a run outside."""
    from rl4llm.course.grading.sandbox import grade

    broken = tmp_path / "bin"
    broken.mkdir()
    (broken / "bwrap").write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    (broken / "bwrap").chmod(0o755)
    for path, says in ((str(tmp_path / "empty"), "is not installed"), (str(broken), "cannot create its namespaces")):
        bubblewrap.require.cache_clear()
        monkeypatch.setenv("PATH", path)
        with pytest.raises(bubblewrap.SandboxUnavailable, match=says):
            grade("softmax", "def my_softmax(z, t=1.0):\n    return z\n", "my_softmax")
    monkeypatch.undo()
    bubblewrap.require.cache_clear()
    result = subprocess.run([sys.executable, "-m", "rl4llm.course.grading", "autograde", str(ROOT / "course"), "part1"],
                            capture_output=True, text=True, env={**os.environ, "PATH": str(broken)})
    assert result.returncode == 3 and "refusing to grade" in result.stderr, result.stderr


def test_a_submission_nbgrader_cannot_grade_is_told_why():
    """The note on a submission nbgrader could not grade names the error in nbgrader's logged traceback
    (nbclient's, here as nbgrader 0.9 logs it; in CI once, a reference's AttributeError), not nbgrader's
    closing "see the above traceback"."""
    from rl4llm.course.grading.gradebook import cause

    log = "\n".join([
        "[ERROR] There was an error processing assignment: /course/submitted/alice/part3",
        "[ERROR] Traceback (most recent call last):",
        '      File "nbclient/client.py", line 791, in _async_poll_for_reply',
        "        raise CellTimeoutError.error_from_timeout_and_cell(",
        "    nbclient.exceptions.CellTimeoutError: A cell timed out while it was being executed, after 4 seconds.",
        "    The message was: Timeout waiting for IOPub output.",
        "    Here is a preview of the cell contents:",
        "[ERROR] Please see the the above traceback for details on the specific errors on the above failures."])
    closing = "nbgrader.converters.base.NbGraderException: Please see the the above traceback for details"
    assert cause({"success": False, "log": log, "error": closing}) == (
        "nbclient.exceptions.CellTimeoutError: A cell timed out while it was being executed, after 4 seconds. "
        "The message was: Timeout waiting for IOPub output.")
    dead = "[ERROR] Traceback (most recent call last):\n    nbclient.exceptions.DeadKernelError: Kernel died\n"
    assert cause({"success": False, "log": dead, "error": closing}) == "nbclient.exceptions.DeadKernelError: Kernel died"
    shape = "[ERROR] Traceback (most recent call last):\n    AttributeError: 'NoneType' object has no attribute 'shape'\n"
    assert cause({"success": False, "log": shape, "error": closing}) == "AttributeError: 'NoneType' object has no attribute 'shape'"
    assert cause({"success": False, "error": f"Traceback:\n{closing}\n"}) == closing
    assert cause({"success": False}) == "nbgrader failed"


# ----------------------------------------------------------------------------- a class with attackers in it
def _cells(nb: dict) -> dict[str, dict]:
    return {c["metadata"]["nbgrader"]["grade_id"]: c for c in solution_cells(nb)}


def attacks(course: Path, marker: Path, junit: Path) -> dict[str, str]:
    """Part I's coding cells of an attacker, by grade id (the by-hand cells stay as released): the
    issue's three attacks, a 20 GB allocation, and a correct function that prints 20 MB."""
    gradebook = course / "gradebook.db"
    return {
        "ch01-write-softmax":                      # removes the import blocker and takes the library
            "import sys, importlib\nsys.meta_path[:] = [f for f in sys.meta_path if type(f).__name__ != '_Blocker']\n"
            "for name in [n for n in sys.modules if n.startswith('rl4llm')]:\n    del sys.modules[name]\n"
            "my_softmax = importlib.import_module('rl4llm').softmax\n",
        "ch02-write-decode-probs":                 # reads the instructor's source and runs its solution
            "import glob, json, os\nfound = []\nfor pid in filter(str.isdigit, os.listdir('/proc')):\n"
            "    try:\n        here = os.readlink(f'/proc/{pid}/cwd')\n    except OSError:\n        continue\n"
            "    found += glob.glob(here + '/../../../source/*/*.ipynb') + glob.glob(here + '/source/*/*.ipynb')\n"
            f"found += glob.glob({str(course)!r} + '/source/*/*.ipynb') + glob.glob('/*/*/*/part1.ipynb')\n"
            "for path in found:\n    for cell in json.load(open(path))['cells']:\n"
            "        if 'def my_decode_probs' in ''.join(cell['source']):\n"
            "            exec(''.join(cell['source']).replace('### BEGIN SOLUTION', '').replace('### END SOLUTION', ''))\n",
        "ch03-write-sequence-probability":         # a daemon that waits for the grader to leave, then writes
            "import os\nif os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n"
            f"        os.execv('/bin/sh', ['sh', '-c', 'sleep 4242.75; for f in {gradebook} {marker} {junit}; "
            "do echo owned >> $f; done'])\n    os._exit(0)\n\n\n"
            "def my_sequence_probability(step_probs):\n    return 1.0\n",
        "ch04-write-sft-gradient":                 # takes 20 GB
            "import numpy as np\nbig = bytearray(20 * 2 ** 30)\n\n\ndef my_sft_gradient(logits, target):\n"
            "    return np.zeros(len(logits))\n",
        "ch05-write-kl": None,                     # the reference, printing 20 MB
    }


def attacker(course: Path, marker: Path, junit: Path) -> dict:
    release, source, _ = answers(course, "part1")
    nb = json.loads(json.dumps(release))
    references = _cells(source)
    for grade_id, code in attacks(course, marker, junit).items():
        _cells(nb)[grade_id]["source"] = code or (MARKERS.sub("", "".join(references[grade_id]["source"])) +
                                                  "\nfor _ in range(20):\n    print('x' * 10 ** 6)\n")
    return nb


def careless(course: Path) -> dict:
    """A right submission with a scratch cell added, a solution cell copied (as JupyterLab pastes it:
    a new cell id, the same nbgrader metadata) and a grade id renamed (ch03-write-sequence-probability)."""
    nb = submission(course, "part1")
    cells = nb["cells"]
    index = next(i for i, c in enumerate(cells) if c["metadata"].get("nbgrader", {}).get("grade_id") == "ch01-write-softmax")
    ids = {"id": "scratch-1"} if "id" in cells[0] else {}           # cell ids where the notebook's format has them
    cells.insert(index + 1, {"cell_type": "code", **ids, "metadata": {}, "execution_count": None,
                             "outputs": [], "source": "x = 1 + 1\nprint(x)"})
    index = next(i for i, c in enumerate(cells) if c["metadata"].get("nbgrader", {}).get("grade_id") == "ch02-write-decode-probs")
    cells.insert(index + 1, {**json.loads(json.dumps(cells[index])), **({"id": "pasted-1"} if ids else {})})
    _cells(nb)["ch03-write-sequence-probability"]["metadata"]["nbgrader"]["grade_id"] = "my-renamed-cell"
    return nb


@pytest.fixture(scope="module")
def class_graded(generated_course, tmp_path_factory):
    course, outside = generated_course, tmp_path_factory.mktemp("outside")
    marker, junit = outside / "marker.txt", outside / "grades.xml"
    junit.write_text("")
    release = answers(course, "part1")[0]
    killer = json.loads(json.dumps(release))
    _cells(killer)["ch01-write-softmax"]["source"] = "import os, signal\nos.kill(-1, signal.SIGKILL)\n"
    for student, nb in (("alice", submission(course, "part1")), ("eve", attacker(course, marker, junit)),
                        ("mallory", killer), ("carol", careless(course))):
        write(course, student, "part1", nb)
    (course / "submitted" / "broken" / "part1").mkdir(parents=True)
    (course / "submitted" / "broken" / "part1" / "part1.ipynb").write_text("{ not a notebook")
    start = time.perf_counter()
    result = grade_class(course, "part1", "--timeout", str(HANG))
    seconds = time.perf_counter() - start
    assert result.returncode == 0, result.stderr[-3000:]
    print(f"5 submissions of part1 graded in {seconds:.1f} s\n{result.stdout}")
    return course, result.stdout, marker, junit


STUDENTS = ["alice", "broken", "carol", "eve", "mallory"]


def _cell_scores(course: Path, student: str) -> dict[str, float]:
    from nbgrader.api import Gradebook

    exercises = answers(course, "part1")[2]
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        return {g: gradebook.find_grade(f"{g}-check", "part1", "part1", student).score for g in exercises}


def test_each_attack_scores_zero_and_no_classmate_changes(class_graded):
    from rl4llm.course.syllabus import POINTS

    course, log, marker, junit = class_graded
    exercises = answers(course, "part1")[2]
    full = sum(e.points for e in exercises.values())
    scores = scores_in(course, "part1", STUDENTS)
    assert scores["alice"][0] == full, (scores, log)
    said = feedback_texts(course, "part1", "eve")
    assert "No module named 'rl4llm'" in said["ch01-write-softmax"], said
    assert "does not define a function named my_decode_probs" in said["ch02-write-decode-probs"], said
    assert "MemoryError" in said["ch04-write-sft-gradient"], said
    assert said["ch05-write-kl"].startswith("Correct:"), said
    assert scores["eve"][0] == POINTS["coding"], scores            # the chatty correct function alone
    assert scores["mallory"][0] == 0 and scores["broken"][0] == 0, scores
    assert "[2/5] broken: 0 of" in log and "part1.ipynb is not a notebook nbgrader can read" in log, log
    time.sleep(1)
    assert _alive("4242.75") == [] and not marker.exists() and junit.read_text() == "", log


def test_a_careless_student_loses_only_the_renamed_cell(class_graded):
    """A scratch cell and a pasted copy of a solution cell cost nothing; the renamed cell's exercise
    scores 0 with a message that says why; the log names the copy."""
    course, log, *_ = class_graded
    scores = _cell_scores(course, "carol")
    assert [g for g, s in scores.items() if not s] == ["ch03-write-sequence-probability"], scores
    assert "is missing from the notebook" in feedback_texts(course, "part1", "carol")["ch03-write-sequence-probability"]
    carol = next(line for line in log.splitlines() if " carol: " in line)
    assert "'ch02-write-decode-probs') is a copy: the last copy is graded" in carol, carol
    assert "'my-renamed-cell') is not one of the assignment's" in carol, carol


def test_the_first_pass_stores_a_capped_notebook(class_graded):
    course, *_ = class_graded
    size = (course / "autograded" / "eve" / "part1" / "part1.ipynb").stat().st_size
    assert size < 3 * 2 ** 20, size


def test_running_nbgrader_alone_again_changes_no_score(class_graded):
    """``nbgrader autograde`` run alone, by habit (or formgrader's button), after the command: the same
    score on every cell, since nbgrader's own pass is the sandboxed one."""
    course, *_ = class_graded
    before = {s: _cell_scores(course, s) for s in STUDENTS}
    result = subprocess.run(["nbgrader", "autograde", "part1", "--force", f"--Execute.timeout={HANG}",
                             f"--OutOfProcessGrades.timeout={HANG}"], cwd=course, capture_output=True, text=True)
    assert {s: _cell_scores(course, s) for s in STUDENTS} == before, result.stderr[-3000:]


def test_the_pytest_route_agrees_with_the_gradebook_and_keeps_its_report(class_graded):
    """The pytest route over the same submissions passes exactly the cells the gradebook scores, and
    its --junitxml report is out of every submission's reach (the daemon above aimed at it)."""
    course, _, marker, junit = class_graded
    folder = junit.parent / "submissions"                     # outside the course (its conftest.py is pytest's)
    shutil.copytree(course / "submitted", folder)
    subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-o", "addopts=",
                    str(ROOT / "course" / "test_submissions.py"), "--submissions", str(folder),
                    "--timeout-per-exercise", str(HANG), f"--junitxml={junit}"], cwd=ROOT, capture_output=True)
    time.sleep(1)
    passed = {}
    for case in ElementTree.parse(junit).getroot().iter("testcase"):
        student, rest = case.get("name").split("[", 1)[1].split("/", 1)
        grade_id = rest.rsplit("(", 1)[1].rstrip(")]")
        passed[(student, grade_id)] = case.find("failure") is None and case.find("error") is None
    expected = {(s, g): bool(score) for s in STUDENTS for g, score in _cell_scores(course, s).items()}
    assert passed == expected
    assert not marker.exists() and _alive("4242.75") == []
