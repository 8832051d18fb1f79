"""Figure labels a reader can read on a phone (390 px wide), in the built book, in a real browser.

A figure shown narrower than its PNG shrinks its labels with it. For every figure (a cell's static
image output) and every scrubber's frame (matplotlib's ``to_jshtml``) of every chapter, the
effective font scale is its displayed width over its natural width; matplotlib's smallest label
(tick and axis labels, the book's style in ``rl4llm.viz.style``) of S pt, S * dpi / 72 px in the PNG,
must stay at 9 CSS px or more. A figure wider than that scrolls sideways in its own box, and the box
can be focused, so a keyboard can scroll it.
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

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = sorted(p.stem for p in (ROOT / "book").glob("[0-9][0-9]_*.ipynb"))
PHONE_WIDTH = 390
MIN_LABEL_CSS_PX = 9.0


def smallest_label_points() -> float:
    """The smallest size of a tick or axis label in the book's matplotlib style, in points."""
    from rl4llm.viz import apply_style

    with matplotlib.rc_context():
        apply_style()
        return min(FontProperties(size=matplotlib.rcParams[key]).get_size_in_points()
                   for key in ("axes.labelsize", "xtick.labelsize", "ytick.labelsize"))


def style_dpi() -> float:
    """The dpi the book's style saves figures (and so a scrubber's frames) at."""
    from rl4llm.viz import apply_style

    with matplotlib.rc_context():
        apply_style()
        return float(matplotlib.rcParams["savefig.dpi"])


def _figures(browser, site: str, chapter: str) -> dict:  # noqa: F811
    """Every figure and scrubber frame of a chapter at the phone's width: natural and displayed width,
    and whether a box that scrolls to show it can be focused."""
    context = browser.new_context(viewport={"width": PHONE_WIDTH, "height": 900})
    page = context.new_page()
    page.goto(f"{site}book/{chapter}.html", wait_until="load")
    page.wait_for_timeout(100)
    shown = """sel => Array.from(document.querySelectorAll(sel)).map(i => {
        const box = i.closest('.cell_output, .anim-frame');
        return {src: i.src, natural: i.naturalWidth, shown: i.getBoundingClientRect().width,
                scrolls_unfocusable: box.scrollWidth > box.clientWidth + 1 && box.tabIndex < 0};
    })"""
    figures = {"figure": page.evaluate(shown, ".cell_output > img"), "frame": page.evaluate(shown, ".anim-frame img")}
    context.close()
    return figures


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_scrubber_frames_are_legible_on_a_phone(browser, site, chapter):  # noqa: F811
    """A scrubber's frame is shown at a scale where its smallest label is 9 CSS px or more."""
    label_natural_px = smallest_label_points() * style_dpi() / 72
    frames = _figures(browser, site, chapter)["frame"]
    too_small = [f"frame {f['natural']} px shown at {f['shown']:.0f} px: labels {label_natural_px * f['shown'] / f['natural']:.1f} CSS px"
                 for f in frames if label_natural_px * f["shown"] / f["natural"] < MIN_LABEL_CSS_PX]
    assert not too_small, too_small
    assert not [f for f in frames if f["scrolls_unfocusable"]], "a frame scrolls in a box the keyboard cannot focus"


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_figure_labels_are_at_least_9_css_px_on_a_phone(browser, site, built_book: Path, chapter):  # noqa: F811
    points = smallest_label_points()
    figures = _figures(browser, site, chapter)["figure"]
    if not figures:
        pytest.skip(f"{chapter} has no static figure")
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
