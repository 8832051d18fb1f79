"""Tests for rl4llm.toy_grpo (chapter 13): the GRPO loop on the toy, the k3 direction, per-token
ratios on the "5"/"05" toy and the length bias of each loss aggregation."""
import numpy as np
import pytest
import torch

from rl4llm import CORRECT, LOGITS, REWARDS, entropy, kl_divergence, softmax
from rl4llm.grpo import group_advantages
from rl4llm.toy_grpo import (SLIDER_RUN, TWO_STEP_ANSWERS, aggregation_weights, entropy_gradient,
                             forward_kl_gradient, grpo_slider_run, grpo_toy_run, k3_loss_gradient,
                             reverse_kl_gradient, run_over_seeds, two_step_answer_probs,
                             two_step_inner_steps, two_step_logits)
from numerics import finite_difference

PI = softmax(LOGITS)
REF = np.log([0.3, 0.3, 0.2, 0.1, 0.1])   # the reference policy of chapter 13
PROPORTIONAL = np.repeat(np.arange(5), [1, 4, 2, 2, 1])   # each answer in proportion to pi (exact)


def k3(z, ref, y):
    """Per-sample k3 = ref/pi - ln(ref/pi) - 1, written independently of the library."""
    log_ratio = np.log(softmax(ref)[y]) - np.log(softmax(z)[y])
    return np.exp(log_ratio) - log_ratio - 1


# ------------------------------------------------------------------ KL and entropy gradients
@pytest.mark.parametrize("z", [LOGITS, np.array([0.3, -1.0, 2.0, 0.0, 0.7])])
def test_kl_and_entropy_gradients_match_finite_differences(z):
    fwd = finite_difference(lambda x: kl_divergence(softmax(REF), softmax(x)), z)
    rev = finite_difference(lambda x: kl_divergence(softmax(x), softmax(REF)), z)
    ent = finite_difference(lambda x: entropy(softmax(x)), z)
    np.testing.assert_allclose(forward_kl_gradient(z, REF), fwd, atol=1e-8)
    np.testing.assert_allclose(reverse_kl_gradient(z, REF), rev, atol=1e-8)
    np.testing.assert_allclose(entropy_gradient(z), ent, atol=1e-8)


def test_printed_kl_gradients_on_the_toy():
    np.testing.assert_allclose(forward_kl_gradient(LOGITS, REF), [-0.2, 0.1, 0, 0.1, 0], atol=1e-12)
    np.testing.assert_allclose(np.round(reverse_kl_gradient(LOGITS, REF), 4),
                               [-0.1242, 0.0575, -0.0288, 0.1099, -0.0144])
    assert round(kl_divergence(PI, softmax(REF)), 4) == 0.1438
    assert round(kl_divergence(softmax(REF), PI), 4) == 0.174
    np.testing.assert_allclose(entropy_gradient(np.zeros(5)), 0, atol=1e-15)


def test_k3_value_is_reverse_kl_but_its_gradient_is_the_forward_kl_gradient():
    res = k3_loss_gradient(LOGITS, REF, PROPORTIONAL)
    assert res["value"] == pytest.approx(kl_divergence(PI, softmax(REF)), abs=1e-12)
    np.testing.assert_allclose(res["gradient"], PI - softmax(REF), atol=1e-12)
    assert np.abs(res["gradient"] - reverse_kl_gradient(LOGITS, REF)).max() > 0.02
    # independent route: finite differences of E_{y ~ pi_0}[k3_z(y)] with the sampling law held fixed
    fd = finite_difference(lambda z: sum(PI[y] * k3(z, REF, y) for y in range(5)), LOGITS)
    np.testing.assert_allclose(fd, forward_kl_gradient(LOGITS, REF), atol=1e-8)


def test_k3_gradient_monte_carlo_within_four_standard_errors():
    rng = np.random.default_rng(3)
    ys = rng.choice(5, size=20000, p=PI)
    res = k3_loss_gradient(LOGITS, REF, ys)
    per_sample = (1 - softmax(REF)[ys] / PI[ys])[:, None] * (np.eye(5)[ys] - PI)   # grad of k3(y), by hand
    se = per_sample.std(axis=0, ddof=1) / np.sqrt(ys.size)
    assert np.all(np.abs(res["gradient"] - forward_kl_gradient(LOGITS, REF)) <= 4 * se + 1e-12)
    np.testing.assert_allclose(res["gradient"], per_sample.mean(axis=0), atol=1e-12)


def test_k3_bad_samples():
    with pytest.raises(ValueError, match="samples"):
        k3_loss_gradient(LOGITS, REF, [0, 7])
    with pytest.raises(ValueError, match="ref_logits"):
        k3_loss_gradient(LOGITS, np.zeros(4), [0])


# ------------------------------------------------------------------ the GRPO loop
def test_first_step_matches_a_hand_written_grpo_step():
    run = grpo_toy_run(G=8, steps=1, K=1, lr=0.7, seed=5)
    from rl4llm.estimators import sample_groups
    ys = sample_groups(PI, 8, 1, np.random.default_rng(5))[0]
    r = REWARDS[ys]
    A = (r - r.mean()) / (r.std() + 1e-8) if r.std() > 0 else np.zeros(8)
    grad = (A[:, None] * (np.eye(5)[ys] - PI)).mean(axis=0)
    np.testing.assert_allclose(run["logits"][1], LOGITS + 0.7 * grad, atol=1e-12)
    assert run["clip_fraction"][0] == 0.0


def test_run_shapes_and_start_values():
    run = grpo_toy_run(steps=5, K=2, seed=1)
    assert run["pi_correct"].shape == (6,) and run["clip_fraction"].shape == (5,)
    assert run["logits"].shape == (6, 5)
    assert run["pi_correct"][0] == pytest.approx(0.2)
    assert run["J"][0] == pytest.approx(0.2)
    assert run["kl_ref"][0] == 0.0
    assert run["entropy"][0] == pytest.approx(entropy(PI))


def test_grpo_raises_pi5_and_entropy_collapses():
    run = grpo_toy_run(steps=30, seed=0)
    assert run["pi_correct"][-1] > 0.9
    assert run["entropy"][-1] < 0.5 * run["entropy"][0]


def test_entropy_bonus_and_beta_keep_the_policy_spread():
    plain = run_over_seeds(grpo_toy_run, range(3), steps=30)
    bonus = run_over_seeds(grpo_toy_run, range(3), steps=30, entropy_coef=0.5)
    leash = run_over_seeds(grpo_toy_run, range(3), steps=30, beta=0.5)
    assert bonus["entropy"][:, -1].mean() > plain["entropy"][:, -1].mean() + 0.2
    assert leash["kl_ref"][:, -1].mean() < plain["kl_ref"][:, -1].mean()


def test_zero_spread_groups_do_not_move_the_policy():
    run = grpo_toy_run(steps=5, rewards=np.zeros(5), seed=2)
    np.testing.assert_array_equal(run["logits"], np.tile(LOGITS, (6, 1)))


def test_clip_binds_with_many_inner_steps():
    run = grpo_toy_run(steps=3, K=8, lr=2.0, seed=0)
    assert run["clip_fraction"].max() > 0


def test_run_over_seeds_stacks():
    out = run_over_seeds(grpo_toy_run, [0, 1], steps=2)
    assert out["pi_correct"].shape == (2, 3)
    assert run_over_seeds(lambda seed: np.arange(3) + seed, [0, 4]).tolist() == [[0, 1, 2], [4, 5, 6]]
    with pytest.raises(ValueError, match="seeds"):
        run_over_seeds(grpo_toy_run, [])


def test_slider_run_uses_the_short_settings():
    out = grpo_slider_run(G=4, eps=0.3, lr=0.5, beta=0.1)
    ref = grpo_toy_run(G=4, eps_low=0.3, lr=0.5, beta=0.1, **SLIDER_RUN)
    np.testing.assert_array_equal(out["pi_correct"], ref["pi_correct"])


@pytest.mark.parametrize("kwargs, name", [
    ({"G": 1}, "G"), ({"K": 0}, "K"), ({"steps": 0}, "steps"), ({"lr": 0.0}, "lr"),
    ({"eps_low": 0.0}, "eps_low"), ({"eps_low": 1.0}, "eps_low"), ({"eps_low": -0.2}, "eps_low"),
    ({"eps_high": 1.5}, "eps_high"), ({"beta": -0.1}, "beta"), ({"entropy_coef": -1.0}, "entropy_coef"),
    ({"ddof": 2}, "ddof"), ({"seed": -1}, "seed"), ({"rewards": [0, 1]}, "rewards"),
    ({"ref_logits": [0, 0]}, "ref_logits"),
])
def test_grpo_toy_run_bad_input(kwargs, name):
    with pytest.raises(ValueError, match=name):
        grpo_toy_run(steps=kwargs.pop("steps", 1), **kwargs)


def test_slider_bad_input():
    with pytest.raises(ValueError, match="eps_low"):
        grpo_slider_run(eps=1.2)
    with pytest.raises(ValueError, match="G"):
        grpo_slider_run(G=1)


# ------------------------------------------------------------------ the "5" / "05" toy
def test_two_step_probabilities():
    probs = two_step_answer_probs()
    assert sum(probs.values()) == pytest.approx(1.0)
    assert probs["5"] == pytest.approx(0.16) and probs["05"] == pytest.approx(0.02)
    assert probs["5"] / probs["05"] == pytest.approx(8.0)
    assert set(probs) == set(TWO_STEP_ANSWERS)
    assert set(two_step_logits()) == {"", "5", "0"}


GROUP = ["5", "05", "50", "4", "0", "6"]


def test_per_token_ratios():
    res = two_step_inner_steps(GROUP, K=3, lr=1.0)
    np.testing.assert_array_equal(res["rewards"], [1, 1, 0, 0, 0, 0])
    np.testing.assert_allclose(res["advantages"], group_advantages(res["rewards"]))
    assert np.all(res["ratios"][0] == 1.0) and res["clip_fraction"][0] == 0.0
    mask = res["mask"]
    np.testing.assert_array_equal(mask.sum(axis=1), [len(TWO_STEP_ANSWERS[a]) for a in GROUP])
    # sequence ratio = product of token ratios = pi(answer) / pi_old(answer)
    for k in range(4):
        for i, a in enumerate(GROUP):
            assert res["sequence_ratios"][k, i] == pytest.approx(res["answer_probs"][k][a] / res["answer_probs"][0][a])
    # grpo_loss's clip fraction = share of unmasked tokens where the clip binds, recounted here
    A = res["advantages"][None, :, None]
    binds = ((res["ratios"] > 1.2) & (A > 0)) | ((res["ratios"] < 0.8) & (A < 0))
    np.testing.assert_allclose(res["clip_fraction"], (binds * mask).sum(axis=(1, 2)) / mask.sum())
    np.testing.assert_array_equal(res["clipped"], binds & (mask > 0))
    # the EOS after "05" is certain: its ratio stays 1
    assert np.all(res["ratios"][:, 1, 2] == 1.0)
    # a shared first token: "5" in the right "5" and the wrong "50" has one ratio
    np.testing.assert_allclose(res["ratios"][:, 0, 0], res["ratios"][:, 2, 0])


def test_per_token_ratios_printed_in_chapter_13():
    res = two_step_inner_steps(GROUP, K=3, lr=1.0)
    assert np.round(res["ratios"][1, 0, 0], 4) == pytest.approx(1.0981, abs=1e-4)


@pytest.mark.parametrize("kwargs, name", [
    ({"answers": ["5"]}, "answers"), ({"answers": ["5", "7"]}, "answers"), ({"K": 0}, "K"),
    ({"eps_low": 1.0}, "eps_low"), ({"loss_type": "mean"}, "loss_type"), ({"lr": -1.0}, "lr"),
])
def test_two_step_bad_input(kwargs, name):
    args = {"answers": GROUP, **kwargs}
    with pytest.raises(ValueError, match=name):
        two_step_inner_steps(**args)


# ------------------------------------------------------------------ aggregation
REW, LEN = np.array([1.0, 1.0, 0.0, 0.0]), np.array([2, 8, 2, 8])


@pytest.mark.parametrize("loss_type", ["grpo", "bnpo", "dapo", "dr_grpo"])
def test_aggregation_weights_match_closed_forms(loss_type):
    A = group_advantages(REW)
    out = aggregation_weights(REW, LEN, loss_type, max_completion_length=8)
    expected = {"grpo": A / (4 * LEN), "bnpo": A / LEN.sum(), "dapo": A / LEN.sum(), "dr_grpo": A / (4 * 8)}[loss_type]
    np.testing.assert_allclose(out["per_token"], expected, rtol=1e-12)
    np.testing.assert_allclose(out["per_answer"], expected * LEN, rtol=1e-12)


def test_aggregation_weights_printed_in_chapter_13():
    grpo = aggregation_weights(REW, LEN, "grpo")["per_token"]
    dapo = aggregation_weights(REW, LEN, "dapo")["per_token"]
    dr = aggregation_weights(REW, LEN, "dr_grpo", max_completion_length=8)["per_token"]
    np.testing.assert_allclose(np.round(grpo, 4), [0.125, 0.0312, -0.125, -0.0312])
    np.testing.assert_allclose(np.round(dapo, 4), [0.05, 0.05, -0.05, -0.05])
    np.testing.assert_allclose(np.round(dr, 4), [0.0312, 0.0312, -0.0312, -0.0312])
    # a long wrong answer is pushed down 4x more gently per token than a short one under "grpo"
    assert grpo[2] / grpo[3] == pytest.approx(4.0)
    # dapo: the same short answer's weight changes when the others get longer (batch dependence)
    longer = aggregation_weights(REW, np.array([2, 16, 2, 16]), "dapo")["per_token"]
    assert round(float(longer[0]), 4) == 0.0278


def test_aggregation_weights_against_finite_differences_of_grpo_loss():
    from rl4llm.grpo import grpo_loss
    A = torch.tensor(group_advantages(REW))
    mask = (torch.arange(8)[None, :] < torch.tensor(LEN)[:, None]).double()
    out = aggregation_weights(REW, LEN, "grpo")["per_token"]
    h = 1e-6
    for i in range(4):
        plus, minus = torch.zeros(4, 8, dtype=torch.float64), torch.zeros(4, 8, dtype=torch.float64)
        plus[i, 0], minus[i, 0] = h, -h
        lp = grpo_loss(plus, torch.zeros(4, 8, dtype=torch.float64), A, mask)[0]
        lm = grpo_loss(minus, torch.zeros(4, 8, dtype=torch.float64), A, mask)[0]
        assert -(float(lp) - float(lm)) / (2 * h) == pytest.approx(out[i], abs=1e-7)


def test_aggregation_bad_input():
    with pytest.raises(ValueError, match="max_completion_length"):
        aggregation_weights(REW, LEN, "dr_grpo")
    with pytest.raises(ValueError, match="max_completion_length"):
        aggregation_weights(REW, LEN, "dr_grpo", max_completion_length=4)
    with pytest.raises(ValueError, match="loss_type"):
        aggregation_weights(REW, LEN, "sum")
    with pytest.raises(ValueError, match="lengths"):
        aggregation_weights(REW, [2, 0, 2, 2], "grpo")
    with pytest.raises(ValueError, match="rewards"):
        aggregation_weights([1.0], [2], "grpo")


def test_all_equal_group_gives_zero_weights():
    out = aggregation_weights([1.0, 1.0, 1.0], [1, 2, 3], "grpo")
    assert np.all(out["per_token"] == 0.0) and np.all(np.isfinite(out["per_token"]))


def test_one_inner_step_without_scaling_is_chapter_9s_on_policy_loop():
    from rl4llm.onpolicy import on_policy_loop
    ours = grpo_toy_run(G=8, steps=10, K=1, lr=1.0, scale=False, seed=3)["pi_correct"]
    theirs = on_policy_loop(LOGITS, REWARDS, 8, 1.0, 10, 3)["pi_correct"]
    np.testing.assert_allclose(ours, theirs, atol=1e-12)


# ------------------------------------------------------------------ other numbers printed in chapter 13
def test_std_scaling_table_numbers():
    groups = (np.arange(8)[None, :] < np.arange(1, 8)[:, None]).astype(float)
    raw = np.abs(group_advantages(groups, scale=False)).sum(axis=1)
    std = np.abs(group_advantages(groups)).sum(axis=1)
    p = np.arange(1, 8) / 8
    np.testing.assert_allclose(raw, 16 * p * (1 - p))                       # 2 G p (1 - p)
    np.testing.assert_allclose(std, 16 * np.sqrt(p * (1 - p)), rtol=1e-6)   # 2 G sqrt(p (1 - p))
    assert round(raw[0] / raw[3], 4) == 0.4375 and round(std[0] / std[3], 4) == 0.6614
    assert round(float(group_advantages(groups[0])[0]), 4) == 2.6458


def test_ddof_ratio_numbers():
    for G in (8, 2):
        row = np.r_[1.0, np.zeros(G - 1)]
        ratio = group_advantages(row, ddof=1)[0] / group_advantages(row, ddof=0)[0]
        assert ratio == pytest.approx(np.sqrt((G - 1) / G), rel=1e-6)
    assert round(float(group_advantages([1.0, 0.0], ddof=1)[0]), 4) == 0.7071


def test_exercise_ch13_aggregation_numbers():
    r, L = [1.0, 0.0, 0.0, 0.0], np.array([3, 1, 1, 6])
    np.testing.assert_allclose(np.round(aggregation_weights(r, L, "grpo")["per_token"], 4), [0.1443, -0.1443, -0.1443, -0.0241])
    np.testing.assert_allclose(np.round(aggregation_weights(r, L, "dapo")["per_token"], 4), [0.1575, -0.0525, -0.0525, -0.0525])
    np.testing.assert_allclose(np.round(aggregation_weights(r, L, "dr_grpo", 6)["per_token"], 4), [0.0722, -0.0241, -0.0241, -0.0241])


def test_stuck_start_and_entropy_bonus():
    stuck = LOGITS + np.array([0.0, 5.0, 0.0, 0.0, 0.0])
    assert round(float((1 - softmax(stuck)[CORRECT]) ** 8), 4) == 0.9736
    plain = run_over_seeds(grpo_toy_run, range(4), steps=40, logits=stuck)
    bonus = run_over_seeds(grpo_toy_run, range(4), steps=40, logits=stuck, entropy_coef=0.2)
    assert bonus["pi_correct"][:, -1].mean() > plain["pi_correct"][:, -1].mean() + 0.3
