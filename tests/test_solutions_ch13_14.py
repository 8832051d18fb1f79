"""The numbers stated in the solutions of chapters 13 and 14's exercises, recomputed from the library.

Each test runs the code a solution describes and checks every number the solution states (to the
digits it states), and the conclusion it draws (a noise-floor verdict where it compares settings).
"""
import numpy as np
import pytest
import torch

from rl4llm.math.estimators import zero_signal_probability
from rl4llm.math.credit import group_advantages
from rl4llm.math.statistics import noise_floor
from rl4llm.llm.grpo_toys import aggregation_weights
from rl4llm.studies.toy_grpo import SLIDER_RUN, grpo_toy_run, run_over_seeds

SEEDS = range(8)


def r4(x):
    return round(float(x), 4)


# ------------------------------------------------------------------ ex-ch14-aggregation
def test_ch14_aggregation_solution():
    r, lengths = [1.0, 0.0, 0.0, 0.0], np.array([3, 1, 1, 6])
    A = aggregation_weights(r, lengths, "grpo")["advantages"]
    np.testing.assert_allclose(A, [np.sqrt(3), -1 / np.sqrt(3), -1 / np.sqrt(3), -1 / np.sqrt(3)], rtol=1e-7)
    np.testing.assert_allclose(np.round(A, 4), [1.7321, -0.5774, -0.5774, -0.5774])
    grpo = aggregation_weights(r, lengths, "grpo")["per_token"]
    dapo = aggregation_weights(r, lengths, "dapo")["per_token"]
    dr = aggregation_weights(r, lengths, "dr_grpo", 6)["per_token"]
    np.testing.assert_allclose(np.round(grpo, 4), [0.1443, -0.1443, -0.1443, -0.0241])
    np.testing.assert_allclose(np.round(dapo, 4), [0.1575, -0.0525, -0.0525, -0.0525])
    np.testing.assert_allclose(np.round(dr, 4), [0.0722, -0.0241, -0.0241, -0.0241])
    # independent route: the closed forms the solution writes, A_i / (4 |o_i|), A_i / 11, A_i / 24
    np.testing.assert_allclose(grpo, A / (4 * lengths), rtol=1e-12)
    np.testing.assert_allclose(dapo, A / 11, rtol=1e-12)
    np.testing.assert_allclose(dr, A / 24, rtol=1e-12)
    # "the 6-token wrong answer is penalised six times less per token than the 1-token ones"
    assert grpo[1] / grpo[3] == pytest.approx(6.0)


# ------------------------------------------------------------------ ex-ch13-pairs
def test_ch13_pairs_solution_advantages_and_no_signal_share():
    assert group_advantages([1.0, 0.0]).tolist() == pytest.approx([1.0, -1.0])
    np.testing.assert_allclose(np.round(group_advantages([1.0, 0.0], ddof=1), 4), [0.7071, -0.7071])
    assert group_advantages([1.0, 0.0], scale=False).tolist() == [0.5, -0.5]
    assert group_advantages([1.0, 1.0]).tolist() == [0.0, 0.0]
    assert r4(zero_signal_probability(0.2, 2)) == 0.68 == r4(0.2 ** 2 + 0.8 ** 2)
    assert r4(zero_signal_probability(0.2, 8)) == 0.1678


def _compare(a, b):
    difference, floor = a.mean() - b.mean(), noise_floor(a, b)
    return r4(difference), r4(floor), abs(difference) > floor


def test_ch13_pairs_solution_same_steps():
    pairs = run_over_seeds(grpo_toy_run, SEEDS, G=2, steps=10)["pi_correct"][:, -1]
    eights = run_over_seeds(grpo_toy_run, SEEDS, G=8, steps=10)["pi_correct"][:, -1]
    assert (r4(pairs.mean()), r4(pairs.std(ddof=1))) == (0.8632, 0.0654)
    assert (r4(eights.mean()), r4(eights.std(ddof=1))) == (0.9477, 0.0165)
    assert _compare(pairs, eights) == (-0.0845, 0.0551, True)


def test_ch13_pairs_solution_same_samples():
    pairs = run_over_seeds(grpo_toy_run, SEEDS, G=2, steps=40)["pi_correct"][:, -1]     # 80 answers
    eights = run_over_seeds(grpo_toy_run, SEEDS, G=8, steps=10)["pi_correct"][:, -1]    # 80 answers
    assert (r4(pairs.mean()), r4(pairs.std(ddof=1))) == (0.9731, 0.0151)
    assert r4(eights.mean()) == 0.9477
    assert _compare(pairs, eights) == (0.0255, 0.0170, True)


# ------------------------------------------------------------------ ex-ch14-leash
def test_ch14_leash_solution():
    finals = {beta: run_over_seeds(grpo_toy_run, SEEDS, steps=60, beta=beta)["pi_correct"][:, -1]
              for beta in (0.0, 0.1, 0.3, 1.0, 3.0)}
    stated = {0.0: (0.9943, 0.0015), 0.1: (0.8858, 0.0542), 0.3: (0.7786, 0.0846),
              1.0: (0.5358, 0.0816), 3.0: (0.2998, 0.0477)}
    for beta, (mean, sd) in stated.items():
        assert (r4(finals[beta].mean()), r4(finals[beta].std(ddof=1))) == (mean, sd), beta
    betas = list(stated)
    for low, high in zip(betas, betas[1:]):        # each step up in beta lowers pi(5) beyond the floor
        difference, _, real = _compare(finals[high], finals[low])
        assert difference < 0 and real, (low, high)
    assert np.all(finals[3.0] > 0.2) and r4(finals[3.0].min()) == 0.2218


# ------------------------------------------------------------------ ex-ch13-advantage
def test_ch13_partial_credit_advantage_solution():
    r = np.array([1.0, 0.5, 0.0, 0.0])
    assert r.mean() == 0.375 and (r - r.mean()).tolist() == [0.625, 0.125, -0.375, -0.375]
    assert ((r - r.mean()) ** 2).tolist() == [0.390625, 0.015625, 0.140625, 0.140625]
    assert r.var() == 0.171875 and r4(r.std()) == 0.4146
    A = group_advantages(r)
    assert np.round(A, 4).tolist() == [1.5076, 0.3015, -0.9045, -0.9045]
    assert A[1] > 0                                        # the wrong answer "15" is pushed up
    assert r4(r.std(ddof=1)) == 0.4787 and r4(group_advantages(r, ddof=1)[1]) == 0.2611
    assert r4(0.5 / r.std()) == 1.2060


# ------------------------------------------------------------------ ex-ch13-write-group-advantages
def test_ch13_group_advantages_solution_flat_groups():
    """A flat group gets exact zeros, also with eps = 0; torch tensors are accepted."""
    flat = np.array([[1.0, 1.0, 1.0], [0.0, 0.0, 0.0]])
    assert group_advantages(flat).tolist() == [[0.0] * 3] * 2
    with np.errstate(all="ignore"):
        assert group_advantages(flat, eps=0.0).tolist() == [[0.0] * 3] * 2
    t = group_advantages(torch.tensor([[1.0, 0.5, 0.0, 0.0]]))
    assert isinstance(t, torch.Tensor) and np.allclose(t.numpy(), group_advantages([[1.0, 0.5, 0.0, 0.0]]))


# ------------------------------------------------------------------ ex-ch14-leash, the slider part
def test_ch14_leash_slider_numbers():
    """One seed, SLIDER_RUN (10 steps, K = 2): pi(5) after 10 steps 0.95, 0.75, 0.29 and KL 1.34, 0.71,
    0.03 at beta = 0, 0.5, 2; at beta = 2, pi(5) between 0.22 and 0.29 from step 2 on, KL below 0.04."""
    assert SLIDER_RUN == {"steps": 10, "K": 2, "seed": 0}
    runs = {beta: grpo_toy_run(**SLIDER_RUN, beta=beta) for beta in (0.0, 0.5, 2.0)}
    assert [round(float(runs[b]["pi_correct"][-1]), 2) for b in runs] == [0.95, 0.75, 0.29]
    assert [round(float(runs[b]["kl_ref"][-1]), 2) for b in runs] == [1.34, 0.71, 0.03]
    tail = runs[2.0]["pi_correct"][2:]
    assert np.all(tail > 0.2) and round(float(tail.min()), 2) == 0.22 and round(float(tail.max()), 2) == 0.29
    assert np.all(runs[2.0]["kl_ref"] < 0.04)


# ------------------------------------------------------------------ ex-ch14-trl-advantage
def test_ch14_trl_advantage_solution():
    r = np.array([1.0, 0.0, 0.0, 0.0])
    assert r.mean() == 0.25 and (r - r.mean()).tolist() == [0.75, -0.25, -0.25, -0.25]
    assert ((r - r.mean()) ** 2).sum() == 0.5625 + 3 * 0.0625 == 0.75
    assert r.var(ddof=1) == 0.25 and r.std(ddof=1) == 0.5
    trl = group_advantages(r, ddof=1, eps=1e-4)[0]
    assert r4(trl) == 1.4997 == r4(0.75 / (0.5 + 1e-4))
    assert r.var() == 0.1875 and r4(r.std()) == 0.4330
    book = group_advantages(r)[0]
    assert r4(book) == 1.7321 == r4(np.sqrt(3))
    assert r4(trl / book) == 0.8659 and r4(np.sqrt(3 / 4)) == 0.8660 and abs(trl / book - np.sqrt(3 / 4)) < 1e-3
