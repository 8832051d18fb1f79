"""The bridge to TRL 1.16 (chapter 15): the knobs as real trl.GRPOConfig fields, the same loss and gradient."""
import dataclasses
import math
import subprocess
import sys

import pytest
import torch

from rl4llm.grpo import LOSS_TYPES, group_advantages
from rl4llm.model import GPT, GPTConfig, completion_logprobs
from rl4llm.tasks import CharTokenizer
from rl4llm.trainer import GRPOConfig
from rl4llm.trl_bridge import (FIXED, KNOBS, char_tokenizer_for_transformers, compare_losses, knob_table,
                               loss_batch, trl_config_kwargs, trl_defaults, trl_policy)

trl = pytest.importorskip("trl")

# Everything on at once: clip-higher, a KL term, a temperature, K = 3, no std, a non-default lr schedule.
BUSY = GRPOConfig(seed=7, steps=50, prompts_per_step=3, group_size=4, inner_steps=3, lr=3e-4, warmup_steps=5,
                  anneal_lr=True, weight_decay=0.01, grad_clip=0.5, eps_low=0.15, eps_high=0.28, beta=0.04,
                  loss_type="dr_grpo", scale_rewards=False, temperature=0.7, max_new_tokens=6, device="cpu")
SMALL = GRPOConfig(prompts_per_step=2, group_size=4, beta=0.04, eps_high=0.28, temperature=0.7)


def model():
    torch.manual_seed(0)
    return GPT(GPTConfig())


def real_trl_config(tmp_path, config, **extra):
    return trl.GRPOConfig(**{"use_cpu": True, **trl_config_kwargs(config, **extra)}, output_dir=str(tmp_path),
                          report_to="none")


def test_import_rl4llm_does_not_import_trl():
    code = "import sys, rl4llm, rl4llm.trl_bridge; print('trl' in sys.modules, 'transformers' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


def test_kwargs_read_back_from_a_real_trl_config(tmp_path):
    c = real_trl_config(tmp_path, BUSY)
    assert c.num_generations == 4
    assert c.per_device_train_batch_size == 12 and c.generation_batch_size == 12   # completions, not prompts
    assert c.num_iterations == 3 and c.max_steps == 150 and c.warmup_steps == 15    # counted in updates
    assert (c.epsilon, c.epsilon_high, c.beta) == (0.15, 0.28, 0.04)
    assert c.loss_type == "dr_grpo" and c.scale_rewards == "none"
    assert (c.temperature, c.max_completion_length) == (0.7, 6)
    assert (c.learning_rate, c.weight_decay, c.max_grad_norm, c.seed) == (3e-4, 0.01, 0.5, 7)
    assert str(getattr(c.lr_scheduler_type, "value", c.lr_scheduler_type)) == "linear"
    assert c.bf16 is False and c.activation_checkpointing is False and c.gradient_checkpointing is False and c.use_bias_correction_kl is False
    assert c.gradient_accumulation_steps == 1 and c.steps_per_generation == 1 and c.use_cpu is True


def test_defaults_map_eps_high_none_and_group_std(tmp_path):
    c = real_trl_config(tmp_path, GRPOConfig())
    assert c.epsilon_high == c.epsilon == 0.2
    assert c.scale_rewards == "group"
    assert str(getattr(c.lr_scheduler_type, "value", c.lr_scheduler_type)) == "constant_with_warmup"
    assert "use_cpu" not in trl_config_kwargs(GRPOConfig())   # device "auto": TRL picks, as ours does


def test_every_mapped_name_is_a_trl_field():
    names = {f.name for f in dataclasses.fields(trl.GRPOConfig)}
    assert set(trl_config_kwargs(BUSY)) <= names
    assert {field for field, _ in KNOBS.values() if field} <= names and set(FIXED) <= names
    assert set(KNOBS) == {f.name for f in dataclasses.fields(GRPOConfig)}   # every book knob is accounted for


def test_drop_zero_variance_has_no_trl_field(tmp_path):
    config = GRPOConfig(drop_zero_variance=True)
    with pytest.raises(ValueError, match="drop_zero_variance"):
        trl_config_kwargs(config)
    kwargs = trl_config_kwargs(config, allow_unsupported=True)
    assert kwargs == trl_config_kwargs(GRPOConfig())
    real_trl_config(tmp_path, config, allow_unsupported=True)


def test_bad_inputs():
    with pytest.raises(ValueError, match="config"):
        trl_config_kwargs({"group_size": 8})
    with pytest.raises(ValueError, match="fields"):
        trl_defaults(["no_such_field"])
    with pytest.raises(ValueError, match="tokenizer"):
        char_tokenizer_for_transformers("abc")
    with pytest.raises(ValueError, match="model"):
        trl_policy(GPT(GPTConfig(vocab_size=20)), CharTokenizer())
    with pytest.raises(ValueError, match="seed"):
        loss_batch(model(), SMALL, seed=-1)
    with pytest.raises(ValueError, match="perturbation"):
        loss_batch(model(), SMALL, perturbation=-0.1)
    with pytest.raises(ValueError, match="model"):
        loss_batch(GPT(GPTConfig(vocab_size=20)), SMALL)
    with pytest.raises(ValueError, match="loss_types"):
        compare_losses(model(), SMALL, ("ppo",))
    with pytest.raises(ValueError, match="loss_types"):
        compare_losses(model(), SMALL, ())


def test_trl_116_defaults_the_chapter_warns_about():
    d = trl_defaults(["learning_rate", "bf16", "activation_checkpointing", "use_bias_correction_kl", "loss_type",
                      "lr_scheduler_type", "max_completion_length", "use_cpu"])
    assert d == {"learning_rate": 1e-6, "bf16": True, "activation_checkpointing": True, "use_bias_correction_kl": True,
                 "loss_type": "dapo", "lr_scheduler_type": "linear", "max_completion_length": 512, "use_cpu": False}


def test_knob_table_rows_agree_with_the_mapping():
    rows = knob_table(BUSY)
    kwargs = trl_config_kwargs(BUSY)
    assert [r["knob"] for r in rows[:len(KNOBS)]] == list(KNOBS)
    for r in rows:
        if r["trl_field"]:
            assert r["trl_value"] == kwargs.get(r["trl_field"])
    assert {r["trl_field"]: r["trl_default"] for r in rows}["per_device_train_batch_size"] == 8


def test_tokenizer_and_policy_match_ours(tmp_path):
    tok = CharTokenizer()
    hf_tok = char_tokenizer_for_transformers(tok)
    text = "07+45=52<eos><pad>"
    assert hf_tok(text, add_special_tokens=False)["input_ids"] == tok.encode(text)
    ours = model()
    hf = trl_policy(ours, tok, directory=tmp_path / "policy")
    assert hf.generation_config.eos_token_id == tok.eos_id and hf.generation_config.pad_token_id == tok.pad_id
    assert hf.config._name_or_path == str(tmp_path / "policy")
    ids = torch.tensor([tok.encode("07+45=52<eos>")])
    with torch.no_grad():
        reloaded = type(hf).from_pretrained(tmp_path / "policy").eval()
        assert torch.allclose(reloaded(ids).logits, ours(ids)[0], atol=1e-5)


def test_loss_batch_is_off_policy_and_well_formed():
    m = model()
    batch = loss_batch(m, SMALL, seed=3)
    tok = CharTokenizer()
    B, T = batch.mask.shape
    assert B == 8 and batch.tokens.shape == (8, batch.prompt_len + T)
    first_zero = batch.mask.sum(dim=1).long()
    rows = torch.arange(B)
    assert bool((batch.completions[rows, first_zero - 1] == tok.eos_id).all())   # EOS is the last masked token
    assert bool((batch.completions[batch.mask == 0] == tok.pad_id).all())
    with torch.no_grad():
        logp, _ = completion_logprobs(m, batch.tokens, batch.prompt_len, SMALL.temperature)
    assert float(((logp - batch.old_logp).abs() * batch.mask).max()) > 0.2            # the ratio is not 1
    assert batch.advantages.shape == (8,)
    assert torch.allclose(batch.advantages.view(2, 4).sum(dim=1), torch.zeros(2), atol=1e-6)   # zero-mean groups
    again = loss_batch(m, SMALL, seed=3)
    assert torch.equal(again.old_logp, batch.old_logp) and torch.equal(again.tokens, batch.tokens)


@pytest.mark.parametrize("scale_rewards", [True, False])
def test_same_loss_and_gradient_as_trl(scale_rewards):
    """TRL 1.16's _compute_loss on the same batch: equal values and gradients for every loss type."""
    rows = compare_losses(model(), dataclasses.replace(SMALL, scale_rewards=scale_rewards), LOSS_TYPES, seed=1)
    assert [r["loss_type"] for r in rows] == list(LOSS_TYPES)
    for r in rows:
        assert abs(r["difference"]) < 1e-6 and r["max_grad_difference"] < 1e-6, r
        assert r["grad_norm"] > 0.1 and r["clip_fraction"] > 0            # a real gradient, with the clip binding
    by_type = {r["loss_type"]: r["rl4llm"] for r in rows}
    assert by_type["bnpo"] == by_type["dapo"]                             # one micro-batch: same token mean
    assert len({round(by_type[t], 6) for t in ("grpo", "bnpo", "dr_grpo")}) == 3   # the aggregations differ


def test_trl_advantages_are_ddof1_eps1e4():
    """TRL's group scaling, written with its own nanstd, is group_advantages(ddof=1, eps=1e-4)."""
    from trl.trainer.utils import nanstd

    rewards = torch.tensor([[1.0, 0.0, 0.0, 1.0], [1.0, 1.0, 1.0, 0.0], [0.0, 0.0, 0.0, 0.0]])
    theirs = (rewards - rewards.mean(dim=1, keepdim=True)) / (nanstd(rewards, dim=1, keepdim=True) + 1e-4)
    assert torch.allclose(group_advantages(rewards, ddof=1, eps=1e-4), theirs, atol=1e-7)
    ours = group_advantages(rewards)
    informative = rewards[:2]
    ratio = group_advantages(informative, ddof=1, eps=0.0) / group_advantages(informative, eps=0.0)
    assert torch.allclose(ratio[ours[:2] != 0], torch.tensor(math.sqrt(3 / 4)))
