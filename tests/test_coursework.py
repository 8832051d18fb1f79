"""Every chapter is coursework: at least three exercises, among them a by-hand number with an answer
box, a coding exercise with its starter and check cells, and an experiment; every check in the book
names a known exercise of its chapter, and its stored verdict is a pass on the reference answer."""
import json
import re
from pathlib import Path

import pytest

from rl4llm.exercises import EXERCISES, SPECS, FunctionExercise, NumericExercise, answer_key, label_of

BOOK = Path(__file__).resolve().parents[1] / "book"
CHAPTERS = sorted(BOOK.glob("[0-9][0-9]_*.ipynb"))
EXERCISE = re.compile(r"^(`{3,}|:{3,})\{exercise\}\s*(.*)$", re.M)
LABEL = re.compile(r"^:label:\s*(ex-ch(\d\d)-[\w-]+)\s*$", re.M)
BOX = re.compile(r'^<div class="answer-box" data-exercise="([\w.-]+)"></div>$', re.M)
CHECK_CALL = re.compile(r'check\("([\w.-]+)",\s*(\w+)\)\s*$')


def _cells(path):
    return json.loads(path.read_text())["cells"]


def _markdown(path) -> str:
    return "\n".join("".join(c["source"]) for c in _cells(path) if c["cell_type"] == "markdown")


def _tagged(path, tag):
    return [c for c in _cells(path) if tag in c["metadata"].get("tags", [])]


def _chapter(path) -> int:
    return int(path.name[:2])


def test_the_chapters_are_numbered_in_order_from_1_without_a_gap():
    assert [_chapter(p) for p in CHAPTERS] == list(range(1, len(CHAPTERS) + 1))


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_each_chapter_has_three_kinds_of_exercise(path):
    text = _markdown(path)
    titles = [m.group(2) for m in EXERCISE.finditer(text)]
    labels = [m.group(1) for m in LABEL.finditer(text)]
    assert len(titles) >= 3, f"{path.name}: {len(titles)} exercises"
    assert len(labels) == len(set(labels)), f"{path.name}: duplicate labels {labels}"
    assert all(int(m.group(2)) == _chapter(path) for m in LABEL.finditer(text)), labels
    assert any(t.endswith("(by hand)") for t in titles), f"{path.name}: no by-hand exercise in {titles}"
    assert any(t.endswith("(coding)") for t in titles), f"{path.name}: no coding exercise in {titles}"
    assert any(t.endswith("(experiment)") for t in titles), f"{path.name}: no experiment in {titles}"
    boxes = BOX.findall(text)
    assert boxes, f"{path.name}: no answer box"
    for box in boxes:
        assert box in labels and isinstance(SPECS.get(box), NumericExercise), box
        assert EXERCISES[box] == _chapter(path)


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_each_coding_exercise_has_a_starter_and_a_passing_check(path):
    cells = _cells(path)
    starters = [i for i, c in enumerate(cells) if "exercise-code" in c["metadata"].get("tags", [])]
    assert starters, f"{path.name}: no coding exercise cell"
    for i in starters:
        source = "".join(cells[i]["source"])
        assert "hide-input" in cells[i]["metadata"]["tags"]
        assert re.search(r"^    ### BEGIN SOLUTION$.+^    ### END SOLUTION$", source, re.M | re.S), source
        assert cells[i - 1]["cell_type"] == "markdown" and "(coding)" in "".join(cells[i - 1]["source"])
        check_cell = cells[i + 1]
        assert "exercise-check" in check_cell["metadata"].get("tags", [])
        call = CHECK_CALL.search("".join(check_cell["source"]))
        assert call, "".join(check_cell["source"])
        exercise_id, function = call.groups()
        assert f"def {function}(" in source
        assert isinstance(SPECS.get(exercise_id), FunctionExercise) and EXERCISES[exercise_id] == _chapter(path)
        shown = "".join("".join(o.get("data", {}).get("text/plain", o.get("text", "")))
                        for o in check_cell["outputs"])
        assert shown.startswith("Correct:"), f"{path.name}: stored verdict {shown!r}"


def test_every_checked_exercise_is_in_the_book_once():
    """Each exercise of rl4llm.exercises is used by exactly one chapter, the one EXERCISES names: a by-hand
    exercise's label in an answer box, a coding exercise's label or function id in a check cell."""
    used = {}
    for path in CHAPTERS:
        for box in BOX.findall(_markdown(path)):
            used.setdefault(box, []).append(_chapter(path))
        for cell in _tagged(path, "exercise-check"):
            call = CHECK_CALL.search("".join(cell["source"]))
            used.setdefault(call.group(1), []).append(_chapter(path))
    assert {k: v for k, v in used.items() if len(v) != 1} == {}
    assert len({label_of(k) for k in used}) == len(used)
    assert {label_of(k): v[0] for k, v in used.items()} == {k: spec.chapter for k, spec in SPECS.items()}
    assert set(answer_key()) == {k for k, v in SPECS.items() if isinstance(v, NumericExercise)}


def test_every_exercise_has_a_kind_an_objective_and_points():
    """Every exercise of the book (91 today) can be assigned: it has one of rl4llm.course.syllabus's kinds
    (its title's, or UNTITLED_KINDS's for the titles that name none, and never both), an objective and
    its points."""
    from rl4llm.course.assignments import exercises
    from rl4llm.course.syllabus import KINDS, OBJECTIVES, UNTITLED_KINDS, kind, points

    everything = [e for path in CHAPTERS for e in exercises(path)]
    labels = [e.label for e in everything]
    assert len(labels) == len(set(labels)) and all(labels)
    assert {e.label for e in everything if e.kind} & set(UNTITLED_KINDS) == set()
    assert {e.label for e in everything if not e.kind} == set(UNTITLED_KINDS)
    assert set(OBJECTIVES) == set(labels)
    assert all(kind(e) in KINDS and OBJECTIVES[e.label].strip() and points(e) > 0 for e in everything)
    assert {kind(e) for e in everything} == set(KINDS)


def test_each_rubric_is_points_and_what_earns_them_and_adds_up():
    """A kind graded by hand (and the project) is worth what its rubric's criteria add up to."""
    from rl4llm.course.syllabus import (CHECKED_EXPERIMENT_RUBRIC, CHECKED_RESULT, KINDS, POINTS, PROJECT, RUBRICS,
                                        total)

    assert set(POINTS) == set(KINDS) and set(RUBRICS) == {"written", "experiment"}
    for name, rubric, points in [*((k, r, POINTS[k]) for k, r in RUBRICS.items()),
                                 ("checked experiment", (*CHECKED_EXPERIMENT_RUBRIC, CHECKED_RESULT), POINTS["experiment"]),
                                 ("project", PROJECT.rubric, PROJECT.points)]:
        assert len(rubric) >= 2 and all(c.points > 0 and len(c.earns) > 20 for c in rubric), name
        assert total(rubric) == points, (name, [c.points for c in rubric], points)


def test_every_experiment_is_worth_its_rubric():
    from rl4llm.course.assignments import exercises
    from rl4llm.course.syllabus import RUBRICS, kind, points, total

    experiments = [e for path in CHAPTERS for e in exercises(path) if kind(e) == "experiment"]
    assert len(experiments) >= len(CHAPTERS) and {points(e) for e in experiments} == {total(RUBRICS["experiment"])}
