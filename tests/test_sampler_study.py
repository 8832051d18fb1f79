"""Chapter 20's measurements (rl4llm.llm.sampler_study): the gaps a rollout engine leaves, what the caps change, and
the closed-form moments of a capped log-normal weight against Monte Carlo; the clip's view of a stale batch against
the lines of TRL 1.16's AsyncGRPOTrainer.compute_loss, and a bf16 engine's gap against model size."""
import dataclasses
import inspect
import math
import textwrap
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from rl4llm.llm.rollout_engine import RolloutEngine
from rl4llm.llm.sampler_study import (CAP_RULES, async_clip_view, bf16_gap_by_size, engine_gaps, gap_summary,
                                     lognormal_weight_moments, staleness_gaps, weight_summary)
from rl4llm.llm.tasks import AdditionTask
from rl4llm.llm.trainer import GRPOConfig
from rl4llm.llm.warmstart import warm_start
from rl4llm.trl.adapters import quiet

TASK = AdditionTask(0, 500)


@pytest.mark.parametrize("s, cap, rule", [(0.3, 3.0, "truncate"), (1.0, 3.0, "truncate"), (1.0, 3.0, "mask"),
                                          (0.7, 1.5, "mask"), (0.5, 2.0, "none"), (1.4, 5.0, "truncate")])
def test_the_closed_form_is_the_monte_carlo_estimate(s, cap, rule):
    r = np.exp(np.random.default_rng(0).normal(-s * s / 2, s, 2_000_000))
    w = {"none": r, "truncate": np.minimum(r, cap), "mask": np.where(r <= cap, r, 0.0)}[rule]
    mean, var = lognormal_weight_moments(s, cap, rule)
    assert abs(mean - w.mean()) < 5 * w.std() / math.sqrt(len(w))
    assert abs(var - w.var()) < 0.03 * var


def test_the_caps_trade_variance_for_bias():
    for s in (0.2, 0.5, 1.0, 2.0):
        none, truncated, masked = (lognormal_weight_moments(s, 3.0, rule) for rule in CAP_RULES)
        assert none == (1.0, math.expm1(s * s))
        assert masked[0] < truncated[0] < 1.0 and masked[1] < none[1] and truncated[1] < none[1]
    assert lognormal_weight_moments(0.0, 3.0, "mask") == (1.0, 0.0)
    assert lognormal_weight_moments(1e-3, 3.0, "truncate")[0] == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize("kwargs, message", [({"log_std": -0.1}, "log_std"), ({"cap": 0.5}, "cap"),
                                             ({"rule": "clip"}, "rule must be one of")])
def test_bad_inputs(kwargs, message):
    with pytest.raises(ValueError, match=message):
        lognormal_weight_moments(**{"log_std": 0.5, "cap": 3.0, "rule": "mask", **kwargs})


def test_a_float32_engine_leaves_no_gap_and_a_bf16_one_a_small_one():
    warm = warm_start().model
    exact = gap_summary(**engine_gaps(warm, RolloutEngine(warm, "float32"), TASK, n_prompts=8))
    assert exact["max"] < 1e-5
    batch = engine_gaps(warm, RolloutEngine(warm, "bfloat16"), TASK, n_prompts=8)
    bf16 = gap_summary(**batch)
    assert 1e-4 < bf16["mean"] < 0.01 and bf16["max"] < 0.1
    assert all(v["changed"] == 0 for v in weight_summary(**batch).values())


def test_staleness_widens_the_gap_and_the_caps_act():
    config = GRPOConfig(steps=6, prompts_per_step=16, device="cpu", log_kl=False)
    gaps = staleness_gaps(warm_start().model, TASK, config, (0, 1, 4), n_prompts=16)
    means = [gap_summary(**gaps[k])["mean"] for k in (0, 1, 4)]
    assert means[0] < 1e-5 < means[1] < means[2]
    summary = weight_summary(**gaps[4], clip_max=1.1)
    assert all(0 < v["changed"] < 1 for v in summary.values())
    assert summary["token_truncate"]["changed"] == summary["token_mask"]["changed"]   # the same tokens leave


def trl_async_ratio(log_probs, old_log_probs, advantages, eps_low, eps_high):
    """TRL 1.16's AsyncGRPOTrainer.compute_loss: its ratio and clip lines and its clip counts, run as written."""
    with quiet():                                           # TRL warns on every import from trl.experimental
        from trl.experimental.async_grpo.async_grpo_trainer import AsyncGRPOTrainer

    source = inspect.getsource(AsyncGRPOTrainer.compute_loss)
    blocks = [(source.index("        log_ratio = log_probs - old_log_probs"), source.index("        per_token_loss1")),
              (source.index("            is_low_clipped"), source.index("            is_region_clipped"))]
    scope = {"self": SimpleNamespace(epsilon_low=eps_low, epsilon_high=eps_high), "torch": torch,
             "log_probs": log_probs, "old_log_probs": old_log_probs, "advantages": advantages}
    for start, end in blocks:
        exec(textwrap.dedent(source[start:end]), scope)
    return scope


def test_the_clip_view_is_trls_async_trainers():
    pytest.importorskip("trl")
    g = torch.Generator().manual_seed(0)
    policy, engine = -torch.rand(6, 9, generator=g) * 3, -torch.rand(6, 9, generator=g) * 3
    mask = (torch.rand(6, 9, generator=g) < 0.8).float()
    view = async_clip_view(policy, engine, mask, eps_low=0.2, eps_high=0.28)
    flat = mask > 0                                         # TRL's compute_loss sees the completion tokens only
    for sign, share in ((-1.0, "below"), (1.0, "above")):   # TRL counts a clip only where the advantage pushes out
        trl = trl_async_ratio(policy[flat], engine[flat], torch.full((int(flat.sum()),), sign), 0.2, 0.28)
        assert view["ratio"] == pytest.approx(float(trl["coef_1"].mean()), rel=1e-6)
        assert view["kl"] == pytest.approx(float(((trl["coef_1"] - 1) - trl["log_ratio"]).mean()), rel=1e-5)
        counted = trl["is_low_clipped"] if sign < 0 else trl["is_high_clipped"]
        assert view[share] == pytest.approx(float(counted.float().mean()))
        assert 0 < view[share] < 1
    rescored = async_clip_view(policy, policy, mask)        # GRPOTrainer's view: the trainer's own log-probs
    assert rescored == {"ratio": 1.0, "kl": 0.0, "below": 0.0, "above": 0.0}


def test_a_bf16_gap_grows_with_width_and_a_sequences_with_length():
    token = [bf16_gap_by_size(2, width, 32)["token"] for width in (32, 128)]
    sequence = [bf16_gap_by_size(2, 64, length)["sequence"] for length in (8, 128)]
    assert 0 < token[0] < token[1] and 0 < sequence[0] < sequence[1]
    with pytest.raises(ValueError, match="n_layer"):
        bf16_gap_by_size(0, 64, 32)
