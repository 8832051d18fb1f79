"""The draw functions behind the book's figures (each beside its slider chart) draw at every setting their
charts' sliders reach, the ends included, and the same figure every time."""

import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")

from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from rl4llm.viz import apply_style  # noqa: E402
from rl4llm.viz.decoding import draw_decoding  # noqa: E402
from rl4llm.viz.distribution import draw_distribution  # noqa: E402
from rl4llm.viz.forward_kl import draw_training_curves  # noqa: E402
from rl4llm.viz.sequences import draw_two_spellings  # noqa: E402
from rl4llm.viz.sft import draw_sft_step  # noqa: E402
from rl4llm.viz.baselines import draw_baseline  # noqa: E402
from rl4llm.viz.monte_carlo import draw_jhat, draw_seeds  # noqa: E402
from rl4llm.viz.on_policy_loop import draw_learning  # noqa: E402
from rl4llm.viz.score_function import draw_steps  # noqa: E402
from rl4llm.viz.importance_sampling import draw_drift  # noqa: E402
from rl4llm.viz.trust_region_ppo import draw_clip, draw_inner_steps  # noqa: E402
from rl4llm.viz.grpo_toy import draw_grpo_run  # noqa: E402


# ----------------------------------------------------------------------------- the figures at their sliders' ends
#: Every draw function behind a figure with a slider chart, its notebook's figure size and settings across (and at
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


@pytest.mark.parametrize("draw", LIVE_DRAWS, ids=lambda draw: draw.__name__)
def test_each_figure_draws_at_its_sliders_ends_and_the_same_every_time(book_style, draw):
    figsize, settings = LIVE_DRAWS[draw]
    for params in settings:
        fig = _figure(figsize)
        draw(fig, **params)
        assert fig.axes, str(params)
        np.testing.assert_array_equal(_pixels(fig), _fresh(draw, figsize, params), err_msg=str(params))
