"""Shared test settings and the built book (the chapters' kernels: the repository's conftest.py).

Hypothesis runs without deadlines (CI machines are slow and shared). ``built_book`` builds the book
once per test session from the stored notebook outputs, with warnings as errors, and hands the HTML
folder to the build test and the browser tests.
"""
import json
import os
import pathlib
import shutil
import subprocess

import pytest
from filelock import FileLock
from hypothesis import settings

settings.register_profile("book", deadline=None, max_examples=200, derandomize=True)
settings.load_profile("book")

ROOT = pathlib.Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def built_book(tmp_path_factory) -> pathlib.Path:
    """``jupyter-book build . -W -n --keep-going`` into a temporary folder; its ``_build/html``.

    Under pytest-xdist (``-n auto``) every worker asks for it: the first builds it, under a file lock,
    in the folder the workers share (the parent of each worker's base temp), and the others wait and
    reuse that build, or its failure.
    """
    jb = shutil.which("jupyter-book")
    assert jb is not None, "jupyter-book is not installed: pip install -r requirements.txt"
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    out, outcome = shared / "book", shared / "book-build.json"
    with FileLock(str(shared / "book-build.lock")):
        if not outcome.exists():
            result = subprocess.run([jb, "build", str(ROOT), "-W", "-n", "--keep-going", "--path-output", str(out)],
                                    capture_output=True, text=True, timeout=900)
            outcome.write_text(json.dumps({"returncode": result.returncode,
                                           "log": result.stdout[-4000:] + result.stderr[-4000:]}))
    built = json.loads(outcome.read_text())
    assert built["returncode"] == 0, built["log"]
    return out / "_build" / "html"
