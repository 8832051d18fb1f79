"""The built book as readers meet it on a desktop and on a phone, in a real browser: Debian's chromium
driven by Playwright.

The site (built once per session by ``built_book``) is served on 127.0.0.1 and every page is opened
with the network blocked except for that server, as a reader offline would see it: once, at 1280 px (a
desktop), then narrowed to 390 px (a phone), with every fact the tests check collected at each width
(``visit``; ``benchmarks/browser_visits.py --compare`` shows a page loaded afresh at 390 px gives the same
facts). For every page: no JavaScript error; math typeset (MathJax comes from npm, not a CDN); a
plain-text title; every scrubber moves its frame (by mouse and keyboard); every image has alt text; no
control that does nothing (no saved ipywidgets); the launch buttons point at the repository of
``_config.yml`` (the answer boxes: ``test_browser_answer_boxes.py``); axe-core reports no serious or critical violation in the article at 1280 px, and in the
rules the width can change at 390 px; the page weighs under 1.5 MB gzipped. At both widths: every
sidebar button a reader sees opens (or folds) its sidebar; no number in a table cell is broken across
lines; printed output keeps its columns (it scrolls, it never wraps) while code never hides behind a
scrollbar; no formula is a tab stop; every display and inline formula (folded solutions opened) shows
its start as the page opens and its end, or reaches it by scrolling its own box; no TeX is left as text;
every live chart's drawing is whole in its column (or scrolls to its end) and its slider tracks are 24 px
tall or more; the book's title is on screen; no tooltip left after the sidebars close takes a click; and
(at 1280 px) print media shows no control. One page more is loaded on a touch phone, to tap its header
(``touch_phone_header``): the sidebars, then search, the colour modes and Live Code offline. On the phone: nothing widens the page, and figure labels stay
readable: a figure shown narrower than its PNG shrinks its labels with it, so for every figure (a
cell's static image) and every scrubber's frame (matplotlib's ``to_jshtml``) the effective font scale
is its displayed width over its natural width; matplotlib's smallest label (tick and axis labels, the
book's style in ``rl4llm.viz.style``) of S pt, S * dpi / 72 px in the PNG, must stay at 9 CSS px or
more, and a figure wider than that scrolls sideways in its own box, which the keyboard can focus.
Internal links and anchors resolve. Screenshots of three chapters at both widths land in
``_build/screenshots``.
"""
from __future__ import annotations

import functools
import gzip
import http.server
import io
import re
import shutil
import threading
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urldefrag, urljoin, urlparse

import matplotlib
import pytest
from matplotlib.font_manager import FontProperties
from PIL import Image

ROOT = Path(__file__).resolve().parents[1]
AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"
# Debian's chromium (.ci/run installs it); Chrome where it is the system browser (GitHub's runners)
CHROMIUM = next((p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p),
                "/usr/bin/chromium")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]
CHAPTERS = ["intro"] + sorted(p.stem for p in (ROOT / "book").glob("[0-9][0-9]_*.ipynb")) + ["instructor_guide"]
SCREENSHOTS = ["01_distribution", "06_monte_carlo", "15_tiny_transformer"]
MAX_GZIPPED_BYTES = 1.5e6
MIN_LABEL_CSS_PX = 9.0
DESKTOP_WIDTH, PHONE_WIDTH = 1280, 390
#: After the page is narrowed: the theme's resize handler (tab stops on code and tables) and the book's
#: (tab stops on wide figures and formulas, _ext/clean_scripts.py) run 300 ms after the last resize.
RESIZE_SETTLES_MS = 400


def repository() -> str:
    """owner/name from ``repository.url`` in _config.yml (the one place it lives)."""
    url = re.search(r"^\s*url:\s*(\S+)", (ROOT / "_config.yml").read_text(), re.M).group(1)
    return "/".join(urlparse(url).path.strip("/").split("/")[:2])


@pytest.fixture(scope="module")
def site(built_book):
    """The built site served on 127.0.0.1 (a free port) for the module's tests."""
    handler = functools.partial(_QuietHandler, directory=str(built_book))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright
    assert Path(CHROMIUM).exists(), "chromium is missing: apt-get install chromium (.ci/run does)"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        yield browser
        browser.close()


def visit(browser, site: str, built_book: Path, chapter: str) -> dict[int, dict]:
    """Open one page offline at 1280 px, collect every fact the tests check, then narrow the same page to
    390 px and collect them again: ``{1280: facts, 390: facts}``.

    One load serves both widths: the page's layout follows the width through its CSS (media queries)
    alone, and typesetting and drawing it again (two thirds of a visit) would check nothing new.
    ``benchmarks/browser_visits.py --compare`` loads every page afresh at 390 px as well and prints any
    fact that differs from the narrowed page's (none does)."""
    context, page, log = _load(browser, site, chapter, DESKTOP_WIDTH)
    facts = {DESKTOP_WIDTH: _collect(page, log, site, built_book, chapter, DESKTOP_WIDTH)}
    page.set_viewport_size({"width": PHONE_WIDTH, "height": 900})
    page.wait_for_timeout(RESIZE_SETTLES_MS)
    facts[PHONE_WIDTH] = _collect(page, log, site, built_book, chapter, PHONE_WIDTH)
    context.close()
    return facts


def visit_fresh(browser, site: str, built_book: Path, chapter: str, width: int) -> dict:
    """One page loaded offline at ``width`` px and its facts (what :func:`visit` narrows to, loaded anew)."""
    context, page, log = _load(browser, site, chapter, width)
    facts = _collect(page, log, site, built_book, chapter, width)
    context.close()
    return facts


def _load(browser, site: str, chapter: str, width: int):
    """The page, opened offline at ``width`` px once its formulas are typeset; its context, and the log
    of its errors, blocked requests and fetched URLs (kept as the page goes on)."""
    context = browser.new_context(viewport={"width": width, "height": 900})
    log = {"errors": [], "blocked": [], "fetched": []}
    # the network is blocked: every request that does not go to the local server fails (only those
    # are intercepted; intercepting local ones too would change how Chromium resolves CSS @import)
    context.route(lambda url: not url.startswith(site),
                  lambda route: (log["blocked"].append(route.request.url), route.abort()))
    page = context.new_page()
    errors = log["errors"]
    page.on("pageerror", lambda err: errors.append(str(err)))
    page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error"
            and "net::ERR_FAILED" not in msg.text and "Failed to load resource" not in msg.text else None)
    page.on("response", lambda r: log["fetched"].append(r.url))
    page.on("response", lambda r: errors.append(f"HTTP {r.status}: {r.url} (from {r.request.headers.get('referer')})")
            if r.status >= 400 else None)
    page.goto(f"{site}book/{chapter}.html", wait_until="load")
    page.wait_for_function("() => !window.MathJax || !MathJax.startup || MathJax.startup.promise"
                           " .then(() => true)", timeout=30_000)
    page.evaluate("() => window.MathJax && MathJax.startup ? MathJax.startup.promise : null")
    page.evaluate("() => window.rl4llmChartsReady || null")         # the live charts drawn
    page.add_script_tag(path=str(AXE))
    return context, page, log


def _collect(page, log: dict, site: str, built_book: Path, chapter: str, width: int) -> dict:
    """Every fact the tests check of the open page at its present ``width``."""
    page.evaluate("() => window.scrollTo(0, 0)")
    facts = page.evaluate(_FACTS_JS % _LOST_JS, MIN_TARGET_PX)
    facts["scrubbers_move"] = _scrub(page) if width == DESKTOP_WIDTH else []
    if width == PHONE_WIDTH:
        facts["figures"] = {"figure": page.evaluate(_SHOWN_JS, ".cell_output > img"),
                            "frame": page.evaluate(_SHOWN_JS, ".anim-frame img")}
    facts["axe"] = page.evaluate(_AXE_JS, [width == DESKTOP_WIDTH, LAYOUT_RULES])
    facts.update(errors=list(log["errors"]), blocked=list(log["blocked"]),
                 gzipped=_gzipped_weight(log["fetched"], site, built_book))
    if chapter in SCREENSHOTS:
        shots = ROOT / "_build" / "screenshots"
        shots.mkdir(parents=True, exist_ok=True)
        page.evaluate("() => window.scrollTo(0, 0)")
        page.screenshot(path=str(shots / f"{chapter}-{width}.png"), full_page=False)
    if width == DESKTOP_WIDTH:
        facts["printed_controls"] = _printed_controls(page)
    facts["sidebars"] = _open_sidebars(page)         # it changes the layout (and puts it back)
    facts["tooltips_left"] = page.evaluate(_TOOLTIPS_JS)
    return facts


#: Tooltips on screen (Bootstrap's, over the header's buttons) and whether they would take a tap.
_TOOLTIPS_JS = """() => Array.from(document.querySelectorAll('.tooltip')).filter(t => t.checkVisibility())
  .map(t => `${t.textContent} (pointer-events: ${getComputedStyle(t).pointerEvents})`)"""

#: What paper would show of a control: any control of the article, a chart's sliders, an answer box, a
#: folded solution (a title over nothing) or a closed code cell's summary, visible in print media.
_PRINTED_JS = """() => {
  const article = document.querySelector('main article') || document.querySelector('main');
  return Array.from(article.querySelectorAll('input, button, select, textarea, .vega-bindings, form.answer-box, '
                                             + '.admonition.toggle-hidden, details:not([open]) > summary'))
    .filter(e => e.checkVisibility()).map(e => e.outerHTML.slice(0, 80));
}"""


def _printed_controls(page) -> list[str]:
    """The controls the page shows in print media (none should be)."""
    page.emulate_media(media="print")
    try:
        return page.evaluate(_PRINTED_JS)
    finally:
        page.emulate_media(media="screen")


#: The page whose header is tried on a touch phone (one more load, of this page only).
HEADER_CHAPTER = "01_distribution"


def touch_phone_header(browser, site: str, chapter: str = HEADER_CHAPTER) -> dict:
    """The header of one page on a touch phone (390 x 844, touch, DPR 3, light system), offline, tapped
    as a reader taps it: each sidebar button (its dialog closed again with Escape), then the search
    button, which must open the search dialog (a tooltip left over the header took that tap); the tooltips
    then on screen; the colour modes three taps of the colour-mode button go through (from the book's
    default, light); and what Live Code says once it has tried to load thebe."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    context = browser.new_context(viewport={"width": PHONE_WIDTH, "height": 844}, has_touch=True, is_mobile=True,
                                  device_scale_factor=3, color_scheme="light")
    context.route(lambda url: not url.startswith(site), lambda route: route.abort())
    try:
        page = context.new_page()
        page.goto(f"{site}book/{chapter}.html", wait_until="load")
        out = {"sidebars": []}
        for kind in ("primary", "secondary"):
            button = next(b for b in page.query_selector_all(f".{kind}-toggle") if b.is_visible())
            button.tap()
            opened = _settled(page, f"s => s.{kind}")[kind]
            page.keyboard.press("Escape")
            closed = not _settled(page, f"s => !s.{kind}")[kind]
            out["sidebars"].append(f"{kind}: {'opened' if opened else 'did not open'}, "
                                   f"{'closed' if closed else 'did not close'}")
        page.wait_for_timeout(300)                     # a tooltip's fade
        out["tooltips"] = page.evaluate(_TOOLTIPS_JS)
        search = next(b for b in page.query_selector_all(".search-button__button") if b.is_visible()).bounding_box()
        page.touchscreen.tap(search["x"] + search["width"] / 2, search["y"] + search["height"] / 2)   # whatever is on top takes it
        try:
            page.wait_for_function("() => document.getElementById('pst-search-dialog').open", timeout=2000)
        except PlaywrightTimeout:
            pass
        out["search_opened"] = page.evaluate("() => document.getElementById('pst-search-dialog').open")
        page.keyboard.press("Escape")
        button = page.locator(".bd-header-article .theme-switch-button")
        out["modes"] = []
        for _ in range(3):
            button.tap()
            out["modes"].append(page.evaluate("() => document.documentElement.dataset.mode"))
        out["live_code"] = _live_code(page)
        return out
    finally:
        context.close()


def _live_code(page) -> str:
    """What the Live Code button says once thebe has loaded or failed to (offline: failed)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    page.evaluate("() => initThebeSBT()")             # what the launch menu's Live Code calls
    try:
        page.wait_for_function("() => { const b = document.querySelector('.thebe-launch-button');"
                               " return b && !/Loading thebe/.test(b.textContent); }", timeout=5000)
    except PlaywrightTimeout:                          # still loading: the verdict
        pass
    return page.evaluate("() => document.querySelector('.thebe-launch-button').textContent.trim()")


_FACTS_JS = """(MIN_TARGET_PX) => {
  %s
  const article = document.querySelector('main article') || document.querySelector('main');
  const inArticle = sel => Array.from(article.querySelectorAll(sel));
  const math = inArticle('.math');
  return {
    title: document.title,
    raw_math: math.filter(m => !m.querySelector('mjx-container')).map(m => m.textContent.slice(0, 80)),
    math_count: math.length,
    images_without_alt: inArticle('img').filter(i => !(i.getAttribute('alt') || '').trim()).map(i => i.src.slice(-60)),
    // live without a kernel: scrubbers, answer boxes, copy-to-clipboard buttons, dropdown toggles
    controls_outside_scrubbers: inArticle('input, select, textarea, button')
      .filter(c => !c.closest('.animation, form.answer-box, .vega-chart') && !c.matches('.copybtn, .toggle-button'))
      .map(c => c.outerHTML.slice(0, 80)),
    widget_scripts: document.querySelectorAll('script[type^="application/vnd.jupyter.widget"]').length,
    widget_manager: Array.from(document.scripts).filter(s => /html-manager|embed-amd/.test(s.src)).length,
    launch_links: Array.from(document.querySelectorAll('a[href]')).map(a => a.href)
      .filter(h => /mybinder\\.org|colab\\.research\\.google\\.com/.test(h)),
    page_overflow: document.documentElement.scrollWidth - window.innerWidth,
    // code (cells, listings) wraps: none of it hides behind a scrollbar
    scrolling_code: inArticle('div.highlight pre').filter(p => !p.closest('div.output'))
      .filter(p => p.scrollWidth > p.clientWidth + 1).map(p => p.textContent.slice(0, 60)),
    // printed output keeps its columns: each of its lines is one line on screen
    wrapped_outputs: inArticle('div.cell_output div.output pre').filter(p => {
      const style = getComputedStyle(p), lines = p.textContent.replace(/\\n+$/, '').split('\\n').length;
      const height = p.clientHeight - parseFloat(style.paddingTop) - parseFloat(style.paddingBottom);
      const line = parseFloat(style.lineHeight) || 1.2 * parseFloat(style.fontSize);    // "normal": about 1.2 em
      return style.whiteSpace !== 'pre' || height > (lines + 0.5) * line;
    }).map(p => p.textContent.slice(0, 60)),
    // no number in a table cell is broken across lines: each whitespace-free token with a digit in it
    // lies on one line
    broken_numbers: inArticle('td, th').flatMap(cell => {
      const broken = [], walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
      for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        for (const m of node.data.matchAll(/\\S*\\d\\S*/g)) {
          const range = document.createRange();
          range.setStart(node, m.index);
          range.setEnd(node, m.index + m[0].length);
          const tops = new Set(Array.from(range.getClientRects()).filter(r => r.width > 0).map(r => Math.round(r.top)));
          if (tops.size > 1) broken.push(m[0]);
        }
      }
      return broken;
    }),
    // formulas are not tab stops (MathJax's menu puts each in the tab order unless told not to)
    math_tab_stops: inArticle('mjx-container').filter(m => m.tabIndex >= 0).length,
    // a listing holds the highlighter's spans and nothing else (axe judges them by representatives)
    code_markup: inArticle('div.highlight pre *')
      .filter(e => e.tagName !== 'SPAN' || e.getAttributeNames().some(a => a !== 'class')).map(e => e.outerHTML.slice(0, 80)),
    // scrubbers and live charts fit their column
    too_wide: Array.from(document.querySelectorAll('.animation, .vega-chart')).filter(a => {
      const column = a.closest('.cell_output') || article;
      return a.getBoundingClientRect().right > column.getBoundingClientRect().right + 1;
    }).length,
    // each chart's drawing holds all it draws (its text included), and its box shows it or scrolls to it
    charts_cut: Array.from(article.querySelectorAll('.vega-chart svg')).map(svg => {
      const root = svg.querySelector(':scope > g');
      const shift = /translate\\(\\s*([-\\d.]+)/.exec(root.getAttribute('transform') || '');
      const box = root.getBBox(), right = (shift ? +shift[1] : 0) + box.x + box.width;
      return Math.max(0, right - svg.width.baseVal.value, lost(svg));
    }).filter(cut => cut > 1).map(Math.round),
    // a slider's track is a target a finger can take (WCAG 2.5.8: 24 px)
    thin_sliders: inArticle('.vega-bind input[type=range]').map(i => i.getBoundingClientRect().height)
      .filter(h => h < MIN_TARGET_PX).map(Math.round),
    // every formula whole: its start shown, its end shown or reached by scrolling its box
    cut_formulas: withEverythingOpen(() => ({
      display: inArticle('mjx-container[display="true"] > mjx-math'),
      inline: inArticle('mjx-container:not([display="true"]) > mjx-math'),
    }), found => Object.fromEntries(Object.entries(found).map(([kind, formulas]) => [kind,
      formulas.filter(m => m.getClientRects().length).map(m => [lost(m), (m.closest('.math') || m.parentElement).textContent.slice(0, 60)])
        .filter(([cut]) => cut > 1).map(([cut, text]) => `${Math.round(cut)} px: ${text}`)]))),
    // the book's title is on screen: in the primary sidebar, or atop the article where that is a closed dialog
    book_title_shown: Array.from(document.querySelectorAll('.logo__title, p.book-title-narrow'))
      .some(e => e.checkVisibility({visibilityProperty: true}) && e.getBoundingClientRect().right > 0),
    // TeX left as text (printed Markdown is not typeset): a dollar sign before a backslash command
    raw_tex: (() => {
      const found = [], walker = document.createTreeWalker(article, NodeFilter.SHOW_TEXT);
      for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        if (node.parentElement.closest('pre, code, script, style, mjx-container, .math')) continue;
        const m = node.data.match(/\\$[^$]*\\\\[A-Za-z]+[^$]*\\$/);
        if (m) found.push(m[0].slice(0, 60));
      }
      return found;
    })(),
  };
}"""

#: The smallest height of a slider's track, in CSS px (WCAG 2.5.8's minimum target size).
MIN_TARGET_PX = 24

#: How far (px) ``el`` is cut off at worst, going up from it to the article: every box that clips
#: (overflow other than visible) must show its start as the page opens, and its end, or reach it by
#: scrolling to the end if the box scrolls (overflow auto or scroll; then the box itself is what the boxes
#: above it must show). ``withEverythingOpen(collect, measure)``: folded solutions and closed dropdowns
#: opened, ``collect()`` measured, and folded again.
_LOST_JS = """
const lost = (el) => {
  const article = document.querySelector('main article') || document.querySelector('main');
  let worst = 0, target = el;
  for (let box = el.parentElement; box && box !== article.parentElement; box = box.parentElement) {
    const style = getComputedStyle(box);
    if (style.overflowX === 'visible') continue;
    const scrolls = /auto|scroll/.test(style.overflowX), keep = box.scrollLeft;
    const inner = () => { const r = box.getBoundingClientRect(); return [r.left + box.clientLeft, r.left + box.clientLeft + box.clientWidth]; };
    const start = inner()[0] - target.getBoundingClientRect().left;
    if (scrolls) box.scrollLeft = 1e7;
    const end = target.getBoundingClientRect().right - inner()[1];
    box.scrollLeft = keep;
    worst = Math.max(worst, start, end);
    if (scrolls) target = box;
  }
  return worst;
};
const withEverythingOpen = (collect, measure) => {
  const article = document.querySelector('main article') || document.querySelector('main');
  const folded = Array.from(article.querySelectorAll('.toggle-hidden'));
  const closed = Array.from(article.querySelectorAll('details:not([open])'));
  folded.forEach(f => f.classList.remove('toggle-hidden'));
  closed.forEach(d => { d.open = true; });
  try { return measure(collect()); } finally {
    folded.forEach(f => f.classList.add('toggle-hidden'));
    closed.forEach(d => { d.open = false; });
  }
};
"""

#: Each image matched by a selector: its natural and displayed width, and whether the box it scrolls
#: in (if it is wider than the box) cannot take the keyboard's focus.
_SHOWN_JS = """sel => Array.from(document.querySelectorAll(sel)).map(i => {
  const box = i.closest('.cell_output, .anim-frame');
  return {src: i.src, natural: i.naturalWidth, shown: i.getBoundingClientRect().width,
          scrolls_unfocusable: box.scrollWidth > box.clientWidth + 1 && box.tabIndex < 0};
})"""

#: The rules whose verdict the width can change, the only ones run again at 390 px: the size and spacing
#: of what a finger taps, and boxes that scroll (a table or an output wider than a phone) and so must
#: take the keyboard's focus. axe's other rules read names, roles, structure and colours, which are the
#: same at both widths: the theme hides nothing inside the article on a phone, and its width-dependent
#: colours are the sidebars' off-canvas panels (outside the article axe checks) and margin-note toggles
#: (the book has none).
LAYOUT_RULES = ["target-size", "scrollable-region-focusable"]

#: axe on the article, in one run (at 390 px, only ``LAYOUT_RULES``): at 1280 px every rule, with the
#: inside of highlighted code (``div.highlight pre``) judged by one visible token for each distinct pair
#: of colours. A long page holds thousands of highlighter spans in a handful of colours on one
#: background, and contrast is a function of the text's colour, size and weight, its opacity and the
#: background behind it, so the spans that share all of these share their verdict; checking every span
#: was about two thirds of axe's time. The spans carry nothing else a rule reads (``code_markup``: no
#: element in a listing but a span with a class). One run, not one for the colours and one for the
#: rest: each run with a rule that measures the page (contrast, target size) lays out a grid of every
#: element first, over a second a page.
#: Returns the serious or critical violations, and the representative tokens axe gave no verdict on
#: (none may be: a token skipped would be a colour pair unchecked).
_AXE_JS = """async ([desktop, layout]) => {
  const article = document.querySelector('main article') || document.querySelector('main');
  const serious = result => result.violations.filter(v => v.impact === 'serious' || v.impact === 'critical')
    .map(v => `${v.id} (${v.impact}): ${v.nodes.length} nodes, e.g. ${v.nodes[0].html.slice(0, 100)}`);
  // preload: false: axe's own fetch of @import-ed stylesheets resolves them against the page, not the sheet
  if (!desktop) return {found: serious(await axe.run(article, {runOnly: {type: 'rule', values: layout},
                                                                resultTypes: ['violations'], preload: false})),
                        unjudged: []};
  const backdrop = el => {
    for (; el; el = el.parentElement) {
      const colour = getComputedStyle(el).backgroundColor;
      if (colour !== 'rgba(0, 0, 0, 0)' && colour !== 'transparent') return colour;
    }
    return 'none';
  };
  const tokens = new Map();
  for (const el of article.querySelectorAll('div.highlight pre *')) {
    // a leaf with a letter or digit (axe does not judge text of punctuation alone, here or in a full run)
    if (el.children.length || !/[\\p{L}\\p{N}]/u.test(el.textContent)
        || !el.checkVisibility({opacityProperty: true, visibilityProperty: true})) continue;
    const s = getComputedStyle(el), key = [s.color, s.fontSize, s.fontWeight, s.opacity, backdrop(el)].join('|');
    if (!tokens.has(key)) tokens.set(key, el);
  }
  const result = await axe.run({include: [article, ...tokens.values()], exclude: ['div.highlight pre']},
                               {resultTypes: ['violations', 'passes', 'incomplete'], preload: false,
                                elementRef: true, selectors: false});
  const judged = new Set(['violations', 'passes', 'incomplete'].flatMap(kind => result[kind])
    .filter(r => r.id === 'color-contrast').flatMap(r => r.nodes.map(n => n.element)));
  return {found: serious(result),
          unjudged: Array.from(tokens.values()).filter(el => !judged.has(el)).map(el => el.outerHTML.slice(0, 80))};
}"""


_SIDEBAR_JS = """() => ({
  primary: document.getElementById('pst-primary-sidebar-modal').open,
  secondary: document.getElementById('pst-secondary-sidebar-modal').open,
  folded: document.getElementById('pst-primary-sidebar').classList.contains('pst-sidebar-hidden'),
  links: Array.from(document.querySelectorAll('dialog[open] a[href]')).filter(a => a.getClientRects().length).length,
})"""


def _open_sidebars(page) -> list[str]:
    """Click each sidebar button a reader sees; what it did. In a dialog it must show links; on a wide
    screen the primary button folds the sidebar away (and a second click brings it back)."""
    done = []
    for kind in ("primary", "secondary"):
        for button in page.query_selector_all(f".{kind}-toggle"):
            if not button.is_visible():
                continue
            button.click()
            opened = f"s.{kind} && s.links > 0"
            state = _settled(page, f"s => ({opened}) || s.folded" if kind == "primary" else f"s => {opened}")
            if state[kind] and state["links"]:
                done.append(f"{kind}: dialog")
                page.keyboard.press("Escape")
                _settled(page, f"s => !s.{kind}")
            elif kind == "primary" and state["folded"]:
                button.click()
                back = not _settled(page, "s => !s.folded")["folded"]
                done.append("primary: folded" + (" and back" if back else ", not back"))
            else:
                done.append(f"{kind}: nothing ({state})")
    return done


def _settled(page, condition: str) -> dict:
    """The sidebars' state once ``condition`` (a JavaScript predicate on it) holds, or after 2 s."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    try:
        page.wait_for_function(f"() => ({condition})(({_SIDEBAR_JS})())", timeout=2000)
    except PlaywrightTimeout:  # the state as it is then is the verdict
        pass
    return page.evaluate(_SIDEBAR_JS)


def _scrub(page) -> list[bool]:
    """For each scrubber: pause it, move its slider to the first and last frame (mouse) and one step
    with the arrow key (keyboard); True if the image changed both times."""
    moved = []
    for animation in page.query_selector_all(".animation"):
        pause = animation.query_selector('button[title="Pause"]')
        if pause:
            pause.click()
        slider, image = animation.query_selector("input.anim-slider"), animation.query_selector("img")
        last = slider.get_attribute("max")
        slider.evaluate("(s, v) => { s.value = v; s.dispatchEvent(new Event('input')); }", "0")
        first_src = image.get_attribute("src")
        slider.evaluate("(s, v) => { s.value = v; s.dispatchEvent(new Event('input')); }", last)
        by_mouse = image.get_attribute("src") != first_src
        slider.evaluate("(s) => { s.value = 0; s.dispatchEvent(new Event('input')); }")
        slider.focus()
        page.keyboard.press("ArrowRight")
        by_keyboard = image.get_attribute("src") != first_src
        moved.append(by_mouse and by_keyboard)
    return moved


def _gzipped_weight(urls: list[str], site: str, built_book: Path) -> int:
    """Gzipped bytes of every same-origin file the page fetched."""
    total = 0
    for url in set(urls):
        if url.startswith(site):
            path = built_book / unquote(urlparse(url).path.lstrip("/"))
            if path.is_file():
                total += len(gzip.compress(path.read_bytes()))
    return total


@pytest.fixture(scope="module")
def visits(browser, site, built_book) -> dict:
    """Every page's facts at both widths: ``{chapter: {1280: facts, 390: facts}}``."""
    return {c: visit(browser, site, built_book, c) for c in CHAPTERS}


@pytest.fixture(scope="module")
def desktop(visits) -> dict:
    return {c: v[DESKTOP_WIDTH] for c, v in visits.items()}


@pytest.fixture(scope="module")
def phone(visits) -> dict:
    return {c: v[PHONE_WIDTH] for c, v in visits.items()}


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_page_offline_has_no_errors_typeset_math_and_a_plain_title(desktop, chapter):
    facts = desktop[chapter]
    assert not facts["errors"], facts["errors"]
    assert not facts["raw_math"], f"{len(facts['raw_math'])} of {facts['math_count']} math spans untypeset"
    assert "\\(" not in facts["title"] and "$" not in facts["title"], facts["title"]
    assert facts["gzipped"] < MAX_GZIPPED_BYTES, f"{facts['gzipped'] / 1e6:.2f} MB gzipped"


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_no_dead_control_and_every_scrubber_moves(desktop, chapter):
    facts = desktop[chapter]
    assert facts["widget_scripts"] == 0 and facts["widget_manager"] == 0, "saved ipywidgets in the page"
    assert not facts["controls_outside_scrubbers"], facts["controls_outside_scrubbers"]
    assert all(facts["scrubbers_move"]), f"scrubbers that did not move: {facts['scrubbers_move']}"


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_accessible_images_and_article(desktop, chapter):
    facts = desktop[chapter]
    assert not facts["scrolling_code"], f"code lines hidden behind a horizontal scrollbar: {facts['scrolling_code']}"
    assert not facts["images_without_alt"], facts["images_without_alt"]


WIDTHS = [DESKTOP_WIDTH, PHONE_WIDTH]
#: What each sidebar button a reader sees does at each width. The theme binds only the first button of
#: each kind (a hidden one), so every visible button must work: on a phone it opens its sidebar as a
#: dialog with the links; on a desktop the primary one folds the sidebar away (and back).
SIDEBARS = {DESKTOP_WIDTH: ["primary: folded and back"], PHONE_WIDTH: ["primary: dialog", "secondary: dialog"]}


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("chapter", CHAPTERS)
def test_tables_outputs_and_formulas_read_well(visits, chapter, width):
    """No number broken inside a table cell, no printed output wrapped (it scrolls), no formula in the
    tab order, and axe finds nothing serious."""
    facts = visits[chapter][width]
    assert not facts["broken_numbers"], f"numbers broken across lines in table cells: {facts['broken_numbers'][:10]}"
    assert not facts["wrapped_outputs"], f"printed outputs wrapped: {facts['wrapped_outputs'][:5]}"
    assert facts["math_tab_stops"] == 0, f"{facts['math_tab_stops']} formulas are tab stops"
    assert not facts["code_markup"], f"listings hold more than highlighted text: {facts['code_markup'][:5]}"
    assert not facts["axe"]["found"], "\n".join(facts["axe"]["found"])
    assert not facts["axe"]["unjudged"], f"highlighted tokens axe did not judge: {facts['axe']['unjudged']}"


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("chapter", CHAPTERS)
def test_every_sidebar_button_works(visits, chapter, width):
    assert visits[chapter][width]["sidebars"] == SIDEBARS[width]


@pytest.mark.parametrize("width", WIDTHS)
def test_screenshots_were_saved(visits, width):
    for chapter in SCREENSHOTS:
        assert (ROOT / "_build" / "screenshots" / f"{chapter}-{width}.png").stat().st_size > 10_000


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_launch_buttons_point_at_the_configured_repository(desktop, chapter):
    links = desktop[chapter]["launch_links"]
    if chapter == "intro":          # a Markdown page has no notebook to launch
        return
    assert links, "no Binder or Colab launch link"
    assert all(repository() in link for link in links), links


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("chapter", CHAPTERS)
def test_every_formula_is_whole_or_scrolls_from_its_start(visits, chapter, width):
    """Display and inline formulas (folded solutions opened): each one's start is shown as the page opens
    and its end is shown or reached by scrolling its own box; no TeX is left untypeset as text."""
    cut = visits[chapter][width]["cut_formulas"]
    assert not cut["display"], f"display formulas cut off at {width} px: {cut['display'][:5]}"
    assert not cut["inline"], f"inline formulas cut off at {width} px: {cut['inline'][:5]}"
    assert not visits[chapter][width]["raw_tex"], visits[chapter][width]["raw_tex"]


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("chapter", CHAPTERS)
def test_charts_are_whole_in_their_column_and_their_sliders_take_a_finger(visits, chapter, width):
    facts = visits[chapter][width]
    assert facts["too_wide"] == 0, f"{facts['too_wide']} scrubbers or charts are wider than their column"
    assert not facts["charts_cut"], f"charts cut off at {width} px by {facts['charts_cut']} px"
    assert not facts["thin_sliders"], f"slider tracks {facts['thin_sliders']} px tall, under {MIN_TARGET_PX} px"


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("chapter", CHAPTERS)
def test_the_book_title_shows_and_no_tooltip_is_left_over_the_header(visits, chapter, width):
    """The book's title is on screen at both widths; once the sidebars' dialogs (or the fold) have closed,
    no tooltip on screen takes a click (the pointer may still rest on the button it names)."""
    facts = visits[chapter][width]
    assert facts["book_title_shown"], f"the book's title is nowhere on screen at {width} px"
    assert not [t for t in facts["tooltips_left"] if "pointer-events: none" not in t], facts["tooltips_left"]


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_print_shows_no_controls(desktop, chapter):
    """Paper shows no slider, answer box, button, folded solution or closed code summary."""
    assert not desktop[chapter]["printed_controls"], desktop[chapter]["printed_controls"][:5]


def test_on_a_touch_phone_the_header_does_what_it_says(browser, site):
    """Tapped on a touch phone: the sidebars open and close and leave no tooltip, so the next tap (search)
    lands; the colour-mode button goes from light to dark in one tap on a light system (then to the
    system's setting, then back); Live Code offline says it cannot load instead of loading forever."""
    header = touch_phone_header(browser, site)
    assert header["sidebars"] == ["primary: opened, closed", "secondary: opened, closed"], header["sidebars"]
    assert not header["tooltips"], f"tooltips left over the header: {header['tooltips']}"
    assert header["search_opened"], "the search button's tap did not open the search"
    assert header["modes"] == ["dark", "auto", "light"], header["modes"]
    assert "Loading thebe" not in header["live_code"] and "network" in header["live_code"], header["live_code"]


def test_axe_core_is_the_pinned_current_release():
    """The accessibility checks run with the axe-core that package.json pins (npm ci installs it), a
    release that knows WCAG 2.5.3's label-content-name-mismatch (4.14 or later)."""
    import json
    pinned = json.loads((ROOT / "package.json").read_text())["devDependencies"]["axe-core"]
    installed = json.loads((AXE.parent / "package.json").read_text())["version"]
    assert installed == pinned, f"node_modules has axe-core {installed}, package.json pins {pinned}: run npm ci"
    assert tuple(int(v) for v in installed.split(".")[:2]) >= (4, 14), installed


# ----------------------------------------------------------------------------- on a phone
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
def test_nothing_widens_the_page(phone, chapter):
    facts = phone[chapter]
    assert facts["page_overflow"] <= 1, f"the page scrolls sideways by {facts['page_overflow']} px"


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


class _Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.hrefs, self.ids = [], set()

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if attrs.get("id"):
            self.ids.add(attrs["id"])
        if tag == "a" and attrs.get("href"):
            self.hrefs.append(attrs["href"])


def test_internal_links_and_anchors_resolve(built_book):
    parsed = {}

    def parse(path: Path) -> _Links:
        if path not in parsed:
            parsed[path] = _Links()
            parsed[path].feed(path.read_text(encoding="utf-8"))
        return parsed[path]

    broken = []
    for page in [built_book / "book" / f"{c}.html" for c in CHAPTERS]:
        for href in parse(page).hrefs:
            if urlparse(href).scheme or href.startswith(("mailto:", "javascript:")):
                continue
            target, fragment = urldefrag(urljoin(page.as_uri(), href))
            path = Path(unquote(urlparse(target).path))
            if not path.exists():
                broken.append(f"{page.name}: {href}")
            elif fragment and path.suffix == ".html" and unquote(fragment) not in parse(path).ids:
                broken.append(f"{page.name}: {href} (no such anchor)")
    assert not broken, broken
