"""Figure labels a reader can read on a phone (390 px wide), in the built book, in a real browser.

A figure shown narrower than its PNG shrinks its labels with it. For every figure (a cell's static
image output) of three chapters with the widest multi-panel figures, the effective font scale is its
displayed width over its natural width; matplotlib's smallest label (tick and axis labels, the book's
style in ``rl4llm.viz.style``) of S pt, S * dpi / 72 px in the PNG, must stay at 9 CSS px or more.
"""
from __future__ import annotations

import io
from pathlib import Path
from urllib.parse import unquote, urlparse

import matplotlib
import pytest
from matplotlib.font_manager import FontProperties
from PIL import Image

from test_browser import browser, site  # noqa: F401  (fixtures: Chromium, the built site served locally)

CHAPTERS = ["06_monte_carlo", "07_score_function", "12_critic_gae"]     # their figures are 888 px wide
PHONE_WIDTH = 390
MIN_LABEL_CSS_PX = 9.0


def smallest_label_points() -> float:
    """The smallest size of a tick or axis label in the book's matplotlib style, in points."""
    from rl4llm.viz import apply_style

    with matplotlib.rc_context():
        apply_style()
        return min(FontProperties(size=matplotlib.rcParams[key]).get_size_in_points()
                   for key in ("axes.labelsize", "xtick.labelsize", "ytick.labelsize"))


def _figures(browser, site: str, chapter: str) -> list[dict]:  # noqa: F811
    """Every figure of a chapter at the phone's width: its file, natural and displayed width."""
    context = browser.new_context(viewport={"width": PHONE_WIDTH, "height": 900})
    page = context.new_page()
    page.goto(f"{site}book/{chapter}.html", wait_until="load")
    figures = page.evaluate("""() => Array.from(document.querySelectorAll('.cell_output > img')).map(i => ({
        src: i.src, natural: i.naturalWidth, shown: i.getBoundingClientRect().width}))""")
    context.close()
    return figures


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_figure_labels_are_at_least_9_css_px_on_a_phone(browser, site, built_book: Path, chapter):  # noqa: F811
    points = smallest_label_points()
    figures = _figures(browser, site, chapter)
    assert figures, f"no figure found in {chapter}"
    too_small = []
    for figure in figures:
        png = Image.open(io.BytesIO((built_book / unquote(urlparse(figure["src"]).path.lstrip("/"))).read_bytes()))
        dpi = png.info["dpi"][0]                     # matplotlib writes the figure's dpi into the PNG
        assert figure["natural"] == png.width
        label_px = points * dpi / 72 * figure["shown"] / figure["natural"]
        if label_px < MIN_LABEL_CSS_PX:
            too_small.append(f"{Path(figure['src']).name}: {png.width} px shown at {figure['shown']:.0f} px, "
                             f"labels {label_px:.1f} CSS px")
    assert not too_small, too_small
