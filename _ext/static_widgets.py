"""No dead controls in the static book: live ipywidgets become a pointer to a live session.

A live slider needs a running Python kernel. In the static site, the saved widget state would render
as a control that moves but redraws nothing, and pull a 4 MB widget manager into the page. This
extension, for every notebook page: replaces each saved widget view with one line that says where
the control works (Binder or Colab, through the launch button); drops saved progress bars (they show
while a cell runs, and say nothing afterwards); and removes the widget state and the widget manager
script from the page. The notebooks keep their widgets: in Jupyter, Binder and Colab they run.
"""
from __future__ import annotations

import json
import re

from docutils import nodes

VIEW = "application/vnd.jupyter.widget-view+json"
POINTER = ("Live control: it runs in a Jupyter kernel. Open this chapter in Binder or Colab with the "
           "launch button (the rocket at the top of the page) to use it; the static page shows the same "
           "figure without a kernel, as an animation or a grid of runs next to it.")


def _widget_state(env, docname: str) -> dict:
    js_files = getattr(env, "nb_metadata", {}).get(docname, {}).get("js_files", {})
    state = js_files.get("ipywidgets_state", (None, {}))[1].get("body")
    return json.loads(state).get("state", {}) if state else {}


def _is_progress_bar(model_id: str, state: dict) -> bool:
    """tqdm's notebook bar: an HBox whose children include a FloatProgress (or IntProgress)."""
    model = state.get(model_id, {})
    children = model.get("state", {}).get("children", [])
    names = {state.get(c.removeprefix("IPY_MODEL_"), {}).get("model_name") for c in children}
    return bool(names & {"FloatProgressModel", "IntProgressModel"})


def _replace_widget_views(app, doctree) -> None:
    docname = app.env.docname
    state = _widget_state(app.env, docname)
    for raw in list(doctree.findall(nodes.raw)):
        match = re.match(rf'<script type="{re.escape(VIEW)}">(.*)</script>$', raw.astext(), re.S)
        if not match:
            continue
        model_id = json.loads(match.group(1)).get("model_id", "")
        if _is_progress_bar(model_id, state):
            raw.parent.remove(raw)
        else:
            note = nodes.paragraph("", "", nodes.emphasis(text=POINTER), classes=["live-control-pointer"])
            raw.replace_self(note)
    js_files = getattr(app.env, "nb_metadata", {}).get(docname, {}).get("js_files", {})
    for key in [k for k in js_files if k.startswith("ipywidgets")]:
        del js_files[key]


def setup(app):
    app.connect("doctree-read", _replace_widget_views)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
