"""Serve the book's math without a network: MathJax from npm, copied into the built site.

Sphinx loads MathJax from a CDN by default, so a reader offline (a laptop on a train, a course
network without internet, a saved copy of the site) sees raw TeX. This extension points Sphinx at a
copy of MathJax that ``npm ci`` installs from ``package.json`` (pinned) and copies it into the build
output as ``_mathjax/`` when the build finishes. It is not put in ``_static/``: Jupyter Book links
every file there into every page. The build fails with a clear message when ``npm ci`` was not run.

It also keeps formulas out of the keyboard's tab order: MathJax's menu makes every formula a tab
stop by default (a chapter has up to 180, all before its first control); with the menu's
``inTabOrder`` setting off they stay reachable by a screen reader (MathJax's assistive MathML) and
by a click (the menu), but Tab goes from link to control.
"""
from __future__ import annotations

import shutil
from pathlib import Path

from sphinx.errors import ExtensionError

MATHJAX = Path(__file__).resolve().parents[1] / "node_modules" / "mathjax" / "es5"
#: What the pages load: the TeX-to-CHTML bundle and the fonts it fetches relative to itself.
FILES = ("tex-chtml.js", "output/chtml/fonts/woff-v2")
TARGET = "_mathjax"


def _point_sphinx_at_the_copy(app, config) -> None:
    # mathjax_path is relative to _static/; the copy sits beside it at the site's root
    config.mathjax_path = f"../{TARGET}/tex-chtml.js"
    # MyST adds its processHtmlClass to these options later (builder-inited), keeping the rest
    mathjax = dict(config.mathjax3_config or {})
    options = mathjax.setdefault("options", {})
    options.setdefault("menuOptions", {}).setdefault("settings", {})["inTabOrder"] = False
    config.mathjax3_config = mathjax


def _copy_mathjax(app, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    if not (MATHJAX / FILES[0]).exists():
        raise ExtensionError(f"MathJax is missing from {MATHJAX}: run `npm ci` in the repository root "
                             f"(package.json pins it) before building the book")
    for relative in FILES:
        source, target = MATHJAX / relative, Path(app.outdir) / TARGET / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, target, dirs_exist_ok=True)
        else:
            shutil.copy2(source, target)


def setup(app):
    app.connect("config-inited", _point_sphinx_at_the_copy, priority=900)
    app.connect("build-finished", _copy_mathjax)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
