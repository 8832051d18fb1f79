"""The student edition (scripts/student_edition.py): no solution text anywhere, no reference source and
no answer value in its notebooks or its built site, launch buttons only to the instructor's repository,
each coding exercise a stub that its check cell reports without crashing, every chapter's cells run,
and its site builds with zero warnings and shows no solution. The site is built once per session."""
import ast
import html
import importlib
import inspect
import json
import re
import sys
import textwrap
from pathlib import Path

import nbformat
import pytest
import yaml
from nbclient import NotebookClient

from rl4llm.course.assignments import BEGIN, NEAR_REFERENCES, SOLUTION_STUB, _blocks, exercises
from rl4llm.exercises import answer_key

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT / "_ext"))
from answer_boxes import GRID, hashed_key  # noqa: E402
from answer_boxes_js import NODE, node_verdicts  # noqa: E402

from rl4llm.exercises._core import MALFORMED  # noqa: E402
from student_edition import build, write_edition  # noqa: E402

CHAPTERS = sorted((ROOT / "book").glob("[0-9][0-9]_*.ipynb"))
BOOK_REPOSITORY = yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]["url"]
LIBRARY = ROOT / "code" / "rl4llm"


@pytest.fixture(scope="session")
def edition(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("student")
    write_edition(out)
    return out


@pytest.fixture(scope="session")
def site(edition) -> Path:
    """The edition's site, built once (a few minutes)."""
    result = build(edition)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return edition / "_build" / "html"


def _reference(name: str):
    for module in ("rl4llm", "rl4llm.llm.grpo", "rl4llm.llm.data_parallel", "rl4llm.studies.method_runs", "rl4llm.toy.verifier"):
        function = getattr(importlib.import_module(module), name, None)
        if inspect.isfunction(function) and function.__name__ == name:
            return function
    raise LookupError(f"no library function {name!r}")


def _body_lines(function) -> list[str]:
    """The code lines of a function's body (docstring, comments and short lines left out)."""
    source = textwrap.dedent(inspect.getsource(function))
    body = ast.parse(source).body[0].body
    if isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    lines = (line.split("  #")[0].strip() for line in source.splitlines()[body[0].lineno - 1:body[-1].end_lineno])
    return [line for line in lines if len(line) >= 25 and not line.startswith("#")]


def _reference_bodies() -> dict[str, list[str]]:
    """Each coding exercise's reference function (and each that gives one away), by name: the lines of
    its body that no other code of the library has (shared boilerplate says nothing of the answer)."""
    library = "\n".join(p.read_text() for p in LIBRARY.rglob("*.py"))
    names = {e.check_id for p in CHAPTERS for e in exercises(p) if e.kind == "coding"} | set(NEAR_REFERENCES)
    return {name: [line for line in _body_lines(_reference(name)) if library.count(line) == 1] for name in names}


def _notebook_text(path: Path) -> str:
    """Everything a notebook holds: sources and every text output (HTML without its tags)."""
    parts = []
    for cell in json.loads(path.read_text())["cells"]:
        parts.append("".join(cell["source"]))
        for output in cell.get("outputs", []):
            parts += [_untagged("".join(v)) if k == "text/html" else "".join(v)
                      for k, v in output.get("data", {}).items() if k.startswith("text")]
            parts.append("".join(output.get("text", "")))
    return "\n".join(parts)


def _untagged(text: str) -> str:
    """HTML's text: tags dropped, entities decoded (a highlighted code block reads as its code)."""
    return html.unescape(re.sub(r"<[^>]+>", "", text))


def _answer_forms(entry: dict) -> list[str]:
    """How a page could hold an answer in clear, searchable anywhere in it: check()'s message for it, and
    its full value where that has too many digits to be a chapter's number (-0.4 is; each box's key is
    searched for every form in the test below)."""
    value = entry["value"]
    return [f"is {value:.4g} (answers within"] + ([repr(value)] if len(repr(value)) > 8 else [])


def _solution_lines(path: Path) -> list[str]:
    """The lines of the chapter's solutions: every solution block's body lines, and every line of a
    coding exercise's reference body (with repeats)."""
    lines = []
    for cell in json.loads(path.read_text())["cells"]:
        source = "".join(cell["source"])
        if cell["cell_type"] == "markdown":
            for name, _, body, _, _ in _blocks(source):
                if name == "solution":
                    lines += [l.strip() for l in body.splitlines() if len(l.strip()) > 25 and not l.startswith(":")]
        elif BEGIN in source:
            body = source.split(BEGIN)[1].split("### END SOLUTION")[0]
            lines += [l.strip() for l in body.splitlines() if len(l.strip()) > 12]
    return lines


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_no_solution_survives_and_coding_exercises_are_stubs(edition, path):
    text = (edition / "book" / path.name).read_text()
    cells = json.loads(text)["cells"]
    sources = "\n".join("".join(c["source"]) for c in cells)
    assert "{solution}" not in sources and BEGIN not in sources
    assert "click to show it" not in sources and "holds the reference solution" not in sources
    assert not [c for c in cells if "solution" in c["metadata"].get("tags", [])]      # a solution's executed cells
    original = "\n".join("".join(c["source"]) for c in json.loads(path.read_text())["cells"])
    solutions = _solution_lines(path)
    # a solution line may also appear in the chapter's own text or code: only extra copies are a leak
    leaked = [line for line in set(solutions)
              if sources.count(line) > original.count(line) - solutions.count(line)]
    assert not leaked, leaked
    stubs = [c for c in cells if "exercise-code" in c["metadata"].get("tags", [])]
    assert len(stubs) == sum(e.kind == "coding" for e in exercises(path))
    for cell in stubs:
        assert SOLUTION_STUB.split("\n")[1] in "".join(cell["source"]) and not cell["outputs"]
        assert "hide-input" not in cell["metadata"]["tags"]
    assert [e.label for e in exercises(edition / "book" / path.name)] == [e.label for e in exercises(path)]


def test_every_reference_body_is_distinctive_and_the_book_shows_them():
    """The search below looks for something: each reference has lines of its own, and the book (the
    instructor's edition) shows the bodies the issue lists."""
    bodies = _reference_bodies()
    assert all(bodies.values()), {name: lines for name, lines in bodies.items() if not lines}
    book = "\n".join(_notebook_text(p) for p in CHAPTERS)
    shown = {name for name, lines in bodies.items() if any(line in book for line in lines)}
    assert {"softmax", "decode_probs", "sft_gradient", "estimator_variance", "importance_ratios",
            "clipped_objective", "gae", "data_parallel_loss", "run_reinforce"} <= shown, shown


def test_the_edition_holds_no_reference_source_and_no_answer(edition):
    bodies, key = _reference_bodies(), answer_key()
    for path in sorted((edition / "book").glob("*.ipynb")):
        text = _notebook_text(path)
        assert not {name for name, lines in bodies.items() if any(line in text for line in lines)}, path.name
        assert not [form for entry in key.values() for form in _answer_forms(entry) if form in text], path.name
        assert BOOK_REPOSITORY not in text and "google.colab" not in text, path.name


def test_the_student_site_shows_no_reference_source_no_answer_and_no_launch_button(site):
    bodies, key = _reference_bodies(), answer_key()
    pages = sorted(site.rglob("*.html"))
    assert len(pages) > len(CHAPTERS)
    for page in pages:
        raw = page.read_text(encoding="utf-8")
        text = _untagged(raw)
        assert not {name for name, lines in bodies.items() if any(line in text for line in lines)}, page.name
        assert not [form for entry in key.values() for form in _answer_forms(entry) if form in raw], page.name
        for link in ("mybinder.org", "colab.research.google.com", BOOK_REPOSITORY):
            assert link not in raw, (page.name, link)
    for script in site.rglob("answer_boxes*.js"):
        assert not [form for entry in key.values() for form in _answer_forms(entry) if form in script.read_text()]


def test_the_student_sites_answer_boxes_hold_digests_not_numbers(site):
    """Each box's data-key: no answer and no common wrong value as a number (its numbers are the
    tolerance and the grid's step), and the messages of the answer and of each mistake encrypted (a
    mistake's message may name the answer): only bands of digests, wrapped keys and ciphertexts. And
    every box, its key as the page holds it, judged by the site's answer_boxes.js under node (no
    browser): check()'s verdict on the answer, on each common mistake, on a far number and on text."""
    from rl4llm.exercises import check

    key, seen, cases = answer_key(), set(), []
    for page in sorted((site / "book").glob("[0-9][0-9]_*.html")):
        raw = page.read_text(encoding="utf-8")
        for exercise_id, data in re.findall(r'<form class="answer-box" data-exercise="([\w.-]+)" data-key="([^"]*)"',
                                            raw):
            entry, box = key[exercise_id], json.loads(html.unescape(data))
            seen.add(exercise_id)
            assert {"value", "correct"} & set(box) == set()
            assert {k for k, v in box.items() if isinstance(v, (int, float))} == {"tolerance", "step", "decimals"}, box
            for band, ciphertext in [box["accept"], *box["mistakes"]]:
                assert len(band) in (2 * GRID, 2 * GRID + 1) and re.fullmatch(r"([0-9a-f]{2})+", ciphertext)
                assert all(re.fullmatch(r"[0-9a-f]{16}", d) and re.fullmatch(r"[0-9a-f]{32}", w)
                           for d, w in band.items()), box
            shown = (box["wrong"] + box["malformed"]).replace(f"±{entry['tolerance']:g}", "")
            # the text every box shows (MALFORMED) and the box's own "decimals" may hold the digits of a small answer
            shown = shown.replace(MALFORMED, "").replace(f"keep {box['decimals']} decimal", "")
            assert f"{entry['value']:.4g}" not in shown, box
            tries = [entry["value"], *(wrong for wrong, _ in entry["mistakes"]),
                     entry["value"] + 1000 * entry["tolerance"]]
            cases += [(exercise_id, box, text) for text in [f"{v:.6f}" for v in tries] + ["abc"]]
    assert seen == set(key)
    if NODE is not None:
        got = node_verdicts([[box, text] for _, box, text in cases], next(site.rglob("answer_boxes.js")))
        assert [message for _, message in got] == [check(e, text) for e, _, text in cases]


@pytest.mark.skipif(NODE is None, reason="needs node to run answer_boxes.js")
def test_a_hashed_box_gives_the_verdicts_of_the_clear_one_within_a_twentieth_of_the_tolerance():
    """The student site's box (digests) against the book's (the answer in clear), on the answer, on
    numbers 0.94 and 1.06 tolerances away (the band is exact to a twentieth of the tolerance), on each common mistake, on "−" with a decimal comma and on
    text that is no number: the same verdict and, but for "malformed" (the hashed key's own examples),
    the same message, decrypted."""
    clear, hashed = [], []
    for entry in answer_key().values():
        value, tol = entry["value"], entry["tolerance"]
        tries = [f"{value:.6f}", f"{value:.6f}".replace("-", "−").replace(".", ","), "abc", "1/0"]
        tries += [f"{value + sign * factor * tol:.12f}" for sign in (1, -1) for factor in (0.94, 1.06)]
        tries += [f"{wrong + sign * factor * tol:.12f}" for wrong, _ in entry["mistakes"]
                  for sign in (1, -1) for factor in (0, 0.94)]
        key = hashed_key(entry)
        assert len(key["accept"][0]) in (2 * GRID, 2 * GRID + 1) and key["step"] == tol / GRID
        clear += [[entry, text] for text in tries]
        hashed += [[key, text] for text in tries]
    expected, got = node_verdicts(clear), node_verdicts(hashed)
    assert [kind for kind, _ in got] == [kind for kind, _ in expected]
    assert {kind for kind, _ in got} == {"correct", "mistake", "wrong", "malformed"}
    for (kind, message), (_, mine), (_, text) in zip(expected, got, hashed):
        assert mine == (MALFORMED if kind == "malformed" else message), (text, mine, message)


@pytest.mark.skipif(NODE is None, reason="needs node to run answer_boxes.js")
def test_a_box_reads_a_unicode_minus_and_a_decimal_comma():
    entry = answer_key()["ex-ch09-group-step"]                       # the answer is -0.125
    texts = ["-0.125", "−0.125", "−0,125", " -1/8 ", "−1/8", "-0,125", "-0.125,0", "- 0.125"]
    kinds = [kind for kind, _ in node_verdicts([[entry, t] for t in texts])]
    assert kinds == ["correct"] * 6 + ["malformed"] * 2, dict(zip(texts, kinds))


def _colour(hex_colour: str) -> float:
    rgb = [int(hex_colour.lstrip("#")[i:i + 2], 16) / 255 for i in (0, 2, 4)]
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def _contrast(a: str, b: str) -> float:
    high, low = sorted([_colour(a), _colour(b)], reverse=True)
    return (high + 0.05) / (low + 0.05)


def test_the_verdict_is_readable_in_both_themes():
    """WCAG contrast >= 4.5:1 for the right and wrong verdict's colours against pydata-sphinx-theme's page,
    admonition (on-background) and surface colours, light and dark."""
    import pydata_sphinx_theme
    theme_css = (Path(pydata_sphinx_theme.__file__).parent / "theme" / "pydata_sphinx_theme" / "static" / "styles" /
                 "pydata-sphinx-theme.css").read_text()
    css = (ROOT / "_ext" / "answer_boxes_static" / "answer_boxes.css").read_text()
    light = dict(re.findall(r"--(answer-\w+): (#[0-9a-f]{6})", css.split("html[data-theme=\"dark\"]")[0]))
    dark = dict(re.findall(r"--(answer-\w+): (#[0-9a-f]{6})", css.split("html[data-theme=\"dark\"]")[1].split("}")[0]))
    for theme, colours in (("light", light), ("dark", dark)):
        backgrounds = {}
        for block in re.findall(rf"html\[data-theme={theme}\]\{{([^}}]*)\}}", theme_css):
            backgrounds.update(re.findall(r"--pst-color-(background|on-background|surface):(#[0-9a-f]{3,6})", block))
        backgrounds = {k: v if len(v) == 7 else "#" + "".join(c * 2 for c in v[1:]) for k, v in backgrounds.items()}
        assert set(colours) == {"answer-correct", "answer-wrong"} and len(backgrounds) == 3, (colours, backgrounds)
        low = {(c, b): round(_contrast(fg, bg), 2) for c, fg in colours.items() for b, bg in backgrounds.items()
               if _contrast(fg, bg) < 4.5}
        assert not low, (theme, low)


def test_the_field_shows_every_keypad_its_minus():
    from answer_boxes import INPUT_PATTERN, box_html
    form = box_html("ex-ch09-group-step", hashed_key(answer_key()["ex-ch09-group-step"]))
    assert 'inputmode="text"' in form and 'inputmode="decimal"' not in form
    pattern = re.compile(f"^(?:{INPUT_PATTERN})$")
    assert all(pattern.match(t) for t in ["-0.125", "−0,125", "1/8", "2.5e-1"]) and not pattern.match("abc")


def test_launch_buttons_and_colab_cells_open_the_repository_the_instructor_names(tmp_path):
    course = "https://github.com/some-course/rl-student-edition"
    write_edition(tmp_path, repository=course, branch="spring")
    config = yaml.safe_load((tmp_path / "_config.yml").read_text())
    assert config["repository"]["url"] == course and config["repository"]["branch"] == "spring"
    assert config["sphinx"]["config"]["answer_boxes_hashed"] is True
    for path in sorted((tmp_path / "book").glob("*.ipynb")):
        first = json.loads(path.read_text())["cells"][0]
        assert course in "".join(first["source"]) and '"spring"' in "".join(first["source"]), path.name
        assert BOOK_REPOSITORY not in path.read_text(), path.name


def test_every_exercise_cell_runs_and_each_stub_gets_its_verdict(edition):
    """All chapters' exercise cells (starter, then check) in one fresh kernel: every check runs and says
    the stub raised NotImplementedError; nothing raises."""
    cells = []
    for path in CHAPTERS:
        nb = json.loads((edition / "book" / path.name).read_text())
        cells += [c for c in nb["cells"] if {"exercise-code", "exercise-check"} & set(c["metadata"].get("tags", []))]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("".join(c["source"])) for c in cells])
    NotebookClient(nb, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(edition / "book")}}).execute()
    checks = ["".join(o.get("data", {}).get("text/plain", "")) for c in nb.cells for o in c.outputs]
    assert len(checks) == sum(e.kind == "coding" for p in CHAPTERS for e in exercises(p))
    assert all(c.startswith("Not yet:") and "raised NotImplementedError" in c for c in checks), checks


def test_a_chapter_of_the_student_edition_runs_top_to_bottom(edition):
    nb = nbformat.read(edition / "book" / "07_score_function.ipynb", as_version=4)
    NotebookClient(nb, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(edition / "book")}}).execute()
    errors = [o for c in nb.cells for o in c.get("outputs", []) if o.output_type == "error"]
    assert not errors


def test_the_student_site_builds_without_solutions(site):
    assert not (site / "book" / "instructor_guide.html").exists()
    for path in CHAPTERS:
        page = (site / "book" / f"{path.stem}.html").read_text()
        assert re.search(r'class="solution[ "]', page) is None, path.name
        assert len(re.findall(r'<span class="caption-number">Exercise ', page)) == len(exercises(path))
        assert "NotImplementedError" in page and "form class=\"answer-box\"" in page
