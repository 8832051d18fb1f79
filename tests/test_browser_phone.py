"""The built book on a phone (390 px wide), in a real browser: every page opened once, offline, by
``test_browser.visit`` (the desktop's checks are in ``test_browser.py``).

On every page: no number in a table cell is broken across lines, printed output scrolls rather than
wraps, no formula is a tab stop, axe finds nothing serious or critical; every sidebar button a reader
sees opens its sidebar as a dialog; nothing widens the page. Figure labels a reader can read: a figure
shown narrower than its PNG shrinks its labels with it, so for every figure (a cell's static image) and
every scrubber's frame (matplotlib's ``to_jshtml``) the effective font scale is its displayed width over
its natural width; matplotlib's smallest label (tick and axis labels, the book's style in
``rl4llm.viz.style``) of S pt, S * dpi / 72 px in the PNG, must stay at 9 CSS px or more. A figure wider
than that scrolls sideways in its own box, and the box can be focused, so a keyboard can scroll it.
"""
from __future__ import annotations

import io
from pathlib import Path
from urllib.parse import unquote, urlparse

import matplotlib
import pytest
from matplotlib.font_manager import FontProperties
from PIL import Image

from test_browser import (CHAPTERS, PHONE_WIDTH, browser, check_reads_well, check_screenshots,  # noqa: F401
                          check_sidebars, site, visit)

MIN_LABEL_CSS_PX = 9.0


@pytest.fixture(scope="module")
def phone(browser, site, built_book) -> dict:  # noqa: F811
    return {c: visit(browser, site, built_book, c, PHONE_WIDTH) for c in CHAPTERS}


def style_points_and_dpi() -> tuple[float, float]:
    """The smallest size of a tick or axis label in the book's matplotlib style (points), and the dpi it
    saves figures (and so a scrubber's frames) at."""
    from rl4llm.viz import apply_style

    with matplotlib.rc_context():
        apply_style()
        points = min(FontProperties(size=matplotlib.rcParams[key]).get_size_in_points()
                     for key in ("axes.labelsize", "xtick.labelsize", "ytick.labelsize"))
        return points, float(matplotlib.rcParams["savefig.dpi"])


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_tables_outputs_and_formulas_read_well(phone, chapter):
    check_reads_well(phone[chapter])


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_every_sidebar_button_opens_a_dialog(phone, chapter):
    check_sidebars(phone[chapter], ["primary: dialog", "secondary: dialog"])


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_nothing_widens_the_page(phone, chapter):
    facts = phone[chapter]
    assert facts["page_overflow"] <= 1, f"the page scrolls sideways by {facts['page_overflow']} px"
    assert facts["scrubbers_too_wide"] == 0


def test_screenshots_were_saved(phone):
    check_screenshots(PHONE_WIDTH)


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_scrubber_frames_are_legible(phone, chapter):
    """A scrubber's frame is shown at a scale where its smallest label is 9 CSS px or more."""
    points, dpi = style_points_and_dpi()
    label_natural_px = points * dpi / 72
    frames = phone[chapter]["figures"]["frame"]
    too_small = [f"frame {f['natural']} px shown at {f['shown']:.0f} px: labels {label_natural_px * f['shown'] / f['natural']:.1f} CSS px"
                 for f in frames if label_natural_px * f["shown"] / f["natural"] < MIN_LABEL_CSS_PX]
    assert not too_small, too_small
    assert not [f for f in frames if f["scrolls_unfocusable"]], "a frame scrolls in a box the keyboard cannot focus"


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_figure_labels_are_at_least_9_css_px(phone, built_book: Path, chapter):
    """Every static figure's smallest label is 9 CSS px or more as shown (its PNG's own dpi)."""
    points, _ = style_points_and_dpi()
    figures = phone[chapter]["figures"]["figure"]
    assert not [f for f in figures if f["scrolls_unfocusable"]], "a figure scrolls in a box the keyboard cannot focus"
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
