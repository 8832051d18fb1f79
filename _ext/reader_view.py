"""The page as a reader meets it: names that match what is shown, header controls that do what they say,
and the book's title on a phone.

When the build finishes, every page is mended in place:

- each "Show code cell source" summary (myst-nb writes ``<summary aria-label="Toggle hidden content">``)
  loses its ``aria-label``, so its accessible name is the text it shows ("Show code cell source", or
  "Hide code cell source" once open; WCAG 2.5.3, axe's ``label-content-name-mismatch``);
- the book's title, which the theme shows only in the primary sidebar (a closed dialog on a phone), is
  written at the top of the article as a link to the first page, shown below the theme's sidebar
  breakpoint (992 px) only (``_static/custom.css``).

And one inline script (``READER_JS``) mends three of the theme's header controls:

- "Live Code" (sphinx-thebe) loads thebe from a CDN and, offline, said "Loading thebe from CDN..."
  forever: when that script fails to load, the button says so and points to Binder and Colab;
- the colour-mode button cycled light -> auto -> dark on a light system (dark took two clicks): it now
  goes to the other scheme first, then to the system's setting, then back (light -> dark -> auto on a
  light system, dark -> light -> auto on a dark one);
- when a sidebar's dialog closes, the theme gives the focus back to the button that opened it, whose
  Bootstrap tooltip then stayed over the header and took the next tap: every tooltip is hidden when a
  dialog closes (and ``custom.css`` lets taps through tooltips).
"""
from __future__ import annotations

import html
import re
from pathlib import Path

READER_JS = r"""(() => {
  // Live Code offline: sphinx-thebe adds a <script> for thebe from a CDN and waits for it to load.
  const offline = () => document.querySelectorAll(".thebe-launch-button").forEach((button) => {
    button.textContent = "Live Code needs the network: thebe, which runs this page's cells on a Binder "
      + "kernel, could not be loaded. The launch menu's Binder and Colab run the chapter too, once online.";
    button.classList.add("thebe-offline");
  });
  new MutationObserver((records) => records.forEach((r) => r.addedNodes.forEach((node) => {
    if (node.tagName === "SCRIPT" && /thebe/.test(node.src || "")) {
      node.addEventListener("error", offline);
      if (navigator.onLine === false) setTimeout(offline, 0);
    }
  }))).observe(document.head, {childList: true});

  // The colour mode: the other scheme first, then the system's setting, then back. The theme's own
  // handler (on the button) steps through its list from the stored mode; tell it the mode before the
  // one wanted, so that its step lands there.
  document.addEventListener("click", (event) => {
    if (!(event.target.closest && event.target.closest(".theme-switch-button"))) return;
    const dark = window.matchMedia("(prefers-color-scheme: dark)").matches;
    const system = dark ? "dark" : "light", other = dark ? "light" : "dark";
    const now = localStorage.getItem("mode") || document.documentElement.dataset.mode || "auto";
    const wanted = {[system]: other, [other]: "auto", auto: system}[now] || other;
    const theirs = dark ? ["auto", "light", "dark"] : ["auto", "dark", "light"];
    localStorage.setItem("mode", theirs[(theirs.indexOf(wanted) + theirs.length - 1) % theirs.length]);
  }, true);

  // No tooltip left over the header when a sidebar's dialog closes (the focus goes back to its button).
  const hideTooltips = () => document.querySelectorAll('[data-bs-toggle="tooltip"]').forEach((el) => {
    const tip = window.bootstrap && bootstrap.Tooltip && bootstrap.Tooltip.getInstance(el);
    if (tip) tip.hide();
  });
  document.addEventListener("DOMContentLoaded", () => document.querySelectorAll("dialog").forEach((dialog) =>
    dialog.addEventListener("close", () => { hideTooltips(); setTimeout(hideTooltips, 0); })));
})();"""

SUMMARY = '<summary aria-label="Toggle hidden content">'
BRAND = re.compile(r'<a class="navbar-brand logo" href="([^"]*)">\s*<p class="title logo__title">(.*?)</p>', re.S)
ARTICLE = re.compile(r'(<article class="bd-article">)')


def mend(page: str) -> str:
    """One built page with its summaries named by their text and the book's title atop its article."""
    page = page.replace(SUMMARY, "<summary>")
    brand = BRAND.search(page)
    if brand and "book-title-narrow" not in page:
        href, title = brand.group(1), brand.group(2).strip()
        page = ARTICLE.sub(lambda m: m.group(1) + f'\n<p class="book-title-narrow"><a href="{html.escape(href)}">'
                           f'{title}</a></p>', page, count=1)
    return page


def _mend_pages(app, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    for path in Path(app.outdir).rglob("*.html"):
        text = path.read_text(encoding="utf-8")
        mended = mend(text)
        if mended != text:
            path.write_text(mended, encoding="utf-8")


def setup(app):
    app.add_js_file(None, body=READER_JS)
    app.connect("build-finished", _mend_pages)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
