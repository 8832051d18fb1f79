"""The book's answer boxes give, without a kernel, the verdict ``rl4llm.exercises.check`` gives: the
right number, each common mistake, another number and malformed text (a sample of boxes in Debian's
chromium, offline, on the site ``built_book`` builds; every box's key under node, by the site's own
``answer_boxes.js``). A file of its own, so that pytest-xdist runs it beside ``test_browser.py``'s visits.
"""
from __future__ import annotations

import html
import json
import re

import pytest
from answer_boxes_js import NODE, node_verdicts

from test_browser import CHAPTERS, browser, site  # noqa: F401  (fixtures: Chromium, the served site)


def _answer(page, box, text: str) -> str:
    box.query_selector("input").fill(text)
    box.query_selector("button").click()
    return box.query_selector(".answer-feedback").inner_text()


# Python's parser and the page's must agree on every form of answer, odd ones included
PARITY = ["0.025", " 1/40 ", "2.5e-2", ".025", "-0.025", "+0.025", "0,025", "1/0", "abc", "", "5 %", "٥", "1e999"]


def _tries(exercise_id: str, entry: dict) -> list[str]:
    """What a box is tried with: the right number, text, a far number, each common mistake (and, for
    Exercise 7.1's box, every odd form of PARITY)."""
    value = entry["value"]
    tries = [f"{value:.6f}", "abc", f"{value + 1000 * entry['tolerance'] + 1:.4f}"]
    tries += [f"{wrong:.6f}" for wrong, _ in entry["mistakes"]]
    return tries + (PARITY if exercise_id == "ex-ch07-partial-credit" else [])


#: The boxes tried in the browser: every box runs the same script on its own key, and every key of the
#: book is judged by that script under node in the next test, so a few pages show that the page wires it.
BROWSER_SAMPLE = ("ex-ch01-cold", "ex-ch07-partial-credit", "ex-ch11-negative")


def test_answer_boxes_check_answers_without_a_kernel(browser, site):
    """A sample of the book's answer boxes, offline in the browser: the right number, each common
    mistake, another number and malformed text each get the verdict check() gives in a kernel, word
    for word, shown in the box."""
    from rl4llm.exercises import answer_key, check

    key = answer_key()
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.route(lambda url: not url.startswith(site), lambda route: route.abort())
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda err: errors.append(str(err)))
    for exercise_id in BROWSER_SAMPLE:
        entry = key[exercise_id]
        stem = next(c for c in CHAPTERS if c.startswith(f"{entry['chapter']:02d}_"))
        page.goto(f"{site}book/{stem}.html", wait_until="load")
        box = page.query_selector(f'form.answer-box[data-exercise="{exercise_id}"]')
        assert box is not None, f"{stem}: no answer box for {exercise_id}"
        assert entry["quantity"] in box.query_selector("label").inner_text()
        for text in _tries(exercise_id, entry):
            assert _answer(page, box, text) == check(exercise_id, text), (exercise_id, text)
        assert _answer(page, box, f"{entry['value']:.6f}").startswith("Correct:")
        assert _answer(page, box, "abc") == entry["malformed"]
    context.close()
    assert not errors, errors


@pytest.mark.skipif(NODE is None, reason="needs node to run answer_boxes.js")
def test_every_answer_box_of_the_book_gives_checks_verdict(built_book):
    """Every box of every chapter page, its key as the built page holds it, judged by the site's own
    answer_boxes.js under node (no browser): the verdict check() gives on each of the answers the
    browser test tries; each box's label names its quantity, and every by-hand exercise has one box."""
    from rl4llm.exercises import answer_key, check

    key, cases, seen = answer_key(), [], []
    for page in sorted((built_book / "book").glob("[0-9][0-9]_*.html")):
        raw = page.read_text(encoding="utf-8")
        for exercise_id, data, label in re.findall(r'<form class="answer-box" data-exercise="([\w.-]+)" '
                                                   r'data-key="([^"]*)".*?<label [^>]*>([^<]*)</label>', raw):
            seen.append(exercise_id)
            assert key[exercise_id]["quantity"] in html.unescape(label), (page.name, label)
            assert f"Your answer ({key[exercise_id]['decimals']} decimal" in html.unescape(label), (page.name, label)
            box = json.loads(html.unescape(data))
            cases += [(exercise_id, box, text) for text in _tries(exercise_id, key[exercise_id])]
    assert sorted(seen) == sorted(key)
    got = node_verdicts([[box, text] for _, box, text in cases], next(built_book.rglob("answer_boxes.js")))
    assert [message for _, message in got] == [check(e, text) for e, _, text in cases]
