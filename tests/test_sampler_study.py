"""Chapter 20's measurements (rl4llm.llm.sampler_study): the gaps a rollout engine leaves, what the caps change, and
the closed-form moments of a capped log-normal weight against Monte Carlo."""
import dataclasses
import math

import numpy as np
import pytest
import torch

from rl4llm.llm.rollout_engine import RolloutEngine
from rl4llm.llm.sampler_study import (CAP_RULES, engine_gaps, gap_summary, lognormal_weight_moments, staleness_gaps,
                                  weight_summary)
from rl4llm.llm.tasks import AdditionTask
from rl4llm.llm.trainer import GRPOConfig
from rl4llm.llm.warmstart import warm_start

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
