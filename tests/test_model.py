"""The tiny GPT, its KV cache and batched sampling (chapter 15)."""
import pytest
import torch

from rl4llm.llm.model import GPT, GPTConfig, completion_logprobs, from_gpt2, sample, to_gpt2
from rl4llm.llm.tasks import MAX_COMPLETION_LEN, PROMPT_LEN, AdditionTask

TASK = AdditionTask(seed=0)
EOS, PAD = TASK.tokenizer.eos_id, TASK.tokenizer.pad_id
V = len(TASK.tokenizer)


def small_model(seed=0, **sizes):
    torch.manual_seed(seed)
    model = GPT(GPTConfig(**sizes))
    with torch.no_grad():   # larger random weights than the init, so samples are varied and EOS comes early
        for p in model.parameters():
            p.add_(0.3 * torch.randn_like(p))
    return model


def prompts(n=6):
    return torch.as_tensor(TASK.train_prompt_ids[:n])


def test_the_parameter_count_follows_from_the_config():
    config = GPTConfig()
    d, L, V, S = config.n_embd, config.n_layer, config.vocab_size, config.block_size
    per_layer = 12 * d * d + 13 * d      # attention and MLP weights and biases, two LayerNorms
    expected = V * d + S * d + L * per_layer + 2 * d      # token and position embeddings (tied head), final norm
    assert GPT(config).num_parameters() == expected


def test_the_vocabulary_and_context_are_the_tasks():
    config = GPTConfig()
    assert config.vocab_size == len(TASK.tokenizer)
    assert PROMPT_LEN + MAX_COMPLETION_LEN <= config.block_size


def test_causal_later_tokens_do_not_change_earlier_logits():
    model = small_model()
    x = torch.randint(0, V, (3, 10), generator=torch.Generator().manual_seed(0))
    y = x.clone()
    y[:, 6:] = (y[:, 6:] + 1) % V
    torch.testing.assert_close(model(x)[0][:, :6], model(y)[0][:, :6], rtol=0, atol=0)


def test_kv_cache_forward_equals_full_forward():
    model = small_model()
    x = torch.randint(0, V, (4, 10), generator=torch.Generator().manual_seed(1))
    full, _ = model(x)
    logits, past = model(x[:, :6])
    steps = [logits]
    for t in range(6, 10):
        logits, past = model(x[:, t:t + 1], past)
        steps.append(logits)
    torch.testing.assert_close(torch.cat(steps, dim=1), full, rtol=1e-5, atol=1e-5)


def sample_by_recomputation(model, prompt_ids, G, max_new_tokens, temperature, generator):
    """Independent route: the whole sequence through the model at every step, no cache."""
    seq = prompt_ids.repeat_interleave(G, dim=0)
    alive = torch.ones(len(seq), dtype=torch.bool)
    logps, masks = [], []
    for _ in range(max_new_tokens):
        z = model(seq)[0][:, -1, :] / temperature
        probs = torch.softmax(z, dim=-1)
        y = torch.multinomial(probs, 1, generator=generator)[:, 0]
        logps.append(torch.where(alive, torch.log(probs.gather(1, y[:, None])[:, 0]), 0.0))
        masks.append(alive.float())
        seq = torch.cat([seq, torch.where(alive, y, PAD)[:, None]], dim=1)
        alive = alive & (y != EOS)
        if not alive.any():
            break
    return seq, torch.stack(logps, 1), torch.stack(masks, 1)


@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_kv_cache_sampling_equals_full_recomputation(temperature):
    model = small_model()
    with torch.no_grad():
        got = sample(model, prompts(), group_size=4, max_new_tokens=6, temperature=temperature, eos_id=EOS,
                     pad_id=PAD, generator=torch.Generator().manual_seed(5))
        seq, logp, mask = sample_by_recomputation(model, prompts(), 4, 6, temperature, torch.Generator().manual_seed(5))
    T = seq.shape[1] - prompts().shape[1]
    assert torch.equal(got.tokens[:, :seq.shape[1]], seq)
    assert torch.all(got.tokens[:, seq.shape[1]:] == PAD)
    torch.testing.assert_close(got.logp[:, :T], logp, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(got.mask[:, :T], mask)


def test_mask_covers_the_completion_up_to_and_including_eos():
    model = small_model()
    r = sample(model, prompts(8), group_size=8, max_new_tokens=6, eos_id=EOS, pad_id=PAD,
               generator=torch.Generator().manual_seed(0))
    completions = r.completions
    assert r.tokens.shape == (64, 6 + 6) and r.prompt_len == 6
    assert torch.equal(r.tokens[:, :6], prompts(8).repeat_interleave(8, dim=0))
    finished = 0
    for row, m in zip(completions.tolist(), r.mask.tolist()):
        n = row.index(EOS) + 1 if EOS in row else len(row)
        finished += EOS in row
        assert m == [1.0] * n + [0.0] * (len(row) - n)
        assert row[n:] == [PAD] * (len(row) - n)
    assert 0 < finished < 64   # both finished and truncated rows are exercised


@pytest.mark.parametrize("temperature", [1.0, 0.5])
def test_training_logprobs_equal_sampling_logprobs(temperature):
    """Padding after EOS included: causal attention keeps it from touching the scored tokens."""
    model = small_model()
    r = sample(model, prompts(8), group_size=8, max_new_tokens=6, temperature=temperature, eos_id=EOS,
               pad_id=PAD, generator=torch.Generator().manual_seed(1))
    logp, entropy = completion_logprobs(model, r.tokens, r.prompt_len, temperature)
    assert (r.mask == 0).any()
    torch.testing.assert_close(logp * r.mask, r.logp, rtol=1e-5, atol=1e-5)
    assert torch.all(entropy >= 0) and torch.all(entropy <= torch.log(torch.tensor(float(V))) + 1e-5)


@pytest.mark.parametrize("share_prefixes", [False, True])
def test_a_graph_free_rollout_can_enter_a_graph(share_prefixes):
    """The sampler runs in inference mode; what it returns is ordinary tensors, which a loss can use."""
    model = small_model()
    r = sample(model, prompts(4), group_size=4, max_new_tokens=4, eos_id=EOS, pad_id=PAD,
               generator=torch.Generator().manual_seed(2), share_prefixes=share_prefixes)
    assert not any(t.is_inference() for t in (r.tokens, r.logp, r.mask, r.entropy))
    logp, _ = completion_logprobs(model, r.tokens, r.prompt_len)
    (torch.exp(logp - r.logp) * r.mask * r.entropy).sum().backward()     # saves the rollout's tensors for backward
    assert all(p.grad is not None for p in model.parameters())


def test_shared_prompt_forward_gives_the_same_logprobs_and_gradients():
    model = small_model()
    r = sample(model, prompts(4), group_size=5, max_new_tokens=6, eos_id=EOS, pad_id=PAD,
               generator=torch.Generator().manual_seed(2))
    weights = torch.randn(r.logp.shape, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    for G in (1, 5):
        logp, _ = completion_logprobs(model, r.tokens, r.prompt_len, 1.0, group_size=G)
        torch.testing.assert_close(logp * r.mask, r.logp, rtol=1e-5, atol=1e-5)
    # the gradients in float64, so that the comparison does not depend on the CPU's float32 kernels
    # (one entry in 12,288 differed by 1.2e-5 in float32 on an AVX-512 machine)
    model64, grads = model.double(), []
    for G in (1, 5):
        model64.zero_grad()
        logp, entropy = completion_logprobs(model64, r.tokens, r.prompt_len, 1.0, group_size=G)
        (logp * weights * r.mask).sum().backward()
        grads.append([p.grad.clone() for p in model64.parameters()])
    for a, b in zip(*grads):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-12)
    with pytest.raises(ValueError, match="group_size"):
        completion_logprobs(model, r.tokens, r.prompt_len, group_size=3)
    with pytest.raises(ValueError, match="group_size"):
        completion_logprobs(model, r.tokens.flip(0), r.prompt_len, group_size=4)


def test_greedy_sampling_takes_the_argmax():
    model = small_model()
    r = sample(model, prompts(), max_new_tokens=MAX_COMPLETION_LEN, temperature=0.0, eos_id=EOS, pad_id=PAD)
    logits = model(r.tokens[:, :-1])[0][:, 5:, :]
    greedy = logits.argmax(dim=-1)
    assert torch.equal(torch.where(r.mask.bool(), greedy, PAD), r.completions)


def test_same_weights_give_the_same_logits_in_transformers_gpt2():
    model = small_model()
    hf = to_gpt2(model, eos_id=EOS, pad_id=PAD)
    x = torch.randint(0, V, (3, 10), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        torch.testing.assert_close(hf(x).logits, model(x)[0], rtol=1e-5, atol=1e-5)
    assert hf.config.eos_token_id == EOS and hf.config.pad_token_id == PAD
    back = from_gpt2(hf)
    assert all(torch.equal(a, b) for a, b in zip(back.state_dict().values(), model.state_dict().values()))


@pytest.mark.parametrize("call, name", [
    (lambda m: GPTConfig(n_embd=30, n_head=4), "n_embd"),
    (lambda m: GPTConfig(n_layer=0), "n_layer"),
    (lambda m: m(torch.zeros(1, GPTConfig().block_size + 1, dtype=torch.long)), "block_size"),
    (lambda m: sample(m, prompts(), max_new_tokens=0, eos_id=EOS, pad_id=PAD), "max_new_tokens"),
    (lambda m: sample(m, prompts(), max_new_tokens=4, group_size=0, eos_id=EOS, pad_id=PAD), "group_size"),
    (lambda m: sample(m, prompts(), max_new_tokens=4, temperature=-1.0, eos_id=EOS, pad_id=PAD), "temperature"),
    (lambda m: sample(m, prompts(), max_new_tokens=4, temperature=float("nan"), eos_id=EOS, pad_id=PAD),
     "temperature"),
    (lambda m: sample(m, prompts()[0], max_new_tokens=4, eos_id=EOS, pad_id=PAD), "prompts"),
])
def test_bad_inputs(call, name):
    with pytest.raises(ValueError, match=name):
        call(small_model())
