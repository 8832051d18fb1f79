"""The text of chapters 15 and 16 (corrected in issue 23), pinned: each statement holds on every CPU.

- chapter 15's run is defined once (``chapter15_config``) and chapter 16's knob table shows it;
- TRL's smaller advantages do not shorten AdamW's steps (a constant gradient factor cancels);
- the KL diagnostic's heavy tail: ``k3_per_token`` and the moving median the figure draws.
"""
import json
import math
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pytest
import torch

from rl4llm.llm.evaluation import k3_per_token
from rl4llm.math.credit import group_advantages
from rl4llm.llm.model import GPT
from rl4llm.llm.tasks import AdditionTask
from rl4llm.llm.trainer import GRPOConfig, GRPOTrainer, chapter15_config
from rl4llm.trl.knobs import TRLAdvantageTrainer, adam_step_with_trl_advantages, knob_table
from rl4llm.viz.tiny_transformer import moving_median
from rl4llm.llm.warmstart import warm_start

ROOT = Path(__file__).resolve().parents[1]
TASK = AdditionTask(seed=0)


@pytest.fixture(scope="module")
def warm():
    return warm_start()


def notebook_source(name: str) -> str:
    cells = json.loads((ROOT / "book" / name).read_text())["cells"]
    return "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")


def test_chapter_14s_run_is_defined_once_and_both_chapters_use_it():
    config = chapter15_config()
    differs = {k: v for k, v in asdict(config).items() if v != getattr(GRPOConfig(), k)}
    assert differs == {"steps": 300, "anneal_lr": True, "drop_zero_variance": True}
    assert config is not chapter15_config()          # a fresh config each call: nobody can change it for the rest
    assert "CONFIG = chapter15_config()" in notebook_source("15_tiny_transformer.ipynb")
    assert "knob_table(chapter15_config())" in notebook_source("16_to_trl.ipynb")


def test_the_knob_table_shows_chapter_14s_run_by_default():
    rows = {row["knob"]: row for row in knob_table() if row["knob"]}
    assert rows["steps"]["book"] == 300 and rows["steps"]["trl_value"] == 300
    assert rows["anneal_lr"]["book"] is True and rows["anneal_lr"]["trl_value"] == "linear"
    assert rows["drop_zero_variance"]["book"] is True and rows["drop_zero_variance"]["trl_field"] is None


def test_the_trl_advantage_trainer_changes_the_advantages_and_nothing_else(warm):
    """Same prompts and samples as the book's trainer; advantages are TRL's, sqrt(7/8) of the book's
    in every mixed group of eight 0/1 rewards (the eps terms aside)."""
    config = GRPOConfig(prompts_per_step=16, steps=1, device="cpu", drop_zero_variance=True)
    ours, theirs = GRPOTrainer(warm.model, TASK, config).rollout(), TRLAdvantageTrainer(warm.model, TASK, config).rollout()
    assert torch.equal(ours.tokens, theirs.tokens) and torch.equal(ours.keep, theirs.keep)
    expected = group_advantages(ours.rewards.numpy(), ddof=1, eps=1e-4).reshape(-1)[ours.keep.numpy()]
    np.testing.assert_allclose(theirs.advantages.numpy(), expected, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(theirs.advantages.numpy(), math.sqrt(7 / 8) * ours.advantages.numpy(), rtol=1e-3)


def test_adam_cancels_trls_smaller_advantages(warm):
    """Chapter 16's statement: with TRL's advantages, 20 AdamW steps move the weights within 2% as far
    as the book's (not 0.9354 times as far). Here on a smaller batch, with the chapter's own settings."""
    config = GRPOConfig(**{**asdict(chapter15_config()), "prompts_per_step": 16, "device": "cpu"})
    moved = adam_step_with_trl_advantages(warm.model, TASK, config, steps=20)
    assert moved["advantage_ratio"] == pytest.approx(0.9354143, abs=1e-6)
    assert moved["book"] > 0.1 and abs(moved["ratio"] - 1) < 0.02


def test_without_adam_the_steps_would_be_shorter_by_the_advantage_ratio(warm):
    """The contrast that makes the cancellation a finding: plain SGD (no gradient clip) scales its step
    with the gradient, so one step with TRL's advantages is sqrt(7/8) of the book's, to rounding."""
    config = GRPOConfig(prompts_per_step=16, steps=1, warmup_steps=0, grad_clip=1e9, device="cpu")
    steps = {}
    for name, cls in (("book", GRPOTrainer), ("trl", TRLAdvantageTrainer)):
        trainer = cls(warm.model, TASK, config)
        trainer.optimizer = torch.optim.SGD(trainer.policy.parameters(), lr=1e-3)
        trainer.scheduler = torch.optim.lr_scheduler.LambdaLR(trainer.optimizer, lambda u: 1.0)
        trainer.train(1, progress=False)
        steps[name] = math.sqrt(sum(((p.detach() - q) ** 2).sum().item() for p, q in
                                    zip(trainer.policy.parameters(), warm.model.parameters())))
    assert steps["trl"] / steps["book"] == pytest.approx(math.sqrt(7 / 8), rel=1e-3)


def test_k3_per_token_is_zero_against_itself_and_matches_the_formula(warm):
    same = k3_per_token(warm.model, warm.model, TASK, n_prompts=8, group_size=4, seed=0)
    assert len(same) > 0 and np.all(same == 0.0)
    moved = GPT(warm.model.config)
    moved.load_state_dict(warm.model.state_dict())
    with torch.no_grad():
        for p in moved.parameters():
            p.add_(0.05 * torch.randn(p.shape, generator=torch.Generator().manual_seed(0)))
    k3 = k3_per_token(moved, warm.model, TASK, n_prompts=8, group_size=4, seed=0)
    assert np.all(k3 >= 0) and k3.max() > 0
    assert np.array_equal(k3, k3_per_token(moved, warm.model, TASK, n_prompts=8, group_size=4, seed=0))
    with pytest.raises(ValueError, match="n_prompts"):
        k3_per_token(moved, warm.model, TASK, n_prompts=0)


def test_moving_median_against_a_direct_computation():
    rng = np.random.default_rng(0)
    values = rng.standard_exponential(40) ** 3          # a heavy right tail, like k3
    values[[5, 17]] = np.nan
    got = moving_median(values, 7)
    for i in range(len(values)):
        window = values[max(0, i - 3):i + 4]
        assert got[i] == pytest.approx(np.median(window[np.isfinite(window)]))
    np.testing.assert_array_equal(moving_median([3.0, 1.0, 2.0], 1), [3.0, 1.0, 2.0])
    assert np.median(values[np.isfinite(values)]) < np.nanmean(values)
    for bad in (0, 2.5, True):
        with pytest.raises(ValueError, match="window"):
            moving_median(values, bad)
