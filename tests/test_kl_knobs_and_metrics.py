"""The KL knobs of grpo_loss and the trainer (chapters 16-17), the trainer's TRL-named metrics and chapter 19's
runs (rl4llm.llm.run_reading): formulas against independent routes, validation, and the defaults left as they were."""
import math

import numpy as np
import pytest
import torch

from rl4llm.math.credit import group_advantages
from rl4llm.llm.grpo import KL_ESTIMATORS, grpo_loss
from rl4llm.studies.kl_penalties import kl_estimators
from rl4llm.llm.kl_placement import KLInLoss, KLInReward
from rl4llm.llm.model import GPT, GPTConfig, completion_logprobs
from rl4llm.llm.ratios import ImportanceRatio
from rl4llm.llm.run_reading import RUNS, TaggedAnswerTask, first_step, train_runs
from rl4llm.llm.tasks import AdditionTask
from rl4llm.toy.five_token import LOGITS
from rl4llm.llm.trainer import CLIP_METRICS, METRIC_ALIASES, METRICS, GRPOConfig, GRPOTrainer, metric_log


def batch(seed=0, B=6, T=5):
    g = torch.Generator().manual_seed(seed)
    logp = -torch.rand(B, T, generator=g, dtype=torch.float64) * 2 - 0.1
    old = logp + 0.3 * torch.randn(B, T, generator=g, dtype=torch.float64)
    ref = logp + 0.3 * torch.randn(B, T, generator=g, dtype=torch.float64)
    mask = (torch.arange(T)[None, :] < torch.randint(1, T + 1, (B, 1), generator=g)).double()
    return logp, old, ref, torch.randn(B, generator=g, dtype=torch.float64), mask


# ---- grpo_loss: kl_estimator and use_bias_correction_kl ---------------------------------------------
def test_kl_estimators_table_is_chapter_17s():
    logp, _, ref, _, _ = batch()
    for name, k in zip(("k1", "k2", "k3"), kl_estimators(logp.numpy(), ref.numpy())):
        np.testing.assert_allclose(KL_ESTIMATORS[name](ref - logp).numpy(), k, rtol=0, atol=1e-15)


@pytest.mark.parametrize("estimator", ["k1", "k2", "k3"])
@pytest.mark.parametrize("corrected", [False, True])
def test_kl_term_is_beta_times_the_estimator_times_the_ratio(estimator, corrected):
    """With zero advantages the loss is beta times the token mean of w k, w = rho (corrected) or 1."""
    logp, old, ref, _, mask = batch(1)
    loss, stats = grpo_loss(logp, old, torch.zeros(len(logp), dtype=torch.float64), mask, beta=0.3, ref_logp=ref,
                            loss_type="bnpo", kl_estimator=estimator, use_bias_correction_kl=corrected)
    w = torch.exp(logp - old) if corrected else torch.ones_like(logp)
    k = dict(zip(("k1", "k2", "k3"), kl_estimators(logp, ref)))
    assert float(loss) == pytest.approx(0.3 * float((w * k[estimator] * mask).sum() / mask.sum()), rel=1e-12)
    assert stats["mean_kl"] == pytest.approx(float((w * k["k3"] * mask).sum() / mask.sum()), rel=1e-12)


def test_the_corrected_k3_and_k2_pull_along_the_reverse_kl():
    """On-policy (old = sg(logp)): d(rho k3)/d logp = k1 and d k2/d logp = k1, the reverse KL's weight;
    plain k3's is 1 - pi_ref / pi, the forward KL's (chapter 17)."""
    logp, _, ref, _, mask = batch(2)
    mask = torch.ones_like(mask)
    n = mask.sum()
    k1 = logp - ref
    for estimator, corrected, weight in (("k3", True, k1), ("k2", False, k1), ("k3", False, 1 - torch.exp(ref - logp)),
                                         ("k1", False, torch.ones_like(k1))):
        x = logp.clone().requires_grad_(True)
        loss, _ = grpo_loss(x, x.detach(), torch.zeros(len(x), dtype=torch.float64), mask, beta=1.0, ref_logp=ref,
                            loss_type="bnpo", kl_estimator=estimator, use_bias_correction_kl=corrected)
        (grad,) = torch.autograd.grad(loss, x)
        torch.testing.assert_close(grad * n, weight, rtol=1e-12, atol=1e-12)


def test_the_correction_uses_the_sequence_ratio_before_deltas_cap():
    logp, old, ref, adv, mask = batch(3)
    s = torch.exp(((logp - old) * mask).sum(1, keepdim=True) / mask.sum(1, keepdim=True))
    k3 = kl_estimators(logp, ref)[2]
    for delta in (None, 1.01):
        _, stats = grpo_loss(logp, old, adv, mask, ref_logp=ref, importance_sampling_level="sequence", delta=delta,
                             use_bias_correction_kl=True)
        assert stats["mean_kl"] == pytest.approx(float((s * k3 * mask).sum() / mask.sum()), rel=1e-12)


def test_clip_stats_split_low_and_high_and_count_sequences_at_the_sequence_level():
    logp = torch.log(torch.tensor([[1.5, 1.0], [1.5, 1.0], [0.5, 1.0], [0.5, 1.0]]))
    old, adv = torch.zeros(4, 2), torch.tensor([1.0, -1.0, -1.0, 1.0])
    mask = torch.tensor([[1.0, 1.0], [1.0, 0.0], [1.0, 1.0], [1.0, 1.0]])
    _, stats = grpo_loss(logp, old, adv, mask)           # binds: row 0 token 0 (high), row 2 token 0 (low)
    assert stats["clip_high_fraction"] == pytest.approx(1 / 7) and stats["clip_low_fraction"] == pytest.approx(1 / 7)
    assert stats["clip_fraction"] == pytest.approx(2 / 7)
    assert stats["clip_high_max"] == pytest.approx(0.5) and stats["clip_low_min"] == 0.0
    seq = torch.log(torch.tensor([[1.5], [1.5], [0.5], [0.5]])).expand(4, 2).contiguous()
    _, stats = grpo_loss(seq, old, adv, mask, importance_sampling_level="sequence")
    assert (stats["clip_high_fraction"], stats["clip_low_fraction"], stats["clip_fraction"]) == (0.25, 0.25, 0.5)
    assert stats["clip_high_max"] == 1.0


def test_bad_kl_knobs():
    logp, old, ref, adv, mask = batch()
    with pytest.raises(ValueError, match="kl_estimator"):
        grpo_loss(logp, old, adv, mask, beta=0.1, ref_logp=ref, kl_estimator="k4")
    with pytest.raises(ValueError, match="use_bias_correction_kl"):
        grpo_loss(logp, old, adv, mask, beta=0.1, ref_logp=ref, use_bias_correction_kl=1)
    with pytest.raises(ValueError, match="estimator"):
        KLInLoss(estimator="k4")
    with pytest.raises(TypeError, match="estimator"):      # in the reward the KL is k1, uncorrected: no knobs
        KLInReward(estimator="k3")
    with pytest.raises(TypeError, match="use_bias_correction_kl"):
        KLInReward(use_bias_correction_kl=True)
    with pytest.raises(ValueError, match="delta"):
        ImportanceRatio(delta=1.0)
    with pytest.raises(ValueError, match="level"):
        ImportanceRatio(level="answer")
    with pytest.raises(ValueError, match="use_bias_correction_kl"):
        KLInLoss(use_bias_correction_kl="yes")


# ---- the trainer ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def warm():
    from rl4llm.llm.warmstart import warm_start
    return warm_start().model


TINY = dict(steps=3, prompts_per_step=4, group_size=4, warmup_steps=2, eval_every=3, device="cpu")


def test_defaults_pass_the_default_kl_knobs_to_the_loss():
    options = GRPOConfig(beta=0.1).loss_options()
    assert (options["beta"], options["kl_estimator"], options["use_bias_correction_kl"], options["delta"]) == \
        (0.1, "k3", False, None)
    assert GRPOConfig(beta=0.1).loss_options(KLInReward())["beta"] == 0.0


def test_kl_in_the_reward_shapes_the_advantages(warm):
    """kl=KLInReward(): A = group_advantages(r - beta sum_t (log pi_old - log pi_ref)), both log-probs from the full
    forward pass, and the loss has no KL term; checked on a policy moved away from the reference so that the KL is
    not 0."""
    config = GRPOConfig(**TINY, beta=0.5, lr=1e-2)
    trainer = GRPOTrainer(warm, AdditionTask(seed=0), config, kl=KLInReward())
    trainer.train(2, progress=False)
    batch = trainer.rollout()
    with torch.no_grad():
        ref, _ = completion_logprobs(trainer.reference, batch.rollout.tokens, batch.rollout.prompt_len)
        old, _ = completion_logprobs(trainer.policy, batch.rollout.tokens, batch.rollout.prompt_len)
    k1 = ((old - ref) * batch.rollout.mask).sum(dim=1).view(-1, 4)
    assert float(k1.abs().max()) > 1e-3
    expected = group_advantages((batch.rewards - 0.5 * k1).numpy()).reshape(-1)
    np.testing.assert_allclose(batch.advantages.numpy(), expected, atol=1e-5)
    np.testing.assert_allclose(batch.ref_logp.numpy(), ref.numpy(), atol=1e-6)


def test_with_the_kl_in_the_reward_flat_groups_are_found_from_the_shaped_reward(warm):
    """The advantages come from r - beta sum_t k1 (as TRL computes advantages from the reward it optimises),
    so a group is flat, and dropped, only when that shaped reward is equal across it: a group of equal
    scores whose KLs differ still has advantages, and stays in the loss batch."""
    config = GRPOConfig(**{**TINY, "prompts_per_step": 16}, beta=0.5, lr=1e-2,
                        drop_zero_variance=True)     # 16 prompts: some group all wrong on any CPU
    trainer = GRPOTrainer(warm, AdditionTask(seed=0), config, kl=KLInReward())
    trainer.train(2, progress=False)
    batch = trainer.rollout()
    with torch.no_grad():
        ref, _ = completion_logprobs(trainer.reference, batch.rollout.tokens, batch.rollout.prompt_len)
        old, _ = completion_logprobs(trainer.policy, batch.rollout.tokens, batch.rollout.prompt_len)
    shaped = batch.rewards - 0.5 * ((old - ref) * batch.rollout.mask).sum(dim=1).view(-1, 4)
    informative = (shaped.amax(dim=1) > shaped.amin(dim=1)).repeat_interleave(4)
    raw_flat = (batch.rewards.amax(dim=1) == batch.rewards.amin(dim=1)).repeat_interleave(4)
    assert torch.equal(batch.informative, informative) and torch.equal(batch.keep, informative)
    assert bool((raw_flat & informative).any())          # equal scores, unequal KLs: kept
    expected = group_advantages(shaped.numpy()).reshape(-1)[informative.numpy()]
    np.testing.assert_allclose(batch.advantages.numpy(), expected, atol=1e-5)
    np.testing.assert_allclose(batch.ref_logp.numpy(), ref[informative].numpy(), rtol=1e-6, atol=1e-5)


def test_kl_in_the_reward_is_exactly_0_while_the_policy_is_the_reference(warm):
    """At step 1 pi_old is pi_ref: the shaped reward equals the score exactly, so a group of equal scores stays flat.
    Scoring pi_old by the sampling pass instead (``rollout.logp``) leaves a KL of float rounding in every answer,
    which the group's std would scale up to advantages of order 1."""
    config = GRPOConfig(**{**TINY, "prompts_per_step": 16}, beta=0.5)
    trainer = GRPOTrainer(warm, AdditionTask(seed=0), config, kl=KLInReward())
    batch = trainer.rollout()
    flat = (batch.rewards.amax(dim=1) == batch.rewards.amin(dim=1)).repeat_interleave(4)
    assert bool(flat.any()) and torch.equal(batch.informative, ~flat)
    assert float(batch.advantages[flat].abs().max()) == 0.0
    with torch.no_grad():
        ref, _ = completion_logprobs(trainer.reference, batch.rollout.tokens, batch.rollout.prompt_len)
    rounding = ((batch.rollout.logp - ref) * batch.rollout.mask).sum(dim=1)
    assert float(rounding.abs().max()) < 1e-4          # the other route's KL at step 1: rounding only


def test_trl_named_metrics_and_aliases(warm):
    trainer = GRPOTrainer(warm, AdditionTask(seed=0), GRPOConfig(**TINY, inner_steps=2, lr=1e-2)).train(progress=False)
    m = trainer.metrics
    assert set(m) == set(METRICS) | set(METRIC_ALIASES) and all(len(m[k]) == 3 for k in METRICS)
    assert {"reward", "reward_std", "frac_reward_zero_std", "entropy", "kl", *CLIP_METRICS, "completions/mean_length",
            "completions/max_length", "completions/clipped_ratio", "loss", "grad_norm", "learning_rate"} <= set(m)
    for alias, name in METRIC_ALIASES.items():
        assert m[alias] is m[name]
    assert m["learning_rate"] == [1e-2 * trainer._lr_factor(u) for u in range(3)]
    assert all(lo <= mean <= hi for lo, mean, hi in zip(m["completions/min_length"], m["completions/mean_length"],
                                                        m["completions/max_length"]))
    assert all(0.0 <= x <= 1.0 for k in (*CLIP_METRICS, "completions/clipped_ratio") for x in m[k])
    assert max(m["clip_ratio/region_mean"]) > 0                      # K = 2 at lr 1e-2: the second step clips
    for step, region in zip(range(3), m["clip_ratio/region_mean"]):
        assert region == pytest.approx(m["clip_ratio/low_mean"][step] + m["clip_ratio/high_mean"][step])
    loaded = metric_log({k: list(m[k]) for k in METRICS})
    assert loaded["clip_fraction"] is loaded["clip_ratio/region_mean"]


def test_the_clipped_ratio_counts_completions_cut_at_the_cap():
    task = AdditionTask(seed=0)
    model = GPT(GPTConfig())                                          # untrained: rarely stops by itself
    trainer = GRPOTrainer(model, task, GRPOConfig(**TINY)).train(1, progress=False)
    assert trainer.metrics["completions/max_length"][0] <= trainer.config.max_new_tokens
    assert 0.0 < trainer.metrics["completions/clipped_ratio"][0] <= 1.0


# ---- chapter 19 ----------------------------------------------------------------------------------
def test_first_step_loss_is_zero_and_its_gradient_is_the_weighted_one_hots():
    answers, rewards = [2, 1, 1, 0], [1.0, 0.0, 0.0, 0.0]
    loss, gradient = first_step(answers, rewards)
    A = group_advantages(np.array(rewards))
    assert abs(loss) < 1e-12
    np.testing.assert_allclose(gradient, -np.bincount(answers, weights=A, minlength=5) / 4, atol=1e-12)
    assert np.linalg.norm(gradient) == pytest.approx(math.sqrt(14 / 3) / 4, rel=1e-6)
    with pytest.raises(ValueError, match="answers"):
        first_step([7, 1], [1.0, 0.0])
    with pytest.raises(ValueError, match="rewards"):
        first_step([2, 1], [1.0])
    assert first_step([2, 1], [1.0, 0.0], logits=LOGITS)[0] == pytest.approx(0.0, abs=1e-12)


def test_the_tagged_verifier_never_rewards_this_model_but_reads_tags():
    task = TaggedAnswerTask(seed=0)
    tok = task.tokenizer
    pairs = np.array([[7, 45], [7, 45]])
    ids = np.array([tok.encode("52<eos>"), tok.encode("53<eos>")])
    assert task.rewards(pairs, ids).tolist() == [0.0, 0.0]
    assert AdditionTask(seed=0).rewards(pairs, ids).tolist() == [1.0, 0.0]
    with pytest.raises(ValueError, match="completion_ids"):
        task.rewards(pairs, ids[:1])


def test_the_flat_run_never_moves(warm):
    runs = train_runs(warm, AdditionTask(seed=0), [0], {"flat": RUNS["every group flat"]},
                      base=GRPOConfig(**TINY, beta=0.04))
    (trainer,) = runs["flat"]
    m = trainer.metrics
    assert m["frac_reward_zero_std"] == [1.0] * 3 and m["grad_norm"] == [0.0] * 3 and max(m["kl"]) < 1e-6
    assert all(x == 0.0 for x in m["loss"]) and trainer.config.beta == 0.0
    assert all(torch.equal(p, q) for p, q in zip(trainer.policy.parameters(), trainer.reference.parameters()))
    with pytest.raises(ValueError, match="seeds"):
        train_runs(warm, AdditionTask(seed=0), [])


@pytest.mark.parametrize("exercise, expected", [("ex-ch19-loss-at-start", -(1 * 3 + (-1) * 2) / 5),
                                                ("ex-ch19-gradient-at-start", math.sqrt(6) / 4)])
def test_chapter_19_by_hand_exercises(exercise, expected):
    """The values by hand (dapo's token sum over 5 tokens; |-(1/4)(2 e5 - e4 - e0)|),
    and every listed mistake its own message."""
    from rl4llm.exercises import SPECS, answer_key, check

    spec = SPECS[exercise]
    assert spec.value == pytest.approx(expected, abs=1e-6) and spec.chapter == 19
    assert check(exercise, expected).startswith("Correct:")
    for wrong, explanation in spec.mistakes:
        assert check(exercise, wrong) == f"Not yet: {explanation}.", explanation
    assert exercise in answer_key()


def test_the_bodys_gradient_norm_is_a_named_slip():
    """0.5401, the norm the chapter prints for its group 5, 4, 4, 0, is told apart from exercise 19.6's group."""
    from rl4llm.exercises import check

    assert check("ex-ch19-gradient-at-start", 0.5401) == (
        "Not yet: 0.5401 is the chapter's group (5, 4, 4, 0); this exercise's group is 5, 5, 4, 0.")


def test_the_sampler_mismatch_is_logged_under_trls_names(warm):
    """With a rollout engine (chapter 20) the trainer logs TRL's sampling/* metrics: the gap between the
    trainer's and the sampler's log-probs and the importance weights; without one they are NaN."""
    from rl4llm.llm.samplers import SAMPLING_METRICS, RolloutEngineSampler

    own = GRPOTrainer(warm, AdditionTask(seed=0), GRPOConfig(**TINY)).train(1, progress=False)
    assert all(math.isnan(own.metrics[k][0]) for k in SAMPLING_METRICS)
    engine = GRPOTrainer(warm, AdditionTask(seed=0), GRPOConfig(**TINY),
                         sampler=RolloutEngineSampler(precision="bfloat16", mode="sequence_truncate"))
    m = engine.train(2, progress=False).metrics
    gap_mean, gap_max = m["sampling/sampling_logp_difference/mean"][-1], m["sampling/sampling_logp_difference/max"][-1]
    assert 0 < gap_mean <= gap_max
    low, mean, high = (m[f"sampling/importance_sampling_ratio/{k}"][-1] for k in ("min", "mean", "max"))
    assert 0 < low <= mean <= high <= 3.0
