"""Stored outputs hold whatever renderer is installed (issue 17).

nbval compares each stored output with a fresh one, so a stored output must be the book's content,
never a library's rendering of it: code listings are stored as Markdown fences (``show_source``,
``show_code``) and highlighted where they are displayed. Two checks: no stored output holds a
highlighter's HTML or LaTeX, and a chapter that shows library code passes strict nbval with another
Pygments installed than the lock's.
"""
import json
import os
import pathlib
import subprocess
import sys

import nbformat
import pygments
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
CHAPTERS = sorted((ROOT / "book").glob("*.ipynb"))
OTHER_PYGMENTS = "2.17.2"                         # older than the lock's; its HTML escapes quotes differently
HIGHLIGHTER_MARKS = ('class="highlight"', "\\begin{Verbatim}", "td.linenos")


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_no_stored_output_holds_a_highlighters_rendering(path):
    for index, cell in enumerate(nbformat.read(path, as_version=4).cells):
        for output in cell.get("outputs", []):
            for mime, data in output.get("data", {}).items():
                text = data if isinstance(data, str) else json.dumps(data)
                found = [mark for mark in HIGHLIGHTER_MARKS if mark in text]
                assert not found, f"{path.name} cell {index} stores {mime} rendered by a highlighter ({found})"


def test_a_show_source_chapter_passes_strict_nbval_with_another_pygments(tmp_path):
    assert pygments.__version__ != OTHER_PYGMENTS
    site = tmp_path / "other-pygments"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site),
                    f"pygments=={OTHER_PYGMENTS}"], check=True)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))}
    # A one-cell notebook whose stored output is the other version: it passes only if the kernel nbval
    # starts imports that Pygments, so the chapter beside it really ran with it.
    probe = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "import pygments; print(pygments.__version__)", execution_count=1,
        outputs=[nbformat.v4.new_output("stream", name="stdout", text=OTHER_PYGMENTS + "\n")])])
    nbformat.write(probe, tmp_path / "pygments_version.ipynb")
    chapter = ROOT / "book" / "01_distribution.ipynb"
    # -n 0: the two notebooks in this process (pytest.ini's -n auto would start a worker for each)
    result = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-n", "0", str(chapter),
                             str(tmp_path / "pygments_version.ipynb")],
                            cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
