"""Exercises numbered per chapter: "Exercise 7.2" is the second exercise of chapter 7.

sphinx-exercise numbers exercises through Sphinx's figure numbers, which (without numbered sections)
run consecutively through the whole book. After Sphinx assigns them, this renumbers each chapter's
exercises 1, 2, 3... in the order Sphinx gave them, prefixed with the chapter's number read from the
notebook's file name (``book/07_score_function`` is chapter 7), so the titles and every reference to an exercise (the
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
        in_order = sorted(exercises, key=lambda node_id: exercises[node_id])
        for index, node_id in enumerate(in_order, start=1):
            exercises[node_id] = (chapter, index)
    return []


def setup(app):
    app.connect("env-get-updated", _prefix_chapter, priority=800)   # after Sphinx numbers them (500)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
