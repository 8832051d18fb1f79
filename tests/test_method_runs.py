"""Tests for rl4llm.studies.method_runs (chapter 21): every method, one call each, on the toy."""
import numpy as np
import pytest

from rl4llm import CORRECT, LOGITS, REWARDS, policy_gradient, softmax
from rl4llm.math.estimators import gradient_by_finite_differences, sample_groups
from rl4llm.studies.method_runs import (METHODS, method_curves, run_exact_gradient,
                                        run_grpo, run_ppo, run_reinforce, run_reinforce_baseline, run_sft, run_trpo)
from rl4llm.studies.toy_grpo import grpo_toy_run

PI = softmax(LOGITS)


@pytest.mark.parametrize("name", list(METHODS))
def test_each_method_raises_pi5(name):
    kwargs = {"steps": 15} if name == "SFT" else {"steps": 15, "seed": 3}
    curve = METHODS[name](**kwargs)
    assert curve.shape == (16,)
    assert curve[0] == pytest.approx(0.2)
    assert curve[-1] > 0.5


def test_sft_first_step_is_chapter_4s():
    assert round(float(run_sft(steps=1, lr=1.0)[1]), 4) == 0.4207


def test_reinforce_one_big_group_is_close_to_the_exact_step():
    # independent route: exact gradient ascent z + lr * pi * (r - J) gives pi(5) = 0.2366 at lr = 1
    exact = softmax(LOGITS + policy_gradient(LOGITS, REWARDS))[CORRECT]
    assert round(float(exact), 4) == 0.2366
    for run in (run_reinforce, run_reinforce_baseline):
        got = run(steps=1, G=20000, lr=1.0, seed=0)[1]
        assert got == pytest.approx(exact, abs=4e-3)


def test_exact_gradient_ascent_matches_finite_differences():
    # independent route: the gradient of J by central differences instead of pi * (r - J)
    for lr in (1.0, 7 / 8):
        z, expected = LOGITS.copy(), [0.2]
        for _ in range(10):
            z = z + lr * gradient_by_finite_differences(z, REWARDS)
            expected.append(softmax(z)[CORRECT])
        np.testing.assert_allclose(run_exact_gradient(steps=10, lr=lr), expected, atol=1e-8)
    assert round(float(run_exact_gradient(steps=1)[1]), 4) == 0.2366      # chapter 7's step


def test_exact_gradient_is_where_reinforce_goes_on_average():
    # one huge group per step: REINFORCE's estimate is then the exact gradient up to ~1e-3
    got = run_reinforce(steps=5, G=40000, seed=1)
    np.testing.assert_allclose(got, run_exact_gradient(steps=5), atol=5e-3)


def test_ppo_single_inner_step_is_a_critic_policy_gradient_step():
    got = run_ppo(steps=1, G=8, K=1, lr=0.5, seed=4)[1]
    ys = sample_groups(PI, 8, 1, np.random.default_rng(4))[0]
    A = REWARDS[ys] - 0.2                     # the ideal critic: V = J = 0.2
    z = LOGITS + 0.5 * (A[:, None] * (np.eye(5)[ys] - PI)).mean(axis=0)
    assert got == pytest.approx(softmax(z)[CORRECT], abs=1e-12)


def test_trpo_steps_respect_the_trust_region():
    # Pinsker: |pi_new(5) - pi_old(5)| <= TV <= sqrt(KL / 2) <= sqrt(delta / 2)
    for delta in (0.001, 0.02):
        curve = run_trpo(steps=10, delta=delta, seed=1)
        assert np.abs(np.diff(curve)).max() <= np.sqrt(delta / 2) + 1e-12
    assert run_trpo(steps=5, delta=0.001, seed=1)[-1] < run_trpo(steps=5, delta=0.02, seed=1)[-1]


def test_grpo_is_the_chapter_13_loop():
    np.testing.assert_array_equal(run_grpo(steps=4, seed=2, beta=0.1),
                                  grpo_toy_run(steps=4, seed=2, beta=0.1)["pi_correct"])


def test_method_curves():
    curves = method_curves(steps=3, seeds=[0, 1])
    assert list(curves) == list(METHODS)
    assert curves["SFT"].shape == (1, 4)
    assert all(curves[name].shape == (2, 4) for name in METHODS if name != "SFT")


@pytest.mark.parametrize("run, kwargs, name", [
    (run_sft, {"steps": 0}, "steps"), (run_sft, {"lr": 0.0}, "lr"), (run_sft, {"target": 9}, "target"),
    (run_reinforce, {"G": 0}, "G"), (run_reinforce, {"lr": -1.0}, "lr"),
    (run_reinforce_baseline, {"G": 1}, "G"), (run_reinforce_baseline, {"rewards": [1, 0]}, "rewards"),
    (run_trpo, {"delta": 0.0}, "delta"), (run_trpo, {"seed": -2}, "seed"),
    (run_ppo, {"K": 0}, "K"), (run_ppo, {"eps": 1.0}, "eps"), (run_ppo, {"eps": 0.0}, "eps"),
    (run_grpo, {"G": 1}, "G"), (run_grpo, {"eps_low": 1.5}, "eps_low"), (run_grpo, {"beta": -0.5}, "beta"),
    (run_grpo, {"K": 0}, "K"),
    (run_exact_gradient, {"steps": 0}, "steps"), (run_exact_gradient, {"lr": 0.0}, "lr"),
    (run_exact_gradient, {"rewards": [1.0]}, "rewards"),
])
def test_bad_input(run, kwargs, name):
    with pytest.raises(ValueError, match=name):
        run(**kwargs)

