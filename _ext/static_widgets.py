"""No dead controls in the static book: live ipywidgets become a pointer to a live session.

A live slider needs a running Python kernel. In the static site, the saved widget state would render
as a control that moves but redraws nothing, and pull a 4 MB widget manager into the page. This
extension, for every notebook page: replaces each saved widget view with one line that says where
the control works (Binder or Colab, through the launch button); drops saved progress bars (they show
while a cell runs, and say nothing afterwards: a tqdm bar is no control, recognised by its saved
model or, where the notebook keeps no widget state, by its text form ``GRPO: 100%|...| 300/300 [...]``);
and removes the widget state and the widget manager script from the page. The notebooks keep their
widgets: in Jupyter, Binder and Colab they run.

It also mends the markup of matplotlib's kernel-free scrubbers (``to_jshtml``) in the page only: the
frame goes into a box of its own (``.anim-frame``, which scrolls sideways on a phone while the
controls stay in the column), and the repetition-mode radio buttons become a named radio group
inside an unnamed form: a named ``<form>`` is a landmark, and a page with several scrubbers repeated
the "Repetition mode" landmark. The form stays (the scrubber's script finds the radios by its name).

And in every table cell, a number that a browser could break at a hyphen or a slash (a range
``(2.26-3.33)``, ``1e-12``, ``10-90%``) goes into a ``span.nobreak``, so it is shown on one line: the
book's CSS lets cells wrap only between words, and a table too wide for the column scrolls instead.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

from docutils import nodes

VIEW = "application/vnd.jupyter.widget-view+json"
POINTER = ("Live control: it runs in a Jupyter kernel. Open this chapter in Binder or Colab with the "
           "launch button (the rocket at the top of the page) to use it; the static page shows the same "
           "figure without a kernel, as an animation or a grid of runs next to it.")


def _widget_state(env, docname: str) -> dict:
    js_files = getattr(env, "nb_metadata", {}).get(docname, {}).get("js_files", {})
    state = js_files.get("ipywidgets_state", (None, {}))[1].get("body")
    return json.loads(state).get("state", {}) if state else {}


#: tqdm's text form of a bar: ``desc: 40%|####      | 120/300 [00:10<00:15, 11.9it/s]``
TQDM_TEXT = re.compile(r"\d+%\|[^|\n]*\|\s*[\d.]+[kMG]?/[\d.?]+[kMG]?\s*\[")


def _plain_texts(env, docname: str) -> dict[str, str]:
    """The text form (``text/plain``) saved beside each widget view of a notebook, by model id."""
    path = Path(env.doc2path(docname))
    if path.suffix != ".ipynb":
        return {}
    texts = {}
    for cell in json.loads(path.read_text(encoding="utf-8")).get("cells", []):
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if VIEW in data:
                texts[data[VIEW].get("model_id", "")] = "".join(data.get("text/plain", ""))
    return texts


def _is_progress_bar(model_id: str, state: dict, text: str = "") -> bool:
    """tqdm's notebook bar: an HBox whose children include a FloatProgress (or IntProgress), or, when
    the notebook keeps no widget state, a view whose saved text is tqdm's bar."""
    model = state.get(model_id, {})
    children = model.get("state", {}).get("children", [])
    names = {state.get(c.removeprefix("IPY_MODEL_"), {}).get("model_name") for c in children}
    return bool(names & {"FloatProgressModel", "IntProgressModel"}) or bool(TQDM_TEXT.search(text))


ANIM_IMG = re.compile(r'(<div class="animation">\s*)(<img id="_anim_img[^"]*"[^>]*>)')
ANIM_STATE = re.compile(r'<form title="Repetition mode" aria-label="Repetition mode"( action="#n" name="[^"]*")'
                        r'\s+class="anim-state">(.*?)</form>', re.S)


def scrubber_markup(html: str) -> str:
    """matplotlib's scrubber with its frame in a box of its own and its radios in a radio group."""
    html = ANIM_IMG.sub(r'\1<div class="anim-frame">\2</div>', html)
    return ANIM_STATE.sub(r'<form\1><div class="anim-state" role="radiogroup" aria-label="Repetition mode">'
                          r'\2</div></form>', html)


def _mend_scrubbers(doctree) -> None:
    for raw in list(doctree.findall(nodes.raw)):
        text = raw.astext()
        if 'class="animation"' in text and "html" in raw.get("format", "").split():
            mended = scrubber_markup(text)
            if mended != text:
                raw.replace_self(nodes.raw(mended, mended, **raw.non_default_attributes()))


#: a token that holds a digit and a character a line may break after (a hyphen, a dash, a slash)
BREAKABLE_NUMBER = re.compile(r"\S*\d\S*[-\u2010-\u2015\u2212/]\S*|\S*[-\u2010-\u2015\u2212/]\S*\d\S*")


def _keep_numbers_whole(doctree) -> None:
    for entry in list(doctree.findall(nodes.entry)):
        for text in list(entry.findall(nodes.Text)):
            if isinstance(text.parent, (nodes.literal, nodes.raw, nodes.math)) \
                    or not BREAKABLE_NUMBER.search(text.astext()):
                continue
            pieces, at, source = [], 0, text.astext()
            for match in BREAKABLE_NUMBER.finditer(source):
                pieces += [nodes.Text(source[at:match.start()]),
                           nodes.inline(match.group(), match.group(), classes=["nobreak"])]
                at = match.end()
            pieces.append(nodes.Text(source[at:]))
            text.parent.replace(text, [p for p in pieces if p.astext()])


def _replace_widget_views(app, doctree) -> None:
    docname = app.env.docname
    state = _widget_state(app.env, docname)
    texts = _plain_texts(app.env, docname)
    for raw in list(doctree.findall(nodes.raw)):
        match = re.match(rf'<script type="{re.escape(VIEW)}">(.*)</script>$', raw.astext(), re.S)
        if not match:
            continue
        model_id = json.loads(match.group(1)).get("model_id", "")
        if _is_progress_bar(model_id, state, texts.get(model_id, "")):
            raw.parent.remove(raw)
        else:
            note = nodes.paragraph("", "", nodes.emphasis(text=POINTER), classes=["live-control-pointer"])
            raw.replace_self(note)
    js_files = getattr(app.env, "nb_metadata", {}).get(docname, {}).get("js_files", {})
    for key in [k for k in js_files if k.startswith("ipywidgets")]:
        del js_files[key]
    _mend_scrubbers(doctree)
    _keep_numbers_whole(doctree)


def setup(app):
    app.connect("doctree-read", _replace_widget_views)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
