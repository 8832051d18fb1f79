"""Chapter 15's grid (rl4llm.llm.grid_study): the sweep's cells, the differences it reads and its claims."""
import numpy as np

from rl4llm.llm.grid_study import GRID_COLUMNS, grid_claims, grid_differences, grid_sweep, lr_label
from rl4llm.llm.model import GPT, GPTConfig
from rl4llm.llm.tasks import AdditionTask
from rl4llm.llm.trainer import GRPOConfig

LRS = ("lr=3e-04", "lr=1e-03", "lr=1e-02")


def evals(accuracy):
    return {"step": [0, 60], "accuracy": [0.27, accuracy], "train_seconds": [0.0, 1.0]}


def chapter_like_grid():
    """Final accuracies shaped like chapter 15's: G=8 and K=4 help at the small rates, 1e-2 collapses."""
    final = {("lr=3e-04", "G=2"): 0.27, ("lr=3e-04", "G=8"): 0.37, ("lr=3e-04", "G=8, K=4"): 0.57,
             ("lr=1e-03", "G=2"): 0.20, ("lr=1e-03", "G=8"): 0.45, ("lr=1e-03", "G=8, K=4"): 0.66,
             ("lr=1e-02", "G=2"): 0.00, ("lr=1e-02", "G=8"): 0.01, ("lr=1e-02", "G=8, K=4"): 0.01}
    clip = {key: (0.05 if key[1] == "G=8, K=4" else 0.0) for key in final}
    return {key: evals(a) for key, a in final.items()}, clip


def test_the_differences_are_the_pairs_the_chapter_names():
    runs, _ = chapter_like_grid()
    d = grid_differences(runs, 0.27)
    assert d["lr=1e-03: G=8 minus G=2"] == (0.45, 0.20)
    assert d["lr=3e-04: K=4 minus K=1"] == (0.57, 0.37)
    assert d["lr=1e-02: G=8, K=4 minus the warm start"] == (0.01, 0.27)
    assert len(d) == 2 + 2 + 2 + 3


def test_the_claims_hold_on_a_chapter_like_grid_and_fail_when_it_changes():
    runs, clip = chapter_like_grid()
    assert all(grid_claims(runs, clip, 0.27, floor=0.155).values())
    no_clip = {key: 0.0 for key in clip}
    claims = grid_claims(runs, no_clip, 0.27, floor=0.155)
    assert not claims["with K=1 the clip never binds; with K=4 it binds at every learning rate"]
    wide = grid_claims(runs, clip, 0.27, floor=0.3)        # a wider floor: G=8's gain is no longer beyond it
    assert not wide["at lr 1e-3, G=8 ends above G=2 by more than the floor"]


def test_grid_sweep_trains_every_cell_with_its_overrides():
    torch_model = GPT(GPTConfig())
    config = GRPOConfig(steps=300, prompts_per_step=2, group_size=4, log_kl=False, device="cpu")
    runs, clip = grid_sweep(torch_model, AdditionTask(seed=0), config, lrs=(1e-3,), steps=1, eval_every=1)
    assert list(runs) == [(lr_label(1e-3), c) for c in GRID_COLUMNS]
    assert all(r["step"] == [0, 1] for r in runs.values())
    assert all(np.isfinite(c) for c in clip.values())
