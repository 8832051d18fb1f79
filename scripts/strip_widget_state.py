"""Remove saved ipywidgets state from the chapter notebooks (run after `jupyter execute --inplace`).

    python scripts/strip_widget_state.py              # every chapter
    python scripts/strip_widget_state.py book/06_monte_carlo.ipynb   # only the ones named

Executing a notebook saves every widget's state in its metadata; the static site would render it as
controls that move but redraw nothing. The live cells still work in Jupyter, Binder and Colab (they
rebuild their widgets when run). A test fails while any chapter keeps saved widget state.
"""
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]


def main(paths: list[str]) -> None:
    for path in [Path(p).resolve() for p in paths] or sorted((ROOT / "book").glob("*.ipynb")):
        notebook = nbformat.read(path, as_version=4)
        if notebook.metadata.pop("widgets", None) is not None:
            nbformat.write(notebook, path)
            print(f"stripped {path.relative_to(ROOT)}")


if __name__ == "__main__":
    main(sys.argv[1:])
