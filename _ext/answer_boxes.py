"""Answer boxes: the static book checks a by-hand answer without a kernel.

A by-hand exercise in a notebook carries one line of HTML, ``<div class="answer-box"
data-exercise="ex-ch07-partial-credit"></div>`` (in Jupyter it shows nothing; there, the reader runs
``check("ex-ch07-partial-credit", x)``). At build time this extension replaces it with a small form:
a labelled text field, a Check button and a live status line. The answer, its tolerance, the
accepted number syntax and every message (right, wrong, each common mistake, malformed) come from
``rl4llm.exercises.answer_key()``, the same source as ``check``, so the page and the kernel say the
same thing. ``answer_boxes.js`` and ``.css`` (loaded only on pages with a box) compares the number as ``check``
does. A box naming an unknown exercise is a build warning (an error under ``-W``).
"""
from __future__ import annotations

import json
import re
from html import escape
from pathlib import Path

from docutils import nodes
from sphinx.util import logging

logger = logging.getLogger(__name__)
BOX = re.compile(r'^\s*<div class="answer-box" data-exercise="([\w.-]+)">\s*</div>\s*$')
STATIC = Path(__file__).with_name("answer_boxes_static")


def _answer_key() -> dict[str, dict]:
    from rl4llm.exercises import answer_key
    return answer_key()


def box_html(exercise_id: str, key: dict) -> str:
    """The form that stands for one by-hand exercise in the static book."""
    field = f"answer-{exercise_id}"
    return (f'<form class="answer-box" data-exercise="{escape(exercise_id)}" '
            f'data-key="{escape(json.dumps(key))}" novalidate>'
            f'<label for="{field}">Your answer: {escape(key["quantity"])}</label> '
            f'<input id="{field}" name="answer" type="text" inputmode="decimal" autocomplete="off" spellcheck="false">'
            f' <button type="submit">Check</button>'
            f'<p class="answer-feedback" role="status" aria-live="polite"></p></form>')


def _replace_boxes(app, doctree, docname) -> None:
    key = None
    for raw in list(doctree.findall(nodes.raw)):
        match = BOX.match(raw.astext()) if "html" in raw.get("format", "") else None
        if match is None:
            continue
        key = key or _answer_key()
        exercise_id = match.group(1)
        if exercise_id not in key:
            logger.warning(f"answer box for an unknown by-hand exercise {exercise_id!r} "
                           f"(rl4llm.exercises.answer_key() has {sorted(key)})", location=raw)
            continue
        raw.replace_self(nodes.raw("", box_html(exercise_id, key[exercise_id]), format="html"))
        app.env.metadata[docname]["has_answer_boxes"] = True


def _add_script(app, pagename, templatename, context, doctree) -> None:
    if app.env.metadata.get(pagename, {}).get("has_answer_boxes"):
        app.add_js_file("answer_boxes.js", defer="defer")
        app.add_css_file("answer_boxes.css")


def _static_path(app, config) -> None:
    config.html_static_path.append(str(STATIC))


def setup(app):
    app.connect("config-inited", _static_path)
    app.connect("doctree-resolved", _replace_boxes)
    app.connect("html-page-context", _add_script)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
