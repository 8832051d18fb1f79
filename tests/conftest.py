"""Shared test settings and the built book.

Hypothesis runs without deadlines (CI machines are slow and shared). ``built_book`` builds the book
once per test session from the stored notebook outputs, with warnings as errors, and hands the HTML
folder to the build test and the browser tests.
"""
import pathlib
import shutil
import subprocess

import pytest
from hypothesis import settings

settings.register_profile("book", deadline=None, max_examples=200, derandomize=True)
settings.load_profile("book")

ROOT = pathlib.Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def built_book(tmp_path_factory) -> pathlib.Path:
    """``jupyter-book build . -W -n --keep-going`` into a temporary folder; its ``_build/html``."""
    jb = shutil.which("jupyter-book")
    assert jb is not None, "jupyter-book is not installed: pip install -r requirements.txt"
    out = tmp_path_factory.mktemp("book")
    result = subprocess.run([jb, "build", str(ROOT), "-W", "-n", "--keep-going", "--path-output", str(out)],
                            capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    return out / "_build" / "html"
