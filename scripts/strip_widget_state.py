"""Remove saved ipywidgets state from the chapter notebooks (run after `jupyter execute --inplace`).

    python scripts/strip_widget_state.py              # every chapter
    python scripts/strip_widget_state.py book/06_monte_carlo.ipynb   # only the ones named

Executing a notebook saves every widget's state in its metadata; the static site would render it as
controls that move but redraw nothing. The live cells still work in Jupyter, Binder and Colab (they
rebuild their widgets when run). A test fails while any chapter keeps saved widget state.

A progress bar (tqdm's widget: a label, a bar, a count) is stored as the text it ended on, read from
that saved state, e.g. ``runs: 100%|██████████| 15/15``: without it the page would show nothing and the
notebook the bar's first frame, ``0/15``. Its timings are left out (they are the building machine's);
nbval compares every bar as one placeholder (tests/nbval_sanitize.cfg).
"""
import html
import re
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def finished_bar(view: dict, state: dict) -> str | None:
    """The text tqdm's widget ``view`` ended on, ``desc: pct%|bar| n/total``, or None if it is no tqdm bar."""
    box = state.get(view["model_id"], {}).get("state", {})
    children = [state.get(c.removeprefix("IPY_MODEL_"), {}) for c in box.get("children", [])]
    if [c.get("model_name") for c in children] != ["HTMLModel", "FloatProgressModel", "HTMLModel"]:
        return None
    label = html.unescape(children[0]["state"]["value"]).replace("\u2007", " ")
    bar = children[1]["state"]
    done, total = int(bar["value"]), int(bar["max"])
    filled = 10 * done // total
    desc = re.sub(r":?\s*\d+%$", "", label)
    return f"{desc}: {100 * done // total:3d}%|{'█' * filled}{' ' * (10 - filled)}| {done}/{total}"


def main(paths: list[str]) -> None:
    for path in [Path(p).resolve() for p in paths] or sorted((ROOT / "book").glob("*.ipynb")):
        notebook = nbformat.read(path, as_version=4)
        saved = notebook.metadata.pop("widgets", None)
        if saved is None:
            continue
        state = saved.get("application/vnd.jupyter.widget-state+json", {}).get("state", {})
        for cell in notebook.cells:
            for output in cell.get("outputs", []):
                view = output.get("data", {}).get(WIDGET_VIEW)
                text = view and finished_bar(view, state)
                if text:
                    output["data"] = {"text/plain": text}
        nbformat.write(notebook, path)
        print(f"stripped {path}")


if __name__ == "__main__":
    main(sys.argv[1:])
