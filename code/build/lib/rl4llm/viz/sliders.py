"""Sliders: a live ipywidgets control and its kernel-free twin over the same drawing function.

A chapter writes one pure function in the library that computes the numbers, and one ``draw(fig,
**params)`` that plots them on a given figure. Then

- ``live(draw, sliders)`` gives the live control (needs a running kernel: Jupyter, Binder, Colab);
- ``twin(draw, frames)`` gives a self-contained JavaScript animation over the slider's range
  (``FuncAnimation.to_jshtml``), which plays in the static online book with no kernel.

Both keep one figure and call ``draw`` on it again for every setting: the book's draw functions then
update their artists in place (``rl4llm.viz.inplace``) instead of building a new figure.
"""
from __future__ import annotations

import base64
import io
import re
from html import escape
from typing import Callable, Iterable, Mapping, Sequence

import ipywidgets as widgets
import matplotlib.pyplot as plt
from IPython.display import HTML
from matplotlib.animation import FuncAnimation
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from .inplace import clear_for_redraw

Draw = Callable[..., None]


def live(draw: Draw, sliders: Mapping[str, widgets.ValueWidget], figsize=None) -> widgets.VBox:
    """A live figure: the sliders over an image of ``draw(fig, **values)``, redrawn on one figure
    (updated in place) at every change of a slider and shown as a PNG of the figure's size and dpi.

    In a kernel, a draw that fails shows its traceback under the image until the next move.
    """
    fig = Figure(figsize=figsize)       # not pyplot's: the inline backend would show it once more
    FigureCanvasAgg(fig)
    image, errors = widgets.Image(format="png"), widgets.Output()
    failed = False

    def redraw(change=None):
        nonlocal failed
        if failed:                          # the last move's traceback goes
            errors.clear_output()
        failed = True
        with errors:                        # in a kernel, catches and shows what fails
            clear_for_redraw(fig)
            draw(fig, **{name: slider.value for name, slider in sliders.items()})
            image.value = _figure_png(fig)
            failed = False

    for slider in sliders.values():
        slider.observe(redraw, names="value")
    redraw()
    return widgets.VBox([widgets.HBox(list(sliders.values())), image, errors])


def _figure_png(fig) -> bytes:
    """The figure drawn by Agg as a PNG, at its own size and dpi (no cropping, so the image keeps its
    size from one slider move to the next)."""
    out = io.BytesIO()
    fig.canvas.print_png(out)
    return out.getvalue()


def sweep(name: str, values: Iterable, **fixed) -> list[dict]:
    """Frames for ``twin``: one parameter swept over ``values``, the others held at ``fixed``."""
    return [{**fixed, name: v} for v in values]


def twin(draw: Draw, frames: Sequence[Mapping], figsize=None, interval_ms: int = 700,
         colors: int | None = 64) -> HTML:
    """The kernel-free twin of a slider: an embedded animation of ``draw`` over ``frames``.

    Every frame is stored as an indexed-colour PNG of at most ``colors`` colours (None: as
    matplotlib writes it). A plot needs few colours, but anti-aliased PNGs carry thousands of
    shades, so this shrinks each animation about fourfold and keeps pages light.
    """
    if len(frames) < 1:
        raise ValueError(f"frames must hold at least 1 parameter set, got {len(frames)}")
    if colors is not None and (isinstance(colors, bool) or not isinstance(colors, int) or not 2 <= colors <= 256):
        raise ValueError(f"colors must be an integer in [2, 256] or None, got {colors!r}")
    fig = plt.figure(figsize=figsize)

    def update(i):
        clear_for_redraw(fig)
        draw(fig, **frames[i])

    animation = FuncAnimation(fig, update, frames=len(frames), interval=interval_ms)
    html = animation.to_jshtml(default_mode="loop")
    update(0)
    title = _figure_title(fig)
    plt.close(fig)
    html = _accessible(html, frames, title)
    return HTML(_FRAME.sub(lambda m: _indexed_png(m, colors), html) if colors else html)


_FRAME = re.compile(r'data:image/png;base64,([A-Za-z0-9+/=\\\n]+)"')


def _indexed_png(match: re.Match, colors: int) -> str:
    """One embedded frame re-encoded as a PNG of at most ``colors`` colours (no dithering)."""
    from PIL import Image

    raw = base64.b64decode(match.group(1).replace("\\\n", ""))
    image = Image.open(io.BytesIO(raw)).convert("RGB")
    indexed = image.quantize(colors, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
    out = io.BytesIO()
    indexed.save(out, format="PNG", optimize=True)
    return f'data:image/png;base64,{base64.b64encode(out.getvalue()).decode("ascii")}"'


def _figure_title(fig) -> str:
    """The figure's title (suptitle, else the first axes' title): what the figure says."""
    if fig._suptitle is not None and fig._suptitle.get_text():
        return fig._suptitle.get_text()
    return next((ax.get_title() for ax in fig.axes if ax.get_title()), "")


def _describe(frames: Sequence[Mapping]) -> tuple[str, str]:
    """(names of the parameters that change across frames, their first and last values)."""
    moving = [k for k in frames[0] if any(f[k] != frames[0][k] for f in frames)] or list(frames[0])
    names = ", ".join(moving)
    ends = [", ".join(f"{k} = {f[k]:.3g}" if isinstance(f[k], float) else f"{k} = {f[k]}" for k in moving)
            for f in (frames[0], frames[-1])]
    return names, f"from {ends[0]} to {ends[1]}"


def _accessible(html: str, frames: Sequence[Mapping], title: str) -> str:
    """Alt text on the animation's image and a label on its frame slider (screen readers, axe); no
    icon stylesheet from a CDN (offline readers; the book's theme already has the icons)."""
    names, span = _describe(frames)
    alt = f"Animated figure, {len(frames)} frames as {names} moves {span}. {title}".strip()
    label = f"Frame: choose {names} ({len(frames)} settings)"
    html = re.sub(r'<link rel="stylesheet"[^>]*font-awesome[^>]*>', "", html)   # the book's theme has the icons
    html = re.sub(r'<img id="(_anim_img\w+)">', lambda m: f'<img id="{m.group(1)}" alt="{escape(alt)}">', html)
    return re.sub(r'<input id="(_anim_slider\w+)" type="range"',
                  lambda m: f'<input id="{m.group(1)}" type="range" aria-label="{escape(label)}"', html)
