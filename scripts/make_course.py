"""Write the nbgrader course's source assignments from the chapters' coding and by-hand exercises.

    python scripts/make_course.py

writes course/source/part1/part1.ipynb ... part5/part5.ipynb (the chapters of each part are
``rl4llm.course.assignments.PARTS``). Each coding exercise is its starter (the reference between nbgrader's
markers) and a test cell; each by-hand exercise is a cell that sets ``answer_<chapter>_<n>`` (the
library's answer between the markers, so that the release holds only the stub) and a test cell. Run it
after changing a chapter's exercises; tests/test_grading.py fails while the course and the chapters
disagree. The instructor guide (book/instructor_guide.ipynb) gives the nbgrader commands that
release, collect and autograde them.
"""
from __future__ import annotations

from pathlib import Path

from rl4llm.course.assignments import PARTS, source_assignment, write_notebook

ROOT = Path(__file__).resolve().parents[1]
COURSE = ROOT / "course"


def assignments() -> dict[str, dict]:
    chapters = sorted((ROOT / "book").glob("[0-9][0-9]_*.ipynb"))
    return {part: source_assignment(part, chapters) for part in PARTS}


def main() -> None:
    for part, nb in assignments().items():
        path = COURSE / "source" / part / f"{part}.ipynb"
        write_notebook(nb, path)
        print(f"{path.relative_to(ROOT)}: {sum(1 for c in nb['cells'] if c['metadata']['nbgrader']['grade'])} "
              "graded exercises")


if __name__ == "__main__":
    main()
