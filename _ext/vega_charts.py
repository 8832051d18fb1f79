"""The sliders' charts, live in the static book with no kernel and no network.

A chapter's slider figure is stored as a Vega-Lite 5 chart (``application/vnd.vegalite.v5+json``,
written by ``rl4llm.viz.charts``): the library's numbers on the sliders' whole grid, and the sliders.
This extension draws it in the built site:

- a myst-nb mime renderer (``VegaLiteRenderer``, registered under the ``myst_nb.mime_renderers``
  entry point in ``code/pyproject.toml``: myst-nb finds mime renderers only there) turns the output
  into a ``div.vega-chart`` holding the spec as JSON, and a hidden line that screen readers hear when
  it changes;
- vega, vega-lite and vega-embed from npm (``package.json`` pins them; ``npm ci`` installs them) are
  copied into the site as ``_vega/`` when the build finishes (as ``offline_assets`` does for MathJax;
  not into ``_static/``, which Jupyter Book links into every page), with ``vega_charts.js`` (below);
  only pages with a chart load them, deferred, and ``vega_charts.css`` (the sliders' size);
- ``vega_charts.js`` draws each chart (SVG) at the column's width (the stored spec keeps its fixed width,
  which JupyterLab draws; the site draws it with ``width: "container"``, so a chart fills a laptop's
  column and fits a phone's; a line of text too long for a narrow column widens the drawing, whose box
  then scrolls sideways and takes the keyboard's focus) and, at every move of a slider, sets the slider's
  ``aria-valuetext`` ("T = 1.25") and the chart's description (its title and every bar's
  description), which Vega-Lite has no option for. It keeps the time each move took to redraw, from
  the input event to the drawn chart, in ``window.rl4llmCharts`` (the browser tests and
  ``benchmarks/chart_redraw.py`` read it);
- the ``stored-chart`` directive shows a chapter's stored chart on another page (the intro shows chapter
  1's), drawn from the notebook's own output.
"""
from __future__ import annotations

import html
import json
import shutil
from pathlib import Path

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.util.docutils import SphinxDirective
from sphinx.errors import ExtensionError

MIME_TYPE = "application/vnd.vegalite.v5+json"
NODE_MODULES = Path(__file__).resolve().parents[1] / "node_modules"
#: What the pages load, in order: vega, vega-lite (compiles the spec to vega), vega-embed, the glue.
SCRIPTS = (("vega", "build/vega.min.js"), ("vega-lite", "build/vega-lite.min.js"),
           ("vega-embed", "build/vega-embed.min.js"))
TARGET = "_vega"
GLUE = "vega_charts.js"
STYLE = "vega_charts.css"

GLUE_JS = r"""(() => {
  // Draws every div.vega-chart of the page (rl4llm.viz.charts writes them) and keeps what a screen
  // reader hears in step with its sliders.
  const charts = window.rl4llmCharts = [];
  const text = (node) => (node ? node.textContent.trim() : "");
  const describe = (chart) => {
    const box = chart.box, view = box.querySelector(".vega-chart-view");
    box.querySelectorAll(".vega-bind").forEach((bind) => {
      const input = bind.querySelector("input[type=range]");
      if (input) input.setAttribute("aria-valuetext", `${text(bind.querySelector(".vega-bind-name"))} = ${input.value}`);
    });
    const lines = (el) => { const spans = el.querySelectorAll("tspan"); return spans.length ? Array.from(spans).map(text) : [text(el)]; };
    const title = Array.from(view.querySelectorAll(".role-title-text, .role-title-subtitle")).flatMap(lines).join(". ");
    const marks = Array.from(view.querySelectorAll(".role-mark [role=graphics-symbol][aria-label]"))
      .map((m) => m.getAttribute("aria-label"));
    const line = Array.from(view.querySelectorAll(".role-mark text")).map(text).filter((t) => t.includes(" = "));
    const description = [title].concat(line, marks).filter(Boolean).join(". ");
    widen(chart);
    box.querySelector(".vega-chart-description").textContent = description;
    const svg = view.querySelector("svg");
    if (svg) svg.setAttribute("aria-label", description);
    chart.description = description;
  };
  // A line of text over the plot longer than the column is wide (a readout of four series on a phone)
  // would be cut off at the drawing's edge: the drawing widens to hold it, and its box scrolls sideways
  // (and takes the keyboard's focus), as a wide formula's does. Vega sets the drawing's size again when
  // the column resizes, and the text changes with the sliders: checked after each redraw and resize.
  const widen = (chart) => {
    const view = chart.box.querySelector(".vega-chart-view"), svg = view.querySelector("svg");
    const root = svg && svg.querySelector(":scope > g");
    if (!root) return;
    const shift = /translate\(\s*([-\d.]+)/.exec(root.getAttribute("transform") || "");
    const bounds = root.getBBox(), right = Math.ceil((shift ? +shift[1] : 0) + bounds.x + bounds.width + 2);
    const width = +svg.getAttribute("width"), height = svg.getAttribute("height");
    if (right > width) {
      svg.setAttribute("width", right);
      svg.setAttribute("viewBox", `0 0 ${right} ${height}`);
    }
    if (view.scrollWidth > view.clientWidth + 1) view.tabIndex = 0;
    else view.removeAttribute("tabindex");
  };
  const draw = async (box) => {
    const spec = JSON.parse(box.querySelector("script.vega-chart-spec").textContent);
    // the chart takes the column's width (the stored spec keeps its fixed width for JupyterLab): the
    // plot, its axes, title and notes fit the view's box, which follows the column as it resizes
    const fitted = Object.assign({}, spec, {width: "container", autosize: {type: "fit-x", contains: "padding", resize: true}});
    const result = await vegaEmbed(box.querySelector(".vega-chart-view"), fitted, {renderer: "svg", actions: false});
    const chart = {box, spec, view: result.view, redraws: []};
    charts.push(chart);
    let started = null;
    // capture: the time starts before vega's own listener sets the signal
    box.addEventListener("input", () => { started = started ?? performance.now(); }, true);
    box.addEventListener("input", async () => {
      await chart.view.runAsync();
      describe(chart);
      if (started !== null) chart.redraws.push(performance.now() - started);
      started = null;
    });
    chart.view.addResizeListener(() => chart.view.runAfter(() => widen(chart)));
    describe(chart);
    box.dataset.drawn = "true";
  };
  const all = () => Promise.all(Array.from(document.querySelectorAll("div.vega-chart")).map(draw));
  window.rl4llmChartsReady = document.readyState === "loading"
    ? new Promise((resolve) => document.addEventListener("DOMContentLoaded", () => all().then(resolve)))
    : all();
})();
"""

#: The chart takes the column's width (up to 720 px, where a 220 px tall plot still reads as a chart); the
#: sliders: long enough to aim at one position of hundreds, tall enough to take a finger (32 px, 44 px on
#: a phone or a touch screen), their labels aligned, the value beside.
STYLE_CSS = """.vega-chart { margin: 0.5em 0 1em; max-width: 100%; }
.vega-chart .vega-chart-view, .vega-chart .vega-chart-view.vega-embed { display: block; width: 100%; max-width: 720px;
  overflow-x: auto; overflow-y: hidden; }
.vega-chart .vega-bindings { padding-left: 0.25em; }
.vega-chart .vega-bind label { display: flex; align-items: center; gap: 0.5em; margin: 0.15em 0; }
.vega-chart .vega-bind-name { min-width: 3.2em; font-weight: 600; }
.vega-chart .vega-bind input[type=range] { width: min(22em, 55vw); height: 32px; margin: 0; }
@media (max-width: 640px), (pointer: coarse) { .vega-chart .vega-bind input[type=range] { height: 44px; } }
.vega-chart .vega-bind input[type=range] + span { font-variant-numeric: tabular-nums; }
.vega-chart .vega-bind-radio { display: inline-flex; flex-wrap: wrap; align-items: center; margin-left: 0.5em; }
.vega-chart .vega-bind-radio label { display: inline; margin: 0 0.9em 0 0.25em; }
"""

_HIDDEN = ("position:absolute;width:1px;height:1px;margin:-1px;padding:0;overflow:hidden;"
           "clip:rect(0,0,0,0);white-space:nowrap;border:0")


class VegaLiteRenderer:
    """myst-nb mime renderer for Vega-Lite 5 outputs: a div with the spec, drawn by ``vega_charts.js``."""

    mime_priority_overrides = [(builder, MIME_TYPE, 1) for builder in ("html", "dirhtml", "singlehtml")]

    @staticmethod
    def handle_mime(renderer, data, inline: bool):
        if data.mime_type != MIME_TYPE:
            return None
        return [nodes.raw("", chart_markup(data.content), format="html")]


def chart_markup(content) -> str:
    """The ``div.vega-chart`` that ``vega_charts.js`` draws: the spec as JSON and the chart's description."""
    spec = content if isinstance(content, str) else json.dumps(content)
    spec = json.dumps(json.loads(spec), separators=(",", ":")).replace("</", "<\\/")
    description = html.escape(json.loads(spec).get("description", ""))
    return (f'<div class="vega-chart"><div class="vega-chart-view"></div>'
            f'<p class="vega-chart-description" aria-live="polite" style="{_HIDDEN}">{description}</p>'
            f'<script type="application/json" class="vega-chart-spec">{spec}</script></div>')


class StoredChart(SphinxDirective):
    """``{stored-chart} 01_distribution.ipynb``: a chapter's stored chart shown on another page (the
    intro), drawn from the notebook's own output, so there is one copy of its numbers. ``:chart:`` picks
    the notebook's n-th chart (from 0; default 0)."""

    required_arguments = 1
    option_spec = {"chart": directives.nonnegative_int}

    def run(self):
        path = (Path(self.env.doc2path(self.env.docname)).parent / self.arguments[0]).resolve()
        if not path.is_file():
            raise self.error(f"stored-chart: no notebook {self.arguments[0]} beside {self.env.docname}")
        self.env.note_dependency(str(path))
        specs = [output["data"][MIME_TYPE] for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]
                 for output in cell.get("outputs", []) if MIME_TYPE in output.get("data", {})]
        index = self.options.get("chart", 0)
        if index >= len(specs):
            raise self.error(f"stored-chart: {self.arguments[0]} stores {len(specs)} charts, not a chart {index}")
        return [nodes.raw("", chart_markup(specs[index]), format="html")]


def _scripts_on_chart_pages(app, pagename, templatename, context, doctree) -> None:
    if 'class="vega-chart"' not in context.get("body", ""):
        return
    for _, path in SCRIPTS:
        app.add_js_file(f"../{TARGET}/{Path(path).name}", loading_method="defer")
    app.add_js_file(f"../{TARGET}/{GLUE}", loading_method="defer")
    app.add_css_file(f"../{TARGET}/{STYLE}")


def _copy_scripts(app, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    target = Path(app.outdir) / TARGET
    target.mkdir(parents=True, exist_ok=True)
    for package, path in SCRIPTS:
        source = NODE_MODULES / package / path
        if not source.exists():
            raise ExtensionError(f"{package} is missing from {NODE_MODULES}: run `npm ci` in the repository root "
                                 f"(package.json pins it) before building the book")
        shutil.copy2(source, target / source.name)
    (target / GLUE).write_text(GLUE_JS, encoding="utf-8")
    (target / STYLE).write_text(STYLE_CSS, encoding="utf-8")


def setup(app):
    app.add_directive("stored-chart", StoredChart)
    app.connect("html-page-context", _scripts_on_chart_pages)
    app.connect("build-finished", _copy_scripts)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
