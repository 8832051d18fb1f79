"""Exercises render in JupyterLab too (jupyterlab-myst), as students in Binder or a local JupyterLab see
them: a real JupyterLab server on 127.0.0.1, opened in Debian's chromium through Playwright. Every
exercise of a chapter is a rendered block, not raw directive text, and every solution is a collapsed
dropdown."""
from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rl4llm.course.assignments import exercises

ROOT = Path(__file__).resolve().parents[1]
CHAPTER = ROOT / "book" / "07_score_function.ipynb"
CHROMIUM = "/usr/bin/chromium"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """JupyterLab serving a copy of the chapter (so nothing in book/ is touched), its URL."""
    root = tmp_path_factory.mktemp("lab")
    (root / CHAPTER.name).write_text(CHAPTER.read_text())
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--no-browser", "--allow-root", f"--port={port}", "--ip=127.0.0.1",
         f"--ServerApp.root_dir={root}", "--IdentityProvider.token=", "--ServerApp.password=",
         "--LabApp.news_url=", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.5)
    yield f"http://127.0.0.1:{port}/lab/tree/{CHAPTER.name}"
    stop_server(server)


def stop_server(server: subprocess.Popen) -> None:
    """Stop a JupyterLab server: SIGTERM, then SIGKILL if it has not exited within 30 s. A server can hang
    at interpreter exit, joining an idle non-daemon AnyIO worker thread (seen on this machine: the test
    run then waited forever in the fixture's teardown)."""
    server.terminate()
    try:
        server.wait(timeout=30)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()


def test_exercises_and_collapsed_solutions_render_in_jupyterlab(lab):
    from playwright.sync_api import sync_playwright

    expected = exercises(CHAPTER)
    solutions = sum("{solution}" in "".join(c["source"]) for c in json.loads(CHAPTER.read_text())["cells"]
                    if c["cell_type"] == "markdown")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--headless", "--no-sandbox"])
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(lab)
        page.wait_for_function(f"() => document.querySelectorAll('aside.myst-exercise').length >= {len(expected)}",
                               timeout=180_000)
        seen = page.evaluate("""() => ({
          exercises: [...document.querySelectorAll('aside.myst-exercise')].map(a => a.id),
          solutions: [...document.querySelectorAll('details.myst-exercise')].map(d => d.open),
          raw: [...document.querySelectorAll('.jp-MarkdownOutput')].map(m => m.innerText)
                 .filter(t => /\\{(exercise|solution)\\}|:label:/.test(t)).length,
        })""")
        browser.close()
    assert seen["exercises"] == [e.label for e in expected]
    assert seen["solutions"] == [False] * solutions            # every solution a closed dropdown
    assert seen["raw"] == 0
