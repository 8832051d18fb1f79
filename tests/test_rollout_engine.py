"""Chapter 20's rollout engine (rl4llm.llm.rollout_engine) and the trainer with a sampler that is not the trainer:
lower precision, stale weights, TRL's knobs in GRPOConfig, defaults that leave training as it was."""
import dataclasses

import pytest
import torch

from rl4llm.llm.model import GPT, GPTConfig, completion_logprobs, sample
from rl4llm.llm.rollout_engine import SAMPLER_PRECISIONS, RolloutEngine
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
    config = GRPOConfig()
    assert not config.separate_sampler and GRPOTrainer(policy(), TASK, SHORT).sampler is None
    assert (config.vllm_importance_sampling_correction, config.vllm_importance_sampling_mode,
            config.vllm_importance_sampling_clip_max, config.vllm_importance_sampling_clip_min,
            config.off_policy_mask_threshold) == (True, "sequence_mask", 3.0, None, None)   # TRL 1.16's defaults
    assert set(SAMPLER_PRECISIONS) == {"float32", "bfloat16", "bfloat16_logits"}


def test_an_off_policy_mask_without_an_engine_changes_nothing_at_one_inner_step():
    """Without an engine the sampler is the policy: at K = 1 the mask compares the policy with itself."""
    warm = warm_start().model
    a = GRPOTrainer(warm, TASK, SHORT).train(progress=False)
    b = GRPOTrainer(warm, TASK, dataclasses.replace(SHORT, off_policy_mask_threshold=0.0)).train(progress=False)
    assert a.metrics["loss"] == b.metrics["loss"] and any(loss != 0 for loss in a.metrics["loss"])
    assert all(torch.equal(p, q) for p, q in zip(a.policy.parameters(), b.policy.parameters()))


def test_a_stale_bf16_run_rescores_with_the_trainer_and_weights_each_sequence():
    config = dataclasses.replace(SHORT, sampler_precision="bfloat16", sampler_staleness=2)
    trainer = GRPOTrainer(warm_start().model, TASK, config)
    trainer.train(3, progress=False)
    batch = trainer.rollout()
    with torch.no_grad():
        logp, _ = completion_logprobs(trainer.policy, batch.tokens, batch.rollout.prompt_len, 1.0, 4)
    assert torch.equal(batch.old_logp, logp) and not torch.equal(batch.sampler_logp * batch.mask, logp * batch.mask)
    assert batch.importance_weights.shape == (len(batch.tokens), 1)
    assert bool(((batch.importance_weights == 0) | (batch.importance_weights <= 3.0)).all())
    off = dataclasses.replace(config, vllm_importance_sampling_correction=False)
    assert GRPOTrainer(policy(), TASK, off).rollout().importance_weights is None


def test_a_resumed_stale_run_continues_the_uninterrupted_one(tmp_path):
    config = dataclasses.replace(SHORT, steps=6, sampler_precision="bfloat16", sampler_staleness=2,
                                 off_policy_mask_threshold=0.1)
    warm = warm_start().model
    whole = GRPOTrainer(warm, TASK, config).train(progress=False)
    half = GRPOTrainer(warm, TASK, config).train(3, progress=False)
    half.save(tmp_path / "c.pt")
    resumed = GRPOTrainer.load(tmp_path / "c.pt").train(progress=False)
    assert resumed.metrics["loss"] == whole.metrics["loss"] and any(loss != 0 for loss in whole.metrics["loss"])
    assert all(torch.equal(p, q) for p, q in zip(resumed.policy.parameters(), whole.policy.parameters()))


@pytest.mark.parametrize("kwargs, message", [
    ({"sampler_precision": "fp8"}, "sampler_precision must be one of"),
    ({"sampler_staleness": -1}, "sampler_staleness must be an integer >= 0"),
    ({"vllm_importance_sampling_correction": 1}, "vllm_importance_sampling_correction must be True or False"),
    ({"vllm_importance_sampling_mode": "token"}, "vllm_importance_sampling_mode must be one of"),
    ({"vllm_importance_sampling_clip_max": 0.0}, "vllm_importance_sampling_clip_max"),
    ({"vllm_importance_sampling_clip_min": -1.0}, "vllm_importance_sampling_clip_min"),
    ({"vllm_importance_sampling_clip_min": 4.0}, "vllm_importance_sampling_clip_min must be <="),
    ({"vllm_importance_sampling_mode": "sequence_truncate", "vllm_importance_sampling_clip_max": None},
     "must not both be None"),
    ({"off_policy_mask_threshold": -0.5}, "off_policy_mask_threshold"),
])
def test_config_bad_inputs(kwargs, message):
    with pytest.raises(ValueError, match=message):
        GRPOConfig(**kwargs)
