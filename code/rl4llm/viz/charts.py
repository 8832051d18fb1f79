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
  rounded to ``DECIMALS`` so that the stored chart is the same on every CPU.
- ``bar_chart(compute, sliders, categories=..., ...)`` draws ``compute``'s values as one bar per category
  at the sliders' setting, each bar labelled with its value, the correct answer in the book's
  ``CORRECT_COLOR``; optional: a dashed outline of reference bars and a dotted reference level.

What follows the slider for a screen reader: each bar's description (its category and value); in the
static book ``_ext/vega_charts.py`` also sets the slider's ``aria-valuetext`` and rewrites the chart's
description (the chart's title and every bar's value) at each move. The slider figures of chapters 1, 2
and 4 are built in ``rl4llm.viz.part1``.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

import numpy as np

from .style import CORRECT_COLOR, OTHER_COLOR

#: Decimals kept in a chart's data: the stored JSON must not change with the CPU's last bits.
DECIMALS = 6
#: Width of a chart in CSS pixels: it fits the text column of a 390 px phone (about 340 px), axes included.
WIDTH = 300
HEIGHT = 220
#: The mime type the charts are stored under (Vega-Lite 5; JupyterLab 4 draws it with no extension).
MIME_TYPE = "application/vnd.vegalite.v5+json"


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
        if not self.name.isidentifier():
            raise ValueError(f"name must be an identifier (it names the chart's parameter), got {self.name!r}")
        if not (self.step > 0 and self.stop > self.start):
            raise ValueError(f"need step > 0 and stop > start, got start={self.start}, stop={self.stop}, "
                             f"step={self.step}")
        n = (self.stop - self.start) / self.step
        if abs(n - round(n)) > 1e-9:
            raise ValueError(f"stop - start must be a whole number of steps, got ({self.stop} - {self.start}) / "
                             f"{self.step} = {n}")
        if not np.any(np.isclose(self.values, self.default, rtol=0, atol=1e-9 * self.step)):
            raise ValueError(f"default must be a position of the slider, got {self.default} on {self}")

    @property
    def values(self) -> np.ndarray:
        """Every position of the slider, rounded as the browser's range input reports them."""
        n = int(round((self.stop - self.start) / self.step))
        return np.round(self.start + self.step * np.arange(n + 1), 10)

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
        return f"'{self.label} = ' + format({self.name}, '{self.fmt}')"

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
        rows.append({**params, **{c: round(float(v), DECIMALS) for c, v in zip(columns, values)}})
    return rows


def _number(v) -> str:
    """A number as short as it reads: 0.25, 1, 0 (at most ``DECIMALS`` decimals)."""
    return f"{v:.{DECIMALS}f}".rstrip("0").rstrip(".") if isinstance(v, float) else str(v)


def to_csv(rows: Sequence[Mapping]) -> str:
    """The grid as CSV (a header, one line per point): a third of the size of JSON objects, and a single
    string, which Altair stores without checking every number against the Vega-Lite schema."""
    names = list(rows[0])
    return "\n".join([",".join(names)] + [",".join(_number(row[n]) for n in names) for row in rows])


def from_csv(text: str) -> list[dict]:
    """The rows ``to_csv`` wrote, numbers as floats."""
    header, *lines = text.split("\n")
    names = header.split(",")
    return [dict(zip(names, map(float, line.split(",")))) for line in lines]


def bar_chart(compute: Callable[..., Sequence[float]], sliders: Sequence[Slider], *, categories: Sequence[str],
              correct: int, xlabel: str, ylabel: str, headline: str, readout: str,
              outline: Sequence[float] | None = None, outline_label: str = "",
              level: float | None = None, level_label: str = "", ymax: float = 1.1, fmt: str = ".3f"):
    """A bar chart of ``compute(**params)`` (one value per category) bound to ``sliders``.

    The title is the sliders' values (``T = 1.00``), with ``headline`` under it; over the bars,
    ``readout`` (e.g. ``P(5)``) with the correct category's value at that setting. ``outline``:
    reference bars drawn as a dashed outline (e.g. the model before a change); ``level``: a dotted
    horizontal line (e.g. the uniform distribution); the subtitle names each.
    """
    import altair as alt

    categories = [str(c) for c in categories]
    if not 0 <= correct < len(categories):
        raise ValueError(f"correct must index categories (0..{len(categories) - 1}), got {correct}")
    rows = grid(compute, sliders, categories)
    right = categories[correct]
    at_setting = " && ".join(s.filter_expr() for s in sliders)
    settings = " + ', ' + ".join(s.title_expr() for s in sliders)
    x = alt.X("token:N", sort=categories, title=xlabel, axis=alt.Axis(labelAngle=0))
    y = alt.Y("value:Q", title=ylabel, scale=alt.Scale(domain=[0, ymax]))
    # the fields are read as numbers; names in the CSV header may be digits (the toy's tokens)
    data = alt.Data(values=to_csv(rows), format=alt.DataFormat(type="csv", parse={c: "number" for c in rows[0]}))
    base = alt.Chart().transform_filter(at_setting).transform_fold(categories, as_=["token", "value"])
    colour = alt.condition(f"datum.token === '{right}'", alt.value(CORRECT_COLOR), alt.value(OTHER_COLOR))
    bars = base.mark_bar(stroke="black", strokeWidth=0.6).encode(
        x=x, y=y, color=colour,
        description=alt.Description("label:N"),
    ).transform_calculate(
        label=f"'answer ' + datum.token + ': ' + format(datum.value, '{fmt}')"
              f" + (datum.token === '{right}' ? ' (correct)' : '')")
    # the values printed on the bars, the outline and the level are read out with the bars, not apart
    values = base.mark_text(dy=-7, fontSize=12, aria=False).encode(x=x, y=y, text=alt.Text("value:Q", format=fmt))
    readline = base.transform_filter(f"datum.token === '{right}'").mark_text(
        align="left", x=0, y=-8, fontSize=13, fontWeight="bold", color=CORRECT_COLOR, aria=False
    ).encode(text=alt.Text("line:N")).transform_calculate(
        line=f"'{readout} = ' + format(datum.value, '.4f')")
    layers = [bars, values, readline]
    notes = []
    if outline is not None:
        ref = [{"token": c, "value": round(float(v), DECIMALS)} for c, v in zip(categories, outline)]
        layers.insert(0, alt.Chart(alt.Data(values=ref)).mark_bar(
            fillOpacity=0, stroke="black", strokeDash=[4, 3], strokeWidth=1.2, aria=False).encode(x=x, y=y))
        notes.append(f"dashed: {outline_label}")
    if level is not None:
        layers.append(alt.Chart(alt.Data(values=[{"value": round(float(level), DECIMALS)}])).mark_rule(
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
