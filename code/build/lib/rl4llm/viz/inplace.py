"""Figures that a slider updates in place instead of drawing anew.

Each slider's ``draw_*(fig, **params)`` builds its artists (axes, lines, bars, legends) once per
figure with ``kept`` and then sets everything that depends on the parameters: line data, bar heights,
texts, titles. Called again on the same figure it finds the artists it built and only sets them, which
is what lets a live slider redraw in tens of milliseconds. A fresh figure goes through the same setting
code, and ``relayout`` lays both out from the same starting point, so a figure updated in place looks
exactly like one drawn fresh at the same parameters (``tests/test_sliders.py`` compares the pixels).
"""
from __future__ import annotations

from typing import Callable

import matplotlib as mpl

_SUBPLOT_PARAMS = ("left", "right", "bottom", "top", "wspace", "hspace")


def kept(fig, build: Callable, **fixed):
    """What ``build(fig, **fixed)`` returned when it built its artists on ``fig``: built now if ``fig``
    has none of them yet (a figure that kept another drawing's artists is cleared first).

    ``fixed`` holds the parameters the built artists depend on (never a slider's): other values build
    the figure anew.
    """
    stored = getattr(fig, "_rl4llm_artists", None)
    if stored is not None and stored[:3] == (build, fixed, fig.axes):
        return stored[3]
    if stored is not None:
        fig.clear()
    artists = build(fig, **fixed)
    fig._rl4llm_artists = (build, fixed, list(fig.axes), artists)
    return artists


def clear_for_redraw(fig) -> None:
    """Ready ``fig`` for the next call of a draw function: cleared, unless the draw keeps its artists on
    it (``kept``), which it then updates in place."""
    if getattr(fig, "_rl4llm_artists", None) is None:
        fig.clear()


def bars_in_place(ax, bars, x, heights, width: float, **style):
    """Bars of ``heights`` centred on ``x``: ``bars`` (a BarContainer, or None) moved and resized in place
    when they are as many, else removed and drawn anew with ``style`` (a slider that sets their number)."""
    if bars is not None and len(bars) == len(x):
        for bar, centre, height in zip(bars, x, heights):
            bar.set_bounds(centre - width / 2, 0.0, width, height)
        return bars
    if bars is not None:
        bars.remove()
    return ax.bar(x, heights, width=width, **style)


def relayout(fig) -> None:
    """Limits and layout for the data just set: every axes with automatic limits rescaled to its current
    artists, then ``tight_layout`` from matplotlib's default subplot positions, the ones a new figure
    starts from."""
    for ax in fig.axes:
        if ax.get_autoscalex_on() or ax.get_autoscaley_on():
            ax.relim()
            ax.autoscale_view()
    fig.subplots_adjust(**{name: mpl.rcParams[f"figure.subplot.{name}"] for name in _SUBPLOT_PARAMS})
    fig.tight_layout()
