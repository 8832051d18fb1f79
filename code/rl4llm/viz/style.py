"""One plot style for the whole book: a colour-blind-safe palette and readable sizes.

The palette is Okabe & Ito's (2008), distinguishable under the common colour-vision deficiencies.
The correct answer is always drawn in ``CORRECT_COLOR``, in every chapter.
"""
from __future__ import annotations

import io

import matplotlib as mpl
from cycler import cycler

#: Okabe-Ito colours, by name.
PALETTE = {
    "blue": "#0072B2",
    "orange": "#E69F00",
    "green": "#009E73",
    "vermillion": "#D55E00",
    "sky": "#56B4E9",
    "purple": "#CC79A7",
    "yellow": "#F0E442",
    "black": "#000000",
    "grey": "#999999",
}
#: The correct answer, everywhere.
CORRECT_COLOR = PALETTE["green"]
#: Every other answer.
OTHER_COLOR = PALETTE["grey"]
#: Order of the line colours (the correct-answer green is kept out of it).
LINE_COLORS = [PALETTE[c] for c in ("blue", "orange", "vermillion", "sky", "purple", "black")]


def apply_style() -> None:
    """Set the book's matplotlib defaults (sizes, grid, colour cycle)."""
    mpl.rcParams.update({
        "figure.figsize": (6.4, 3.6),
        "figure.dpi": 90,
        "savefig.dpi": 90,
        "font.size": 11,
        "axes.titlesize": 12,
        "axes.labelsize": 11,
        "axes.grid": True,
        "grid.alpha": 0.3,
        "axes.spines.top": False,
        "axes.spines.right": False,
        "axes.prop_cycle": cycler(color=LINE_COLORS),
        "legend.frameon": False,
        "animation.embed_limit": 8.0,
    })


def token_colors(vocab, correct: int) -> list[str]:
    """One colour per token: ``CORRECT_COLOR`` for the correct answer, ``OTHER_COLOR`` otherwise."""
    return [CORRECT_COLOR if i == correct else OTHER_COLOR for i in range(len(vocab))]


def relayout(fig) -> None:
    """Limits and layout for the data a draw function set after building its artists: every axes with
    automatic limits rescaled to its artists, then ``tight_layout``."""
    for ax in fig.axes:
        if ax.get_autoscalex_on() or ax.get_autoscaley_on():
            ax.relim()
            ax.autoscale_view()
    fig.tight_layout()


def palette_png(fig) -> bytes:
    """The figure as a PNG of at most 256 colours (no dithering), on white.

    A line chart's antialiased edges make a full-colour PNG heavy (about 100 kB for one of chapter 19's
    run charts); its palette copy looks the same and weighs about 40% as much. The pages' weight budget is
    checked in the browser tests."""
    from PIL import Image

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", bbox_inches="tight", facecolor="white")
    image = Image.open(buffer)
    dpi = image.info["dpi"]                      # matplotlib's, kept: the browser tests read labels' size from it
    out = io.BytesIO()
    image.convert("RGB").quantize(256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE).save(
        out, format="png", optimize=True, dpi=dpi)
    return out.getvalue()


def show_compact(fig) -> None:
    """Show ``fig`` in a notebook as ``palette_png`` draws it, and close it (a page-weight saving for
    charts of many noisy lines, chapter 19's run charts)."""
    import matplotlib.pyplot as plt
    from IPython.display import Image, display

    display(Image(data=palette_png(fig), format="png"))
    plt.close(fig)
