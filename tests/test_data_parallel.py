"""Data parallelism and the GRPO normalisers (chapter 16): the in-process all-reduce, against closed forms.

The launched route (two real processes, TRL's own loss, DDP's all-reduce over gloo) is checked
against the same function in tests/test_grpo_trl_script.py.
"""
import copy

import numpy as np
import pytest
import torch

from rl4llm.llm.data_parallel import data_parallel_loss, normalisation_table, shard_slices
from rl4llm.math.loss_types import LOSS_TYPES, loss_types_with
from rl4llm.llm.grpo import grpo_loss
from rl4llm.llm.model import GPT, GPTConfig
from rl4llm.llm.trainer import GRPOConfig

L = 5     # max_completion_length of the random batches


def random_batch(seed, B=8, T=L, dtype=torch.float64):
    gen = torch.Generator().manual_seed(seed)
    lengths = torch.randint(1, T + 1, (B, 1), generator=gen)
    mask = (torch.arange(T)[None, :] < lengths).to(dtype)
    logp = (-torch.rand(B, T, generator=gen, dtype=dtype) * 3).requires_grad_()
    old = logp.detach() + 0.4 * torch.randn(B, T, generator=gen, dtype=dtype)
    ref = logp.detach() + 0.4 * torch.randn(B, T, generator=gen, dtype=dtype)
    adv = torch.randn(B, generator=gen, dtype=dtype)
    return logp, old, adv, mask, ref


KW = dict(eps_low=0.2, eps_high=0.28, beta=0.04, max_completion_length=L)


def per_token_losses(logp, old, adv, mask, ref):
    """The per-token loss of grpo_loss, written out again (numpy), to build the closed forms."""
    lp, o, r, m = (x.detach().numpy() for x in (logp, old, ref, mask))
    a = adv.detach().numpy()[:, None]
    rho = np.exp(lp - o)
    obj = np.minimum(rho * a, np.clip(rho, 0.8, 1.28) * a)
    k3 = np.exp(r - lp) - (r - lp) - 1
    return (-obj + 0.04 * k3) * m, m


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("P", [1, 2, 4])
def test_closed_forms(seed, P):
    """grpo, dr_grpo, dapo: the one-process loss; bnpo: the mean of per-process token means."""
    logp, old, adv, mask, ref = random_batch(seed)
    l, m = per_token_losses(logp, old, adv, mask, ref)
    S, N, B = l.sum(), m.sum(), l.shape[0]
    blocks = np.split(np.arange(B), P)
    expected = {"grpo": np.mean(l.sum(1) / m.sum(1)), "dr_grpo": S / (B * L), "dapo": S / N,
                "bnpo": np.mean([l[b].sum() / m[b].sum() for b in blocks])}
    for loss_type in expected:
        loss, per = data_parallel_loss(logp, old, adv, mask, num_processes=P, loss_type=loss_type, ref_logp=ref, **KW)
        assert len(per) == P
        assert float(loss.detach()) == pytest.approx(expected[loss_type], rel=1e-12, abs=1e-14), loss_type


@pytest.mark.parametrize("seed", range(5))
def test_one_process_is_grpo_loss_and_the_invariant_ones_keep_the_gradient(seed):
    logp, old, adv, mask, ref = random_batch(seed)
    for loss_type in LOSS_TYPES:
        single, _ = grpo_loss(logp, old, adv, mask, loss_type=loss_type, ref_logp=ref, **KW)
        one, _ = data_parallel_loss(logp, old, adv, mask, num_processes=1, loss_type=loss_type, ref_logp=ref, **KW)
        two, _ = data_parallel_loss(logp, old, adv, mask, num_processes=2, loss_type=loss_type, ref_logp=ref, **KW)
        g_single, = torch.autograd.grad(single, logp)
        g_one, = torch.autograd.grad(one, logp)
        g_two, = torch.autograd.grad(two, logp)
        assert torch.allclose(g_one, g_single, rtol=0, atol=1e-15)
        if loss_type != "bnpo":
            assert torch.allclose(g_two, g_single, rtol=0, atol=1e-14), loss_type


def test_bnpo_equals_the_token_mean_when_the_processes_hold_equal_token_counts():
    logp, old, adv, mask, ref = random_batch(0)
    mask = torch.ones_like(mask)
    mask[:, -1] = 0          # every row 4 tokens: 16 on each process
    split, _ = data_parallel_loss(logp, old, adv, mask, num_processes=2, loss_type="bnpo", ref_logp=ref, **KW)
    single, _ = grpo_loss(logp, old, adv, mask, loss_type="bnpo", ref_logp=ref, **KW)
    assert float(split.detach()) == pytest.approx(float(single.detach()), rel=1e-13)


def test_bnpo_weights_the_process_with_fewer_tokens_more():
    """Per-token gradient weights: 1/N for one process, 1/(P n_p) under P processes."""
    logp, old, adv, mask, ref = random_batch(3)
    n = [int(mask[s].sum()) for s in shard_slices(8, 2)]
    assert n[0] != n[1]
    split, _ = data_parallel_loss(logp, old, adv, mask, num_processes=2, loss_type="bnpo", **{**KW, "beta": 0.0})
    single, _ = grpo_loss(logp, old, adv, mask, loss_type="bnpo", **{**KW, "beta": 0.0})
    g_split, = torch.autograd.grad(split, logp)
    g_single, = torch.autograd.grad(single, logp)
    on = (mask > 0) & (g_single.abs() > 1e-12)
    ratio = (g_split / torch.where(on, g_single, torch.ones_like(g_single)))[on]
    N = sum(n)
    first = on[:4]
    assert torch.allclose(ratio[: int(first.sum())], torch.tensor(N / (2 * n[0]), dtype=ratio.dtype))
    assert torch.allclose(ratio[int(first.sum()):], torch.tensor(N / (2 * n[1]), dtype=ratio.dtype))


def test_shard_slices_and_bad_inputs():
    assert shard_slices(8, 2) == [slice(0, 4), slice(4, 8)]
    assert shard_slices(6, 3) == [slice(0, 2), slice(2, 4), slice(4, 6)]
    logp, old, adv, mask, ref = random_batch(0)
    with pytest.raises(ValueError, match="num_processes"):
        shard_slices(8, 3)
    with pytest.raises(ValueError, match="num_processes"):
        shard_slices(8, 0)
    with pytest.raises(ValueError, match="batch_size"):
        shard_slices(0, 1)
    with pytest.raises(ValueError, match="num_processes"):
        data_parallel_loss(logp, old, adv, mask, num_processes=3)
    with pytest.raises(ValueError, match="loss_type"):
        data_parallel_loss(logp, old, adv, mask, num_processes=2, loss_type="ppo")
    with pytest.raises(ValueError, match="mask"):
        data_parallel_loss(logp, old, adv, mask[0], num_processes=2)
    with pytest.raises(ValueError, match="loss_types"):
        normalisation_table(GPT(GPTConfig()), None, 6, old, adv, mask, loss_types=())


def test_normalisation_table_on_the_chapter_batch():
    """The chapter's float64 table: only bnpo moves, by the ratio the closed form gives."""
    from rl4llm.llm.model import completion_logprobs
    from rl4llm.trl.parity import loss_batch

    torch.manual_seed(0)
    model = GPT(GPTConfig())
    config = GRPOConfig(prompts_per_step=2, group_size=4, eps_high=0.28, beta=0.04, temperature=0.7)
    batch = loss_batch(model, config, seed=0)
    m64 = copy.deepcopy(model).double()
    rows = normalisation_table(m64, batch.tokens, batch.prompt_len, batch.old_logp, batch.advantages, batch.mask,
                               temperature=0.7, eps_low=0.2, eps_high=0.28, beta=0.04, ref_logp=batch.ref_logp,
                               max_completion_length=4)
    by = {r["loss_type"]: r for r in rows}
    assert [r["loss_type"] for r in rows] == list(loss_types_with("clip"))
    for t in ("grpo", "dapo", "dr_grpo"):
        assert abs(by[t]["ratio"] - 1) < 1e-12 and by[t]["max_grad_difference"] < 1e-12, t
    n0, n1 = by["bnpo"]["tokens_per_process"]
    assert n0 != n1 and by["bnpo"]["max_grad_difference"] > 1e-3
    with torch.no_grad():
        logp, _ = completion_logprobs(m64, batch.tokens, batch.prompt_len, 0.7)
    l, m = per_token_losses(logp, batch.old_logp.double(), batch.advantages.double(), batch.mask.double(),
                            batch.ref_logp.double())
    expected = 0.5 * (l[:4].sum() / m[:4].sum() + l[4:].sum() / m[4:].sum())
    assert by["bnpo"]["data_parallel"] == pytest.approx(expected, rel=1e-12)
    assert by["bnpo"]["single"] == pytest.approx(l.sum() / m.sum(), rel=1e-12)


def test_solution_four_processes():
    """Exercise ex-ch16-four-processes: with 4 processes of 2 rows, only bnpo moves."""
    from rl4llm.trl.parity import loss_batch

    torch.manual_seed(0)
    model = GPT(GPTConfig())
    config = GRPOConfig(prompts_per_step=2, group_size=4, eps_low=0.2, eps_high=0.28, beta=0.04, temperature=0.7)
    batch = loss_batch(model, config, seed=0)
    rows = normalisation_table(copy.deepcopy(model).double(), batch.tokens, batch.prompt_len, batch.old_logp,
                               batch.advantages, batch.mask, num_processes=4, temperature=0.7, eps_low=0.2,
                               eps_high=0.28, beta=0.04, ref_logp=batch.ref_logp, max_completion_length=4)
    by = {r["loss_type"]: r for r in rows}
    assert all(by[t]["max_grad_difference"] < 1e-12 for t in ("grpo", "dr_grpo", "dapo"))
    assert len(set(by["bnpo"]["tokens_per_process"])) > 1 and by["bnpo"]["max_grad_difference"] > 1e-3
