"""Library code shown as code in the book: highlighted, formula (docstring) first, input checks out
of the way.

Chapters show the library function that computes what they derive. ``show_source(f)`` displays
``f``'s source, in which the input validation is folded into one comment line: every statement that
calls a helper of :mod:`rl4llm._checks`, and every ``if ...: raise ValueError(...)`` guard.

What a cell stores is the source itself, as a Markdown code fence (``text/markdown``), never a
highlighter's HTML: Jupyter and the book highlight the fence when they display it, so the stored
output (which nbval compares) is the same whatever Pygments version is installed (issue 17).
"""
from __future__ import annotations

import ast
import inspect
import re
import textwrap

from .. import _checks

_CHECKS = {name for name, obj in vars(_checks).items() if inspect.isfunction(obj)}
FOLDED = "# (input checks: rl4llm._checks raises ValueError naming the parameter)"


def source_without_checks(obj) -> str:
    """The dedented source of a function, method or class with its input-check statements folded.

    A bare check (``integer_at_least(n, "n", 1)``) or a ``ValueError`` guard becomes one comment (a
    run of them, one comment in all); ``x = check(y, ...)`` becomes ``x = y  # checked`` so that the
    name the rest of the code uses is still defined where the reader looks for it.
    """
    source = textwrap.dedent(inspect.getsource(obj))
    lines = source.splitlines()
    edits = {}                                      # first line (1-based) -> (last line, replacement or None)
    for stmt in _check_statements(ast.parse(source)):
        indent = " " * stmt.col_offset
        target = ast.get_source_segment(source, stmt.targets[0]) if isinstance(stmt, ast.Assign) else None
        argument = ast.get_source_segment(source, stmt.value.args[0]) if target and stmt.value.args else None
        if target and argument and target != argument:
            edits[stmt.lineno] = (stmt.end_lineno, f"{indent}{target} = {argument}  # checked")
        else:
            edits[stmt.lineno] = (stmt.end_lineno, None)
    out, i, folding = [], 1, False
    while i <= len(lines):
        if i in edits:
            last, replacement = edits[i]
            if replacement is not None:
                out.append(replacement)
                folding = False
            elif not folding:
                out.append(f"{' ' * (len(lines[i - 1]) - len(lines[i - 1].lstrip()))}{FOLDED}")
                folding = True
            i = last + 1
            continue
        out.append(lines[i - 1])
        folding = folding and not lines[i - 1].strip()      # a blank line keeps a run of checks going
        i += 1
    return "\n".join(out) + "\n"


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
    """:func:`source_without_checks` of ``obj`` shown as Python code."""
    return Listing(source_without_checks(obj), "python")


def _check_statements(tree: ast.AST) -> list[ast.stmt]:
    return [stmt for node in ast.walk(tree) for field in ("body", "orelse")
            for stmt in (getattr(node, field, None) if isinstance(getattr(node, field, None), list) else [])
            if _is_check(stmt)]


def _direct_check_call(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _CHECKS


def _is_check(stmt: ast.stmt) -> bool:
    if isinstance(stmt, ast.If) and not stmt.orelse and all(isinstance(s, ast.Raise) for s in stmt.body):
        return all(_raises_value_error(s) for s in stmt.body)
    if isinstance(stmt, ast.Expr):
        return _direct_check_call(stmt.value)
    return isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and _direct_check_call(stmt.value)


def _raises_value_error(stmt: ast.Raise) -> bool:
    exc = stmt.exc
    return isinstance(exc, ast.Call) and isinstance(exc.func, ast.Name) and exc.func.id == "ValueError"
