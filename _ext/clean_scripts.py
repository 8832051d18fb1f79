"""One copy of each script per page, and no script the page does not need.

Jupyter Book 1.0.4 registers sphinx-thebe's and sphinx-togglebutton's inline configuration scripts
twice, and the second ``const THEBE_JS_URL = ...`` throws "Identifier has already been declared" in
every page. This drops exact duplicates (same file, or same inline body) from each page's scripts.

It also removes the theme's ``fontawesome.js`` from every page when the build finishes (the theme
writes that tag in its template): 1.5 MB, 540 KB gzipped, a third of each page's weight, which only
redraws the icons as SVG. The theme's stylesheet draws the same icons from its web fonts.

And it adds one small inline script (``THEME_FIXES``) that mends two things the theme's scripts miss:
every sidebar button opens its sidebar (pydata-sphinx-theme 0.17 and sphinx-book-theme 1.3 bind
their handlers to the first ``.primary-toggle`` and ``.secondary-toggle`` of the page only, which is
the hidden one of the theme's own header, so the buttons a reader sees did nothing); and a box that
scrolls sideways (a wide figure or a scrubber's frame on a phone, a wide display formula) takes the
keyboard's focus, so that it can be scrolled without a mouse (the theme does so for code and tables).
"""
from __future__ import annotations

import re
from pathlib import Path

THEME_FIXES = """(() => {
  // A click on any sidebar button is handed to the one the theme bound (the first of its kind), which
  // opens the sidebar as a dialog on a narrow screen and folds it away on a wide one.
  document.addEventListener("click", (event) => {
    const toggle = event.target.closest && event.target.closest(".primary-toggle, .secondary-toggle");
    if (!toggle) return;
    const bound = document.querySelector(
      toggle.classList.contains("primary-toggle") ? ".primary-toggle" : ".secondary-toggle");
    if (toggle === bound) return;
    event.preventDefault();
    event.stopPropagation();
    bound.click();
  }, true);
  // A box that scrolls sideways can be focused, and so scrolled by the keyboard (a display formula's
  // box, or an inline formula's wider than a phone's column, once MathJax has typeset it).
  const focusable = () => document.querySelectorAll(".cell_output, .anim-frame, div.math, span.math").forEach((box) => {
    const scrolls = /auto|scroll/.test(getComputedStyle(box).overflowX) && box.scrollWidth > box.clientWidth + 1;
    if (scrolls) box.tabIndex = 0;
    else if (box.getAttribute("tabindex") === "0") box.removeAttribute("tabindex");
  });
  let timer = null;
  window.addEventListener("load", () => {
    focusable();
    if (window.MathJax && MathJax.startup && MathJax.startup.promise) MathJax.startup.promise.then(focusable);
  });
  window.addEventListener("resize", () => { clearTimeout(timer); timer = setTimeout(focusable, 300); });
})();"""

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
    app.add_js_file(None, body=THEME_FIXES)
    app.connect("html-page-context", _dedupe, priority=900)
    app.connect("build-finished", _drop_fontawesome_js)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
