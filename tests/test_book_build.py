"""The book builds from the stored notebook outputs with zero warnings (-W -n)."""
import pathlib
import shutil
import subprocess

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_book_builds_without_warnings(tmp_path):
    jb = shutil.which("jupyter-book")
    assert jb is not None, "jupyter-book is not installed: pip install -r requirements.txt"
    result = subprocess.run(
        [jb, "build", str(ROOT), "-W", "-n", "--keep-going", "--path-output", str(tmp_path)],
        capture_output=True, text=True, timeout=900,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    html = tmp_path / "_build" / "html"
    for page in ["book/intro.html", "book/01_distribution.html", "book/14_tiny_transformer.html"]:
        assert (html / page).exists(), f"missing page {page}"
