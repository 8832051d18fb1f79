"""One copy of each script per page, and no script the page does not need.

Jupyter Book 1.0.4 registers sphinx-thebe's and sphinx-togglebutton's inline configuration scripts
twice, and the second ``const THEBE_JS_URL = ...`` throws "Identifier has already been declared" in
every page. This drops exact duplicates (same file, or same inline body) from each page's scripts.

It also removes the theme's ``fontawesome.js`` from every page when the build finishes (the theme
writes that tag in its template): 1.5 MB, 540 KB gzipped, a third of each page's weight, which only
redraws the icons as SVG. The theme's stylesheet draws the same icons from its web fonts.
"""
from __future__ import annotations

import re
from pathlib import Path

FONTAWESOME_JS = re.compile(r'<script defer src="[^"]*_static/scripts/fontawesome\.js[^"]*"></script>\s*')


def _dedupe(app, pagename, templatename, context, doctree) -> None:
    scripts = context.get("script_files")
    if not scripts:
        return
    seen, kept = set(), []
    for script in scripts:
        filename = getattr(script, "filename", None) or ""      # inline scripts come as None or ""
        key = (filename, tuple(sorted((k, str(v)) for k, v in getattr(script, "attributes", {}).items())))
        if key not in seen:
            seen.add(key)
            kept.append(script)
    context["script_files"] = kept


def _drop_fontawesome_js(app, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    for page in Path(app.outdir).rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        stripped = FONTAWESOME_JS.sub("", text)
        if stripped != text:
            page.write_text(stripped, encoding="utf-8")


def setup(app):
    app.connect("html-page-context", _dedupe, priority=900)
    app.connect("build-finished", _drop_fontawesome_js)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
