"""Charts bound to sliders that redraw in the reader's browser, with no kernel.

A slider figure becomes one Vega-Lite chart (through Altair 5.5, which emits
``application/vnd.vegalite.v5+json``): the library's numbers are computed when the cell runs, at
every point of a dense grid of the sliders' parameters, and stored in the chart; moving a slider only
picks the grid point to draw. The same stored output is live in the static book (``_ext/vega_charts.py``
serves vega, vega-lite and vega-embed with the site), in JupyterLab (which draws Vega-Lite 5 natively),
in Colab and in VS Code.

- ``Slider(name, label, start, stop, step, default)`` is one parameter on a uniform grid. The slider is
  bound to the parameter itself (its value, not an index, is what the reader sees beside it and in the
  chart's title). Every position of the slider is a point of the grid.
- ``grid(compute, sliders, columns)`` runs ``compute(**params)`` at every point of the sliders' grid
  (their cross product): one row per point, the parameters and the returned values (one per column),
  rounded to ``DECIMALS`` (``rounded``: a zero unsigned) so that the stored chart is the same on every CPU.
- ``bar_chart(compute, sliders, categories=..., ...)`` draws ``compute``'s values as one bar per category
  at the sliders' setting, each bar labelled with its value, the correct answer in the book's
  ``CORRECT_COLOR``; optional: a dashed outline of reference bars and a dotted reference level.
- ``line_chart(compute, sliders, x=..., series=..., ...)`` draws ``compute``'s values as one curve per
  series over a fixed ``x``, at the sliders' setting; optional: a ``marker`` slider (a rule at its
  value, each series' value there printed and described) and ``notes`` (numbers of each setting
  printed over the plot).

What follows the slider for a screen reader: each bar's description (its category and value); in the
static book ``_ext/vega_charts.py`` also sets the slider's ``aria-valuetext`` and rewrites the chart's
description (the chart's title and every bar's value) at each move. Each chapter's charts are built in its
own module (chapter 1's in ``rl4llm.viz.distribution``).
"""
from __future__ import annotations

import itertools
import json
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

import numpy as np

from .._checks import check_fields, checked, index_in_range
from .style import CORRECT_COLOR, LINE_COLORS, OTHER_COLOR

#: Decimals kept in a chart's data: the stored JSON must not change with the CPU's last bits.
DECIMALS = 6
#: Width of a chart's plot in CSS pixels where it is drawn at a fixed size (JupyterLab, Colab): it fits the
#: text column of a 390 px phone (about 340 px), axes included. The book's site draws it at the column's
#: width instead (``_ext/vega_charts.py``).
WIDTH = 300
HEIGHT = 220
#: The mime type the charts are stored under (Vega-Lite 5; JupyterLab 4 draws it with no extension).
MIME_TYPE = "application/vnd.vegalite.v5+json"


@dataclass(frozen=True)
class Declared:
    """A chapter's chart, declared beside its builder (a chapter's viz module lists its charts in
    ``CHARTS``; ``tests/test_charts.py`` finds them there and holds each to its stored output and its oracle).

    ``build()`` makes the chart the notebook stores; ``oracle(**setting)`` gives its numbers at a setting
    of ``sliders`` from the library alone, with no viz code: a bar chart's values, one per bar of
    ``categories``, or a line chart's ``(x, rows)`` (``categories`` None). ``marker`` is a line chart's
    marker slider; ``replaced`` the positions of the
    ipywidgets slider the chart replaced (None if none: it may not offer fewer); ``checked`` the settings
    the test recomputes (None: every one); ``decimals`` those the chart stores. The chart opens at its
    sliders' defaults.
    """
    name: str
    build: Callable
    oracle: Callable
    sliders: Sequence[Slider]
    categories: Sequence[str] | None = None
    marker: Slider | None = None
    replaced: Mapping[str, int] | None = None
    checked: Sequence[tuple] | None = None
    decimals: int = DECIMALS


def rounded(v, decimals: int = DECIMALS) -> float:
    """``v`` rounded to ``decimals``, a zero unsigned: a value that is 0 in theory (an unbiased estimator's
    bias) comes out as +-1e-17, on a side that depends on the CPU's kernels, and would be stored as -0."""
    return round(float(v), decimals) + 0.0


def vega_string(text: str) -> str:
    """``text`` as a string literal of a Vega expression: in single quotes, or, if it holds a quote or a
    backslash (a label such as "k3's bias"), as a JSON string, which Vega reads with its escapes."""
    return f"'{text}'" if not any(c in text for c in "'\"\\") else json.dumps(text)


def _positions(start: float, stop: float, step: float) -> np.ndarray:
    """start, start + step, ..., stop, rounded as the browser's range input reports them."""
    n = int(round((stop - start) / step))
    return np.round(start + step * np.arange(n + 1), 10)


def _identifier(x, name):
    """Rule: a Python identifier (it names the chart's parameter)."""
    if not isinstance(x, str) or not x.isidentifier():
        raise ValueError(f"{name} must be an identifier (it names the chart's parameter), got {x!r}")
    return x


def _uniform_grid(fields):
    """Relation: start, stop and step make a uniform grid (step > 0, stop > start, a whole number of steps)
    on which default is a position."""
    start, stop, step, default = (fields[k] for k in ("start", "stop", "step", "default"))
    if not (step > 0 and stop > start):
        raise ValueError(f"need step > 0 and stop > start, got start={start}, stop={stop}, step={step}")
    n = (stop - start) / step
    if abs(n - round(n)) > 1e-9:
        raise ValueError(f"stop - start must be a whole number of steps, got ({stop} - {start}) / {step} = {n}")
    if not np.any(np.isclose(_positions(start, stop, step), default, rtol=0, atol=1e-9 * step)):
        raise ValueError(f"default must be a position of the slider, got {default} on the grid "
                         f"{start}:{stop}:{step}")


@dataclass(frozen=True)
class Slider:
    """One slider: the parameter ``name`` (a keyword of the computing function, and the name of the
    chart's parameter), shown as ``label``, on the uniform grid ``start, start + step, ..., stop``; the
    chart opens at ``default`` (a grid point); ``fmt`` formats its value in the title."""

    name: str
    label: str
    start: float
    stop: float
    step: float
    default: float
    fmt: str = ".2f"

    def __post_init__(self):
        check_fields(self, {"name": _identifier}, _uniform_grid)

    @property
    def values(self) -> np.ndarray:
        """Every position of the slider, rounded as the browser's range input reports them."""
        return _positions(self.start, self.stop, self.step)

    @property
    def integer(self) -> bool:
        """Whether every position is a whole number (a discrete setting such as top-k)."""
        return float(self.start).is_integer() and float(self.step).is_integer()

    def cast(self, value):
        """A position as the computing function takes it: an int for an integer slider, else a float."""
        return int(round(value)) if self.integer else float(value)

    @property
    def positions(self) -> int:
        """How many settings the slider has."""
        return len(self.values)

    def param(self):
        """The chart's parameter, bound to a range input that shows its value."""
        import altair as alt
        return alt.param(name=self.name, value=self.default,
                         bind=alt.binding_range(min=self.start, max=self.stop, step=self.step, name=f"{self.label} "))

    def title_expr(self) -> str:
        """Vega expression for ``label = value`` (the value formatted with ``fmt``)."""
        return f"{vega_string(self.label + ' = ')} + format({self.name}, '{self.fmt}')"

    def filter_expr(self) -> str:
        """Vega expression: the row is at the slider's position (half a step either side)."""
        return f"abs(datum.{self.name} - {self.name}) < {self.step / 2!r}"


def grid(compute: Callable[..., Sequence[float]], sliders: Sequence[Slider], columns: Sequence[str]) -> list[dict]:
    """``compute(**params)`` at every point of the sliders' grid, one row per point: the parameters and
    the values (``len(columns)`` of them, named by ``columns``), rounded to ``DECIMALS``."""
    rows = []
    for point in itertools.product(*(s.values for s in sliders)):
        params = {s.name: s.cast(v) for s, v in zip(sliders, point)}
        values = np.asarray(compute(**params), dtype=float)
        if values.shape != (len(columns),):
            raise ValueError(f"compute must return {len(columns)} values (one per column), got shape {values.shape}")
        rows.append({**params, **{c: rounded(v) for c, v in zip(columns, values)}})
    return rows


def _number(v) -> str:
    """A number as short as it reads: 0.25, 1, 0 (at most ``DECIMALS`` decimals)."""
    if v is None:                                        # no value (a note stored once per setting)
        return ""
    return f"{v:.{DECIMALS}f}".rstrip("0").rstrip(".") if isinstance(v, float) else str(v)


def to_csv(rows: Sequence[Mapping]) -> str:
    """The grid as CSV (a header, one line per point): a third of the size of JSON objects, and a single
    string, which Altair stores without checking every number against the Vega-Lite schema."""
    names = list(rows[0])
    return "\n".join([",".join(names)] + [",".join(_number(row[n]) for n in names) for row in rows])


def from_csv(text: str) -> list[dict]:
    """The rows ``to_csv`` wrote, numbers as floats (NaN where there is none)."""
    header, *lines = text.split("\n")
    names = header.split(",")
    return [dict(zip(names, (float(v) if v else float("nan") for v in line.split(",")))) for line in lines]


def _correct_category(args):
    """Relation: ``correct`` indexes one of ``categories``."""
    args["correct"] = index_in_range(args["correct"], "correct", len(args["categories"]))


@checked(_correct_category)
def bar_chart(compute: Callable[..., Sequence[float]], sliders: Sequence[Slider], *, categories: Sequence[str],
              correct: int, xlabel: str, ylabel: str, headline: str, readout: str,
              outline: Sequence[float] | None = None, outline_label: str = "",
              level: float | None = None, level_label: str = "", ymax: float = 1.1, fmt: str = ".3f",
              item: str = "answer", marked: str = "correct", ymin: float = 0.0):
    """A bar chart of ``compute(**params)`` (one value per category) bound to ``sliders``.

    The title is the sliders' values (``T = 1.00``), with ``headline`` under it; over the bars,
    ``readout`` (e.g. ``P(5)``) with the correct category's value at that setting. A screen reader reads
    each bar as ``"<item> <category>: <value>"``, the ``correct`` one followed by ``(<marked>)``: the
    toy's answers by default; charts whose bars are methods pass ``item=""`` and their own ``marked``. ``outline``:
    reference bars drawn as a dashed outline (e.g. the model before a change); ``level``: a dotted
    horizontal line (e.g. the uniform distribution); the subtitle names each. ``ymin``: the foot of the
    y axis (0 unless values go negative; below 0, a solid rule marks zero).
    """
    import altair as alt

    categories = [str(c) for c in categories]
    rows = grid(compute, sliders, categories)
    right = categories[correct]
    at_setting = " && ".join(s.filter_expr() for s in sliders)
    settings = " + ', ' + ".join(s.title_expr() for s in sliders)
    x = alt.X("token:N", sort=categories, title=xlabel, axis=alt.Axis(labelAngle=0))
    y = alt.Y("value:Q", title=ylabel, scale=alt.Scale(domain=[ymin if ymin else 0, ymax]))
    # the fields are read as numbers; names in the CSV header may be digits (the toy's tokens)
    data = alt.Data(values=to_csv(rows), format=alt.DataFormat(type="csv", parse={c: "number" for c in rows[0]}))
    base = alt.Chart().transform_filter(at_setting).transform_fold(categories, as_=["token", "value"])
    colour = alt.condition(f"datum.token === '{right}'", alt.value(CORRECT_COLOR), alt.value(OTHER_COLOR))
    bars = base.mark_bar(stroke="black", strokeWidth=0.6).encode(
        x=x, y=y, color=colour,
        description=alt.Description("label:N"),
    ).transform_calculate(
        label=f"{vega_string(f'{item} ' if item else '')} + datum.token + ': ' + format(datum.value, '{fmt}')"
              f" + (datum.token === '{right}' ? {vega_string(f' ({marked})')} : '')")
    # the values printed on the bars, the outline and the level are read out with the bars, not apart
    values = base.mark_text(dy=-7, fontSize=12, aria=False).encode(x=x, y=y, text=alt.Text("value:Q", format=fmt))
    readline = base.transform_filter(f"datum.token === '{right}'").mark_text(
        align="left", x=0, y=-8, fontSize=13, fontWeight="bold", color=CORRECT_COLOR, aria=False
    ).encode(text=alt.Text("line:N")).transform_calculate(
        line=f"{vega_string(readout + ' = ')} + format(datum.value, '.4f')")
    layers = [bars, values, readline]
    if ymin < 0:
        layers.insert(0, alt.Chart(alt.Data(values=[{"value": 0}])).mark_rule(
            color="black", strokeWidth=0.8, aria=False).encode(y="value:Q"))
    notes = []
    if outline is not None:
        ref = [{"token": c, "value": rounded(v)} for c, v in zip(categories, outline)]
        layers.insert(0, alt.Chart(alt.Data(values=ref)).mark_bar(
            fillOpacity=0, stroke="black", strokeDash=[4, 3], strokeWidth=1.2, aria=False).encode(x=x, y=y))
        notes.append(f"dashed: {outline_label}")
    if level is not None:
        layers.append(alt.Chart(alt.Data(values=[{"value": rounded(level)}])).mark_rule(
            color="black", strokeDash=[2, 2], aria=False).encode(y="value:Q"))
        notes.append(f"dotted: {level_label}")
    chart = alt.layer(*layers, data=data).add_params(*(s.param() for s in sliders)).properties(
        width=WIDTH, height=HEIGHT,
        # the title is the sliders' values; the point and the legend of the outline and level under it
        title=alt.TitleParams(text=alt.ExprRef(settings), subtitle=[headline] + notes, anchor="start",
                              fontSize=14, subtitleFontSize=12, offset=22),
        description=f"{headline}. Bar chart of {ylabel} for each {xlabel}, with a slider for "
                    + ", ".join(s.label for s in sliders) + ".",
    ).configure_axis(labelFontSize=12, titleFontSize=12).configure_view(stroke=None)
    return chart


#: How each series of a line chart is drawn: a line (solid, dashed, dotted: its dash pattern) or points.
LINE_STYLES = {"solid": [1, 0], "dashed": [6, 3], "dotted": [2, 2], "points": None, "ring": None}


def _drawable_series(args):
    """Relation: one style (of LINE_STYLES) and one colour per series, error bars of named series, and a
    marker only on a fixed x, at points of it. Fills in the default styles (solid) and colours (the
    book's line colours)."""
    series, x, marker = [str(s) for s in args["series"]], args["x"], args["marker"]
    styles = args["styles"] = list(args["styles"] or ["solid"] * len(series))
    colors = args["colors"] = list(args["colors"] or LINE_COLORS[:len(series)])
    if len(styles) != len(series) or len(colors) != len(series) or not set(styles) <= set(LINE_STYLES):
        raise ValueError(f"need one colour and one style (of {list(LINE_STYLES)}) per series, got "
                         f"{len(colors)} colours and the styles {styles} for {len(series)} series")
    if not set(args["errors"] or {}) <= set(series):
        raise ValueError(f"errors must name series, got {list(args['errors'])} for {series}")
    if marker is not None and x is None:
        raise ValueError("a marker needs a fixed x")
    if marker is not None and not all(np.any(np.isclose(x, v, rtol=0, atol=1e-9)) for v in marker.values):
        raise ValueError(f"every position of the marker must be a point of x, got {marker}")


@checked(_drawable_series)
def line_chart(compute: Callable[..., Sequence[Sequence[float]]], sliders: Sequence[Slider], *,
               x: Sequence[float] | None, series: Sequence[str], xlabel: str, ylabel: str, headline: str,
               marker: Slider | None = None, notes: Callable[..., Mapping[str, float]] | None = None,
               notes_per_line: int = 2, readout_per_line: int | None = None, errors: Mapping[str, str] | None = None,
               colors: Sequence[str] | None = None, styles: Sequence[str] | None = None,
               log_x: bool = False, log_y: bool = False, ydomain: Sequence[float] | None = None,
               xdomain: Sequence[float] | None = None, fmt: str = ".4f", decimals: int = DECIMALS,
               readout: Sequence[str] | None = None):
    """A line chart of ``compute(**params)`` (one row of values over ``x`` per name of ``series``) bound
    to ``sliders``, the grid of ``compute``'s parameters. A NaN leaves a point out (a series defined on
    part of ``x`` only).

    ``x=None``: the points move with the setting; ``compute`` returns ``(x, rows)``. ``errors``: a
    series' name to what its error bars are (e.g. "± 2 standard errors"); ``compute`` returns one more
    row per entry, after the series' rows, the bars' half-widths. ``marker``: one more slider, whose
    positions are points of ``x`` and which ``compute`` does not take (the curves do not depend on where
    the reader looks): a dashed rule at its value, a point on each series there, and the series' values
    at it printed over the plot (``readout_per_line`` to a line; default all on one).
    ``notes(**params)``: numbers printed over the plot at each setting (name to value; whole numbers
    print as such), ``notes_per_line`` to a line. ``styles``: per series
    a key of ``LINE_STYLES``; ``colors``: per series (default: the book's line colours). ``decimals``:
    kept in the stored data (fewer for a large grid of noisy numbers). ``readout``: the series whose
    values at the marker are printed (default all; a series of single marked points has none there).
    """
    import altair as alt

    series, errors = [str(s) for s in series], dict(errors or {})
    keys = [f"s{i}" for i in range(len(series))] + [f"e{series.index(s)}" for s in errors]
    names = list(notes(**{s.name: s.cast(s.default) for s in sliders})) if notes else []

    def at(**params):
        """The rows of one setting: one per point of x, the series' values and the setting's notes."""
        out = compute(**params)
        xs, values = (np.asarray(x, dtype=float), out) if x is not None else out
        xs, values = np.asarray(xs, dtype=float), np.asarray(values, dtype=float)
        if xs.ndim != 1 or len(xs) < 2 or np.any(np.diff(xs) <= 0):
            raise ValueError(f"x must increase, with at least 2 points, got {xs}")
        if values.shape != (len(keys), len(xs)):
            raise ValueError(f"compute must return {len(keys)} rows of {len(xs)} values (a row per series and "
                             f"per error bar), got shape {values.shape}")
        extra = dict(notes(**params)) if notes else {}
        if list(extra) != names:
            raise ValueError(f"notes must name the same numbers at every setting, got {list(extra)} and {names}")
        # the notes once per setting, on its first point
        return [{**params, "x": xj, **dict(zip(keys, column)),
                 **{f"n{i}": extra[n] if j == 0 else None for i, n in enumerate(names)}}
                for j, (xj, column) in enumerate(zip(xs, values.T))]

    rows = [{k: rounded(v, decimals) if isinstance(v, (float, np.floating)) else v for k, v in row.items()}
            for point in itertools.product(*(s.values for s in sliders))
            for row in at(**{s.name: s.cast(v) for s, v in zip(sliders, point)})]
    whole = [all(float(r[f"n{i}"]).is_integer() for r in rows if r[f"n{i}"] is not None) for i in range(len(names))]
    every = list(sliders) + ([marker] if marker else [])
    at_setting = " && ".join(s.filter_expr() for s in sliders) or "true"
    data = alt.Data(values=to_csv(rows), format=alt.DataFormat(type="csv", parse={c: "number" for c in rows[0]}))
    base = alt.Chart().transform_filter(at_setting)
    label = "{" + ", ".join(f"{k}: {json.dumps(s)}" for k, s in zip(keys, series)) + "}[datum.key]"
    folded = (base.transform_fold(keys[:len(series)], as_=["key", "value"]).transform_calculate(series=label)
              .transform_filter("isValid(datum.value) && isFinite(datum.value)"))
    first, last = (float(x[0]), float(x[-1])) if x is not None else (min(r["x"] for r in rows), max(r["x"] for r in rows))
    xs = alt.X("x:Q", title=xlabel, axis=alt.Axis(tickCount=6), scale=alt.Scale(
        type="log" if log_x else "linear", nice=False, **({"domain": list(xdomain or [first, last])} if x is not None
                                                          or xdomain else {})))
    ys = alt.Y("value:Q", title=ylabel, scale=alt.Scale(type="log" if log_y else "linear", clamp=True,
                                                        **({"domain": list(ydomain)} if ydomain else {})))
    colour = alt.Color("series:N", scale=alt.Scale(domain=series, range=colors),
                       legend=alt.Legend(title=None, orient="bottom", direction="vertical", labelLimit=WIDTH))
    lined = [(s, st) for s, st in zip(series, styles) if LINE_STYLES[st] is not None]
    dotted = [s for s, st in zip(series, styles) if st == "points"]
    ringed = [s for s, st in zip(series, styles) if st == "ring"]      # a larger open circle: seen around a dot
    layers = []
    if lined:
        layers.append(folded.transform_filter(alt.FieldOneOfPredicate(field="series", oneOf=[s for s, _ in lined]))
                      .mark_line(strokeWidth=2, aria=False).encode(
                          x=xs, y=ys, color=colour, strokeDash=alt.StrokeDash("series:N", legend=None, scale=alt.Scale(
                              domain=[s for s, _ in lined], range=[LINE_STYLES[st] for _, st in lined]))))
    if dotted:
        layers.append(folded.transform_filter(alt.FieldOneOfPredicate(field="series", oneOf=dotted))
                      .mark_point(filled=True, size=30, aria=False).encode(x=xs, y=ys, color=colour))
    if ringed:
        layers.append(folded.transform_filter(alt.FieldOneOfPredicate(field="series", oneOf=ringed))
                      .mark_point(filled=False, size=130, strokeWidth=2.5, aria=False).encode(x=xs, y=ys, color=colour))
    for name, what in errors.items():
        i = series.index(name)
        layers.append(base.transform_filter(f"isValid(datum.s{i}) && isFinite(datum.s{i})").transform_calculate(
            low=f"datum.s{i} - datum.e{i}", high=f"datum.s{i} + datum.e{i}").mark_rule(
            color=colors[i], strokeWidth=1.5, aria=False).encode(x=xs, y=alt.Y("low:Q", title=ylabel), y2="high:Q"))
    lines = []                                      # text over the plot, each a Vega expression
    if marker is not None:
        near = f"abs(datum.x - {marker.name}) < {float(np.min(np.diff(x))) / 2!r}"
        layers.append(alt.Chart(alt.Data(values=[{}])).mark_rule(color="black", strokeDash=[3, 3], aria=False)
                      .encode(x=alt.X("m:Q", scale=alt.Scale(type="log" if log_x else "linear")))
                      .transform_calculate(m=marker.name))
        layers.append(folded.transform_filter(near).mark_point(filled=True, size=60, stroke="black", strokeWidth=0.8)
                      .encode(x=xs, y=ys, description=alt.Description("label:N"), color=alt.Color(
                          "series:N", scale=alt.Scale(domain=series, range=colors), legend=None))
                      .transform_calculate(label=f"datum.series + {vega_string(f' at {marker.label} = ')} + "
                                                 f"format({marker.name}, '{marker.fmt}') + ': ' + "
                                                 f"format(datum.value, '{fmt}')"))
        values = [f"{json.dumps(s + ' = ')} + format(datum.{k}, '{fmt}')" for k, s in zip(keys, series)
                  if readout is None or s in readout]
        step = readout_per_line or len(values)
        lines += [(near, " + ', ' + ".join(values[i:i + step])) for i in range(0, len(values), step)]
    first_row = f"isValid(datum.n0)" if names else "true"
    for start in range(0, len(names), notes_per_line):
        lines.append((first_row, " + ', ' + ".join(
            f"{json.dumps(names[i] + ' = ')} + format(datum.n{i}, '{'d' if whole[i] else fmt}')"
            for i in range(start, min(start + notes_per_line, len(names))))))
    for row, (where, text) in enumerate(lines):
        layers.append(base.transform_filter(where).transform_calculate(line=text).mark_text(
            align="left", x=0, y=-8 - 16 * (len(lines) - 1 - row), fontSize=12, fontWeight="bold", aria=False)
            .encode(text=alt.Text("line:N")))
    settings = " + ', ' + ".join(s.title_expr() for s in every)
    extra = [f"bars: {what}" for what in errors.values()]
    return alt.layer(*layers, data=data).add_params(*(s.param() for s in every)).properties(
        width=WIDTH, height=HEIGHT,
        title=alt.TitleParams(text=alt.ExprRef(settings), subtitle=[headline] + extra, anchor="start", fontSize=14,
                              subtitleFontSize=12, offset=6 + 16 * len(lines)),
        description=f"{headline}. Line chart of {ylabel} against {xlabel} ({', '.join(series)}), with a slider for "
                    + ", ".join(s.label for s in every) + ".",
    ).configure_axis(labelFontSize=12, titleFontSize=12).configure_legend(labelFontSize=12).configure_view(stroke=None)


def chart_rows(chart) -> list[dict]:
    """The grid a chart stores: one row per point of its sliders' grid, as numbers."""
    spec = chart.to_dict() if hasattr(chart, "to_dict") else chart
    return from_csv(spec["data"]["values"])


def chart_sliders(chart) -> list[dict]:
    """The sliders of a chart, as stored: ``name``, ``value`` (the default) and ``bind``."""
    spec = chart.to_dict() if hasattr(chart, "to_dict") else chart
    return [p for p in spec.get("params", []) if "bind" in p]


def enable() -> None:
    """Charts are stored as Vega-Lite 5 (``MIME_TYPE``), not as HTML that loads scripts from a CDN.

    Altair's default renderer writes HTML that fetches vega-embed from a CDN; the "mimetype" renderer
    stores the spec, which JupyterLab draws natively and the book draws with the scripts it serves.
    """
    import altair as alt
    alt.renderers.enable("mimetype")
    alt.data_transformers.disable_max_rows()


def describe(sliders: Mapping[str, Slider] | Sequence[Slider]) -> str:
    """One line per slider: its label, range, step and number of positions (for the text)."""
    items = sliders.values() if isinstance(sliders, Mapping) else sliders
    return "\n".join(f"{s.label}: {s.start:g} to {s.stop:g} in steps of {s.step:g} ({s.positions} positions, "
                     f"opens at {s.default:g})" for s in items)
