"""The student edition (scripts/student_edition.py): no solution text anywhere, each coding exercise a
stub that its check cell reports without crashing, every chapter's cells run, and its site builds with
zero warnings and shows no solution."""
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from rl4llm.coursework import BEGIN, SOLUTION_STUB, _blocks, exercises

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
from student_edition import write_edition  # noqa: E402

CHAPTERS = sorted((ROOT / "book").glob("[0-9][0-9]_*.ipynb"))


@pytest.fixture(scope="module")
def edition(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("student")
    write_edition(out)
    return out


def _solution_lines(path: Path) -> list[str]:
    """The lines of the chapter's solutions: every solution block's body lines, and every line of a
    coding exercise's reference body (with repeats)."""
    lines = []
    for cell in json.loads(path.read_text())["cells"]:
        source = "".join(cell["source"])
        if cell["cell_type"] == "markdown":
            for name, _, body, _, _ in _blocks(source):
                if name == "solution":
                    lines += [l.strip() for l in body.splitlines() if len(l.strip()) > 25 and not l.startswith(":")]
        elif BEGIN in source:
            body = source.split(BEGIN)[1].split("### END SOLUTION")[0]
            lines += [l.strip() for l in body.splitlines() if len(l.strip()) > 12]
    return lines


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_no_solution_survives_and_coding_exercises_are_stubs(edition, path):
    text = (edition / "book" / path.name).read_text()
    cells = json.loads(text)["cells"]
    sources = "\n".join("".join(c["source"]) for c in cells)
    assert "{solution}" not in sources and BEGIN not in sources
    original = "\n".join("".join(c["source"]) for c in json.loads(path.read_text())["cells"])
    solutions = _solution_lines(path)
    # a solution line may also appear in the chapter's own text or code: only extra copies are a leak
    leaked = [line for line in set(solutions)
              if sources.count(line) > original.count(line) - solutions.count(line)]
    assert not leaked, leaked
    stubs = [c for c in cells if "exercise-code" in c["metadata"].get("tags", [])]
    assert len(stubs) == sum(e.kind == "coding" for e in exercises(path))
    for cell in stubs:
        assert SOLUTION_STUB.split("\n")[1] in "".join(cell["source"]) and not cell["outputs"]
        assert "hide-input" not in cell["metadata"]["tags"]
    assert [e.label for e in exercises(edition / "book" / path.name)] == [e.label for e in exercises(path)]


def test_every_exercise_cell_runs_and_each_stub_gets_its_verdict(edition):
    """All chapters' exercise cells (starter, then check) in one fresh kernel: every check runs and says
    the stub raised NotImplementedError; nothing raises."""
    cells = []
    for path in CHAPTERS:
        nb = json.loads((edition / "book" / path.name).read_text())
        cells += [c for c in nb["cells"] if {"exercise-code", "exercise-check"} & set(c["metadata"].get("tags", []))]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("".join(c["source"])) for c in cells])
    NotebookClient(nb, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(edition / "book")}}).execute()
    checks = ["".join(o.get("data", {}).get("text/plain", "")) for c in nb.cells for o in c.outputs]
    assert len(checks) == sum(e.kind == "coding" for p in CHAPTERS for e in exercises(p))
    assert all(c.startswith("Not yet:") and "raised NotImplementedError" in c for c in checks), checks


def test_a_chapter_of_the_student_edition_runs_top_to_bottom(edition):
    nb = nbformat.read(edition / "book" / "07_score_function.ipynb", as_version=4)
    NotebookClient(nb, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(edition / "book")}}).execute()
    errors = [o for c in nb.cells for o in c.get("outputs", []) if o.output_type == "error"]
    assert not errors


def test_the_student_site_builds_without_solutions(edition):
    result = subprocess.run([shutil.which("jupyter-book"), "build", str(edition), "-W", "-n", "--keep-going"],
                            capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    html = edition / "_build" / "html"
    assert not (html / "book" / "instructor_guide.html").exists()
    for path in CHAPTERS:
        page = (html / "book" / f"{path.stem}.html").read_text()
        assert re.search(r'class="solution[ "]', page) is None, path.name
        assert len(re.findall(r'<span class="caption-number">Exercise ', page)) == len(exercises(path))
        assert "NotImplementedError" in page and "form class=\"answer-box\"" in page
