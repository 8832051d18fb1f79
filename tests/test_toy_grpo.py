"""Tests for rl4llm.studies.toy_grpo and rl4llm.llm.grpo_toys (chapters 13 and 14): the GRPO loop on the toy, the
k3 direction, per-token ratios on the "5"/"05" toy and the length bias of each loss aggregation."""
import numpy as np
import pytest
import torch

from rl4llm import CORRECT, LOGITS, REWARDS, entropy, kl_divergence, softmax
from rl4llm.math.credit import group_advantages
from rl4llm.llm.grpo_toys import aggregation_weights, k3_loss_gradient, two_step_inner_steps
from rl4llm.math.two_step import answer_probabilities
from rl4llm.studies.toy_grpo import (SLIDER_RUN, entropy_gradient, forward_kl_gradient, grpo_slider_run, grpo_toy_run,
                                     reverse_kl_gradient, run_over_seeds)
from rl4llm.toy.two_step import TOKENS, two_step_logits
from numerics import finite_difference

PI = softmax(LOGITS)
REF = np.log([0.3, 0.3, 0.2, 0.1, 0.1])   # the reference policy of chapter 14
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
    from rl4llm.math.estimators import sample_groups
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
    probs = answer_probabilities()
    assert sum(probs.values()) == pytest.approx(1.0)
    assert probs["5"] == pytest.approx(0.16) and probs["05"] == pytest.approx(0.02)
    assert probs["5"] / probs["05"] == pytest.approx(8.0)
    assert set(probs) == set(TOKENS)
    assert set(two_step_logits()) == {"", "5", "0"}


GROUP = ["5", "05", "50", "4", "0", "6"]


def test_per_token_ratios():
    res = two_step_inner_steps(GROUP, K=3, lr=1.0)
    np.testing.assert_array_equal(res["rewards"], [1, 1, 0, 0, 0, 0])
    np.testing.assert_allclose(res["advantages"], group_advantages(res["rewards"]))
    assert np.all(res["ratios"][0] == 1.0) and res["clip_fraction"][0] == 0.0
    mask = res["mask"]
    np.testing.assert_array_equal(mask.sum(axis=1), [len(TOKENS[a]) for a in GROUP])
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


@pytest.mark.parametrize("loss_type", ["grpo", "bnpo", "dapo", "dr_grpo", "cispo"])
def test_aggregation_weights_match_closed_forms(loss_type):
    A = group_advantages(REW)
    out = aggregation_weights(REW, LEN, loss_type, max_completion_length=8)
    expected = {"grpo": A / (4 * LEN), "bnpo": A / LEN.sum(), "dapo": A / LEN.sum(), "dr_grpo": A / (4 * 8),
                "cispo": A / LEN.sum()}[loss_type]
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
    from rl4llm.llm.grpo import grpo_loss
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
    from rl4llm.studies.onpolicy import on_policy_loop
    ours = grpo_toy_run(G=8, steps=10, K=1, lr=1.0, scale=False, seed=3)["pi_correct"]
    theirs = on_policy_loop(LOGITS, REWARDS, 8, 1.0, 10, 3)["pi_correct"]
    np.testing.assert_allclose(ours, theirs, atol=1e-12)


# ------------------------------------------------------------------ other numbers printed in chapter 14
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


def test_stuck_start_and_entropy_bonus():
    stuck = LOGITS + np.array([0.0, 5.0, 0.0, 0.0, 0.0])
    assert round(float((1 - softmax(stuck)[CORRECT]) ** 8), 4) == 0.9736
    plain = run_over_seeds(grpo_toy_run, range(4), steps=40, logits=stuck)
    bonus = run_over_seeds(grpo_toy_run, range(4), steps=40, logits=stuck, entropy_coef=0.2)
    assert bonus["pi_correct"][:, -1].mean() > plain["pi_correct"][:, -1].mean() + 0.3


# ------------------------------------------------------------------ per-inner-step diagnostics (chapter 13)
def _hand_run(seed, steps, K, lr, eps=0.2):
    """The GRPO loop written out from the chapter-11 pieces, recording what grpo_toy_run records."""
    from rl4llm.math.estimators import sample_groups
    from rl4llm import clip_fraction, clipped_surrogate_gradient
    rng, z = np.random.default_rng(seed), LOGITS.copy()
    clip, size, flat = [], [], []
    for _ in range(steps):
        z_old = z.copy()
        ys = sample_groups(softmax(z_old), 8, 1, rng)[0]
        A = group_advantages(REWARDS[ys])
        flat.append(float(np.ptp(REWARDS[ys]) == 0))
        row_c, row_s = [], []
        for _ in range(K):
            rho = softmax(z)[ys] / softmax(z_old)[ys]
            row_c.append(clip_fraction(rho, A, eps))
            new = z + lr * clipped_surrogate_gradient(z, z_old, ys, A, eps)
            row_s.append(np.linalg.norm(new - z))
            z = new
        clip.append(row_c)
        size.append(row_s)
    return np.array(clip), np.array(size), np.array(flat), z


def test_inner_step_diagnostics_match_a_hand_written_loop():
    run = grpo_toy_run(seed=0, steps=6)
    clip, size, flat, z = _hand_run(0, 6, 4, 1.0)
    np.testing.assert_array_equal(run["inner_clip_fraction"], clip)
    np.testing.assert_allclose(run["inner_step_size"], size, atol=1e-12)
    np.testing.assert_array_equal(run["zero_std"], flat)
    np.testing.assert_allclose(run["logits"][-1], z, atol=1e-12)
    np.testing.assert_allclose(run["clip_fraction"], clip.mean(axis=1))
    # the steps sum to at least the distance travelled (triangle inequality)
    travelled = np.linalg.norm(np.diff(run["logits"], axis=0), axis=1)
    assert np.all(run["inner_step_size"].sum(axis=1) >= travelled - 1e-12)


def test_saturated_clip_printed_in_chapter_13():
    """lr 1 with std-scaled advantages: the clip saturates and the late inner steps are idle."""
    run = grpo_toy_run(seed=0)
    np.testing.assert_array_equal(run["inner_clip_fraction"][:3],
                                  [[0, 0.25, 0.75, 0.875], [0, 0.75, 1, 1], [0, 1, 1, 1]])
    assert np.all(run["inner_clip_fraction"][:, 0] == 0)          # rho = 1 at the first inner step
    fully = run["inner_clip_fraction"] == 1.0                      # every sample clipped, no KL/bonus:
    assert fully.any() and np.all(run["inner_step_size"][fully] == 0.0)   # the inner step does nothing
    assert run["clip_fraction"][2] == 0.75


def test_zero_std_marks_flat_groups():
    run = grpo_toy_run(seed=0, steps=30)
    flat = run["zero_std"] == 1
    # a flat group moves nothing: the logits after that step equal those before
    np.testing.assert_array_equal(run["logits"][1:][flat], run["logits"][:-1][flat])
    assert np.all(run["inner_step_size"][flat] == 0.0)
    assert run["zero_std"].sum() > 0 and run["zero_std"][:4].sum() == 0


def test_kl_direction_reverse_step_matches_hand_computation():
    ref = np.log([0.3, 0.3, 0.2, 0.1, 0.1])
    start = np.log([0.05, 0.05, 0.8, 0.05, 0.05])
    flat_rewards = np.zeros(5)       # no advantage signal: only the leash moves the policy
    for direction, gradient in (("forward", forward_kl_gradient), ("reverse", reverse_kl_gradient)):
        run = grpo_toy_run(steps=1, K=1, lr=0.5, beta=0.7, logits=start, rewards=flat_rewards,
                           ref_logits=ref, kl_direction=direction)
        np.testing.assert_allclose(run["logits"][1], start - 0.5 * 0.7 * gradient(start, ref), atol=1e-12)
    with pytest.raises(ValueError, match="kl_direction"):
        grpo_toy_run(steps=1, kl_direction="both")


def test_kl_pull_norms_on_a_narrowed_policy():
    """Chapter 14: on pi = (.005, .005, .98, .005, .005) the forward pull is ~8x the reverse one."""
    narrow = np.log([0.005, 0.005, 0.98, 0.005, 0.005])
    assert round(float(np.linalg.norm(forward_kl_gradient(narrow, LOGITS))), 4) == 0.9058
    assert round(float(np.linalg.norm(reverse_kl_gradient(narrow, LOGITS))), 4) == 0.1120
    # along the path pi(5) = p, the rest spread evenly: forward grows, reverse peaks then fades
    norms = []
    for p in (0.5, 0.8, 0.9, 0.98, 0.995):
        z = np.log(np.r_[(1 - p) / 4, (1 - p) / 4, p, (1 - p) / 4, (1 - p) / 4])
        norms.append((np.linalg.norm(forward_kl_gradient(z, LOGITS)), np.linalg.norm(reverse_kl_gradient(z, LOGITS))))
    forward, reverse = np.array(norms).T
    assert np.all(np.diff(forward) > 0) and np.argmax(reverse) == 1 and reverse[-1] < 0.05


def test_bias_corrected_k3_follows_the_reverse_kl():
    res = k3_loss_gradient(LOGITS, REF, PROPORTIONAL, bias_correction=True)
    plain = k3_loss_gradient(LOGITS, REF, PROPORTIONAL)
    assert res["value"] == pytest.approx(plain["value"], abs=1e-12)          # rho = 1 in value
    np.testing.assert_allclose(res["gradient"], reverse_kl_gradient(LOGITS, REF), atol=1e-12)
    # independent route: finite differences of E_{y ~ pi_0}[rho_z(y) k3_z(y)], rho_z = pi_z / pi_0
    fd = finite_difference(lambda z: sum(PI[y] * softmax(z)[y] / PI[y] * k3(z, REF, y) for y in range(5)), LOGITS)
    np.testing.assert_allclose(fd, reverse_kl_gradient(LOGITS, REF), atol=1e-8)
    with pytest.raises(ValueError, match="bias_correction"):
        k3_loss_gradient(LOGITS, REF, PROPORTIONAL, bias_correction="yes")


def test_clip_higher_is_used_by_the_loop():
    low = grpo_toy_run(seed=1, steps=5, lr=0.3)
    same = grpo_toy_run(seed=1, steps=5, lr=0.3, eps_high=0.2)
    high = grpo_toy_run(seed=1, steps=5, lr=0.3, eps_high=0.28)
    np.testing.assert_array_equal(low["logits"], same["logits"])
    assert not np.allclose(low["logits"], high["logits"])
    # same group, same first inner step: a higher upper edge can only clip fewer samples at the second
    assert high["inner_clip_fraction"][0, 1] <= low["inner_clip_fraction"][0, 1]
    np.testing.assert_array_equal(high["logits"][:1], low["logits"][:1])


# ------------------------------------------------------------------ tables (viz.grpo_toy, viz.grpo_choices, viz.summary)
def test_seed_table_numbers_and_verdicts():
    from rl4llm.math.statistics import noise_floor
    from rl4llm.viz.grpo_toy import seed_table
    a, b, c = np.array([0.1, 0.2, 0.3]), np.array([0.5, 0.6, 0.7]), np.array([0.15, 0.25, 0.2])
    table = seed_table({"a": a, "b": b, "c": c}, versus={"b": "a", "c": "a"})
    lines = table.strip().split("\n")
    assert len(lines) == 5 and lines[0] == "| setting | n | mean | sd | min | max | vs | diff. | floor | verdict |"
    row_a = [x.strip() for x in lines[2].strip("|").split("|")]
    assert row_a[:6] == ["a", "3", "0.2000", "0.1000", "0.1000", "0.3000"] and row_a[6:] == ["", "", "", ""]
    row_b = [x.strip() for x in lines[3].strip("|").split("|")]
    assert row_b[6:] == ["a", "+0.4000", f"{noise_floor(b, a):.4f}", "real"]
    row_c = [x.strip() for x in lines[4].strip("|").split("|")]
    assert row_c[9] == "within noise" and abs(c.mean() - a.mean()) < noise_floor(c, a)


@pytest.mark.parametrize("kwargs, match", [
    ({"results": {}}, "results"), ({"results": {"a": [1.0]}}, "results"),
    ({"results": {"a": [1.0, 2.0]}, "versus": {"a": "b"}}, "versus"),
    ({"results": {"a": [1.0, np.nan]}}, "results"), ({"results": {"a": [1.0, 2.0]}, "digits": -1}, "digits"),
])
def test_seed_table_bad_input(kwargs, match):
    from rl4llm.viz.grpo_toy import seed_table
    with pytest.raises(ValueError, match=match):
        seed_table(**kwargs)


def test_sweep_summary_matches_the_slider_runs():
    from rl4llm.viz.grpo_toy import sweep_summary
    table = sweep_summary("lr", [0.1, 3.0])
    lines = table.strip().split("\n")
    assert lines[0] == "| lr | 0.1 | 3 |"
    slow, fast = grpo_slider_run(lr=0.1), grpo_slider_run(lr=3.0)
    assert lines[3] == f"| π(5) after 10 steps | {slow['pi_correct'][-1]:.2f} | {fast['pi_correct'][-1]:.2f} |"
    assert lines[6] == f"| flat groups (no signal) | {int(slow['zero_std'].sum())} | {int(fast['zero_std'].sum())} |"
    with pytest.raises(ValueError, match="name"):
        sweep_summary("K", [1, 2])
    with pytest.raises(ValueError, match="values"):
        sweep_summary("G", [])
