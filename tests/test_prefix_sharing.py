"""Identical prefixes computed once (rl4llm.llm.prefix_sharing and rl4llm.llm.prefix_tree, the fast trainer's second
change): the sampler draws what the plain one draws and runs the model once per distinct prefix; the loss's pass
over the answers' prefix tree gives every answer its own log-probs and gradient."""
import pytest
import torch

from rl4llm.llm.kv_cache import LayerCache
from rl4llm.llm.model import completion_logprobs, sample
from rl4llm.llm.prefix_tree import prefix_tree, tree_completion_logprobs
from rl4llm.llm.tasks import AdditionTask
from rl4llm.llm.warmstart import warm_start

TASK = AdditionTask(seed=0)
TOK = TASK.tokenizer


@pytest.fixture(scope="module")
def warm():
    return warm_start()


def draw(model, n_prompts, G, temperature, seed, share_prefixes):
    prompts = torch.as_tensor(TASK.train_prompt_ids[:n_prompts])
    return sample(model, prompts, group_size=G, max_new_tokens=4, eos_id=TOK.eos_id, pad_id=TOK.pad_id,
                  temperature=temperature, generator=torch.Generator().manual_seed(seed), share_prefixes=share_prefixes)


@pytest.mark.parametrize("G, temperature, seed", [(8, 1.0, 0), (8, 1.0, 1), (4, 0.7, 2), (8, 1.5, 3), (8, 0.0, 4)])
def test_sharing_prefixes_draws_the_plain_samplers_answers(warm, G, temperature, seed):
    plain, shared = (draw(warm.model, 16, G, temperature, seed, share) for share in (False, True))
    assert torch.equal(plain.tokens, shared.tokens) and torch.equal(plain.mask, shared.mask)
    torch.testing.assert_close(shared.logp, plain.logp, rtol=0, atol=1e-6)
    torch.testing.assert_close(shared.entropy * shared.mask, plain.entropy * plain.mask, rtol=0, atol=1e-6)


def distinct_prefixes(rollout, G, t):
    """By hand: the distinct (prompt, first t completion tokens) among the rows alive after t tokens."""
    rows = rollout.mask[:, t].nonzero()[:, 0].tolist() if t < rollout.mask.shape[1] else []
    return len({(row // G, tuple(rollout.completions[row, :t].tolist())) for row in rows})


def test_the_sampler_runs_the_model_once_per_distinct_prefix(warm):
    rows_per_pass = []
    hook = warm.model.register_forward_hook(lambda module, args, out: rows_per_pass.append(args[0].shape[0]))
    try:
        rollout = draw(warm.model, 32, 8, 1.0, 0, True)
    finally:
        hook.remove()
    assert rows_per_pass[0] == 32                                                    # the prefill: each prompt once
    expected = [distinct_prefixes(rollout, 8, t) for t in range(1, len(rows_per_pass))]
    assert rows_per_pass[1:] == expected
    assert sum(expected) < 0.7 * 256 * len(expected)                                 # the saving is real here


def paths_by_hand(prompt_of, completions, mask):
    """The tree's nodes by hand: the distinct (prompt, y_1 .. y_d) of the answers whose token d + 1 exists."""
    return {(p, tuple(c[:d])) for p, c, m in zip(prompt_of.tolist(), completions.tolist(), mask.tolist())
            for d in range(1, len(c)) if m[d] > 0}


@pytest.mark.parametrize("seed, groups", [(5, (0, 3, 4, 9, 15)), (6, tuple(range(16)))])
def test_the_prefix_tree_gives_every_answer_its_log_probs_and_gradient(warm, seed, groups):
    model, G = warm.model, 8
    rollout = draw(model, 16, G, 1.0, seed, True)
    rows = torch.cat([torch.arange(g * G, (g + 1) * G) for g in groups])            # whole groups, as the trainer
    prompts, prompt_of = rollout.tokens[rows[::G], :rollout.prompt_len], torch.arange(len(rows)) // G
    completions, mask = rollout.completions[rows], rollout.mask[rows]
    tree = prefix_tree(prompts, prompt_of, completions, mask, model.config.vocab_size)
    P, by_hand = rollout.prompt_len, paths_by_hand(prompt_of, completions, mask)
    N, M = tree.tokens.shape
    assert torch.equal(tree.tokens[:, :P], prompts) and torch.equal(tree.positions[:, :P], torch.arange(P).expand(N, P))
    paths = {}                           # each position's visible path: its prompt's tokens, then its answer prefix
    for row, slot in (tree.positions >= P).nonzero().tolist():
        path = tree.visible[row, slot].nonzero()[:, 0]
        assert path[-1] == slot and torch.equal(tree.positions[row, path], torch.arange(len(path)))
        paths[row * M + slot] = (row, tuple(tree.tokens[row, path[P:]].tolist()))
    assert set(paths.values()) == by_hand and len(paths) == len(by_hand)                # each prefix once
    assert len(by_hand) < 0.6 * len(rows) * (completions.shape[1] - 1)                   # shared positions
    filler = (tree.positions[:, P:] == 0).nonzero()                                      # sees itself only
    assert all(tree.visible[r, P + s].nonzero()[:, 0].tolist() == [P + s] for r, s in filler.tolist())
    for (i, t), read in zip(mask.nonzero().tolist(), tree.node_of[mask > 0].tolist()):
        # the position predicting token t of answer i: its prompt's last, or its prefix y_1 .. y_t
        expected = prompt_of[i] * M + P - 1 if t == 0 else None
        assert read == expected if t == 0 else paths[read] == (prompt_of[i], tuple(completions[i, :t].tolist()))
    weights = torch.randn(len(rows), 1, generator=torch.Generator().manual_seed(seed)) * mask

    def value_and_gradient(logp):
        model.zero_grad()
        (logp * weights).sum().backward()
        return logp.detach() * mask, torch.cat([p.grad.flatten() for p in model.parameters()])
    shared = value_and_gradient(tree_completion_logprobs(model, prompts, prompt_of, completions, mask, 1.0))
    per_row = value_and_gradient(completion_logprobs(model, rollout.tokens[rows], rollout.prompt_len, 1.0, G)[0])
    torch.testing.assert_close(shared[0], per_row[0], rtol=0, atol=1e-5)
    torch.testing.assert_close(shared[1], per_row[1], rtol=1e-4, atol=1e-5 * per_row[1].abs().max().item())


@pytest.mark.parametrize("T", [1, 2])
def test_a_tree_of_one_token_answers_predicts_from_the_prompt_only(warm, T):
    prompts = torch.as_tensor(TASK.train_prompt_ids[:2])
    completions = torch.tensor([[TOK.eos_id] + [TOK.pad_id] * (T - 1)] * 2)
    mask = (torch.arange(T) == 0).float().expand(2, T)
    logp = tree_completion_logprobs(warm.model, prompts, torch.tensor([0, 1]), completions, mask, 1.0)
    expected, _ = completion_logprobs(warm.model, torch.cat([prompts, completions], dim=1), prompts.shape[1])
    torch.testing.assert_close(logp[:, 0], expected[:, 0], rtol=0, atol=1e-6)


def test_a_cache_selects_its_rows():
    k, v = torch.randn(3, 2, 4, 5), torch.randn(3, 2, 4, 5)
    cache = LayerCache(k, v, capacity=6)
    chosen = cache.select(torch.tensor([2, 0, 2]))
    assert torch.equal(chosen.keys, k[[2, 0, 2]]) and torch.equal(chosen.values, v[[2, 0, 2]])
    chosen.extend(torch.ones(3, 2, 1, 5), torch.ones(3, 2, 1, 5))
    assert chosen.length == 5 and cache.length == 4 and torch.equal(cache.keys, k)    # the source is untouched


def test_a_tree_whose_prefixes_would_overflow_is_refused():
    completions = torch.zeros(1, 17, dtype=torch.long)
    with pytest.raises(ValueError, match="prefixes of 1 prompts and 17 tokens of a 16-token vocabulary fit in 64-bit integers"):
        prefix_tree(torch.zeros(1, 6, dtype=torch.long), torch.zeros(1, dtype=torch.long), completions,
                    torch.ones(1, 17), 16)


def test_sharing_prefixes_refuses_a_graph(warm):
    prompts = torch.as_tensor(TASK.train_prompt_ids[:2])
    with pytest.raises(ValueError, match="share_prefixes must be False with keep_graph=True"):
        sample(warm.model, prompts, max_new_tokens=4, eos_id=TOK.eos_id, pad_id=TOK.pad_id, keep_graph=True,
               share_prefixes=True)
