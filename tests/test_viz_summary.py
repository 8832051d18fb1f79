"""Chapter 21's figure (rl4llm.viz.summary): the band-width panel and the title it derives from the widths."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from rl4llm.viz.summary import draw_method_curves, widest_from  # noqa: E402


def test_widest_from_by_hand():
    widths = {"a": np.array([0.0, 0.5, 0.4, 0.1, 0.1]), "b": np.array([0.0, 0.2, 0.6, 0.3, 0.2])}
    assert widest_from(widths) == ("b", 2)                  # b is widest at steps 2, 3 and 4
    widths["a"][2] = 0.7
    assert widest_from(widths) == ("b", 3)


def test_widest_from_agrees_with_a_step_by_step_scan():
    rng = np.random.default_rng(0)
    for _ in range(20):
        widths = {name: rng.random(12) for name in "abc"}
        name, start = widest_from(widths)
        widest = [max(widths, key=lambda n: widths[n][t]) for t in range(12)]
        assert all(w == name for w in widest[start:])
        assert start == 0 or widest[start - 1] != name


def test_the_width_panel_is_drawn_only_with_widths():
    rng = np.random.default_rng(1)
    curves = {"SFT": np.linspace(0.2, 0.9, 6)[None], "REINFORCE": rng.random((4, 6)), "GRPO": rng.random((4, 6))}
    widths = {name: np.diff(np.quantile(c, [0.1, 0.9], axis=0), axis=0)[0] for name, c in curves.items() if name != "SFT"}
    for given, panels in ((None, 1), (widths, 2)):
        fig = plt.figure(figsize=(10, 3.8))
        try:
            draw_method_curves(fig, curves, given)
            assert len(fig.axes) == panels
            if given:
                right = fig.axes[1]
                assert right.get_yscale() == "log" and len(right.lines) == 2        # SFT has no band
                np.testing.assert_array_equal(right.lines[0].get_ydata(), widths["REINFORCE"][1:])
                name, start = widest_from(widths)
                assert right.get_title() == f"from step {start} on, {name}'s band is widest"
        finally:
            plt.close(fig)
