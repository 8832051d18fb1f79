"""Sliders: the kernel-free twin (an animation that works offline and with a screen reader), the live
control, and the draw functions behind them, which update a figure in place to exactly what a fresh
figure shows."""
import io
import json
import re
from pathlib import Path

import ipywidgets as widgets
import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")

from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from PIL import Image  # noqa: E402

from rl4llm.viz import apply_style, live  # noqa: E402
from rl4llm.viz.inplace import kept  # noqa: E402
from rl4llm.viz.part1 import (draw_decoding, draw_distribution, draw_sft_step, draw_training_curves,  # noqa: E402
                              draw_two_spellings)
from rl4llm.viz.part2 import draw_baseline, draw_jhat, draw_learning, draw_seeds, draw_steps  # noqa: E402
from rl4llm.viz.part3 import draw_clip, draw_drift, draw_inner_steps  # noqa: E402
from rl4llm.viz.part3_grpo import draw_grpo_run  # noqa: E402
from rl4llm.viz.sliders import sweep, twin  # noqa: E402


def draw(fig, T, k):
    ax = fig.subplots()
    ax.plot([0, T * k])
    fig.suptitle("Temperature flattens the distribution")


def test_twin_has_alt_text_a_labelled_slider_and_no_cdn_stylesheet():
    html = twin(draw, sweep("T", [0.5, 1.0, 2.0], k=3)).data
    alt = re.search(r'<img id="_anim_img\w+" alt="([^"]+)">', html).group(1)
    assert alt == "Animated figure, 3 frames as T moves from T = 0.5 to T = 2. Temperature flattens the distribution"
    assert re.search(r'<input id="_anim_slider\w+" type="range" aria-label="Frame: choose T \(3 settings\)"', html)
    assert "maxcdn" not in html and "font-awesome" not in html
    assert html.count("data:image/png;base64") == 3


def test_twin_needs_a_frame():
    with pytest.raises(ValueError, match="frames"):
        twin(draw, [])


def test_twin_keeps_every_frame_with_few_colours():
    import base64
    import io
    import re

    import matplotlib
    matplotlib.use("Agg")
    from PIL import Image

    from rl4llm.viz import sweep, twin
    from rl4llm.viz.part3_grpo import draw_grpo_run
    frames = sweep("G", [2, 8, 32])
    full = twin(draw_grpo_run, frames, figsize=(5, 2), colors=None).data
    small = twin(draw_grpo_run, frames, figsize=(5, 2), colors=16).data
    images = re.findall(r'data:image/png;base64,([^"]+)"', small)
    assert len(images) == len(frames) == full.count("data:image/png")
    for encoded in images:
        image = Image.open(io.BytesIO(base64.b64decode(encoded.replace("\\\n", ""))))
        assert image.mode == "P" and len(image.getcolors()) <= 16
        assert image.size == Image.open(io.BytesIO(base64.b64decode(
            re.search(r'data:image/png;base64,([^"]+)"', full).group(1).replace("\\\n", "")))).size
    assert len(small) < 0.6 * len(full)
    assert 'alt="Animated figure, 3 frames as G moves' in small and "aria-label" in small
    with pytest.raises(ValueError, match="colors"):
        twin(draw_grpo_run, frames, colors=1)


# ----------------------------------------------------------------------------- in-place redraws
BOOK = Path(__file__).resolve().parents[1] / "book"

#: Every draw function behind a live slider, its notebook's figure size and settings across (and at
#: the ends of) the sliders' ranges; settings that change the number of bars or points included.
LIVE_DRAWS = {
    draw_distribution: (None, [{"temperature": t} for t in (1.0, 0.05, 5.0, 20.0)]),
    draw_decoding: (None, [{"temperature": 1.0, "top_k": 5, "top_p": 1.0},
                           {"temperature": 0.05, "top_k": 1, "top_p": 0.05},
                           {"temperature": 50.0, "top_k": 3, "top_p": 0.6}]),
    draw_two_spellings: ((8, 3.4), [{"pi_0": 0.1, "p_5_after_0": 0.2}, {"pi_0": 0.0, "p_5_after_0": 0.0},
                                    {"pi_0": 1.0, "p_5_after_0": 0.65}]),
    draw_sft_step: (None, [{"lr": lr} for lr in (1.0, 0.0, 5.0)]),
    draw_training_curves: ((8, 3.4), [{"lr": lr} for lr in (1.0, 0.1, 5.0)]),
    draw_jhat: (None, [{"G": 4}, {"G": 1}, {"G": 64}, {"G": 9}, {"G": 9, "n_groups": 500, "seed": 1}]),
    draw_seeds: ((10, 3.6), [{"n_seeds": n} for n in (8, 2, 128)]),
    draw_steps: ((10, 3.6), [{"lr": lr} for lr in (1.0, 0.0, 8.0)]),
    draw_baseline: ((8, 3.8), [{"offset": 10.0, "baseline": 0.0}, {"offset": 0.0, "baseline": -1.0},
                               {"offset": 5.5, "baseline": 11.0}]),
    draw_learning: ((8, 4.6), [{"G": 8, "lr": 1.0}, {"G": 1, "lr": 0.25}, {"G": 32, "lr": 4.0}]),
    draw_drift: ((9, 3.6), [{"drift": 0.5, "G": 8}, {"drift": 0.05, "G": 1}, {"drift": 0.95, "G": 32},
                            {"drift": 0.3, "G": 32}]),
    draw_clip: ((8, 5), [{"eps": eps} for eps in (0.2, 0.05, 0.5)]),
    draw_inner_steps: ((10, 3.4), [{"K": 12, "eps": 0.2}, {"K": 1, "eps": 0.05}, {"K": 24, "eps": 0.5}]),
    draw_grpo_run: ((8, 3), [{}, {"G": 2}, {"eps": 0.9}, {"lr": 5.0}, {"beta": 2.0}]),
}


@pytest.fixture
def book_style():
    """The book's matplotlib style, for one test (rcParams restored afterwards)."""
    with matplotlib.rc_context():
        apply_style()
        yield


def _figure(figsize) -> Figure:
    fig = Figure(figsize=figsize)
    FigureCanvasAgg(fig)
    return fig


def _pixels(fig) -> np.ndarray:
    fig.canvas.draw()
    return np.asarray(fig.canvas.buffer_rgba()).copy()


def _fresh(draw, figsize, params) -> np.ndarray:
    fig = _figure(figsize)
    draw(fig, **params)
    return _pixels(fig)


#: A live control as the chapters wrote them, which the search below must find.
LIVE_CALL = re.compile(r"\blive\(\s*(?:lambda[^:]*:\s*)?(draw_\w+)")


def test_every_live_slider_of_the_book_has_its_draw_function_checked_in_place():
    # the sliders of chapters 1-13 are charts now (rl4llm.viz.charts), so there may be none left
    assert LIVE_CALL.findall('live(draw_clip,\n     {"eps": widgets.FloatSlider(value=0.2)})') == ["draw_clip"]
    called = set()
    for path in sorted(BOOK.glob("[0-9][0-9]_*.ipynb")):
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            called |= set(LIVE_CALL.findall("".join(cell["source"])))
    assert called <= {draw.__name__ for draw in LIVE_DRAWS}, called


@pytest.mark.parametrize("draw", LIVE_DRAWS, ids=lambda draw: draw.__name__)
def test_a_figure_updated_in_place_is_pixel_for_pixel_a_fresh_one(book_style, draw):
    figsize, settings = LIVE_DRAWS[draw]
    fig = _figure(figsize)
    draw(fig, **settings[0])
    axes = list(fig.axes)
    for params in settings[1:] + settings[:1]:          # every other setting, then back to the first
        draw(fig, **params)
        assert fig.axes == axes, "the figure was built anew, not updated"
        np.testing.assert_array_equal(_pixels(fig), _fresh(draw, figsize, params), err_msg=str(params))


def test_a_figure_is_built_anew_for_other_fixed_parameters_or_another_drawing(book_style):
    fig = _figure((8, 4.6))
    draw_learning(fig, G=8, lr=1.0)
    draw_learning(fig, G=4, lr=2.0, steps=12, n_seeds=20)          # other steps: other bars
    np.testing.assert_array_equal(_pixels(fig), _fresh(draw_learning, (8, 4.6), dict(G=4, lr=2.0, steps=12,
                                                                                       n_seeds=20)))
    draw_clip(fig, eps=0.3)
    np.testing.assert_array_equal(_pixels(fig), _fresh(draw_clip, (8, 4.6), dict(eps=0.3)))
    assert kept(fig, lambda fig: "built") == "built"


def _png_pixels(png) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(bytes(png))).convert("RGBA"))


@pytest.mark.parametrize("draw", [draw_two_spellings, draw], ids=["in place", "cleared each time"])
def test_live_redraws_its_image_at_every_move_of_a_slider(book_style, draw):
    names = ("pi_0", "p_5_after_0") if draw is draw_two_spellings else ("T", "k")
    sliders = {name: widgets.FloatSlider(value=0.1, min=0.0, max=1.0, step=0.05) for name in names}
    control = live(draw, sliders, figsize=(8, 3.4))
    image = control.children[1]
    assert control.children[0].children == tuple(sliders.values())
    first = image.value
    sliders[names[0]].value = 0.75
    sliders[names[1]].value = 0.4
    assert image.value is not first
    shown = _png_pixels(image.value)
    dpi = matplotlib.rcParams["figure.dpi"]
    assert shown.shape == (round(3.4 * dpi), round(8 * dpi), 4)        # the figure's size and dpi
    np.testing.assert_array_equal(shown, _fresh(draw, (8, 3.4), {names[0]: 0.75, names[1]: 0.4}))
