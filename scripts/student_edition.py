"""Write the student edition: the chapters with every solution removed and each coding exercise's
reference body replaced by a stub, ready to hand out; optionally build its site (no solutions).

    python scripts/student_edition.py            # notebooks in _build/student/book/
    python scripts/student_edition.py --build    # and the site in _build/student/_build/html/

The edition is a Jupyter Book of its own (_config.yml with sphinx-exercise's hide_solutions on, the
same table of contents, intro and data without the instructor guide, the book's extensions), so its notebooks open in JupyterLab
from _build/student/book/ and its site builds like the book's. Outputs of the chapters' other cells
stay stored; the exercise cells have none.
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

from rl4llm.coursework import student_notebook, write_notebook

ROOT = Path(__file__).resolve().parents[1]


def write_edition(out: Path) -> list[Path]:
    """The student edition under ``out``: notebooks, intro, data, config and toc; the notebooks' paths."""
    if out.exists():
        shutil.rmtree(out)
    (out / "book").mkdir(parents=True)
    written = []
    for path in sorted((ROOT / "book").glob("[0-9][0-9]_*.ipynb")):
        target = out / "book" / path.name
        write_notebook(student_notebook(json.loads(path.read_text())), target)
        written.append(target)
    intro = (ROOT / "book" / "intro.md").read_text()          # the guide stays out: its links become text
    (out / "book" / "intro.md").write_text(re.sub(r"\[([^\]]+)\]\(instructor_guide\)", r"\1", intro))
    shutil.copytree(ROOT / "book" / "data", out / "book" / "data")
    for name in ("_ext", "_static"):
        os.symlink(ROOT / name, out / name)          # the extensions find node_modules through the real path
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    config["title"] += " (student edition)"
    config["sphinx"]["config"]["hide_solutions"] = True
    (out / "_config.yml").write_text(yaml.safe_dump(config, sort_keys=False, allow_unicode=True))
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    toc["parts"] = [p for p in toc["parts"] if not p.get("caption", "").startswith("For instructors")]
    (out / "_toc.yml").write_text(yaml.safe_dump(toc, sort_keys=False, allow_unicode=True))
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=ROOT / "_build" / "student", help="where to write it")
    parser.add_argument("--build", action="store_true", help="also build its site (jupyter-book, warnings as errors)")
    args = parser.parse_args()
    written = write_edition(args.out)
    print(f"wrote {len(written)} notebooks to {args.out / 'book'}")
    if args.build:
        subprocess.run([shutil.which("jupyter-book") or "jupyter-book", "build", str(args.out), "-W", "-n", "--keep-going"],
                       check=True)
        print(f"site: {args.out / '_build' / 'html' / 'index.html'}")


if __name__ == "__main__":
    main()
