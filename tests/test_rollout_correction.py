"""Chapter 20's correction for a sampler that is not the trainer (rl4llm.llm.rollout_correction), checked against
TRL 1.16's own code on the same batch: its importance weights (the lines of
GRPOTrainer._generate_and_score_completions that compute them, run as TRL wrote them), its off-policy sequence
mask (GRPOTrainer.get_off_policy_mask) and the loss and gradient of GRPOTrainer._compute_loss."""
import dataclasses
import inspect
import math
import tempfile
import textwrap
from types import SimpleNamespace

import pytest
import torch

from rl4llm.llm.grpo import grpo_loss
from rl4llm.trl.adapters import quiet
from rl4llm.math.loss_types import LOSS_TYPES
from rl4llm.llm.model import GPT, GPTConfig, Rollout, completion_logprobs
from rl4llm.llm.rollout_correction import (IMPORTANCE_SAMPLING_MODES, importance_weights, off_policy_mask,
                                       sampler_gap, weighted_advantages)
from rl4llm.llm.kl_placement import KLInReward
from rl4llm.llm.ratios import ImportanceRatio
from rl4llm.llm.samplers import RolloutEngineSampler
from rl4llm.llm.tasks import AdditionTask
from rl4llm.llm.trainer import Batch, GRPOConfig, GRPOTrainer
from rl4llm.trl.parity import TRL_LOSS_TYPES, book_layout, loss_batch, trl_loss_inputs, trl_loss_trainer

trl = pytest.importorskip("trl")

SMALL = GRPOConfig(prompts_per_step=2, group_size=4, beta=0.04, eps_high=0.28, temperature=0.7, device="cpu")
#: The engine's log-probs are the trainer's old ones plus N(0, SAMPLER_NOISE^2) per token: wide enough that some
#: sequence ratios leave [1/3, 3] and some tokens' leave [0.8, 1.25], so every truncation and mask acts.
SAMPLER_NOISE = 1.0


def model():
    torch.manual_seed(0)
    return GPT(GPTConfig())


def sampler_batch(config=dataclasses.replace(SMALL, prompts_per_step=8), seed=1):
    """chapter 16's hand-made batch, and an engine's log-probs of its tokens."""
    batch = loss_batch(model(), config, seed=seed)
    noise = torch.randn(batch.old_logp.shape, generator=torch.Generator().manual_seed(seed + 100))
    return batch, (batch.old_logp + SAMPLER_NOISE * noise) * batch.mask


def trl_importance_weights(old_logp, sampler_logp, mask, mode, clip_max, clip_min):
    """TRL 1.16's importance weights: the block of _generate_and_score_completions that computes them, run as
    written (its `self` holds the four knobs; use_vllm is True, as the block requires)."""
    from trl.trainer.grpo_trainer import GRPOTrainer as TRLTrainer

    source = inspect.getsource(TRLTrainer._generate_and_score_completions)
    start = source.index("            # Compute the importance sampling ratio when using vLLM")
    end = source.index("            # Compute the per-token log probabilities for the reference model")
    knobs = SimpleNamespace(use_vllm=True, vllm_importance_sampling_correction=True,
                            vllm_importance_sampling_mode=mode, vllm_importance_sampling_clip_max=clip_max,
                            vllm_importance_sampling_clip_min=clip_min)
    scope = {"self": knobs, "torch": torch, "math": math, "old_per_token_logps": old_logp,
             "sampling_per_token_logps": sampler_logp, "completion_mask": mask.long(), "tool_mask": None}
    exec(textwrap.dedent(source[start:end]), scope)
    return scope["vllm_importance_sampling_ratio"]


@pytest.mark.parametrize("mode", IMPORTANCE_SAMPLING_MODES)
@pytest.mark.parametrize("clip_max, clip_min", [(3.0, None), (1.25, 0.8), (None, 0.8)])
def test_importance_weights_are_trls(mode, clip_max, clip_min):
    if clip_max is None and mode.endswith("truncate"):
        clip_max = 3.0      # truncation needs a bound above in this case; tested below with one
    batch, sampler_logp = sampler_batch()
    ours = importance_weights(batch.old_logp, sampler_logp, batch.mask, mode=mode, clip_max=clip_max,
                              clip_min=clip_min)
    theirs = trl_importance_weights(batch.old_logp, sampler_logp, batch.mask, mode, clip_max, clip_min)
    assert ours.shape == theirs.shape == ((32, 1) if mode.startswith("sequence") else batch.mask.shape)
    assert torch.equal(ours, theirs)
    raw = torch.exp(sampler_gap(batch.old_logp, sampler_logp, batch.mask))
    raw = raw.prod(dim=1, keepdim=True) if mode.startswith("sequence") else raw
    outside = ((raw > (clip_max or math.inf)) | (raw < (clip_min or 0.0)))
    assert bool(outside.any()) and bool((~outside).any())        # the bounds act on some weights, not all


@pytest.mark.parametrize("mode", IMPORTANCE_SAMPLING_MODES)
def test_logged_weights_are_trls(mode):
    """sampling/importance_sampling_ratio/{min,mean,max} over what TRL 1.16 takes them: a sequence mode's weights
    flattened, a token mode's at the completion tokens only (the padding's weight 1 left out)."""
    from trl.trainer.grpo_trainer import GRPOTrainer as TRLTrainer

    source = " ".join(inspect.getsource(TRLTrainer._generate_and_score_completions).split())
    assert ("if sequence_level_is: flat_is_ratio = vllm_importance_sampling_ratio.flatten() "
            "else: flat_is_ratio = vllm_importance_sampling_ratio[mask]") in source
    batch, sampler_logp = sampler_batch()
    assert bool((batch.mask == 0).any())                    # the batch has padding, which a token mode must skip
    weights = importance_weights(batch.old_logp, sampler_logp, batch.mask, mode=mode, clip_max=3.0)
    ratio = trl_importance_weights(batch.old_logp, sampler_logp, batch.mask, mode, 3.0, None)
    trl_flat = ratio.flatten() if mode.startswith("sequence") else ratio[batch.mask.bool()]
    logged = RolloutEngineSampler.metrics(SimpleNamespace(trainer_logp=batch.old_logp, sampler_logp=sampler_logp,
                                                          mask=batch.mask, importance_weights=weights))
    for name, value in (("min", trl_flat.min()), ("mean", trl_flat.mean()), ("max", trl_flat.max())):
        assert math.isclose(logged[f"sampling/importance_sampling_ratio/{name}"], float(value), rel_tol=1e-6)


def test_off_policy_mask_is_trls():
    from trl.trainer.grpo_trainer import GRPOTrainer as TRLTrainer

    batch, sampler_logp = sampler_batch()
    logp = batch.ref_logp                      # a "current policy" that moved away from both
    for threshold in (0.0, 0.05, 0.5):
        ours = off_policy_mask(batch.advantages, logp, sampler_logp, batch.mask, threshold)
        theirs = TRLTrainer.get_off_policy_mask(batch.advantages.unsqueeze(1), logp, sampler_logp, batch.mask,
                                                threshold)
        assert torch.equal(ours, theirs)
    assert float(off_policy_mask(batch.advantages, logp, sampler_logp, batch.mask, 0.0).sum()) < 32
    assert bool((off_policy_mask(batch.advantages, logp, sampler_logp, batch.mask, 0.0)[batch.advantages >= 0] == 1).all())


def trainer_batch(batch, sampler_logp, weights):
    """The trainer's Batch of an engine's rollout of chapter 16's batch: every row kept."""
    rollout = Rollout(batch.tokens, sampler_logp, batch.mask, batch.prompt_len)
    keep = torch.ones(len(batch.tokens), dtype=torch.bool)
    return Batch(rollout, torch.zeros(len(keep) // 4, 4), keep, keep, batch.advantages, batch.ref_logp,
                 batch.old_logp, weights)


#: The corrections the trainer applies: (TRL's vllm_importance_sampling_mode or None, off_policy_mask_threshold).
CORRECTIONS = [("sequence_mask", None), ("sequence_truncate", None), ("token_mask", None), ("token_truncate", None),
               (None, 0.05), ("sequence_mask", 0.05), ("token_truncate", 0.05)]


@pytest.mark.parametrize("loss_type", [t for t in LOSS_TYPES if t in TRL_LOSS_TYPES])
@pytest.mark.parametrize("mode, threshold", CORRECTIONS)
def test_the_trainers_corrected_loss_and_gradient_are_trls(loss_type, mode, threshold):
    """TRL's _compute_loss with use_vllm and the correction on (and/or the off-policy mask), and the book's
    trainer's loss (its advantages carrying the per-sequence weights, Sampler.weighted_advantages): equal
    values and gradients, with a KL term and clip-higher on. VESPO with the correction is refused instead: TRL
    1.16 folds the sampler's weights into VESPO's sequence ratio (ln w gains sum_t ln IS_t inside phi) instead
    of multiplying the loss, which an advantage times a weight cannot express."""
    if loss_type == "vespo" and mode is not None:
        with pytest.raises(ValueError, match="folds the engine's importance weights into VESPO's phi"):
            GRPOTrainer(model(), AdditionTask(0, 500), dataclasses.replace(SMALL, loss_type=loss_type),
                        sampler=RolloutEngineSampler(precision="bfloat16", correction=True, mode=mode))
        return
    config = dataclasses.replace(SMALL, loss_type=loss_type)
    sampler = RolloutEngineSampler(precision="bfloat16", correction=mode is not None, mode=mode or "sequence_mask",
                                   off_policy_mask_threshold=threshold)
    policy = model()
    batch, sampler_logp = sampler_batch(config)
    weights = importance_weights(batch.old_logp, sampler_logp, batch.mask, mode=mode) if mode else None
    trainer = GRPOTrainer(policy, AdditionTask(0, 500), config, sampler=sampler)
    params = dict(trainer.policy.named_parameters())
    logp, _ = completion_logprobs(trainer.policy, batch.tokens, batch.prompt_len, config.temperature)
    ours, stats = grpo_loss(logp, batch.old_logp,
                            sampler.weighted_advantages(trainer_batch(batch, sampler_logp, weights), logp),
                            batch.mask, ref_logp=batch.ref_logp, **trainer.loss_options)
    our_grads = dict(zip(params, torch.autograd.grad(ours, list(params.values()))))
    with quiet(), tempfile.TemporaryDirectory() as tmp:
        # TRL's engine is vLLM, which it switches on here (use_vllm); its config maps the rest of the book's
        trl_trainer = trl_loss_trainer(policy, batch, config, tmp)
        trl_trainer.use_vllm, trl_trainer.vllm_importance_sampling_correction = True, mode is not None
        trl_trainer.off_policy_mask_threshold = threshold
        inputs = trl_loss_inputs(batch) | {"sampling_per_token_logps": sampler_logp}
        if mode:
            inputs["importance_sampling_ratio"] = trl_importance_weights(batch.old_logp, sampler_logp, batch.mask,
                                                                         mode, 3.0, None)
        theirs = trl_trainer._compute_loss(trl_trainer.model, inputs)
    trl_params = dict(trl_trainer.model.named_parameters())
    their_grads = book_layout(policy, dict(zip(trl_params, torch.autograd.grad(theirs, list(trl_params.values())))))
    assert abs(float(theirs.detach()) - float(ours.detach())) < 1e-6
    assert max(float((their_grads[n] - g).abs().max()) for n, g in our_grads.items()) < 1e-6
    plain, _ = grpo_loss(logp, batch.old_logp, batch.advantages, batch.mask, ref_logp=batch.ref_logp,
                         **trainer.loss_options)
    assert abs(float(plain.detach()) - float(ours.detach())) > 1e-4          # the correction changed the loss


def test_weights_ride_on_the_advantage():
    advantages = torch.tensor([1.0, -0.5, 0.0])
    weights = torch.tensor([[0.5], [0.0], [3.0]])
    assert torch.equal(weighted_advantages(advantages, weights), torch.tensor([0.5, -0.0, 0.0]))
    per_token = torch.tensor([[0.5, 2.0], [1.0, 0.0], [3.0, 1.0]])
    assert torch.equal(weighted_advantages(advantages, per_token), torch.tensor([[0.5, 2.0], [-0.5, -0.0], [0.0, 0.0]]))
    assert torch.equal(weighted_advantages(weighted_advantages(advantages, per_token), weights),
                       torch.tensor([[0.25, 1.0], [-0.0, -0.0], [0.0, 0.0]]))


@pytest.mark.parametrize("strategies, message", [
    ({"kl": KLInReward()}, r"kl=KLInReward\(\) needs the policy to sample"),
    ({"sampler": RolloutEngineSampler(mode="token_mask"), "ratio": ImportanceRatio(level="sequence")},
     "needs ImportanceRatio\\(level='token'\\)"),
])
def test_a_separate_sampler_refuses_what_it_cannot_do(strategies, message):
    with pytest.raises(ValueError, match=message):
        GRPOTrainer(model(), AdditionTask(0, 500), SMALL, **{"sampler": RolloutEngineSampler(), **strategies})


@pytest.mark.parametrize("call, message", [
    (lambda b, s: importance_weights(b.old_logp, s, b.mask, mode="token"), "mode must be one of"),
    (lambda b, s: importance_weights(b.old_logp, s, b.mask, clip_max=-1.0), "clip_max"),
    (lambda b, s: importance_weights(b.old_logp, s, b.mask, clip_max=1.0, clip_min=2.0), "clip_min must be <="),
    (lambda b, s: importance_weights(b.old_logp, s, b.mask, mode="token_truncate", clip_max=None),
     "must not both be None"),
    (lambda b, s: importance_weights(b.old_logp, s[:, :2], b.mask), "sampler_logp must have the shape"),
    (lambda b, s: importance_weights(b.old_logp, s, b.mask * 2), "mask must contain only 0 and 1"),
    (lambda b, s: off_policy_mask(b.advantages[:3], b.old_logp, s, b.mask, 0.5), "advantages must be shaped"),
    (lambda b, s: off_policy_mask(b.advantages, b.old_logp, s, b.mask, -0.1), "threshold"),
    (lambda b, s: sampler_gap(b.old_logp.numpy(), s, b.mask), "trainer_logp must be a torch.Tensor"),
])
def test_bad_inputs(call, message):
    batch, sampler_logp = sampler_batch()
    with pytest.raises(ValueError, match=message):
        call(batch, sampler_logp)
