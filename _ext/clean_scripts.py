"""One copy of each script per page.

Jupyter Book 1.0.4 registers sphinx-thebe's and sphinx-togglebutton's inline configuration scripts
twice, and the second ``const THEBE_JS_URL = ...`` throws "Identifier has already been declared" in
every page. This drops exact duplicates (same file, or same inline body) from each page's scripts.
"""
from __future__ import annotations


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


def setup(app):
    app.connect("html-page-context", _dedupe, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
