"""Sliders: a live ipywidgets control and its kernel-free twin over the same drawing function.

A chapter writes one pure function in the library that computes the numbers, and one ``draw(fig,
**params)`` that plots them on a given figure. Then

- ``live(draw, sliders)`` gives the live control (needs a running kernel: Jupyter, Binder, Colab);
- ``twin(draw, frames)`` gives a self-contained JavaScript animation over the slider's range
  (``FuncAnimation.to_jshtml``), which plays in the static online book with no kernel.
"""
from __future__ import annotations

from typing import Callable, Iterable, Mapping, Sequence

import ipywidgets as widgets
import matplotlib.pyplot as plt
from IPython.display import HTML
from matplotlib.animation import FuncAnimation

Draw = Callable[..., None]


def live(draw: Draw, sliders: Mapping[str, widgets.ValueWidget], figsize=None) -> widgets.VBox:
    """A live figure: every change of a slider redraws ``draw(fig, **values)`` on a new figure."""

    def render(**values):
        fig = plt.figure(figsize=figsize)
        draw(fig, **values)
        plt.show()

    out = widgets.interactive_output(render, dict(sliders))
    return widgets.VBox([widgets.HBox(list(sliders.values())), out])


def sweep(name: str, values: Iterable, **fixed) -> list[dict]:
    """Frames for ``twin``: one parameter swept over ``values``, the others held at ``fixed``."""
    return [{**fixed, name: v} for v in values]


def twin(draw: Draw, frames: Sequence[Mapping], figsize=None, interval_ms: int = 700) -> HTML:
    """The kernel-free twin of a slider: an embedded animation of ``draw`` over ``frames``."""
    if len(frames) < 1:
        raise ValueError(f"frames must hold at least 1 parameter set, got {len(frames)}")
    fig = plt.figure(figsize=figsize)

    def update(i):
        fig.clear()
        draw(fig, **frames[i])

    animation = FuncAnimation(fig, update, frames=len(frames), interval=interval_ms)
    html = animation.to_jshtml(default_mode="loop")
    plt.close(fig)
    return HTML(html)
