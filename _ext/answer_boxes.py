"""Answer boxes: the static book checks a by-hand answer without a kernel.

A by-hand exercise in a notebook carries one line of HTML, ``<div class="answer-box"
data-exercise="ex-ch07-partial-credit"></div>`` (in Jupyter it shows nothing; there, the reader runs
``check("ex-ch07-partial-credit", x)``). At build time this extension replaces it with a small form:
a labelled text field, a Check button and a live status line. The answer, its tolerance, the
accepted number syntax and every message (right, wrong, each common mistake, malformed) come from
``rl4llm.exercises.answer_key()``, the same source as ``check``, so the page and the kernel say the
same thing. ``answer_boxes.js`` and ``.css`` (loaded only on pages with a box) compares the number as ``check``
does. A box naming an unknown exercise is a build warning (an error under ``-W``).

With ``answer_boxes_hashed = True`` (the student edition's setting) the page holds no answer, no
common wrong value and none of their messages in clear: :func:`hashed_key` stores, for the answer
and for each mistake, the salted SHA-256 digests of the points of a grid (step = tolerance / ``GRID``)
that lie within the tolerance, and the page hashes the reader's number, rounded to the same grid, the
same way. A number within ``tolerance - step/2`` of the answer is always accepted and none beyond
``tolerance + step/2`` is. Each outcome's message (check()'s, word for word) is encrypted with a key
that only a number on its band unwraps (:func:`sealed`).
"""
from __future__ import annotations

import hashlib
import json
import math
import re
import secrets
from html import escape
from pathlib import Path

from docutils import nodes
from sphinx.util import logging

logger = logging.getLogger(__name__)
BOX = re.compile(r'^\s*<div class="answer-box" data-exercise="([\w.-]+)">\s*</div>\s*$')
STATIC = Path(__file__).with_name("answer_boxes_static")
GRID = 10              # grid points per tolerance: the accepted band is exact to within tolerance / (2 GRID)
DIGEST_CHARS = 16      # hex characters kept of each SHA-256 digest (64 bits; answer_boxes.js reads 16)
# A number the box accepts once "−" is read as "-" and a decimal comma as a point (answer_boxes.js's
# normalise): the field's pattern attribute, so no keypad hides the minus (no inputmode="decimal").
INPUT_PATTERN = r"\s*[+\-−]?[0-9.,]+(?:[eE][+\-−]?[0-9]+)?\s*(?:/\s*[+\-−]?[0-9.,]+(?:[eE][+\-−]?[0-9]+)?\s*)?"


def _answer_key() -> dict[str, dict]:
    from rl4llm.exercises import answer_key
    return answer_key()


def grid_index(value: float, step: float) -> int:
    """The grid point nearest ``value``, as answer_boxes.js computes it: floor(value / step + 0.5)."""
    return math.floor(value / step + 0.5)


def digest(salt: str, index: int) -> str:
    return hashlib.sha256(f"{salt}:{index}".encode()).hexdigest()[:DIGEST_CHARS]


def grid_points(value: float, tolerance: float, step: float) -> list[int]:
    """The grid points within ``tolerance`` of ``value``: 2 GRID or 2 GRID + 1 of them (a point at
    the band's edge counts, whatever the rounding)."""
    low, high = math.floor((value - tolerance) / step) - 1, math.ceil((value + tolerance) / step) + 1
    return [k for k in range(low, high + 1) if abs(k * step - value) <= tolerance * (1 + 1e-9)]


def _stream(key: str, length: int) -> bytes:
    """SHA-256(key:0) SHA-256(key:1) ..., cut to ``length`` bytes."""
    blocks = (hashlib.sha256(f"{key}:{i}".encode()).digest() for i in range(-(-length // 32)))
    return b"".join(blocks)[:length]


def _xor(a: bytes, b: bytes) -> bytes:
    return bytes(x ^ y for x, y in zip(a, b))


def sealed(value: float, tolerance: float, step: float, salt: str, message: str) -> list:
    """One outcome of a box (the answer, or a mistake): ``[band, ciphertext]``. ``band`` maps the
    digest of each grid point within ``tolerance`` of ``value`` to the message's key, wrapped with
    that point's own pad; the message is encrypted with a stream drawn from the key. Only a number on
    the band unwraps the key, so the page holds neither the value nor the message in clear."""
    key = secrets.token_hex(16)
    band = {digest(salt, k): _xor(bytes.fromhex(key), hashlib.sha256(f"{salt}:{k}:key".encode()).digest()).hex()
            for k in grid_points(value, tolerance, step)}
    data = message.encode()
    return [dict(sorted(band.items())), _xor(data, _stream(key, len(data))).hex()]


def hashed_key(key: dict, salt: str | None = None) -> dict:
    """``key`` with the answer, the mistakes' values and their messages replaced by sealed outcomes."""
    salt = salt or secrets.token_hex(8)
    tolerance = key["tolerance"]
    step = tolerance / GRID
    return {"quantity": key["quantity"], "tolerance": tolerance, "decimals": key["decimals"], "salt": salt, "step": step,
            "wrong": key["wrong"], "malformed": key["malformed"], "pattern": key["pattern"],
            "accept": sealed(key["value"], tolerance, step, salt, key["correct"]),
            "mistakes": [sealed(wrong, tolerance, step, salt, message) for wrong, message in key["mistakes"]]}


def box_html(exercise_id: str, key: dict) -> str:
    """The form that stands for one by-hand exercise in the static book."""
    field = f"answer-{exercise_id}"
    return (f'<form class="answer-box" data-exercise="{escape(exercise_id)}" '
            f'data-key="{escape(json.dumps(key, ensure_ascii=False))}" novalidate>'
            f'<label for="{field}">Your answer ({key["decimals"]} decimal{"s" if key["decimals"] > 1 else ""}): '
            f'{escape(key["quantity"])}</label> '
            f'<input id="{field}" name="answer" type="text" inputmode="text" pattern="{escape(INPUT_PATTERN)}" '
            f'autocomplete="off" spellcheck="false">'
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
        entry = hashed_key(key[exercise_id]) if app.config.answer_boxes_hashed else key[exercise_id]
        raw.replace_self(nodes.raw("", box_html(exercise_id, entry), format="html"))
        app.env.metadata[docname]["has_answer_boxes"] = True


def _add_script(app, pagename, templatename, context, doctree) -> None:
    if app.env.metadata.get(pagename, {}).get("has_answer_boxes"):
        app.add_js_file("answer_boxes.js", defer="defer")
        app.add_css_file("answer_boxes.css")


def _static_path(app, config) -> None:
    config.html_static_path.append(str(STATIC))


def setup(app):
    app.add_config_value("answer_boxes_hashed", False, "env", [bool])
    app.connect("config-inited", _static_path)
    app.connect("doctree-resolved", _replace_boxes)
    app.connect("html-page-context", _add_script)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
