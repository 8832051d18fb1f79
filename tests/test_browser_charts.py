"""The sliders' charts in a real browser, offline: Debian's chromium driven by Playwright.

Each chapter with a chart (``rl4llm.viz.charts``) is opened once in the built site (``built_book``) with
the network blocked except for the local server, at 1280 px, then narrowed to 390 px, as
``test_browser.visit`` does (the page's charts are checked one after the other on the same page; the
charts take the column's width, and ``test_browser`` checks that they fit the column of a page loaded
at either width). Every slider of every chart is moved to its ends and to a
middle position: at 1280 px by the keyboard (Home, End, arrows), as a desktop reader tabbing through does;
at 390 px by the pointer (a tap at the track's ends and middle), as a phone reader does. After each move
the numbers drawn (the bars' data in Vega's scene graph) are compared with the library's at the slider's
value, the value printed beside the slider, the title, the slider's ``aria-valuetext`` and the chart's
description must follow, and the time from the input event to the drawn chart (kept by
``_ext/vega_charts.py``) is collected: its median must be under 50 ms. Before that, on the page as opened,
each slider is moved to its ends while the others stay at the chart's opening setting: each must change
what the chart draws (no slider is dead where the reader meets the chart). The chart fits the text column at
both widths. ``benchmarks/chart_redraw.py`` prints the same medians.
"""
from __future__ import annotations

import statistics
from decimal import ROUND_HALF_UP, Decimal

import numpy as np
import pytest

from test_browser import RESIZE_SETTLES_MS, browser, site  # noqa: F401  (fixtures: the served site, Chromium)
from test_charts import CHARTS, DECLARED, LINE_CHARTS

#: The width each input method is tried at: the keyboard on a desktop, the pointer on a phone.
INPUT_AT = {1280: "keyboard", 390: "pointer"}
MAX_MEDIAN_MS = 50.0

#: The numbers each bar of a chart draws and each point of its lines (series key, x, value), read from
#: Vega's scene graph, and the sliders' values.
DRAWN_JS = """(i) => {
  const chart = window.rl4llmCharts[i], names = chart.spec.params.filter(p => p.bind).map(p => p.name);
  const bars = {}, points = [];
  const walk = (node) => {
    if (node.marktype === 'rect') node.items.forEach(item => {
      if (item.datum && 'token' in item.datum && names.every(n => n in item.datum)) bars[item.datum.token] = item.datum.value;
    });
    if (node.marktype === 'line' || node.marktype === 'symbol') node.items.forEach(item => {
      if (item.datum && 'key' in item.datum && 'x' in item.datum) points.push([item.datum.key, item.datum.x, item.datum.value]);
    });
    (node.items || []).forEach(walk);
  };
  walk(chart.view.scenegraph().root);
  const svg = chart.box.querySelector('svg');
  return {
    bars, points, keys: ((chart.spec.layer || []).flatMap(l => l.transform || []).find(t => t.fold) || {fold: []}).fold,
    signals: Object.fromEntries(names.map(n => [n, chart.view.signal(n)])),
    inputs: Array.from(chart.box.querySelectorAll('.vega-bind')).map(b => ({
      label: b.querySelector('.vega-bind-name').textContent.trim(), value: b.querySelector('input').value,
      shown: b.querySelector('input + span').textContent, valuetext: b.querySelector('input').getAttribute('aria-valuetext'),
    })),
    title: Array.from(chart.box.querySelectorAll('.role-title-text')).map(t => t.textContent).join(' '),
    description: chart.box.querySelector('.vega-chart-description').textContent,
    svg_label: svg ? svg.getAttribute('aria-label') : null,
    redraws: chart.redraws.length,
    right: chart.box.getBoundingClientRect().right,
    column: (chart.box.closest('.cell_output') || document.querySelector('main article')).getBoundingClientRect().right,
  };
}"""


def open_chapter(browser, site, chapter: str, width: int):  # noqa: F811
    """The chapter's page, offline, once its charts are drawn; the page and any JavaScript errors.

    MathJax is not loaded (``test_browser`` checks the formulas): typesetting a long page costs more
    than its charts' checks, and it would go on typesetting while the sliders move."""
    context = browser.new_context(viewport={"width": width, "height": 900})
    context.route(lambda url: not url.startswith(site) or "/_mathjax/" in url, lambda route: route.abort())
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda err: errors.append(str(err)))
    page.goto(f"{site}book/{chapter}.html", wait_until="load")
    page.wait_for_function("() => window.rl4llmChartsReady", timeout=30_000)
    page.evaluate("() => window.rl4llmChartsReady")
    return context, page, errors


def drawn(page, index: int) -> dict:
    return page.evaluate(DRAWN_JS, index)


def _settle(page, index: int, before: dict) -> dict:
    """What the chart draws once the move (if it changed a value) has been redrawn."""
    page.wait_for_timeout(20)
    now = drawn(page, index)
    if [i["value"] for i in now["inputs"]] != [i["value"] for i in before["inputs"]]:
        page.wait_for_function("([i, n]) => window.rl4llmCharts[i].redraws.length > n", arg=[index, before["redraws"]])
        now = drawn(page, index)
    return now


def moves(page, index: int, slider: int, method: str):
    """Move one slider by ``method``: the keyboard (Home, End, Home, then three steps right) or the
    pointer (a click at the track's left end, its right end, its middle and its left end again, so at
    least three clicks move it); yield (how, what the chart draws) after each."""
    inputs = page.locator(".vega-chart").nth(index).locator(".vega-bind input")
    control = inputs.nth(slider)
    if method == "keyboard":
        control.focus()
        for key in ("Home", "End", "Home", "ArrowRight", "ArrowRight", "ArrowRight"):
            before = drawn(page, index)
            page.keyboard.press(key)
            yield f"keyboard {key}", _settle(page, index, before)
        return
    for where, at in (("left end", 0.0), ("right end", 1.0), ("middle", 0.5), ("left end again", 0.0)):
        control.scroll_into_view_if_needed()          # a redraw can move the page: where the track is now
        box = control.bounding_box()
        before = drawn(page, index)
        page.mouse.click(box["x"] + 1 + at * (box["width"] - 2), box["y"] + box["height"] / 2)
        yield f"pointer {where}", _settle(page, index, before)


def check_drawn(chapter: str, state: dict, how: str) -> None:
    """The bars are the library's numbers at the sliders' values; value, title and descriptions follow."""
    _, sliders, library, categories, *_ = CHARTS[chapter]
    values = check_sliders(sliders, state, how)
    tokens = [str(t) for t in categories]
    np.testing.assert_allclose([state["bars"][t] for t in tokens], library(**values), rtol=0, atol=1e-6, err_msg=how)
    assert all(f"{t}: " in state["description"] for t in tokens), how


def check_sliders(every, state: dict, how: str) -> dict:
    """The sliders' values (each on its grid); the value beside each slider, its aria-valuetext, the title
    and the description follow them."""
    values = {s.name: s.cast(state["signals"][s.name]) for s in every}
    for s in every:
        assert np.any(np.isclose(s.values, values[s.name], rtol=0, atol=1e-9)), f"{how}: {s.name} off the grid"
    for s, shown in zip(every, state["inputs"]):
        assert shown["label"] == s.label and float(shown["shown"]) == pytest.approx(values[s.name]), how
        assert shown["valuetext"] == f"{s.label} = {shown['value']}", how
        title = state["title"].replace("\u2212", "-")           # Vega's format writes a minus sign (U+2212)
        assert f"{s.label} = {as_vega_writes(values[s.name], s.fmt)}" in title, (how, state["title"])
    assert state["title"] in state["description"] and state["description"] == state["svg_label"], how
    return values


def as_vega_writes(value: float, fmt: str) -> str:
    """``value`` as Vega's format (d3-format) writes it: ``.Nf`` is JavaScript's ``toFixed``, which
    rounds the double's exact decimal value half up (1.625 is "1.63", where Python's ``format``, half
    to even, writes "1.62"); ``d`` rounds to a whole number."""
    if fmt == "d":
        return str(int(Decimal(value).to_integral_value(ROUND_HALF_UP)))
    places = int(fmt.removeprefix(".").removesuffix("f"))
    return str(Decimal(value).quantize(Decimal(1).scaleb(-places), ROUND_HALF_UP))


#: Set one slider of a chart to a value as the reader's move would (an input event), and wait for the redraw.
SET_JS = """async ([i, k, value]) => {
  const chart = window.rl4llmCharts[i], input = chart.box.querySelectorAll('.vega-bind input')[k];
  if (Number(input.value) === Number(value)) return;
  const before = chart.redraws.length;
  input.value = value;
  input.dispatchEvent(new Event('input', {bubbles: true}));
  while (chart.redraws.length === before) await new Promise(r => requestAnimationFrame(r));
}"""


def drawing(state: dict) -> str:
    """What a chart draws (its bars' and points' numbers), as one comparable string."""
    return repr((sorted(state["bars"].items()), sorted(map(tuple, state["points"]))))


def check_every_slider_is_live_at_the_opening(page, index: int, every) -> None:
    """Each slider, moved to its ends while the others stay at the chart's opening setting, changes what
    the chart draws (no slider is dead where the reader meets the chart), and goes back to its opening."""
    opening = drawing(drawn(page, index))
    for k, s in enumerate(every):
        drawings = set()
        for value in (s.start, s.stop):
            page.evaluate(SET_JS, [index, k, repr(float(value))])
            drawings.add(drawing(drawn(page, index)))
        page.evaluate(SET_JS, [index, k, repr(float(s.default))])
        assert drawings - {opening}, f"{s.label} changes nothing at the opening setting of the other sliders"
    assert drawing(drawn(page, index)) == opening


def check_redraws(page, index: int, sliders: int, where: str) -> None:
    """Every move was timed (at least three per slider); the median redraw is under ``MAX_MEDIAN_MS``."""
    times = page.evaluate(f"() => window.rl4llmCharts[{index}].redraws")
    assert len(times) >= 3 * sliders
    median = statistics.median(times)
    print(f"{where}: {len(times)} redraws, median {median:.1f} ms, max {max(times):.1f} ms")
    assert median < MAX_MEDIAN_MS, f"median redraw {median:.1f} ms"


# ----------------------------------------------------------------------------- every chart
def _chart_index(table) -> dict:
    """Each chart of a table (``name`` or ``chapter/what``): its chapter and its index among the page's charts."""
    out, seen = {}, {}
    for name in table:
        chapter = name.split("/")[0]
        out[name] = (chapter, seen.get(chapter, 0))
        seen[chapter] = seen.get(chapter, 0) + 1
    return out


#: Every chart of the book (``test_charts``' bar and line charts; a page's bars come before its lines, as on
#: chapter 18's page) and where each one is: its chapter and its index on the page.
PAGES = _chart_index({**CHARTS, **LINE_CHARTS})


def chart_sliders(name: str) -> list:
    """A chart's sliders, its marker last."""
    if name in CHARTS:
        return CHARTS[name][1]
    _, sliders, marker, *_ = LINE_CHARTS[name]
    return sliders + ([marker] if marker else [])


def check_line_drawn(name: str, state: dict, how: str) -> None:
    """Each series' drawn points are the library's (x, value) at the sliders' values; the value beside
    each slider, its aria-valuetext, the title and the description follow."""
    _, sliders, _, library, *_ = LINE_CHARTS[name]
    values = check_sliders(chart_sliders(name), state, how)
    x, rows = library(**{s.name: values[s.name] for s in sliders})
    decimals = max(1e-6, 0.5 * 10.0 ** -DECLARED[name].decimals + 1e-9)   # the grid's rounding, as each chart declares
    for i, row in enumerate(np.asarray(rows, dtype=float)[:len(state["keys"])]):      # the error bars after
        drawn = sorted({(px, v) for key, px, v in state["points"] if key == f"s{i}"})
        shown = np.isfinite(row)
        assert len(drawn) == int(shown.sum()), (how, i, len(drawn))
        np.testing.assert_allclose([p[0] for p in drawn], np.asarray(x, dtype=float)[shown], rtol=0, atol=0.5e-6)
        np.testing.assert_allclose([p[1] for p in drawn], row[shown], rtol=0, atol=decimals, err_msg=f"{how}: s{i}")


@pytest.fixture(scope="module")
def opened(browser, site):  # noqa: F811
    """The page a test asks for (chapter, width), opened once at the first width and narrowed to the
    next: the tests of one page run one after the other (``CASES`` keeps them together), each on its
    own chart, so the next page closes the last. Narrowing empties the charts' redraw times, so that
    each width's median is its own."""
    current = {}

    def page_of(chapter: str, width: int):
        if current.get("chapter") != chapter:
            if current:
                current["context"].close()
            context, page, errors = open_chapter(browser, site, chapter, width)
            current.update(chapter=chapter, width=width, context=context, page=page, errors=errors)
        elif current["width"] != width:
            current["page"].set_viewport_size({"width": width, "height": 900})
            current["page"].wait_for_timeout(RESIZE_SETTLES_MS)
            current["page"].evaluate("() => window.rl4llmCharts.forEach(chart => { chart.redraws.length = 0; })")
            current["width"] = width
        return current["page"], current["errors"]
    yield page_of
    if current:
        current["context"].close()


#: Every chart at each width: a page's charts together at 1280 px, then at 390 px.
CASES = [(name, width) for chapter in dict.fromkeys(c for c, _ in PAGES.values()) for width in INPUT_AT
         for name, (c, _) in PAGES.items() if c == chapter]


@pytest.mark.parametrize("name, width", CASES, ids=[f"{n}-{w}" for n, w in CASES])
def test_every_slider_moves_and_redraws_the_librarys_numbers(opened, name, width):
    chapter, index = PAGES[name]
    check = check_drawn if name in CHARTS else check_line_drawn
    page, errors = opened(chapter, width)
    expected = sum(1 for c, _ in PAGES.values() if c == chapter)
    assert page.evaluate("() => window.rl4llmCharts.length") == expected
    state = drawn(page, index)
    check(name, state, "as opened")
    assert state["right"] <= state["column"] + 1, f"the chart is wider than the column at {width} px"
    every = chart_sliders(name)
    if width == max(INPUT_AT):                         # once per chart, on the page as opened (1280 px)
        check_every_slider_is_live_at_the_opening(page, index, every)
    for k, s in enumerate(every):
        visited = set()
        for how, state in moves(page, index, k, INPUT_AT[width]):
            check(name, state, f"{s.name}: {how}")
            visited.add(s.cast(state["signals"][s.name]))
        assert {s.cast(s.start), s.cast(s.stop)} <= visited and len(visited) >= 3, (s.name, visited)
    check_redraws(page, index, len(every), f"{name} at {width} px")
    assert not errors, errors


# ----------------------------------------------------------------------------- JupyterLab
LAB_CHAPTER = "01_distribution"


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """JupyterLab serving a copy of chapter 1 (its stored chart), as Binder opens it; the notebook's URL.
    No kernel is asked for: the chart must move before one has connected."""
    import subprocess
    import sys
    from pathlib import Path

    from test_jupyterlab import _free_port, stop_server

    chapter = Path(__file__).resolve().parents[1] / "book" / f"{LAB_CHAPTER}.ipynb"
    root, port = tmp_path_factory.mktemp("lab"), _free_port()
    (root / chapter.name).write_bytes(chapter.read_bytes())
    settings = {"port": port, "ip": "127.0.0.1", "ServerApp.root_dir": root, "IdentityProvider.token": "",
                "ServerApp.password": "", "LabApp.news_url": "",
                "LabApp.check_for_updates_class": "jupyterlab.NeverCheckForUpdate"}
    command = [sys.executable, "-m", "jupyterlab", "--no-browser", "--allow-root"]
    server = subprocess.Popen(command + [f"--{k}={v}" for k, v in settings.items()],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _answering(f"http://127.0.0.1:{port}/api")
        yield f"http://127.0.0.1:{port}/lab/tree/{chapter.name}"
    finally:
        stop_server(server)


def _answering(url: str, seconds: float = 120) -> None:
    """Return once ``url`` answers (a server starting up); fail after ``seconds``."""
    import time
    import urllib.request

    give_up = time.time() + seconds
    while True:
        try:
            return urllib.request.urlopen(url, timeout=1).close()
        except OSError:
            if time.time() > give_up:
                raise
            time.sleep(0.5)


#: Move the chart's slider in JupyterLab to ``value`` and time it until the chart's drawing changed.
LAB_MOVE_JS = """async (value) => {
  const out = document.querySelector('.jp-RenderedVegaCommon5');
  const input = out.querySelector('.vega-bind input[type=range]');
  const picture = () => { const c = out.querySelector('canvas'); return c ? c.toDataURL() : out.querySelector('svg').outerHTML; };
  const before = picture(), start = performance.now();
  input.value = value;
  input.dispatchEvent(new Event('input', {bubbles: true}));
  while (picture() === before && performance.now() - start < 2000) await new Promise(r => requestAnimationFrame(r));
  return {ms: performance.now() - start, changed: picture() !== before, shown: input.nextElementSibling.textContent};
}"""


def test_jupyterlab_draws_the_stored_chart_and_its_slider_moves_without_a_kernel(browser, lab):  # noqa: F811
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        page = context.new_page()
        page.goto(lab)
        page.wait_for_selector(".jp-RenderedVegaCommon5 .vega-bind input[type=range]", timeout=180_000)
        page.locator(".jp-RenderedVegaCommon5").first.scroll_into_view_if_needed()
        moves = [page.evaluate(LAB_MOVE_JS, v) for v in ("0.05", "20", "10", "2", "0.5", "1")]
    finally:
        context.close()
    assert all(m["changed"] for m in moves), moves
    assert [m["shown"] for m in moves] == ["0.05", "20", "10", "2", "0.5", "1"]
    median = statistics.median(m["ms"] for m in moves)
    print(f"JupyterLab, {LAB_CHAPTER}: redraw median {median:.1f} ms ({[round(m['ms'], 1) for m in moves]})")
    assert median < 200          # the time to the next drawn frame, not the redraw alone
