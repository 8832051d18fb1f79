"""The kernel-free twin of a slider: an animation that works offline and with a screen reader."""
import re

import matplotlib
import pytest

matplotlib.use("Agg")

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
