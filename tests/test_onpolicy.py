"""Tests for rl4llm.studies.onpolicy (chapters 6, 7, 9): the on-policy loop, its many-seed version, the
slider studies, and bad input."""
import math

import numpy as np
import pytest

from rl4llm import CORRECT, LOGITS, REWARDS, score, sft_step, softmax
from rl4llm.math.estimators import expected_policy_after_step
from rl4llm.studies.onpolicy import (learning_curve_band, on_policy_loop, on_policy_loop_plain, on_policy_runs,
                             repeated_band, rl_and_sft_steps, seed_study)

PI = softmax(LOGITS)


def test_runs_shapes_and_reproducibility():
    runs = on_policy_runs(LOGITS, REWARDS, G=8, lr=1.0, steps=12, n_seeds=5, seed=3)
    assert runs["logits"].shape == (5, 13, 5) and runs["pi"].shape == (5, 13, 5)
    assert runs["pi_correct"].shape == runs["expected_reward"].shape == (5, 13)
    assert runs["group_reward"].shape == runs["zero_signal"].shape == (5, 12)
    assert np.allclose(runs["pi_correct"][:, 0], 0.2)
    assert np.allclose(runs["pi_correct"], runs["expected_reward"])          # 0/1 rewards: J = pi(5)
    again = on_policy_runs(LOGITS, REWARDS, G=8, lr=1.0, steps=12, n_seeds=5, seed=3)
    assert all(np.array_equal(runs[k], again[k]) for k in runs)


def test_loop_is_run_zero_and_replays_by_hand():
    """Replay the loop with a plain per-sample implementation drawing the same uniforms."""
    G, lr, steps, seed = 4, 2.0, 10, 17
    loop = on_policy_loop(LOGITS, REWARDS, G, lr, steps, seed)
    rng = np.random.default_rng(seed)
    z = LOGITS.copy()
    for t in range(steps):
        pi = softmax(z)
        u = rng.random((1, G))[0]
        group = [int(np.searchsorted(np.cumsum(pi), ui, side="right")) for ui in u]
        rewards = REWARDS[group]
        assert loop["zero_signal"][t] == (len(set(rewards)) == 1)
        assert loop["group_reward"][t] == pytest.approx(rewards.mean())
        z = z + lr * np.mean([(rewards[i] - rewards.mean()) * score(z, y) for i, y in enumerate(group)], axis=0)
        assert np.allclose(loop["logits"][t + 1], z, atol=1e-12)


def test_zero_signal_steps_leave_the_policy_unchanged_and_updates_sum_to_zero():
    runs = on_policy_runs(LOGITS, REWARDS, G=4, lr=1.0, steps=20, n_seeds=50, seed=0)
    deltas = np.diff(runs["logits"], axis=1)
    assert np.all(deltas[runs["zero_signal"]] == 0)
    assert np.any(runs["zero_signal"]) and np.any(~runs["zero_signal"])
    assert np.allclose(deltas.sum(axis=-1), 0.0, atol=1e-12)


def test_zero_signal_share_at_first_step_matches_0_4096_within_4_se():
    n = 20_000
    runs = on_policy_runs(LOGITS, REWARDS, G=4, lr=1.0, steps=1, n_seeds=n, seed=2)
    p = 0.8 ** 4 + 0.2 ** 4
    assert abs(runs["zero_signal"][:, 0].mean() - p) < 4 * math.sqrt(p * (1 - p) / n)
    assert abs((runs["group_reward"][:, 0] == 0).mean() - 0.4096) < 4 * math.sqrt(0.4096 * 0.5904 / n)


def test_first_step_mean_matches_exact_enumeration_0_2322():
    n = 20_000
    after = on_policy_runs(LOGITS, REWARDS, G=8, lr=1.0, steps=1, n_seeds=n, seed=4)["pi_correct"][:, 1]
    exact = expected_policy_after_step(LOGITS, REWARDS, 8, 1.0)[CORRECT]
    assert round(exact, 4) == 0.2322
    assert abs(after.mean() - exact) < 4 * after.std(ddof=1) / math.sqrt(n)


def test_the_loop_learns():
    band = learning_curve_band(8, 1.0, steps=30, n_seeds=200, seed=0)
    assert band["mean"][0] == pytest.approx(0.2)
    assert band["mean"][-1] > 0.8
    assert np.all(band["low"] <= band["median"]) and np.all(band["median"] <= band["high"])
    assert band["zero_signal_fraction"].shape == (30,)
    assert band["zero_signal_fraction"][-1] > band["zero_signal_fraction"][0]   # all-correct groups


def test_seed_study_spread_and_standard_error():
    study = seed_study(16, G=4, lr=1.0, steps=10, seed=1)
    finals = study["finals"]
    assert finals.shape == (16,)
    assert study["mean"] == pytest.approx(finals.mean())
    assert study["std"] == pytest.approx(np.std(finals, ddof=1))
    assert study["standard_error"] == pytest.approx(study["std"] / 4)
    assert study["std"] > 0


def test_rl_and_sft_steps_numbers():
    one = rl_and_sft_steps(1.0)
    assert round(one["pi_rl"][CORRECT], 4) == 0.2366
    assert round(one["pi_sft"][CORRECT], 4) == 0.4207
    five = rl_and_sft_steps(5.0)
    assert round(five["pi_rl"][CORRECT], 4) == 0.4207
    # at lr = 5 the RL step IS the SFT step: 5 * pi (r - J) = -(pi - onehot(5)) on the toy
    assert np.allclose(five["pi_rl"], one["pi_sft"], atol=1e-12)
    assert np.allclose(one["pi_sft"], softmax(sft_step(LOGITS, CORRECT, 1.0)))
    assert np.allclose(one["pi_before"], PI)


@pytest.mark.parametrize("kwargs, name", [
    ({"G": 0}, "G"), ({"G": 2.5}, "G"), ({"G": True}, "G"),
    ({"n_seeds": 0}, "n_seeds"), ({"n_seeds": 1.0}, "n_seeds"),
    ({"lr": np.nan}, "lr"), ({"steps": -1}, "steps"), ({"seed": -1}, "seed"),
    ({"rewards": [0, 1]}, "rewards"), ({"rewards": [0, 0, np.inf, 0, 0]}, "rewards"),
    ({"logits": [[0.0, 1.0]]}, "logits"),
])
def test_runs_reject_bad_input(kwargs, name):
    args = {"logits": LOGITS, "rewards": REWARDS, "G": 4, "lr": 1.0, "steps": 3, "n_seeds": 2, "seed": 0}
    args.update(kwargs)
    with pytest.raises(ValueError, match=name):
        on_policy_runs(**args)


def test_studies_reject_bad_input():
    with pytest.raises(ValueError, match="n_seeds"):
        seed_study(1)
    with pytest.raises(ValueError, match="band"):
        learning_curve_band(4, 1.0, band=(0.9, 0.1))
    with pytest.raises(ValueError, match="lr"):
        rl_and_sft_steps(np.nan)
    with pytest.raises(ValueError, match="target"):
        rl_and_sft_steps(1.0, target=5)
    with pytest.raises(ValueError, match="G"):
        on_policy_loop(LOGITS, REWARDS, 0, 1.0, 3)


@pytest.mark.parametrize("G, lr, seed", [(8, 1.0, 3), (4, 2.0, 17), (2, 0.5, 0), (1, 1.0, 5)])
def test_plain_loop_is_the_vectorised_loop(G, lr, seed):
    plain = on_policy_loop_plain(LOGITS, REWARDS, G, lr, 25, seed)
    assert plain.shape == (26, 5)
    assert np.allclose(plain, on_policy_loop(LOGITS, REWARDS, G, lr, 25, seed)["logits"], rtol=0, atol=1e-12)
    rewards = np.array([0.3, -1.0, 2.0, 0.5, 7.0])
    assert np.allclose(on_policy_loop_plain(LOGITS, rewards, G, lr, 10, seed),
                       on_policy_runs(LOGITS, rewards, G, lr, 10, 1, seed)["logits"][0], rtol=0, atol=1e-12)


def test_plain_loop_rejects_bad_input():
    for kwargs, name in (({"G": 0}, "G"), ({"lr": np.nan}, "lr"), ({"steps": -1}, "steps"),
                         ({"seed": -2}, "seed"), ({"rewards": [0, 1]}, "rewards"),
                         ({"logits": [[0.0, 1.0]]}, "logits")):
        args = {"logits": LOGITS, "rewards": REWARDS, "G": 4, "lr": 1.0, "steps": 3, "seed": 0}
        args.update(kwargs)
        with pytest.raises(ValueError, match=name):
            on_policy_loop_plain(**args)


def test_repeated_band_is_the_figure_redrawn_with_seeds_seed_to_seed_plus_n():
    rep = repeated_band(8, 1.0, steps=6, n_repeats=4, n_seeds=50, seed=7)
    assert rep["median"].shape == rep["width"].shape == (4, 7)
    for k in range(4):
        curves = on_policy_runs(LOGITS, REWARDS, 8, 1.0, 6, 50, 7 + k)["pi_correct"]
        low, median, high = np.quantile(curves, [0.1, 0.5, 0.9], axis=0)
        assert np.allclose(rep["median"][k], median) and np.allclose(rep["width"][k], high - low)
    with pytest.raises(ValueError, match="n_repeats"):
        repeated_band(8, 1.0, n_repeats=1)
