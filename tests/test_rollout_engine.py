"""Chapter 20's rollout engine (rl4llm.llm.rollout_engine) and the trainer with a sampler that is not the trainer:
lower precision, stale weights, TRL's knobs in the sampler strategies (rl4llm.llm.samplers), defaults that leave
training as it was."""
import dataclasses

import pytest
import torch

from rl4llm.llm.model import GPT, GPTConfig, completion_logprobs, sample
from rl4llm.llm.rollout_engine import SAMPLER_PRECISIONS, RolloutEngine
from rl4llm.llm.samplers import PolicySampler, RolloutEngineSampler
from rl4llm.llm.tasks import MAX_COMPLETION_LEN, AdditionTask
from rl4llm.llm.trainer import GRPOConfig, GRPOTrainer
from rl4llm.llm.warmstart import warm_start

TASK = AdditionTask(0, 500)
TOK = TASK.tokenizer
SHORT = GRPOConfig(steps=4, prompts_per_step=4, group_size=4, eval_every=4, device="cpu")


def policy(seed=0):
    torch.manual_seed(seed)
    return GPT(GPTConfig())


def draw(model, seed=0):
    prompts = torch.as_tensor(TASK.train_prompt_ids[:8])
    return sample(model, prompts, group_size=4, max_new_tokens=MAX_COMPLETION_LEN, eos_id=TOK.eos_id,
                  pad_id=TOK.pad_id, generator=torch.Generator().manual_seed(seed))


def test_a_float32_engine_samples_as_the_policy_does():
    p = policy()
    engine = RolloutEngine(p, "float32")
    ours, theirs = draw(engine.model), draw(p)
    assert torch.equal(ours.tokens, theirs.tokens) and torch.equal(ours.logp, theirs.logp)


@pytest.mark.parametrize("precision", ["bfloat16", "bfloat16_logits"])
def test_a_bf16_engine_is_close_to_the_policy_but_not_equal(precision):
    p = policy()
    engine = RolloutEngine(p, precision)
    rollout = draw(engine.model)
    assert rollout.logp.dtype == torch.float32                       # the logits reach the softmax in fp32
    with torch.no_grad():
        trainer_logp, _ = completion_logprobs(p, rollout.tokens, rollout.prompt_len, 1.0, 4)
    gap = ((trainer_logp - rollout.logp) * rollout.mask).abs()
    assert 0 < float(gap.max()) < 0.1                                # bf16 keeps about 3 significant digits
    weights = dict(engine.model.model.named_parameters())["wte.weight"]
    assert weights.dtype == (torch.bfloat16 if precision == "bfloat16" else torch.float32)
    assert all(not q.requires_grad for q in engine.model.parameters())


def test_a_stale_engine_loads_the_weights_of_k_syncs_ago():
    snapshots = [policy(seed) for seed in range(5)]       # the trainer's weights at five successive steps
    engine = RolloutEngine(snapshots[0], "float32", staleness=2)
    loaded = []
    for p in snapshots:
        engine.sync(p)
        loaded.append(next(i for i, q in enumerate(snapshots)
                           if torch.equal(q.wte.weight, engine.model.model.wte.weight)))
    assert loaded == [0, 0, 0, 1, 2]                      # the starting weights, then those of two syncs ago
    fresh = RolloutEngine(snapshots[0], "float32", staleness=0)
    fresh.sync(snapshots[3])
    assert torch.equal(fresh.model.model.wte.weight, snapshots[3].wte.weight)


@pytest.mark.parametrize("kwargs, message", [({"precision": "float16"}, "precision must be one of"),
                                             ({"staleness": -1}, "staleness must be an integer >= 0"),
                                             ({"staleness": 1.5}, "staleness must be an integer >= 0")])
def test_engine_bad_inputs(kwargs, message):
    with pytest.raises(ValueError, match=message):
        RolloutEngine(policy(), **kwargs)


def test_the_defaults_keep_the_trainer_its_own_sampler():
    trainer = GRPOTrainer(policy(), TASK, SHORT)
    assert trainer.sampler == PolicySampler() and trainer.engine is None
    engine = RolloutEngineSampler()
    assert (engine.correction, engine.mode, engine.clip_max, engine.clip_min,
            engine.off_policy_mask_threshold) == (True, "sequence_mask", 3.0, None, None)   # TRL 1.16's defaults
    assert set(SAMPLER_PRECISIONS) == {"float32", "bfloat16", "bfloat16_logits"}


def test_an_off_policy_mask_without_an_engine_changes_nothing_at_one_inner_step():
    """Without an engine the sampler is the policy: at K = 1 the mask compares the policy with itself."""
    warm = warm_start().model
    a = GRPOTrainer(warm, TASK, SHORT).train(progress=False)
    b = GRPOTrainer(warm, TASK, SHORT, sampler=PolicySampler(off_policy_mask_threshold=0.0)).train(progress=False)
    assert a.metrics["loss"] == b.metrics["loss"] and any(loss != 0 for loss in a.metrics["loss"])
    assert all(torch.equal(p, q) for p, q in zip(a.policy.parameters(), b.policy.parameters()))


def test_an_off_policy_mask_that_drops_nothing_leaves_a_stale_engine_run_unchanged_to_the_bit():
    """Chapter 20's lab: with a stale bf16 engine, the mask sets a run apart only by what it drops. A threshold
    no sequence reaches (1e9) gives the run of the same engine without a mask, loss for loss and weight for weight."""
    warm = warm_start().model
    engine = RolloutEngineSampler(precision="bfloat16", staleness=4, correction=False)     # the lab's engine
    a = GRPOTrainer(warm, TASK, SHORT, sampler=engine).train(progress=False)
    masked = dataclasses.replace(engine, off_policy_mask_threshold=1e9)
    b = GRPOTrainer(warm, TASK, SHORT, sampler=masked).train(progress=False)
    assert a.metrics["loss"] == b.metrics["loss"] and any(loss != 0 for loss in a.metrics["loss"])
    assert all(torch.equal(p, q) for p, q in zip(a.policy.parameters(), b.policy.parameters()))


def test_a_stale_bf16_run_rescores_with_the_trainer_and_weights_each_sequence():
    sampler = RolloutEngineSampler(precision="bfloat16", staleness=2)
    trainer = GRPOTrainer(warm_start().model, TASK, SHORT, sampler=sampler)
    trainer.train(3, progress=False)
    batch = trainer.rollout()
    with torch.no_grad():
        logp, _ = completion_logprobs(trainer.policy, batch.tokens, batch.rollout.prompt_len, 1.0, 4)
    assert torch.equal(batch.old_logp, logp) and not torch.equal(batch.sampler_logp * batch.mask, logp * batch.mask)
    assert batch.importance_weights.shape == (len(batch.tokens), 1)
    assert bool(((batch.importance_weights == 0) | (batch.importance_weights <= 3.0)).all())
    off = dataclasses.replace(sampler, correction=False)
    assert GRPOTrainer(policy(), TASK, SHORT, sampler=off).rollout().importance_weights is None


def test_a_resumed_stale_run_continues_the_uninterrupted_one(tmp_path):
    config = dataclasses.replace(SHORT, steps=6)
    sampler = RolloutEngineSampler(precision="bfloat16", staleness=2, off_policy_mask_threshold=0.1)
    warm = warm_start().model
    whole = GRPOTrainer(warm, TASK, config, sampler=sampler).train(progress=False)
    half = GRPOTrainer(warm, TASK, config, sampler=sampler).train(3, progress=False)
    half.save(tmp_path / "c.pt")
    resumed = GRPOTrainer.load(tmp_path / "c.pt")
    assert resumed.sampler == sampler
    resumed.train(progress=False)
    assert resumed.metrics["loss"] == whole.metrics["loss"] and any(loss != 0 for loss in whole.metrics["loss"])
    assert all(torch.equal(p, q) for p, q in zip(resumed.policy.parameters(), whole.policy.parameters()))


@pytest.mark.parametrize("kwargs, message", [
    ({"precision": "fp8"}, "precision must be one of"),
    ({"staleness": -1}, "staleness must be an integer >= 0"),
    ({"correction": 1}, "correction must be True or False"),
    ({"mode": "token"}, "mode must be one of"),
    ({"clip_max": 0.0}, "clip_max"),
    ({"clip_min": -1.0}, "clip_min"),
    ({"clip_min": 4.0}, "clip_min must be <="),
    ({"mode": "sequence_truncate", "clip_max": None}, "must not both be None"),
    ({"off_policy_mask_threshold": -0.5}, "off_policy_mask_threshold"),
])
def test_sampler_bad_inputs(kwargs, message):
    with pytest.raises(ValueError, match=message):
        RolloutEngineSampler(**kwargs)
    if "off_policy_mask_threshold" in kwargs:
        with pytest.raises(ValueError, match=message):
            PolicySampler(**kwargs)


def test_the_trainer_refuses_what_is_not_a_strategy():
    with pytest.raises(ValueError, match="sampler must be a Sampler"):
        GRPOTrainer(policy(), TASK, SHORT, sampler="bfloat16")
    with pytest.raises(ValueError, match="kl must be a KLInLoss or KLInReward"):
        GRPOTrainer(policy(), TASK, SHORT, kl="reward")
    with pytest.raises(ValueError, match="ratio must be a ImportanceRatio"):
        GRPOTrainer(policy(), TASK, SHORT, ratio="sequence")
