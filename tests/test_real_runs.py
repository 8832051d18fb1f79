"""``rl4llm.viz.real_runs``' copy of the H200 record's header (chapter 19 prints it), against the record itself."""
import json
from pathlib import Path

from rl4llm.viz import real_runs as rr


def test_the_h200_record_header_is_the_benchmarks_record():
    record = json.loads((Path(__file__).parent.parent / "benchmarks" / "results" / "recipe_gpu_h200.json").read_text())
    assert rr.H200_RECORD == {key: value for key, value in record.items() if key != "runs"}


def test_a_palette_png_draws_the_figure_at_the_same_size_in_at_most_256_colours_and_fewer_bytes():
    import base64
    import io

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    from PIL import Image

    from rl4llm.viz import palette_png

    fig, ax = plt.subplots(figsize=(7.5, 3.4), dpi=90)
    rng = np.random.default_rng(0)
    for _ in range(9):
        ax.plot(rng.random(60))
    full = io.BytesIO()
    fig.savefig(full, format="png", bbox_inches="tight", facecolor="white")
    light = palette_png(fig)
    plt.close(fig)
    a, b = Image.open(io.BytesIO(full.getvalue())).convert("RGB"), Image.open(io.BytesIO(light))
    assert b.mode == "P" and len(b.getcolors(256)) <= 256
    assert b.info["dpi"] == Image.open(io.BytesIO(full.getvalue())).info["dpi"]      # the figure's dpi, kept
    assert a.size == b.size and len(light) < 0.8 * len(full.getvalue())
    difference = np.abs(np.asarray(a, float) - np.asarray(b.convert("RGB"), float))
    assert difference.mean() < 2.0                    # out of 255: the same picture

    # chapter 19's three run charts are stored this way (its page stays under the browser tests' weight budget)
    nb = json.loads((Path(__file__).parent.parent / "book" / "19_real_runs.ipynb").read_text())
    stored = [Image.open(io.BytesIO(base64.b64decode(o["data"]["image/png"]))) for c in nb["cells"] if "draw_metrics(" in "".join(c["source"])
              for o in c.get("outputs", []) if "image/png" in o.get("data", {})]
    assert len(stored) == 3 and all(image.mode == "P" and "dpi" in image.info for image in stored)
