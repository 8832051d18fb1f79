"""Library code shown as code in the book, exactly as written.

Chapters show the library function that computes what they derive: ``show_source(f)`` displays
``f``'s source as :func:`inspect.getsource` returns it (dedented), decorator included, so the
``@checked(...)`` line states each argument's valid range beside the signature and the body reads
like the formula. What a cell stores is the source itself, as a Markdown code fence
(``text/markdown``), never a highlighter's HTML: Jupyter and the book highlight the fence when they
display it, so the stored output (which nbval compares) is the same whatever Pygments version is
installed (issue 17).
"""
from __future__ import annotations

import inspect
import re
import textwrap


class Listing:
    """Code to display: a Markdown fence of ``text`` in ``language`` (``text/markdown``), and the text
    itself as the plain-text form. Highlighting happens where it is shown, not in the stored output."""

    def __init__(self, text: str, language: str):
        self.text, self.language = text, language

    def _repr_markdown_(self) -> str:
        fence = "`" * max([3] + [len(run) + 1 for run in re.findall("`+", self.text)])
        return f"{fence}{self.language}\n{self.text.rstrip()}\n{fence}\n"

    def __repr__(self) -> str:
        return self.text


def show_code(text: str, language: str) -> Listing:
    """A file's or a string's text shown as code (a chapter shows a config file with it)."""
    return Listing(text, language)


def show_source(obj) -> Listing:
    """The source of a function, method or class, exactly as written, shown as Python code."""
    return Listing(textwrap.dedent(inspect.getsource(obj)), "python")
