"""The chapters' exercises as data: the list an instructor assigns from, the student edition, and the
nbgrader source assignments (no numerics here; the checks themselves are in ``rl4llm.exercises``).

How a chapter notebook marks its exercises (``tests/test_coursework.py`` holds every chapter to it):

- each exercise is a sphinx-exercise block, `` ```{exercise} Title (kind) `` with ``:label: ex-chNN-slug``,
  its kind one of "by hand", "coding", "experiment" (other exercises name no kind); its solution is a
  `` ```{solution} `` block after it. Exercises are numbered per chapter in order ("Exercise 7.2");
- a coding exercise's markdown cell is followed by its starter cell (tags ``exercise-code``,
  ``hide-input``), whose reference body sits between nbgrader's ``### BEGIN SOLUTION`` and
  ``### END SOLUTION`` lines, and by its check cell (tag ``exercise-check``), ending in
  ``check("<id>", my_function)``.

The student edition removes every solution block and replaces each reference body by nbgrader's stub,
so a handed-out notebook and an nbgrader release say the same thing; it also leaves out every
``show_source`` cell that displays a coding exercise's reference (:func:`withheld_source`), and
:func:`handed_out` rewrites the text that says the book's starter holds the solution.
"""
from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass
from pathlib import Path

from .syllabus import CHECKED_EXPERIMENT_RUBRIC, CHECKED_RESULT, POINTS, RUBRICS, WEEKS, assigned, kind

SOLUTION_STUB = "# YOUR CODE HERE\nraise NotImplementedError()"      # nbgrader's default for Python
BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"
_OPEN = re.compile(r"^(?P<fence>`{3,}|:{3,})\{(?P<name>exercise|solution)\}[ \t]*(?P<arg>.*)$")
_LABEL = re.compile(r"^:label:\s*(\S+)\s*$", re.M)
_KIND = re.compile(r"\((by hand|coding|experiment)\)\s*$")
_CHECK = re.compile(r'check\("([\w.-]+)",\s*(\w+)\)\s*$')
#: The chapters' note that the starter holds the solution, which a handed-out assignment must not say.
_ANSWER_BOX = re.compile(r'^<div class="answer-box" data-exercise="[\w.-]+"></div>\n?', re.M)

#: The five graded assignments, one a part: the chapters each one draws its coding and by-hand exercises from.
PARTS: dict[str, tuple[str, range]] = {f"part{n}": (week.title, range(week.chapters[0], week.chapters[-1] + 1))
                                       for n, week in enumerate(WEEKS, 1)}


@dataclass(frozen=True)
class Exercise:
    """One exercise of a chapter: ``number`` is "7.2"; ``kind`` is "by hand", "coding", "experiment"
    or "" (any other); for a coding exercise, ``starter`` is its starter cell's source (reference
    body included), ``check_id`` the id it is checked under and ``function`` the student's function."""
    chapter: int
    number: str
    label: str
    title: str
    kind: str
    text: str
    starter: str = ""
    check_id: str = ""
    function: str = ""


def _blocks(markdown: str):
    """(name, argument, body, start, end) for each top-level exercise or solution block, in order;
    start/end are line indices (end exclusive). A block ends at a line of the same fence, at least as long."""
    lines = markdown.split("\n")
    i = 0
    while i < len(lines):
        match = _OPEN.match(lines[i])
        if not match:
            i += 1
            continue
        fence = match["fence"]
        j = i + 1
        while j < len(lines) and not (lines[j].strip().startswith(fence[0] * len(fence))
                                      and set(lines[j].strip()) == {fence[0]}):
            j += 1
        yield match["name"], match["arg"].strip(), "\n".join(lines[i + 1:j]), i, min(j + 1, len(lines))
        i = j + 1


def strip_solutions(markdown: str) -> str:
    """The markdown with every ``{solution}`` block removed (and the blank lines it leaves collapsed)."""
    lines = markdown.split("\n")
    drop = set()
    for name, _, _, start, end in _blocks(markdown):
        if name == "solution":
            drop.update(range(start, end))
    kept = "\n".join(line for k, line in enumerate(lines) if k not in drop)
    return re.sub(r"\n{3,}", "\n\n", kept).strip("\n")


def stub(source: str) -> str:
    """A starter cell with its reference body replaced by nbgrader's stub, at the same indentation."""
    def replace(match):
        indent = match["indent"]
        return "\n".join(indent + line for line in SOLUTION_STUB.split("\n"))
    pattern = re.compile(rf"^(?P<indent>[ \t]*){re.escape(BEGIN)}\n.*?^[ \t]*{re.escape(END)}$", re.M | re.S)
    return pattern.sub(replace, source)


def _source(cell) -> str:
    return "".join(cell["source"])


def _tags(cell) -> list[str]:
    return cell.get("metadata", {}).get("tags", [])


def chapter_number(path: Path) -> int:
    return int(Path(path).name[:2])


def exercises(path: Path) -> list[Exercise]:
    """The exercises of one chapter notebook, in order, numbered per chapter."""
    path = Path(path)
    chapter = chapter_number(path)
    cells = json.loads(path.read_text())["cells"]
    found: list[Exercise] = []
    for index, cell in enumerate(cells):
        if cell["cell_type"] != "markdown":
            continue
        for name, title, body, _, _ in _blocks(_source(cell)):
            if name != "exercise":
                continue
            label = _LABEL.search(body)
            kind = _KIND.search(title)
            text = _ANSWER_BOX.sub("", _LABEL.sub("", body)).strip()
            extra = {}
            if kind and kind.group(1) == "coding":
                starter, check = cells[index + 1], cells[index + 2]
                if "exercise-code" not in _tags(starter) or "exercise-check" not in _tags(check):
                    raise ValueError(f"{path.name}: coding exercise {title!r} is not followed by its starter "
                                     "and check cells")
                check_id, function = _CHECK.search(_source(check)).groups()
                extra = {"starter": _source(starter), "check_id": check_id, "function": function}
            found.append(Exercise(chapter, f"{chapter}.{len(found) + 1}", label.group(1) if label else "",
                                  title, kind.group(1) if kind else "", text, **extra))
    return found


#: Library functions whose source gives away a coding exercise's answer besides the exercises' own
#: (``show_source`` of them is left out of the student edition): softmax is exp(log_softmax), and
#: run_reinforce is run_exact_gradient's loop with the exact gradient replaced by a sampled one.
NEAR_REFERENCES = {"log_softmax": "softmax", "run_reinforce": "run_exact_gradient"}
_SHOW_SOURCE = re.compile(r"^\s*show_source\(([\w.]+)\)\s*$", re.M)
_STARTER_HOLDS_SOLUTION = re.compile(r"In\s+the\s+book\s+the\s+starter\s+holds\s+the\s+reference\s+solution\s+"
                                     r"\(click\s+to\s+show\s+it\)(?:,\s+so\s+the\s+check\s+below\s+shows\s+what"
                                     r"\s+a\s+pass\s+looks\s+like)?\.")
STARTER_IS_A_STUB = ("Here the starter is a stub (`raise NotImplementedError()`): the check below says \"Not yet\" "
                     "until your function is written.")


def handed_out(markdown: str) -> str:
    """Markdown as a student gets it (student edition, nbgrader release): no solution block, and the
    sentence that says the book's starter holds the reference solution says that theirs is a stub."""
    return _STARTER_HOLDS_SOLUTION.sub(STARTER_IS_A_STUB, strip_solutions(markdown))


def withheld_source(cell, functions: set[str]) -> str | None:
    """The name of the function a ``show_source(...)`` code cell shows, if it is one of ``functions``
    (or gives one away, per ``NEAR_REFERENCES``); else None."""
    if cell["cell_type"] != "code":
        return None
    for name in _SHOW_SOURCE.findall(_source(cell)):
        short = name.rsplit(".", 1)[-1]
        if short in functions or NEAR_REFERENCES.get(short) in functions:
            return name
    return None


def student_notebook(nb: dict, functions: set[str] = frozenset()) -> dict:
    """A chapter notebook to hand out: no solution blocks; each coding exercise's reference body is
    nbgrader's stub and its cell no longer hidden; the exercise cells' stored outputs cleared; each
    ``show_source`` cell of one of ``functions`` (the coding exercises' reference functions, by name)
    replaced by a note; the text that says the starter holds the solution says it is a stub; a code cell
    tagged ``solution`` (a solution's executed part, e.g. an experiment's run) left out."""
    nb = copy.deepcopy(nb)
    cells = []
    for cell in nb["cells"]:
        tags = _tags(cell)
        withheld = withheld_source(cell, set(functions))
        if "solution" in tags:
            continue
        if withheld:
            cell = {"cell_type": "markdown", "metadata": {},
                    "source": [f"*(This edition leaves out the source of `{withheld}`: writing it is one of the "
                               "book's coding exercises.)*"]}
        elif cell["cell_type"] == "markdown":
            text = handed_out(_source(cell))
            if not text.strip():
                continue
            cell["source"] = text.splitlines(keepends=True)
        elif "exercise-code" in tags or "exercise-check" in tags:
            cell["source"] = stub(_source(cell)).splitlines(keepends=True)
            cell["metadata"]["tags"] = [t for t in tags if t != "hide-input"]
            cell["outputs"], cell["execution_count"] = [], None
        cells.append(cell)
    nb["cells"] = cells
    return nb


def _nbgrader(kind: str, grade_id: str, points: int = 0) -> dict:
    """nbgrader's metadata of a cell: "markdown" (locked text), "solution" (the student's cell), "test"
    (locked, autograded) or "manual" (the student's answer, graded by hand)."""
    meta = {"grade_id": grade_id, "schema_version": 3, "solution": kind in ("solution", "manual"),
            "grade": kind in ("test", "manual"), "locked": kind not in ("solution", "manual"), "task": False}
    if kind in ("test", "manual"):
        meta["points"] = points
    return {"nbgrader": meta}


def _cell(kind: str, source: str, metadata: dict) -> dict:
    cell = {"cell_type": kind, "metadata": metadata, "source": source.splitlines(keepends=True)}
    if kind == "code":
        cell.update(execution_count=None, outputs=[])
    return cell


def answer_name(number: str) -> str:
    """The name a by-hand answer is written to in an nbgrader assignment: ``answer_7_1`` for Exercise 7.1."""
    return "answer_" + number.replace(".", "_")


def checked_result(e: Exercise) -> bool:
    """Whether ``e`` is an experiment whose result the book's answer box checks (a by-hand check of its label)."""
    from ..exercises import SPECS, NumericExercise
    return kind(e) == "experiment" and isinstance(SPECS.get(e.label), NumericExercise)


def _test_cell(check_id: str, defined: str, grade_id: str, points: int) -> dict:
    """The locked, autograded cell that checks what the student's cell defined (a function, or a number)."""
    return _cell("code", f'from rl4llm.exercises import assert_correct\n\nassert_correct("{check_id}", {defined})',
                 _nbgrader("test", f"{grade_id}-check", points=points))


def _answer_cell(e: Exercise) -> str:
    """A by-hand exercise's solution cell (or a checked experiment's result cell): the library's answer between
    nbgrader's markers (the source assignment is the instructor's; the release holds nbgrader's stub in their
    place)."""
    from ..exercises import SPECS
    if e.label not in SPECS:
        raise ValueError(f"by-hand exercise {e.label} has no check in rl4llm.exercises")
    spec, name = SPECS[e.label], answer_name(e.number)
    return (f"# Exercise {e.number}: {spec.quantity}.\n"
            f"# Replace the two lines below by {name} = your number (or a fraction as text: {name} = \"1/4\").\n"
            f"{BEGIN}\n{name} = {float(f'{spec.value:.10g}')!r}\n{END}\n")


def source_assignment(part: str, chapters: list[Path]) -> dict:
    """nbgrader's source notebook for one part: what the syllabus assigns from its chapters, in the
    book's order. A coding or by-hand exercise is a solution cell (a coding exercise's starter with the
    reference body between nbgrader's markers; a by-hand exercise's answer, :func:`answer_name`
    ``= value``, between them) and a locked, graded test cell that fails with ``rl4llm.exercises``'s
    verdict; a written exercise or an experiment is its text with its rubric and a manually graded
    answer cell worth the rubric's points."""
    title, numbers = PARTS[part]
    chosen = [e for path in chapters if chapter_number(path) in numbers for e in assigned(exercises(path))]
    listed = {k: ", ".join(e.number for e in chosen if kind(e) == k) or "none" for k in POINTS}
    intro = (f"# {title}: coding and by-hand exercises\n\n"
             "A **coding** exercise asks for one function of the library, written from its formula, with the "
             "library function's signature. Write it in the cell under the exercise (replace the stub), then run "
             "the test cell under it: it runs your function beside the library's on the book's toy and on random "
             "cases, and says in words what is wrong (the same message as the chapter's check cell). Every "
             f"coding test cell is worth {POINTS['coding']} points.\n\n"
             "A **by-hand** exercise asks for one number, worked out on paper from the chapter's formulas. Replace "
             "the stub in the cell under it by the line the cell names, such as `answer_7_1 = 0.25` (a decimal, "
             "scientific notation, or a fraction as text: `answer_7_1 = \"1/4\"`), then run the test cell: it "
             "says whether your number is within the exercise's tolerance, or which common slip it matches (the "
             f"message of the book's answer box). Every by-hand test cell is worth {POINTS['by hand']} point"
             f"{'' if POINTS['by hand'] == 1 else 's'}.\n\n"
             "For the grade, each exercise's cell runs again on its own, in a fresh Python in a sandbox (numpy "
             "and torch, no network, no files but its own), for at most a minute and 3 GB of memory: keep "
             "everything a function needs (its imports, any helper) in its cell. The library's "
             "own functions are not available there, except, to a coding exercise, `softmax`, `log_softmax` and "
             "the toy's constants (and `grpo_loss` where an exercise says you may call it); a by-hand cell may "
             "import nothing of the library (Python's or numpy's arithmetic is fine).\n\n"
             "A **written** exercise or an **experiment** is answered in the cell under it (add cells for code "
             "and plots as you need them) and graded by hand with the rubric printed with it; an experiment whose "
             "result the book's answer box checks also hands that number in, in its own cell, graded as a by-hand "
             "answer is.\n\n"
             f"The coding exercises are {listed['coding']}; the by-hand exercises {listed['by hand']}; the "
             f"written ones {listed['written']}; the experiments {listed['experiment']}, as numbered in the book.")
    cells = [_cell("markdown", intro, _nbgrader("markdown", f"{part}-intro"))]
    for e in chosen:
        grade_id = e.label.removeprefix("ex-")
        if kind(e) in RUBRICS:
            checked = checked_result(e)
            criteria = CHECKED_EXPERIMENT_RUBRIC if checked else RUBRICS[kind(e)]
            manual = sum(c.points for c in criteria)
            rubric = "\n".join(f"- {c.points} point{'' if c.points == 1 else 's'}: {c.earns}" for c in criteria)
            by_hand = f"by hand, {manual} points:\n\n{rubric}"
            graded = (f"Its result, `{answer_name(e.number)}`, is graded automatically ({CHECKED_RESULT.points} "
                      f"point: the number the book's answer box checks) in the cells below; the rest is graded "
                      f"{by_hand}" if checked else f"Graded {by_hand}")
            cells.append(_cell("markdown", f"## Exercise {e.number}: {_KIND.sub('', e.title).strip()} ({kind(e)})"
                                           f"\n\n{handed_out(e.text)}\n\n{graded}", _nbgrader("markdown", f"{grade_id}-text")))
            if checked:
                cells += [_cell("code", _answer_cell(e), _nbgrader("solution", f"{grade_id}-result")),
                          _test_cell(e.label, answer_name(e.number), f"{grade_id}-result", CHECKED_RESULT.points)]
            cells.append(_cell("markdown", f"Grade against the solution of Exercise {e.number} in the book, with the "
                                           "rubric above.", _nbgrader("manual", grade_id, points=manual)))
            continue
        by_hand = e.kind == "by hand"
        check_id, defined = (e.label, answer_name(e.number)) if by_hand else (e.check_id, e.function)
        cells += [
            _cell("markdown", f"## Exercise {e.number}: {_KIND.sub('', e.title).strip()}\n\n"
                              f"{handed_out(e.text)}",
                  _nbgrader("markdown", f"{grade_id}-text")),
            _cell("code", _answer_cell(e) if by_hand else e.starter, _nbgrader("solution", grade_id)),
            _test_cell(check_id, defined, grade_id, POINTS[e.kind]),
        ]
    return {"cells": cells, "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python",
                                                         "name": "python3"},
                                         "language_info": {"name": "python"}},
            "nbformat": 4, "nbformat_minor": 4}


def write_notebook(nb: dict, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")
