"""group_advantages and grpo_loss (chapters 13-15), checked against independent plain loops."""
import math

import numpy as np
import pytest
import torch

from rl4llm import group_advantages, grpo_loss
from rl4llm.math.loss_types import LOSS_TYPES


# ---------- group_advantages ----------

def test_group_advantages_population_std():
    a = group_advantages([1.0, 0.0, 0.0, 0.0])
    # mean 0.25, population std sqrt(0.1875)
    std = math.sqrt(0.25 * 0.75)
    np.testing.assert_allclose(a, (np.array([1, 0, 0, 0]) - 0.25) / (std + 1e-8))


def test_group_advantages_sample_std_matches_trl_convention():
    r = np.array([1.0, 0.0, 1.0, 0.0, 0.0])
    a = group_advantages(r, ddof=1, eps=1e-4)
    mean = sum(r) / len(r)
    std = math.sqrt(sum((x - mean) ** 2 for x in r) / (len(r) - 1))
    np.testing.assert_allclose(a, [(x - mean) / (std + 1e-4) for x in r])


def test_group_advantages_unscaled_is_r_minus_mean_and_sums_to_zero():
    r = np.array([[0.3, 0.9, 0.0], [1.0, 1.0, 0.0]])
    a = group_advantages(r, scale=False)
    np.testing.assert_allclose(a, r - r.mean(axis=1, keepdims=True))
    np.testing.assert_allclose(a.sum(axis=1), 0.0, atol=1e-12)


def test_flat_group_gives_exact_zeros_never_nan():
    for r in ([1.0] * 8, [0.0] * 8, [0.1] * 3):
        for scale in (True, False):
            a = group_advantages(r, scale=scale)
            assert np.all(a == 0.0)
    t = group_advantages(torch.full((2, 4), 0.1), ddof=1)
    assert torch.equal(t, torch.zeros(2, 4))


def test_torch_and_numpy_agree():
    rng = np.random.default_rng(0)
    r = rng.integers(0, 2, size=(6, 8)).astype(float)
    for ddof in (0, 1):
        np.testing.assert_allclose(group_advantages(torch.tensor(r), ddof=ddof).numpy(),
                                   group_advantages(r, ddof=ddof), rtol=1e-6)


@pytest.mark.parametrize("kwargs, name", [
    ({"rewards": [1.0, float("nan")]}, "rewards"),
    ({"rewards": [1.0], "ddof": 1}, "rewards"),
    ({"rewards": [1.0, 0.0], "ddof": 2}, "ddof"),
    ({"rewards": [1.0, 0.0], "eps": -1.0}, "eps"),
    ({"rewards": [1.0, 0.0], "eps": float("inf")}, "eps"),
])
def test_group_advantages_bad_input(kwargs, name):
    with pytest.raises(ValueError, match=name):
        group_advantages(**kwargs)


# ---------- grpo_loss against a plain loop ----------

def reference_loss(logp, old, adv, mask, eps_low, eps_high, beta, ref, loss_type, L):
    """An independent, scalar, per-sequence loop over python floats."""
    B, T = len(logp), len(logp[0])
    per_seq_sums, per_seq_counts = [], []
    for i in range(B):
        s, n = 0.0, 0
        for t in range(T):
            if mask[i][t] == 0:
                continue
            rho = math.exp(logp[i][t] - old[i][t])
            clipped = min(max(rho, 1 - eps_low), 1 + eps_high)
            term = -min(rho * adv[i], clipped * adv[i])
            if beta > 0:
                d = ref[i][t] - logp[i][t]
                term += beta * (math.exp(d) - d - 1)
            s += term
            n += 1
        per_seq_sums.append(s)
        per_seq_counts.append(n)
    if loss_type == "grpo":
        return sum(s / max(n, 1) for s, n in zip(per_seq_sums, per_seq_counts)) / B
    if loss_type in ("bnpo", "dapo"):
        return sum(per_seq_sums) / max(sum(per_seq_counts), 1)
    return sum(per_seq_sums) / (B * L)


def random_batch(seed, B=5, T=7):
    g = torch.Generator().manual_seed(seed)
    logp = -torch.rand(B, T, generator=g, dtype=torch.float64) * 3
    old = logp + 0.4 * torch.randn(B, T, generator=g, dtype=torch.float64)
    ref = logp + 0.3 * torch.randn(B, T, generator=g, dtype=torch.float64)
    adv = torch.randn(B, generator=g, dtype=torch.float64)
    lengths = torch.randint(1, T + 1, (B,), generator=g)
    mask = (torch.arange(T)[None, :] < lengths[:, None]).to(torch.float64)
    mask[-1] = 0.0  # an all-masked row must not divide by zero
    return logp, old, adv, mask, ref


@pytest.mark.parametrize("loss_type", ["grpo", "bnpo", "dapo", "dr_grpo"])
@pytest.mark.parametrize("beta", [0.0, 0.05])
@pytest.mark.parametrize("eps_high", [None, 0.28])
def test_grpo_loss_matches_plain_loop(loss_type, beta, eps_high):
    for seed in range(3):
        logp, old, adv, mask, ref = random_batch(seed)
        loss, stats = grpo_loss(logp, old, adv, mask, eps_low=0.2, eps_high=eps_high, beta=beta,
                                ref_logp=ref, loss_type=loss_type, max_completion_length=9)
        expected = reference_loss(logp.tolist(), old.tolist(), adv.tolist(), mask.tolist(), 0.2,
                                  0.2 if eps_high is None else eps_high, beta, ref.tolist(), loss_type, 9)
        assert math.isfinite(float(loss))
        assert float(loss) == pytest.approx(expected, rel=1e-10, abs=1e-12)
        assert 0.0 <= stats["clip_fraction"] <= 1.0


@pytest.mark.parametrize("loss_type", ["grpo", "bnpo", "dr_grpo"])
def test_grpo_loss_gradient_matches_finite_differences(loss_type):
    logp, old, adv, mask, ref = random_batch(7, B=3, T=4)
    x = logp.clone().requires_grad_(True)
    loss, _ = grpo_loss(x, old, adv, mask, beta=0.1, ref_logp=ref, loss_type=loss_type, max_completion_length=4)
    loss.backward()
    h = 1e-6
    numeric = torch.zeros_like(logp)
    for i in range(logp.shape[0]):
        for t in range(logp.shape[1]):
            up, down = logp.clone(), logp.clone()
            up[i, t] += h
            down[i, t] -= h
            f = lambda z: float(grpo_loss(z, old, adv, mask, beta=0.1, ref_logp=ref, loss_type=loss_type,
                                          max_completion_length=4)[0])
            numeric[i, t] = (f(up) - f(down)) / (2 * h)
    torch.testing.assert_close(x.grad, numeric, rtol=1e-5, atol=1e-7)


def test_on_policy_ratio_is_one_and_gradient_is_policy_gradient():
    # With old = sg(logp), rho = 1: the loss value is -mean(A) per the aggregation, and the
    # gradient wrt logp_it is -A_i / |o_i| / B (the REINFORCE gradient under "grpo").
    logp = torch.tensor([[-1.0, -2.0], [-0.5, -0.1]], requires_grad=True)
    adv = torch.tensor([1.0, -1.0])
    mask = torch.tensor([[1.0, 1.0], [1.0, 0.0]])
    loss, stats = grpo_loss(logp, logp.detach(), adv, mask)
    loss.backward()
    assert stats["mean_ratio"] == pytest.approx(1.0)
    assert stats["clip_fraction"] == 0.0
    torch.testing.assert_close(logp.grad, torch.tensor([[-0.25, -0.25], [0.5, 0.0]]))


def test_clip_fraction_counts_only_binding_clips():
    # tokens: rho = 1.5 with A > 0 (binds), 1.5 with A < 0 (does not bind), 0.5 with A < 0 (binds),
    # 0.5 with A > 0 (does not bind); eps = 0.2.
    logp = torch.log(torch.tensor([[1.5], [1.5], [0.5], [0.5]]))
    old = torch.zeros(4, 1)
    adv = torch.tensor([1.0, -1.0, -1.0, 1.0])
    _, stats = grpo_loss(logp, old, adv, torch.ones(4, 1))
    assert stats["clip_fraction"] == pytest.approx(0.5)
    _, stats_masked = grpo_loss(logp, old, adv, torch.tensor([[1.0], [1.0], [0.0], [1.0]]))
    assert stats_masked["clip_fraction"] == pytest.approx(1 / 3)
    # eps_high widens only the upper side: rho = 1.5 with A > 0 no longer binds at eps_high = 0.6
    _, stats_wide = grpo_loss(logp, old, adv, torch.ones(4, 1), eps_high=0.6)
    assert stats_wide["clip_fraction"] == pytest.approx(0.25)


def test_k3_kl_stat_and_zero_at_reference():
    logp = torch.tensor([[-1.0, -2.0]])
    _, stats = grpo_loss(logp, logp, torch.tensor([0.0]), torch.ones(1, 2), beta=0.1, ref_logp=logp)
    assert stats["mean_kl"] == 0.0
    ref = logp + torch.tensor([[0.5, -0.5]])
    _, stats = grpo_loss(logp, logp, torch.tensor([0.0]), torch.ones(1, 2), beta=0.1, ref_logp=ref)
    k3 = [math.exp(d) - d - 1 for d in (0.5, -0.5)]
    assert stats["mean_kl"] == pytest.approx(sum(k3) / 2, rel=1e-6)


def test_zero_advantage_group_gives_finite_zero_loss():
    logp = torch.randn(4, 3)
    adv = group_advantages(torch.ones(1, 4)).reshape(4)
    loss, _ = grpo_loss(logp, logp + 0.1, adv, torch.ones(4, 3))
    assert float(loss) == 0.0


def test_all_masked_batch_is_finite():
    logp = torch.randn(2, 3, requires_grad=True)
    for lt in ("grpo", "bnpo", "dr_grpo"):
        loss, stats = grpo_loss(logp, logp.detach(), torch.ones(2), torch.zeros(2, 3), loss_type=lt,
                                max_completion_length=3)
        assert float(loss.detach()) == 0.0 and stats["clip_fraction"] == 0.0


@pytest.mark.parametrize("loss_type", list(LOSS_TYPES))
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("extreme", [-1e4, 1e4, -math.inf])
def test_padding_with_an_extreme_log_prob_changes_nothing(loss_type, dtype, extreme):
    """A padded position whose log-probs overflow exp (ref - logp = 1e4, or logp - old = 1e4) must
    leave the loss and its gradient exactly as with harmless padding: the exponents are masked
    before exp, so no inf * 0 = NaN reaches the loss."""
    logp = torch.tensor([[-0.7, -1.2, -0.3], [-2.0, -0.1, 0.0]], dtype=dtype)
    old = logp + torch.tensor([[0.1, -0.2, 0.0], [0.05, 0.0, 0.0]], dtype=dtype)
    ref = logp + torch.tensor([[-0.3, 0.2, 0.0], [0.4, -0.1, 0.0]], dtype=dtype)
    adv = torch.tensor([1.3, -0.6], dtype=dtype)
    mask = torch.tensor([[1.0, 1.0, 1.0], [1.0, 1.0, 0.0]], dtype=dtype)     # (1, 2) is padding

    def run(logp_pad, old_pad, ref_pad):
        x, o, r = logp.clone(), old.clone(), ref.clone()
        x[1, 2], o[1, 2], r[1, 2] = logp_pad, old_pad, r[1, 2] if ref_pad is None else ref_pad
        x.requires_grad_(True)
        loss, stats = grpo_loss(x, o, adv, mask, beta=0.04, ref_logp=r, loss_type=loss_type,
                                max_completion_length=3)
        loss.backward()
        return loss.detach(), x.grad, stats

    clean_loss, clean_grad, clean_stats = run(0.0, 0.0, 0.0)
    # the padded log-prob itself extreme (k3's exp(ref - logp) overflows for -1e4),
    # the old log-prob extreme (the ratio's exp(logp - old) overflows for -1e4 there),
    # the reference's extreme (exp(ref - logp) overflows for +1e4)
    for pads in ((extreme, 0.0, 0.0), (0.0, extreme, 0.0), (0.0, 0.0, extreme)):
        loss, grad, stats = run(*pads)
        assert torch.isfinite(loss) and torch.isfinite(grad).all(), pads
        assert torch.equal(loss, clean_loss), pads
        assert torch.equal(grad, clean_grad), pads
        assert grad[1, 2] == 0.0
        assert stats == clean_stats
    # and the padded batch equals the same answers without the padding column's token
    short_loss = grpo_loss(logp[1:, :2], old[1:, :2], adv[1:], mask[1:, :2], beta=0.04,
                           ref_logp=ref[1:, :2], loss_type="bnpo")[0]
    masked_row = grpo_loss(logp[1:], old[1:], adv[1:], mask[1:], beta=0.04, ref_logp=ref[1:],
                           loss_type="bnpo")[0]
    torch.testing.assert_close(masked_row, short_loss, rtol=0, atol=0)


@pytest.mark.parametrize("kwargs, name", [
    ({"eps_low": 0.0}, "eps_low"),
    ({"eps_low": 1.0}, "eps_low"),
    ({"eps_high": -0.1}, "eps_high"),
    ({"beta": -0.01}, "beta"),
    ({"beta": 0.1}, "ref_logp"),
    ({"loss_type": "sum"}, "loss_type"),
    ({"loss_type": "dr_grpo"}, "max_completion_length"),
    ({"loss_type": "dr_grpo", "max_completion_length": 0}, "max_completion_length"),
])
def test_grpo_loss_bad_options(kwargs, name):
    logp = torch.zeros(2, 3)
    with pytest.raises(ValueError, match=name):
        grpo_loss(logp, logp, torch.zeros(2), torch.ones(2, 3), **kwargs)


def test_grpo_loss_bad_shapes_and_mask():
    logp = torch.zeros(2, 3)
    with pytest.raises(ValueError, match="old_logp"):
        grpo_loss(logp, torch.zeros(2, 4), torch.zeros(2), torch.ones(2, 3))
    with pytest.raises(ValueError, match="mask"):
        grpo_loss(logp, logp, torch.zeros(2), torch.ones(3, 3))
    with pytest.raises(ValueError, match="advantages"):
        grpo_loss(logp, logp, torch.zeros(3), torch.ones(2, 3))
    with pytest.raises(ValueError, match="mask"):
        grpo_loss(logp, logp, torch.zeros(2), torch.full((2, 3), 0.5))
    with pytest.raises(ValueError, match="ref_logp"):
        grpo_loss(logp, logp, torch.zeros(2), torch.ones(2, 3), beta=0.1, ref_logp=torch.zeros(1, 3))
    with pytest.raises(ValueError, match="logp"):
        grpo_loss(torch.zeros(6), torch.zeros(6), torch.zeros(2), torch.ones(6))
