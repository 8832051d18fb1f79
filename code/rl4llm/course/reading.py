"""A chapter's reading load, counted from its notebook: what a first reading is asked to get through.

The course plans each chapter's reading in minutes (``syllabus.MINUTES``, estimates). This module counts
what those minutes cover, so that an instructor can weigh the plan against the page (the instructor guide
prints both): the chapter's main path, every cell before its ``## Exercises`` heading (the exercises have
minutes of their own), split into

- **visible words**: Markdown a reader sees without opening anything;
- **folded words**: Markdown inside a box that opens (a MyST directive with ``:class: dropdown``, or a
  ``{dropdown}``): the deep dives and practitioners' notes a first reading may skip;
- **code lines**: the lines of the code cells the page shows (not those tagged ``hide-input``,
  ``remove-input`` or ``remove-cell``).

A word is a run of non-space characters, as ``wc -w`` counts them (a formula between spaces is one); a
directive's fences and option lines are not words, its title is.
MyST's directives, in backtick or colon fences, are found by markdown-it, the parser MyST itself is built on
(``markdown-it-py`` and ``mdit-py-plugins``, which come with Jupyter Book: the instructor guide's environment, not
dependencies of ``pip install ./code``).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

HIDDEN_CODE = {"hide-input", "remove-input", "remove-cell"}
FOLDING = re.compile(r"^:class:.*\bdropdown\b", re.M)


@dataclass(frozen=True)
class ReadingLoad:
    visible_words: int
    folded_words: int
    code_lines: int


def _words(text: str) -> int:
    """Words a reader reads in MyST ``text``: a directive's title but not its fence or option lines."""
    count = 0
    for line in text.splitlines():
        fence = re.match(r"^\s*(?:`{3,}|:{3,})(\{[\w-]+\})?(.*)$", line)
        if fence:
            count += len(fence.group(2).split()) if fence.group(1) else 0     # a title, or a language name
        elif not re.match(r"^:[\w-]+:", line):
            count += len(line.split())
    return count


def _options(body: str) -> list[str]:
    """A directive's own options: the ``:key: value`` lines its body opens with."""
    options = []
    for line in body.splitlines():
        if not re.match(r"^:[\w-]+:", line):
            break
        options.append(line)
    return options


def markdown_words(source: str) -> tuple[int, int]:
    """(visible, folded) words of Markdown ``source``: a fenced directive that folds (its own options say
    ``:class: dropdown``, or it is a ``{dropdown}``) counts as folded, title and body; inside a directive
    that stays open, the boxes that fold within it count as folded."""
    from markdown_it import MarkdownIt
    from mdit_py_plugins.colon_fence import colon_fence_plugin

    visible, folded = _words(source), 0
    for token in MarkdownIt("commonmark").use(colon_fence_plugin).parse(source):
        if token.type in ("fence", "colon_fence") and token.info.startswith("{"):
            directive = token.info[1:].split("}", 1)[0]
            if directive == "dropdown" or any(FOLDING.match(o) for o in _options(token.content)):
                moved = _words("\n".join(source.splitlines()[slice(*token.map)]))
            else:
                moved = markdown_words(token.content)[1]
            visible, folded = visible - moved, folded + moved
    return visible, folded


def reading_load(path: str | Path) -> ReadingLoad:
    """What chapter notebook ``path`` shows before its ``## Exercises`` heading (module docstring).

    A notebook without that heading raises ``ValueError``: its exercises and solutions would count as reading."""
    visible = folded = code = 0
    for cell in json.loads(Path(path).read_text(encoding="utf-8"))["cells"]:
        source = "".join(cell["source"])
        if cell["cell_type"] == "markdown":
            before, *exercises = re.split(r"^## Exercises\b", source, maxsplit=1, flags=re.M)
            shown, hidden = markdown_words(before)
            visible, folded = visible + shown, folded + hidden
            if exercises:
                return ReadingLoad(visible, folded, code)
        elif cell["cell_type"] == "code" and not HIDDEN_CODE & set(cell["metadata"].get("tags", [])):
            code += len(source.splitlines())
    raise ValueError(f"path: {path} has no '## Exercises' heading, which ends a chapter's main path")
