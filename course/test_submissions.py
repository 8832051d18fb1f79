"""Grade a folder of submitted notebooks without JupyterHub or nbgrader: one test per checked exercise.

    python -m pytest -p no:cacheprovider -o addopts= course/test_submissions.py --submissions path/to/folder

Every ``*.ipynb`` under the folder (an nbgrader assignment from course/release, or a chapter of the
student edition) is run top to bottom in a fresh kernel, errors allowed; then each check cell (a
graded nbgrader test cell, or a chapter's ``exercise-check`` cell) passes when it printed a verdict
starting with "Correct:" and raised nothing, and fails with the verdict of ``rl4llm.exercises``
otherwise. `-o addopts=` turns off the book's own nbval options; `-rA` lists every result, and
`--junitxml=grades.xml` writes them for a spreadsheet.
"""
from __future__ import annotations

import functools
import json
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient


def _is_check(cell) -> bool:
    meta = cell.get("metadata", {})
    return meta.get("nbgrader", {}).get("grade", False) or "exercise-check" in meta.get("tags", [])


def _name(cell, index) -> str:
    return cell["metadata"].get("nbgrader", {}).get("grade_id") or f"cell{index}"


def pytest_generate_tests(metafunc):
    if "submission" not in metafunc.fixturenames:
        return
    folder = metafunc.config.getoption("--submissions")
    if folder is None:
        pytest.exit("pass --submissions FOLDER (a folder of submitted notebooks)", returncode=4)
    params, ids = [], []
    for path in sorted(Path(folder).rglob("*.ipynb")):
        cells = json.loads(path.read_text())["cells"]
        for index, cell in enumerate(cells):
            if cell["cell_type"] == "code" and _is_check(cell):
                params.append((str(path), index))
                ids.append(f"{path.relative_to(folder)}::{_name(cell, index)}")
    metafunc.parametrize("submission", params, ids=ids)


@functools.lru_cache(maxsize=None)
def _executed(path: str):
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=300, allow_errors=True, kernel_name="python3",
                   resources={"metadata": {"path": str(Path(path).parent)}}).execute()
    return nb


def _verdict(cell) -> tuple[bool, str]:
    texts, error = [], None
    for output in cell.get("outputs", []):
        if output["output_type"] == "error":
            error = f"{output['ename']}: {output['evalue']}"
        elif output["output_type"] == "stream":
            texts.append(output["text"])
        elif "data" in output:
            texts.append(output["data"].get("text/plain", ""))
    shown = "".join(texts).strip()
    if error is not None:
        return False, error
    return shown.startswith("Correct:") or "\nCorrect:" in shown, shown or "the check printed nothing"


def test_exercise(submission):
    path, index = submission
    passed, message = _verdict(_executed(path).cells[index])
    assert passed, message
