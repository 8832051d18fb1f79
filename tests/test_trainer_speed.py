"""The trainer's faster inner loop (chapter 15): fused attention, the sampler's pass reused as the loss's
forward pass at K = 1, fused AdamW, the verifier on token ids, shuffled-epoch prompts and the schedule."""
import math

import numpy as np
import pytest
import torch

from rl4llm.llm.fast_trainer import FastGRPOTrainer
from rl4llm.llm.entropy import EntropyControl
from rl4llm.llm.kl_placement import KLInReward
from rl4llm.llm.model import GPT, GPTConfig, completion_logprobs, sample
from rl4llm.llm.samplers import PolicySampler, RolloutEngineSampler
from rl4llm.llm.tasks import AdditionTask
from rl4llm.llm.trainer import GRPOConfig, GRPOTrainer, lr_factor, prompt_indices
from rl4llm.toy.verifier import addition_reward, addition_rewards_of_ids
from rl4llm.llm.warmstart import warm_start

TASK = AdditionTask(seed=0)
TOK = TASK.tokenizer


@pytest.fixture(scope="module")
def warm():
    return warm_start()


def attention_by_the_formula(q, k, v):
    """softmax(q k^T / sqrt(d)) v with query i of T (the last T positions of the keys) seeing keys 0 .. t_past + i."""
    T, S = q.shape[2], k.shape[2]
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    allowed = torch.ones(T, S, dtype=torch.bool).tril(diagonal=S - T)
    return torch.softmax(scores.masked_fill(~allowed, float("-inf")), dim=-1) @ v


@pytest.mark.parametrize("t_past, T", [(0, 10), (6, 1), (6, 3)])
def test_fused_attention_is_the_formula_with_and_without_a_past(t_past, T):
    torch.manual_seed(0)
    model = GPT(GPTConfig())
    attn, x = model.h[0].attn, torch.randn(4, t_past + T, 64)
    _, cache = attn(x[:, :t_past], None) if t_past else (None, None)
    y, cache = attn(x[:, t_past:], cache)
    q = attn.c_attn(x[:, t_past:]).split(64, dim=2)[0].view(4, T, 4, 16).transpose(1, 2)
    expected = attention_by_the_formula(q, cache.keys, cache.values).transpose(1, 2).reshape(4, T, 64)
    torch.testing.assert_close(y, attn.c_proj(expected), rtol=1e-5, atol=1e-6)


def test_the_sampling_pass_with_its_graph_gives_the_loss_pass_log_probs_and_gradient(warm):
    model = warm.model
    prompts = torch.as_tensor(TASK.train_prompt_ids[:16])
    rollout = sample(model, prompts, group_size=8, max_new_tokens=4, eos_id=TOK.eos_id, pad_id=TOK.pad_id,
                     generator=torch.Generator().manual_seed(0), keep_graph=True)
    assert rollout.loss_logp.requires_grad and not rollout.logp.requires_grad
    assert torch.equal(rollout.loss_logp.detach(), rollout.logp)           # pi_theta / pi_old = 1 exactly
    logp, entropy = completion_logprobs(model, rollout.tokens, rollout.prompt_len, 1.0, 8)
    torch.testing.assert_close(logp * rollout.mask, rollout.loss_logp, rtol=0, atol=1e-5)
    torch.testing.assert_close(entropy * rollout.mask, rollout.entropy * rollout.mask, rtol=0, atol=1e-5)
    advantages = torch.randn(len(rollout.tokens), 1, generator=torch.Generator().manual_seed(1))

    def gradient(values):
        model.zero_grad()
        (values * rollout.mask * advantages).sum().backward()
        return torch.cat([p.grad.flatten() for p in model.parameters()])
    by_sampling, by_second_pass = gradient(rollout.loss_logp), gradient(logp)
    torch.testing.assert_close(by_sampling, by_second_pass, rtol=1e-4, atol=1e-5 * by_second_pass.abs().max().item())


def test_without_a_graph_the_sampler_draws_the_same_tokens_and_log_probs(warm):
    prompts = torch.as_tensor(TASK.train_prompt_ids[:8])
    draws = [sample(warm.model, prompts, group_size=4, max_new_tokens=4, eos_id=TOK.eos_id, pad_id=TOK.pad_id,
                    generator=torch.Generator().manual_seed(3), keep_graph=keep) for keep in (False, True)]
    assert torch.equal(draws[0].tokens, draws[1].tokens) and draws[0].loss_logp is None
    torch.testing.assert_close(draws[0].logp, draws[1].logp, rtol=0, atol=1e-6)


def small(warm, sampler=PolicySampler(), **overrides):
    config = GRPOConfig(**{"steps": 4, "prompts_per_step": 8, "group_size": 8, "lr": 1e-3, "warmup_steps": 0,
                           "loss_type": "dapo", "log_kl": False, "device": "cpu", **overrides})
    return GRPOTrainer(warm.model, TASK, config, sampler=sampler)


@pytest.mark.parametrize("overrides, reuses", [({}, True), ({"inner_steps": 2}, False),
                                               ({"drop_zero_variance": True}, False),
                                               ({"sampler": RolloutEngineSampler(precision="float32", staleness=1)},
                                                False)])
def test_the_sampling_pass_is_reused_only_at_one_inner_step_on_every_sampled_row(warm, overrides, reuses):
    assert small(warm, **overrides).reuses_sampling_pass is reuses


def test_a_step_that_reuses_the_sampling_pass_takes_the_gradient_of_a_second_pass(warm, monkeypatch):
    def first_gradient(trainer):
        trainer.optimizer.step = lambda: None                 # keep the gradient of the first inner step
        stats = trainer.inner_step(trainer.rollout(), 0)
        return stats, torch.cat([p.grad.flatten() for p in trainer.policy.parameters()])
    reused, by_sampling = first_gradient(small(warm))
    monkeypatch.setattr(GRPOTrainer, "reuses_sampling_pass", property(lambda self: False))
    second, by_second_pass = first_gradient(small(warm))
    assert reused["ratio"] == 1.0 and reused["clip_ratio/region_mean"] == 0.0
    assert reused["loss"] == pytest.approx(second["loss"], abs=1e-6)
    torch.testing.assert_close(by_sampling, by_second_pass, rtol=1e-4, atol=1e-5 * by_second_pass.abs().max().item())


def test_the_sampler_records_the_entropy_with_or_without_a_graph(warm):
    prompts = torch.as_tensor(TASK.train_prompt_ids[:8])
    draws = [sample(warm.model, prompts, group_size=4, max_new_tokens=4, eos_id=TOK.eos_id, pad_id=TOK.pad_id,
                    generator=torch.Generator().manual_seed(3), keep_graph=keep) for keep in (False, True)]
    _, entropy = completion_logprobs(warm.model, draws[0].tokens, draws[0].prompt_len, 1.0, 4)
    for draw in draws:
        torch.testing.assert_close(draw.entropy * draw.mask, entropy * draw.mask, rtol=0, atol=1e-5)


def fast_and_plain(warm, share_prefixes=True, **overrides):
    return {kind: small(warm, **overrides) if kind == "plain" else
            FastGRPOTrainer(warm.model, TASK, small(warm, **overrides).config, share_prefixes=share_prefixes)
            for kind in ("plain", "fast")}


def first_inner_steps(warm, share_prefixes, **overrides):
    """The plain and the fast trainer's first inner step on the same batch: (batch, metrics, gradient) each."""
    out = {}
    for kind, trainer in fast_and_plain(warm, share_prefixes, **overrides).items():
        trainer.optimizer.step = lambda: None                 # keep the gradient of the first inner step
        batch = trainer.rollout()
        stats = trainer.inner_step(batch, 0)
        out[kind] = batch, stats, torch.cat([p.grad.flatten() for p in trainer.policy.parameters()])
    return out["plain"], out["fast"]


@pytest.mark.parametrize("share_prefixes", [False, True])
def test_the_fast_trainer_takes_the_plain_steps_gradient_on_the_same_batch(warm, share_prefixes):
    """Its first inner step: the same loss, metrics and gradient, though the flat groups had no backward pass (and,
    sharing prefixes, each distinct prefix had one position)."""
    (plain_batch, plain, plain_grad), (fast_batch, fast, fast_grad) = first_inner_steps(warm, share_prefixes,
                                                                                        log_kl=True)
    assert torch.equal(plain_batch.tokens, fast_batch.tokens)
    assert 0 < int(fast_batch.informative.sum()) < len(fast_batch.tokens)          # some groups flat, some not
    for key in ("loss", "grad_norm", "entropy", "kl", "ratio", "clip_ratio/region_mean"):
        assert fast[key] == pytest.approx(plain[key], rel=1e-4, abs=1e-6), key
    torch.testing.assert_close(fast_grad, plain_grad, rtol=1e-4, atol=1e-5 * plain_grad.abs().max().item())


@pytest.mark.filterwarnings("ignore:loss_type='luspo' is meant for ImportanceRatio")      # token level, as TRL runs it
@pytest.mark.parametrize("loss_type", ["grpo", "bnpo", "dr_grpo", "cispo", "sapo", "luspo", "vespo"])
def test_the_prefix_tree_gives_every_loss_type_the_plain_gradient(warm, loss_type):
    """The tree changes where the log-probs come from, not the loss: every other loss type (dapo above) too."""
    (_, plain, plain_grad), (_, fast, fast_grad) = first_inner_steps(warm, True, loss_type=loss_type)
    assert fast["loss"] == pytest.approx(plain["loss"], rel=1e-4, abs=1e-6)
    torch.testing.assert_close(fast_grad, plain_grad, rtol=1e-4, atol=1e-5 * plain_grad.abs().max().item())


@pytest.mark.parametrize("share_prefixes", [False, True])
def test_the_fast_trainers_run_follows_the_plain_one(warm, share_prefixes):
    runs = fast_and_plain(warm, share_prefixes, steps=4)
    for trainer in runs.values():
        trainer.train(progress=False)
    plain, fast = runs["plain"], runs["fast"]
    assert fast.metrics["tokens"] == plain.metrics["tokens"] and fast.metrics["reward"] == plain.metrics["reward"]
    np.testing.assert_allclose(fast.metrics["loss"], plain.metrics["loss"], rtol=1e-4, atol=1e-7)
    # Adam divides each gradient by its own running scale, so a component whose gradient is rounding-sized moves
    # by up to lr either way: the runs agree as updates, not entry by entry
    def update(trainer):
        return torch.cat([(p - q).detach().flatten() for p, q in zip(trainer.policy.parameters(),
                                                                     warm.model.parameters())])
    assert float((update(fast) - update(plain)).norm() / update(plain).norm()) < 0.01      # 0.0032 here


@pytest.mark.parametrize("share_prefixes", [False, True])
def test_the_fast_trainer_resumes_on_the_path_it_was_saved_with(warm, tmp_path, share_prefixes):
    config, path = small(warm, steps=3).config, str(tmp_path / "fast.pt")
    whole = FastGRPOTrainer(warm.model, TASK, config, share_prefixes=share_prefixes).train(progress=False)
    part = FastGRPOTrainer(warm.model, TASK, config, share_prefixes=share_prefixes).train(2, progress=False)
    part.save(path)
    resumed = FastGRPOTrainer.load(path)
    assert resumed.shares_prefixes == share_prefixes
    resumed.train(progress=False)
    assert resumed.metrics["loss"] == whole.metrics["loss"] and resumed.metrics["reward"] == whole.metrics["reward"]


def test_a_step_with_only_flat_groups_still_takes_adamws_step(warm, monkeypatch):
    monkeypatch.setattr(AdditionTask, "rewards", lambda self, pairs, ids: np.zeros(len(ids)))
    runs = fast_and_plain(warm, steps=2, warmup_steps=0)
    for trainer in runs.values():
        trainer.train(progress=False)
    assert runs["fast"].metrics["grad_norm"] == runs["plain"].metrics["grad_norm"] == [0.0, 0.0]
    for p, q in zip(runs["fast"].policy.parameters(), runs["plain"].policy.parameters()):
        torch.testing.assert_close(p, q, rtol=0, atol=1e-7)


@pytest.mark.parametrize("overrides, match", [
    ({"inner_steps": 2}, r"config.inner_steps must be 1 .* got 2"),
    ({"beta": 0.04, "log_kl": True}, r"config.beta must be 0 with the KL in the loss .* got 0.04"),
    ({"sampler": RolloutEngineSampler(precision="float32", staleness=1)}, r"sampler must be PolicySampler\(\)"),
    ({"entropy": EntropyControl(coef=0.01)}, r"entropy must be EntropyControl\(\) without a bonus")])
def test_the_fast_trainer_refuses_a_run_whose_flat_rows_have_a_gradient(warm, overrides, match):
    strategies = {k: overrides.pop(k) for k in ("sampler", "entropy") if k in overrides}
    config = small(warm, **overrides).config
    with pytest.raises(ValueError, match=match):
        FastGRPOTrainer(warm.model, TASK, config, **strategies)


def test_the_fast_trainer_takes_the_kl_in_the_reward(warm):
    config = small(warm, beta=0.04, steps=2).config
    runs = {kind: kind_of(warm.model, TASK, config, kl=KLInReward())
            for kind, kind_of in (("plain", GRPOTrainer), ("fast", FastGRPOTrainer))}
    for trainer in runs.values():
        trainer.train(progress=False)
    assert runs["fast"].metrics["reward"] == runs["plain"].metrics["reward"]
    np.testing.assert_allclose(runs["fast"].metrics["loss"], runs["plain"].metrics["loss"], rtol=1e-4, atol=1e-7)


def test_the_optimizer_is_torchs_fused_adamw(warm):
    assert small(warm).optimizer.defaults["fused"] is True


def test_prompts_come_in_shuffled_epochs_that_depend_on_seed_and_step_only():
    n, N = 103, 10                                          # 10 steps an epoch, 3 prompts left out of each
    epoch = np.concatenate([prompt_indices(n, N, 5, s) for s in range(10)])
    assert len(set(epoch.tolist())) == 100 and epoch.min() >= 0 and epoch.max() < n
    assert not np.array_equal(prompt_indices(n, N, 5, 10), prompt_indices(n, N, 5, 0))   # a new permutation
    np.testing.assert_array_equal(prompt_indices(n, N, 5, 13), prompt_indices(n, N, 5, 13))
    assert not np.array_equal(prompt_indices(n, N, 5, 0), prompt_indices(n, N, 6, 0))


def test_the_trainer_draws_the_prompts_of_prompt_indices(warm):
    trainer = small(warm, prompts_per_step=4, seed=3)
    trainer.step()
    batch = trainer.rollout()
    expected = TASK.train_prompt_ids[prompt_indices(len(TASK.train_pairs), 4, 3, 1)]
    np.testing.assert_array_equal(batch.rollout.tokens[::8, :6].numpy(), expected)
    with pytest.raises(ValueError, match="prompts_per_step must be at most the task's 9500 training prompts"):
        small(warm, prompts_per_step=9501)


def test_lr_factor_warms_up_from_one_over_w_and_decays_to_zero():
    assert [lr_factor(u, 4, 100, False) for u in range(6)] == [0.25, 0.5, 0.75, 1.0, 1.0, 1.0]
    assert lr_factor(0, 0, 100, True) == 1.0 and lr_factor(100, 20, 100, True) == 0.0
    assert lr_factor(50, 20, 100, True) == pytest.approx(0.5)


def test_the_verifier_on_token_ids_is_the_verifier_on_decoded_text():
    rng = np.random.default_rng(0)
    for width in (1, 4, 9, 25):              # 25: more digits than an int64 holds, leading zeros in front
        pairs = TASK.train_pairs[rng.integers(0, len(TASK.train_pairs), 3000)]
        ids = rng.integers(0, len(TOK), (3000, width))
        for i in range(1500):               # right answers, zero-padded to random widths, EOS and PAD after
            text = str(pairs[i].sum()).zfill(int(rng.integers(1, width + 1))) + "<eos>"
            row = TOK.encode(text)[:width]
            ids[i, :len(row)] = row
        texts = TOK.decode_batch(ids)
        expected = [addition_reward(p, c) for p, c in zip(TASK.prompts(pairs), texts)]
        np.testing.assert_array_equal(TASK.rewards(pairs, ids), expected)
        assert 0 < sum(expected) < len(expected)
    eos, pad, five = TOK.eos_id, TOK.pad_id, 5
    digit_values = np.array([d if d < 10 else -1 for d in range(len(TOK))])
    np.testing.assert_array_equal(
        addition_rewards_of_ids([5, 5, 5, 5, 5], [[five, eos], [eos, five], [pad, five], [0, five], [five, pad]],
                                digit_values, eos), [1.0, 0.0, 0.0, 1.0, 0.0])
