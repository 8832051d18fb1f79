"""Exercises numbered per chapter: "Exercise 7.2" is the second exercise of chapter 7.

sphinx-exercise numbers exercises within each page (1, 2, 3) through Sphinx's figure numbers. After
Sphinx assigns them, this prefixes each with the chapter's number, read from the notebook's file name
(``book/07_score_function`` is chapter 7), so the titles and every reference to an exercise (the
solution's "Solution to Exercise 7.2" included) say which chapter it is in, as the intro promises and
as the instructor guide and the graded assignments cite them.
"""
from __future__ import annotations

import re

CHAPTER = re.compile(r"(?:^|/)(\d{2})_[^/]+$")


def chapter_of(docname: str) -> int | None:
    """The chapter number of a page (``book/07_score_function`` -> 7), None for other pages."""
    match = CHAPTER.search(docname)
    return int(match.group(1)) if match else None


def _prefix_chapter(app, env) -> list[str]:
    for docname, numbers in env.toc_fignumbers.items():
        chapter = chapter_of(docname)
        exercises = numbers.get("exercise", {})
        if chapter is None:
            continue
        for node_id, number in exercises.items():
            if len(number) == 1:
                exercises[node_id] = (chapter, number[0])
    return []


def setup(app):
    app.connect("env-get-updated", _prefix_chapter, priority=800)   # after Sphinx numbers them (500)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
