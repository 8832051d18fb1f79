"""rl4llm.llm.pass_at_k_study: exact pass rates against exhaustive enumeration and against sampling, the
pre-filter and the restricted task, the equal-answers accounting of the pre-filter study, validation."""
import itertools
import math

import numpy as np
import pytest
import torch

from rl4llm.llm.model import GPT, GPTConfig
from rl4llm.llm.pass_at_k_study import (PREFILTER_ARMS, accepted_completions, answers_per_step, exact_pass_rates,
                                        prefilter, prefilter_study, restricted_task, right_counts)
from rl4llm.llm.tasks import MAX_COMPLETION_LEN, PROMPT_LEN, VOCAB, AdditionTask
from rl4llm.llm.trainer import GRPOConfig, GRPOTrainer
from rl4llm.llm.warmstart import warm_start


@pytest.fixture(scope="module")
def task():
    return AdditionTask()


@pytest.fixture(scope="module")
def warm():
    return warm_start().model


def test_accepted_completions_are_what_the_verifier_accepts(task):
    tok = task.tokenizer
    assert [tok.decode(c) for c in accepted_completions(5, 4, task)] == ["5<eos>", "05<eos>", "005<eos>", "0005"]
    assert [tok.decode(c) for c in accepted_completions(198, 4, task)] == ["198<eos>", "0198"]
    for total in (0, 7, 45, 198):
        rows = [c + [tok.pad_id] * (4 - len(c)) for c in accepted_completions(total, 4, task)]
        pairs = np.array([[total // 2, total - total // 2]] * len(rows))
        assert np.all(task.rewards(pairs, np.array(rows)) == 1.0)


def test_exact_pass_rates_against_exhaustive_enumeration(task):
    """Every completion the sampler can produce (up to the first EOS, at most 4 tokens), its probability from
    the model's softmax token by token, the verifier's score of each: their probabilities sum to 1 and the
    right ones' to exact_pass_rates."""
    torch.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=len(VOCAB), block_size=16, n_layer=1, n_head=2, n_embd=16)).eval()
    pairs = np.array([[3, 4], [50, 49]])
    tok, V = task.tokenizer, len(VOCAB)
    full = np.array(list(itertools.product(range(V), repeat=MAX_COMPLETION_LEN)))          # (V^4, 4)
    eos = full == tok.eos_id
    end = np.where(eos.any(axis=1), eos.argmax(axis=1) + 1, MAX_COMPLETION_LEN)           # tokens kept
    first = np.unique(np.where(np.arange(4) < end[:, None], full, -1), axis=0, return_index=True)[1]
    completions, lengths = full[first], end[first]                                         # distinct completions
    for (a, b), p_exact in zip(pairs, exact_pass_rates(model, task, pairs)):
        prompt = np.repeat(task.prompt_ids(np.array([[a, b]])), len(completions), axis=0)
        with torch.no_grad():
            logits, _ = model(torch.as_tensor(np.concatenate([prompt, completions[:, :-1]], axis=1)))
        logp = torch.log_softmax(logits[:, PROMPT_LEN - 1:], dim=-1).gather(2, torch.as_tensor(completions)[..., None])
        chance = np.exp((logp[..., 0].double().numpy() * (np.arange(4) < lengths[:, None])).sum(axis=1))
        assert math.isclose(chance.sum(), 1.0, rel_tol=1e-5)       # float32 log-probs
        shown = np.where(np.arange(4) < lengths[:, None], completions, tok.pad_id)
        right = task.rewards(np.repeat([[a, b]], len(completions), axis=0), shown) == 1.0
        assert math.isclose(chance[right].sum(), p_exact, rel_tol=1e-5)


def test_exact_pass_rates_against_sampling(task, warm):
    pairs = task.eval_pairs[:12]
    n = 3000
    counts = right_counts(warm, task, pairs, n, seed=3)
    p = exact_pass_rates(warm, task, pairs)
    se = np.sqrt(np.maximum(p * (1 - p), 1e-12) / n)
    assert np.all(np.abs(counts / n - p) < 4 * se + 1e-9)


def test_restricted_task_and_the_trainer_draws_only_its_prompts(task, warm):
    kept = restricted_task(task, np.arange(40))
    assert np.array_equal(kept.train_pairs, task.train_pairs[:40]) and kept.eval_pairs is task.eval_pairs
    mask = np.zeros(len(task.train_pairs), dtype=bool)
    mask[[5, 9, 70]] = True
    assert np.array_equal(restricted_task(task, mask).train_prompt_ids, task.train_prompt_ids[[5, 9, 70]])
    assert len(task.train_pairs) == 10_000 - task.n_eval                                  # the original untouched
    trainer = GRPOTrainer(warm, kept, GRPOConfig(steps=1, prompts_per_step=8, group_size=2, log_kl=False))
    assert np.array_equal(trainer.train_prompts.numpy(), task.train_prompt_ids[:40])
    with pytest.raises(ValueError, match="index must be a boolean mask over the task's 9500 training prompts"):
        restricted_task(task, np.array([0, 10_000]))
    with pytest.raises(ValueError, match="index must be a boolean mask"):
        restricted_task(task, np.ones(3, dtype=bool))


def test_prefilter_keeps_the_prompts_with_a_pass_rate_strictly_between_0_and_1(task, warm):
    pool = restricted_task(task, np.arange(64))
    pre = prefilter(warm, pool, 4, seed=2)
    assert np.array_equal(pre.counts, right_counts(warm, pool, pool.train_pairs, 4, seed=2))
    assert np.array_equal(pre.kept, (pre.counts > 0) & (pre.counts < 4))
    assert np.array_equal(pre.task.train_pairs, pool.train_pairs[pre.kept])
    assert pre.answers_sampled == 4 * 64 and pre.n == 4
    with pytest.raises(ValueError, match="n must be an integer >= 2"):
        prefilter(warm, pool, 1)


def test_prefilter_study_samples_equal_answers_in_every_arm(task, warm):
    """The plain and drop arms buy the pre-filter's answers as steps; dynamic sampling spends the plain arm's
    answers in fewer steps, overshooting by less than one step's rounds (at most 10)."""
    pool = restricted_task(task, np.arange(128))
    config = GRPOConfig(steps=2, prompts_per_step=4, group_size=8, log_kl=False)
    assert answers_per_step(config) == 32
    study = prefilter_study(warm, pool, config, n_filter=2, seeds=[0, 1])
    pre, arms = study["prefilter"], study["arms"]
    extra = math.ceil(2 * 128 / 32)                      # the pre-filter's 256 answers buy 8 steps of 32
    budget = (2 + extra) * 32
    assert set(arms) == set(PREFILTER_ARMS)
    for name in ("plain", "drop flat groups", "pre-filtered"):
        assert np.all(arms[name]["answers"] == budget) and np.all(arms[name]["rounds"] == 1)
    assert np.all(arms["plain"]["steps"] == 2 + extra) and np.all(arms["drop flat groups"]["steps"] == 2 + extra)
    assert np.all(arms["pre-filtered"]["steps"] == 2)
    refill = arms["dynamic sampling (refill)"]
    assert np.all(refill["answers"] >= budget) and np.all(refill["answers"] < budget + 10 * 32)
    assert np.all(refill["steps"] < 2 + extra) and np.all(refill["rounds"] > 1)
    np.testing.assert_allclose(refill["answers"], refill["steps"] * refill["rounds"] * 32)
    assert pre.answers_sampled == 256
    for arm in arms.values():
        assert arm["accuracy"].shape == (2,) and np.all((0 <= arm["accuracy"]) & (arm["accuracy"] <= 1))
        assert len(arm["policies"]) == 2 and np.all(arm["seconds"] > 0)
        assert np.all((0 <= arm["flat_first"]) & (arm["flat_first"] <= 1))
    with pytest.raises(ValueError, match="seeds"):
        prefilter_study(warm, pool, config, n_filter=2, seeds=[0])


def test_validation(task, warm):
    with pytest.raises(ValueError, match="pairs must be operand pairs shaped"):
        right_counts(warm, task, np.zeros((0, 2), dtype=int), 4, seed=0)
    with pytest.raises(ValueError, match="n must be an integer >= 1"):
        right_counts(warm, task, task.eval_pairs[:2], 0, seed=0)
    with pytest.raises(ValueError, match="temperature"):
        exact_pass_rates(warm, task, task.eval_pairs[:2], temperature=0.0)


def test_the_figure_draws_each_policys_sampled_curve_with_a_band_and_its_exact_curve():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from rl4llm.viz.sequence_ratios import draw_pass_at_k_over_prompts

    ks, far = np.array([1, 2, 4]), np.array([1, 2, 4, 8])
    estimates = {"a": np.array([[[0.1, 0.2, 0.3], [0.01] * 3], [[0.12, 0.22, 0.32], [0.01] * 3]]),
                 "b": np.array([[[0.2, 0.3, 0.35], [0.02] * 3], [[0.2, 0.3, 0.35], [0.02] * 3]])}
    exact = {"a": np.array([[0.1, 0.2, 0.3, 0.4]] * 2), "b": np.array([[0.2, 0.3, 0.35, 0.38]] * 2)}
    fig, ax = plt.subplots()
    draw_pass_at_k_over_prompts(ax, ks, estimates, far, exact)
    lines = ax.get_lines()
    assert [line.get_label() for line in lines] == ["a, from samples (± 2 SE)", "a, exact", "b, from samples (± 2 SE)",
                                                    "b, exact"]
    assert np.allclose(lines[0].get_ydata(), [0.11, 0.21, 0.31]) and np.allclose(lines[3].get_ydata(), exact["b"][0])
    assert len(ax.collections) == 2 and ax.get_xscale() == "log" and ax.get_xlabel() and ax.get_ylabel()
    plt.close(fig)
