"""Write the student edition: the chapters with every solution removed and each coding exercise's
reference body replaced by a stub, ready to hand out; optionally build its site (no solutions).

    python scripts/student_edition.py                       # notebooks in _build/student/book/
    python scripts/student_edition.py --build               # and the site in _build/student/_build/html/
    python scripts/student_edition.py --build --repository https://github.com/<course>/<repo> [--branch main]

The edition is a Jupyter Book of its own (_config.yml with sphinx-exercise's hide_solutions on, the
same table of contents, intro and data without the instructor guide, the book's extensions), so its notebooks open in JupyterLab
from _build/student/book/ and its site builds like the book's. Outputs of the chapters' other cells
stay stored; the exercise cells have none. It holds no answer:

- no reference source: the ``show_source`` cells of the coding exercises' functions become a note
  (``rl4llm.course.assignments.student_notebook``);
- no answer value: its answer boxes store salted digests, not numbers (``answer_boxes_hashed``,
  _ext/answer_boxes.py);
- its launch buttons (Binder, Colab, the repository and issues links) and each chapter's Colab cell
  point to ``--repository``, the repository the instructor hands out (which must hold this edition,
  not the book's repository with its solutions); without it, the site has no launch or repository
  buttons and the notebooks no Colab cell.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import yaml
from sync_repository_url import CELL_ID, IMPORTS_TRL, install_cell

from rl4llm.course.assignments import exercises, student_notebook, write_notebook
from rl4llm.exercises import FUNCTIONS, label_of

ROOT = Path(__file__).resolve().parents[1]


def _config(repository: str | None, branch: str) -> dict:
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    config["title"] += " (student edition)"
    config["sphinx"]["config"]["hide_solutions"] = True
    config["sphinx"]["config"]["answer_boxes_hashed"] = True
    if repository:
        config["repository"] = {"url": repository, "branch": branch, "path_to_book": ""}
    else:
        config["repository"] = {"url": "", "branch": branch, "path_to_book": ""}
        config["launch_buttons"] = {"notebook_interface": "classic", "binderhub_url": "", "jupyterhub_url": "",
                                    "thebe": False, "colab_url": "", "deepnote_url": ""}
        config["html"].update(use_repository_button=False, use_issues_button=False, use_edit_page_button=False)
    return config


def _colab_cell(nb: dict, repository: str | None, branch: str) -> dict:
    """The chapter's Colab cell cloning ``repository`` (not the book's), or no Colab cell without one."""
    cells = [c for c in nb["cells"] if c.get("id") != CELL_ID]
    if repository:
        cells[0:0] = [{"cell_type": "code", "id": CELL_ID, "metadata": {"tags": ["remove-cell"]},
                       "execution_count": None, "outputs": [],
                       "source": install_cell(repository, branch, any(
                           IMPORTS_TRL.search("".join(c["source"])) for c in cells if c["cell_type"] == "code")
                       ).splitlines(keepends=True)}]
    return {**nb, "cells": cells}


def write_edition(out: Path, repository: str | None = None, branch: str = "main") -> list[Path]:
    """The student edition under ``out``: notebooks, intro, data, config and toc; the notebooks' paths.
    ``repository`` is where the instructor publishes the edition (the launch buttons open it)."""
    if out.exists():
        shutil.rmtree(out)
    (out / "book").mkdir(parents=True)
    chapters = sorted((ROOT / "book").glob("[0-9][0-9]_*.ipynb"))
    functions = {FUNCTIONS[label_of(e.check_id)] for path in chapters for e in exercises(path) if e.kind == "coding"}
    written = []
    for path in chapters:
        target = out / "book" / path.name
        nb = student_notebook(json.loads(path.read_text()), functions)
        write_notebook(_colab_cell(nb, repository, branch), target)
        written.append(target)
    intro = (ROOT / "book" / "intro.md").read_text()          # the guide stays out: its links become text
    (out / "book" / "intro.md").write_text(re.sub(r"\[([^\]]+)\]\(instructor_guide\)", r"\1", intro))
    shutil.copytree(ROOT / "book" / "data", out / "book" / "data")
    for name in ("_ext", "_static"):
        os.symlink(ROOT / name, out / name)          # the extensions find node_modules through the real path
    config = _config(repository, branch)
    (out / "_config.yml").write_text(yaml.safe_dump(config, sort_keys=False, allow_unicode=True))
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    toc["parts"] = [p for p in toc["parts"] if not p.get("caption", "").startswith("For instructors")]
    (out / "_toc.yml").write_text(yaml.safe_dump(toc, sort_keys=False, allow_unicode=True))
    return written


def build(out: Path) -> subprocess.CompletedProcess:
    """Build the edition's site (jupyter-book, warnings as errors) into ``out/_build/html``."""
    return subprocess.run([shutil.which("jupyter-book") or "jupyter-book", "build", str(out), "-W", "-n",
                           "--keep-going"], capture_output=True, text=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=ROOT / "_build" / "student", help="where to write it")
    parser.add_argument("--build", action="store_true", help="also build its site (jupyter-book, warnings as errors)")
    parser.add_argument("--repository", help="the repository (URL) students get the edition from: the launch "
                                             "buttons open it; without it the site has none")
    parser.add_argument("--branch", default="main", help="its branch (default main)")
    args = parser.parse_args()
    written = write_edition(args.out, args.repository, args.branch)
    print(f"wrote {len(written)} notebooks to {args.out / 'book'}")
    if args.build:
        result = build(args.out)
        print(result.stdout[-5000:], result.stderr[-5000:])
        result.check_returncode()
        print(f"site: {args.out / '_build' / 'html' / 'index.html'}")


if __name__ == "__main__":
    main()
