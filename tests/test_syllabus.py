"""The syllabus (rl4llm.course.syllabus): five weeks that cover the book once, in order, and assign each
chapter's checked work and its work graded by hand; a project on chapter 15's trainer, due by the end
of Part IV, so that a four-week module (Parts I-IV) holds it too."""
from dataclasses import fields
from pathlib import Path

import pytest

from rl4llm.course.assignments import PARTS, exercises
from rl4llm.course import syllabus
from rl4llm.course.syllabus import CHAPTER_OBJECTIVES, MINUTES, PROJECT, WEEKS, assigned, kind
from rl4llm.llm.trainer import GRPOConfig

CHAPTERS = sorted((Path(__file__).resolve().parents[1] / "book").glob("[0-9][0-9]_*.ipynb"))


def test_five_weeks_cover_every_chapter_once_in_order_as_the_parts_do():
    assert len(WEEKS) == 5 and all(len(week.lectures) == 2 for week in WEEKS)
    numbers = [int(path.name[:2]) for path in CHAPTERS]
    assert [c for week in WEEKS for c in week.chapters] == numbers == list(range(1, len(CHAPTERS) + 1))
    assert [tuple(week.chapters) for week in WEEKS] == [tuple(numbers) for _, numbers in PARTS.values()]
    assert set(CHAPTER_OBJECTIVES) == set(MINUTES) == set(numbers)
    assert all(read > 0 and work > 0 for read, work in MINUTES.values())


def test_each_chapter_declares_its_plan_in_a_module_named_for_it():
    declared = {c.__name__.rsplit(".", 1)[1]: c.NUMBER for c in syllabus.CHAPTERS}
    assert declared == {path.stem.split("_", 1)[1]: int(path.name[:2]) for path in CHAPTERS}
    for c in syllabus.CHAPTERS:
        assert all(label.startswith(f"ex-ch{c.NUMBER:02d}-") for label in c.EXERCISE_OBJECTIVES), c.__name__
        assert set(c.UNTITLED_KINDS) <= set(c.EXERCISE_OBJECTIVES), c.__name__


def test_each_chapter_assigns_its_checked_work_and_one_of_each_kind_graded_by_hand():
    for path in CHAPTERS:
        chapter_exercises = exercises(path)
        chosen = assigned(chapter_exercises)
        kinds = [kind(e) for e in chosen]
        assert {e.label for e in chapter_exercises if kind(e) in ("by hand", "coding")} <= {e.label for e in chosen}
        assert kinds.count("experiment") == 1, path.name
        assert kinds.count("written") == min(1, sum(kind(e) == "written" for e in chapter_exercises)), path.name
        assert [e.number for e in chosen] == [e.number for e in chapter_exercises if e in chosen]


def test_the_project_runs_on_chapter_15s_trainer_within_the_module():
    part_iv = next(n for n, week in enumerate(WEEKS, 1) if 15 in week.chapters)
    assert 1 <= PROJECT.week_released <= PROJECT.week_due == part_iv < len(WEEKS)
    assert "GRPOTrainer" in PROJECT.brief and "GRPOConfig" in PROJECT.brief and "chapter15_config" in PROJECT.brief
    assert {"seed", "device", "num_threads"} <= {f.name for f in fields(GRPOConfig)}


def test_reading_load_counts_words_shown_and_folded_and_code_shown_before_the_exercises(tmp_path):
    """rl4llm.course.reading on a page whose counts are known by hand: folded boxes (a dropdown admonition,
    one nested in a box that stays open, a {dropdown}), fences and options that are no words, code by its
    tags, and nothing from ``## Exercises`` on."""
    import json

    from rl4llm.course.reading import ReadingLoad, markdown_words, reading_load

    page = ("Two words.\n\n```{admonition} Deep dive: three\n:class: dropdown\n\nfour more words here\n```\n\n"
            "````{admonition} Open box\n:class: note\n\none\n```{admonition} Inner\n:class: dropdown\nx y\n```\n````\n")
    assert markdown_words(page) == (2 + 2 + 1, 3 + 4 + 1 + 2)
    assert markdown_words("```{dropdown} A title\nb c\n```") == (0, 4)
    assert markdown_words(":::{admonition} Colon fenced\n:class: dropdown\nd e f\n:::\n\ng") == (1, 5)
    assert markdown_words("```python\nx = 1\n```") == (3, 0)          # a code block in Markdown is read

    def cell(kind, source, tags=()):
        return {"cell_type": kind, "source": source, "metadata": {"tags": list(tags)}}
    notebook = {"cells": [cell("code", "import os\nos", ["remove-cell"]), cell("markdown", page),
                          cell("code", "a = 1\nb = 2\nc = 3"), cell("code", "hidden = 1", ["hide-input"]),
                          cell("markdown", "Last words.\n\n## Exercises\n\nnot counted"),
                          cell("markdown", "nor this"), cell("code", "nor = 'this'")]}
    path = tmp_path / "page.ipynb"
    path.write_text(json.dumps(notebook), encoding="utf-8")
    assert reading_load(path) == ReadingLoad(visible_words=5 + 2, folded_words=10, code_lines=3)
    notebook["cells"][4]["source"] = "Last words."          # no heading: the exercises would count as reading
    path.write_text(json.dumps(notebook), encoding="utf-8")
    with pytest.raises(ValueError, match="has no '## Exercises' heading"):
        reading_load(path)
    # every chapter has a main path, and Part V's folds its deep dives
    loads = {int(p.name[:2]): reading_load(p) for p in CHAPTERS}
    assert all(load.visible_words > 500 and load.code_lines > 0 for load in loads.values())
    assert all(loads[c].folded_words > 1000 for c in range(17, 22))
