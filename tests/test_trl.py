"""The bridge to TRL 1.16 (chapter 16): the knobs as real trl.GRPOConfig fields (rl4llm.trl.knobs), the same
loss and gradient (rl4llm.trl.parity), and a real TRL run (rl4llm.trl.run)."""
import dataclasses
import itertools
import math
import subprocess
import sys

import pytest
import torch

from rl4llm.math.credit import group_advantages
from rl4llm.math.loss_types import loss_types_with
from rl4llm.llm.entropy import EntropyControl
from rl4llm.llm.grpo import grpo_loss
from rl4llm.llm.kl_placement import KLInLoss, KLInReward
from rl4llm.llm.model import GPT, GPTConfig, completion_logprobs
from rl4llm.llm.ratios import ImportanceRatio
from rl4llm.llm.samplers import PolicySampler, RolloutEngineSampler
from rl4llm.llm.tasks import CharTokenizer
from rl4llm.llm.trainer import CLIP_METRICS, GRPOConfig
from rl4llm.trl.adapters import char_tokenizer_for_transformers, quiet, trl_policy
from rl4llm.trl.knobs import (FIXED, KNOBS, SAMPLER_KNOBS, knob_table, sampler_knob_table, trl_config_kwargs,
                              trl_defaults)
from rl4llm.trl.parity import TRL_LOSS_TYPES, compare_losses, loss_batch

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
    """The knob mapping and the parity harness import trl and transformers only when called; the TRL run's
    module subclasses transformers' callback, so it imports transformers (and only it does)."""
    code = ("import sys, rl4llm, rl4llm.trl.knobs, rl4llm.trl.parity, rl4llm.trl.adapters; "
            "print('trl' in sys.modules, 'transformers' in sys.modules)")
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
    strategy_knobs = {f"{cls.__name__}.{f.name}" for cls in (KLInLoss, ImportanceRatio, RolloutEngineSampler,
                                                             EntropyControl)
                      for f in dataclasses.fields(cls)} - {"RolloutEngineSampler.off_policy_mask_threshold",
                                                           "EntropyControl.last_entropy", "EntropyControl.steps"}
    assert set(KNOBS) == {f.name for f in dataclasses.fields(GRPOConfig)} | strategy_knobs | \
        {"KLInReward", "Sampler.off_policy_mask_threshold"}            # every book knob is accounted for


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


def test_the_sampler_knob_table_reads_both_trainers_defaults():
    rows = {row["knob"]: row for row in sampler_knob_table()}
    assert list(rows) == list(SAMPLER_KNOBS)
    for knob, (field, async_field) in SAMPLER_KNOBS.items():     # the book's chapter-16 mapping says the same
        assert KNOBS.get(knob, (field,))[0] == field and rows[knob]["trl_field"] == field
    assert rows["RolloutEngineSampler.staleness"]["async_default"] == 4
    assert rows["RolloutEngineSampler.mode"]["trl_default"] == rows["RolloutEngineSampler.mode"]["book"] == "sequence_mask"
    assert rows["RolloutEngineSampler.clip_max"]["trl_default"] == 3.0
    with quiet():
        from trl.experimental.async_grpo import AsyncGRPOConfig
    assert not any("importance" in f.name or "off_policy" in f.name for f in dataclasses.fields(AsyncGRPOConfig))
    with pytest.raises(ValueError, match="sampler"):
        sampler_knob_table("bfloat16")


def _policy_ahead_by_schedule(gas: int, spg: int, K: int, horizon: int = 200) -> bool:
    """An independent statement of the rule: walk TRL's micro-batches. A batch is generated at every micro-batch
    s with s % (spg K) == 0 and used until the next; an optimizer step falls before every micro-batch t with
    t % gas == 0 (t > 0). pi is ahead of the sampler when a step falls between a batch's generation and a later
    micro-batch that uses it."""
    for s in range(horizon):
        generated_at = s - s % (spg * K)
        if any(t % gas == 0 for t in range(generated_at + 1, s + 1)):
            return True
    return False


def test_old_logps_recomputed_is_the_micro_batch_schedule():
    from rl4llm.trl.knobs import old_logps_recomputed
    for gas, spg, K in itertools.product(range(1, 9), [None, *range(1, 9)], range(1, 5)):
        ahead = _policy_ahead_by_schedule(gas, gas if spg is None else spg, K)
        assert old_logps_recomputed(gas, spg, K) is ahead, (gas, spg, K)
        assert old_logps_recomputed(gas, spg, K, vllm_correction=True) is True
    # settings (a) to (d) of chapter 21's exercise (ex-ch21-ahead; (e) is in the grid) and chapter 17's two examples
    assert [old_logps_recomputed(4), old_logps_recomputed(1, num_iterations=2), old_logps_recomputed(4, 8),
            old_logps_recomputed(2, 1, 2)] == [False, True, True, False]
    assert (old_logps_recomputed(4, 2, 2), old_logps_recomputed(4, 3, 1)) == (False, True)


def test_old_logps_recomputed_reads_trls_source(tmp_path):
    import inspect
    from trl.trainer.grpo_trainer import GRPOTrainer as TRLTrainer
    generate = " ".join(inspect.getsource(TRLTrainer._generate_and_score_completions).split())
    assert "generate_every = self.args.steps_per_generation * self.num_iterations" in generate
    assert ("if self.args.gradient_accumulation_steps % generate_every != 0 or ( "
            "self.use_vllm and self.vllm_importance_sampling_correction )") in generate
    assert "per_token_logps.detach() if old_per_token_logps is None" in inspect.getsource(TRLTrainer._compute_loss)
    with quiet():      # steps_per_generation=None becomes gradient_accumulation_steps (GRPOConfig.__post_init__)
        args = trl.GRPOConfig(output_dir=str(tmp_path), gradient_accumulation_steps=4, use_cpu=True, report_to="none")
    assert args.steps_per_generation == 4


def test_old_logps_recomputed_bad_inputs():
    from rl4llm.trl.knobs import old_logps_recomputed
    for kwargs, name in (({"gradient_accumulation_steps": 0}, "gradient_accumulation_steps"),
                         ({"gradient_accumulation_steps": 2.0}, "gradient_accumulation_steps"),
                         ({"gradient_accumulation_steps": 1, "steps_per_generation": 0}, "steps_per_generation"),
                         ({"gradient_accumulation_steps": 1, "num_iterations": True}, "num_iterations"),
                         ({"gradient_accumulation_steps": 1, "num_iterations": 0}, "num_iterations"),
                         ({"gradient_accumulation_steps": 1, "vllm_correction": 1}, "vllm_correction")):
        with pytest.raises(ValueError, match=name):
            old_logps_recomputed(**kwargs)


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


#: TRL's loss knobs, two settings each, in the 8 runs of a strength-2 orthogonal array: every pair of
#: knobs meets in all four combinations of their settings (twice), each run has every loss type.
TRL_KNOB_SETTINGS = {"scale_rewards": (True, False), "importance_sampling_level": ("token", "sequence"),
                     "eps_high": (None, 0.28), "delta": (None, 1.3), "use_bias_correction_kl": (False, True),
                     "beta": (0.0, 0.04)}
ORTHOGONAL_ARRAY = ((0, 0, 0, 0, 0, 0), (0, 0, 0, 1, 1, 1), (0, 1, 1, 0, 0, 1), (0, 1, 1, 1, 1, 0),
                    (1, 0, 1, 0, 1, 0), (1, 0, 1, 1, 0, 1), (1, 1, 0, 0, 1, 1), (1, 1, 0, 1, 0, 0))


def run_of(config, settings):
    """``config`` with the array's settings: the config's fields, and the strategies of the others (kl, ratio)."""
    strategies = {"kl": KLInLoss(use_bias_correction_kl=settings.get("use_bias_correction_kl", False)),
                  "ratio": ImportanceRatio(level=settings.get("importance_sampling_level", "token"),
                                           delta=settings.get("delta"))}
    fields = {k: v for k, v in settings.items() if k not in ("use_bias_correction_kl", "importance_sampling_level",
                                                               "delta")}
    return dataclasses.replace(config, **fields), strategies


def test_the_array_meets_every_pair_of_knobs_in_all_four_combinations():
    for i, j in itertools.combinations(range(len(TRL_KNOB_SETTINGS)), 2):
        assert sorted((row[i], row[j]) for row in ORTHOGONAL_ARRAY) == [(0, 0)] * 2 + [(0, 1)] * 2 + [(1, 0)] * 2 + \
            [(1, 1)] * 2


@pytest.mark.parametrize("levels", ORTHOGONAL_ARRAY)
def test_same_loss_gradient_and_metrics_as_trl(levels):
    """TRL 1.16's _compute_loss on the same batch, for every TRL knob grpo_loss has (GSPO's sequence-level
    ratio, clip-higher, the two-sided clip delta, the KL with and without its bias correction, std scaling):
    equal loss values, gradients and logged metrics (entropy, the clip ratios, kl), for every loss type."""
    settings = {knob: values[level] for (knob, values), level in zip(TRL_KNOB_SETTINGS.items(), levels)}
    config, strategies = run_of(SMALL, settings)
    clip_types = [t for t in loss_types_with("clip") if t in TRL_LOSS_TYPES]
    rows = compare_losses(model(), config, clip_types, seed=0, **strategies)
    assert [r["loss_type"] for r in rows] == clip_types
    logged = {*CLIP_METRICS, "entropy"} | ({"kl"} if settings["beta"] else set())
    for r in rows:
        assert abs(r["difference"]) < 1e-6 and r["max_grad_difference"] < 1e-6, r
        assert set(r["metrics"]) == logged and r["max_metric_difference"] < 1e-6, r
        assert r["grad_norm"] > 0.1                                      # a real gradient
        assert r["clip_fraction"] > 0 or settings["importance_sampling_level"] == "sequence"   # token clips bind
    by_type = {r["loss_type"]: r["rl4llm"] for r in rows}
    assert by_type["bnpo"] == by_type["dapo"]                             # one micro-batch: same token mean
    assert len({round(by_type[t], 6) for t in ("grpo", "bnpo", "dr_grpo")}) == 3   # the aggregations differ


def test_the_knobs_change_the_loss():
    """Each knob of the array moves the loss or its gradient on the parity batch (so agreeing with TRL
    under it is not agreeing on an unused setting)."""
    from rl4llm.trl.parity import rl4llm_loss

    m = model()
    first = {knob: values[0] for knob, values in TRL_KNOB_SETTINGS.items()}
    base = first | {"beta": 0.04}                # a KL term, so its correction can act
    config, strategies = run_of(SMALL, base)
    batch = loss_batch(m, config, seed=0)        # the batch of the parity test, on which both clips bind
    loss, grads, _ = rl4llm_loss(m, batch, config, **strategies)
    for knob, values in TRL_KNOB_SETTINGS.items():
        if knob == "scale_rewards":        # acts on the advantages, which the batch holds already
            continue
        other = values[0] if knob == "beta" else values[1]
        config, strategies = run_of(SMALL, base | {knob: other})
        moved, moved_grads, _ = rl4llm_loss(m, batch, config, **strategies)
        changed = max(float((moved_grads[n] - g).abs().max()) for n, g in grads.items())
        assert moved != loss or changed > 1e-6, knob


def test_kl_knobs_without_a_trl_field():
    for kl in (KLInLoss(estimator="k2"), KLInReward()):
        with pytest.raises(ValueError, match="k3 in the loss"):
            trl_config_kwargs(SMALL, kl=kl)
        assert trl_config_kwargs(SMALL, kl=kl, allow_unsupported=True) == trl_config_kwargs(SMALL)
        assert trl_config_kwargs(dataclasses.replace(SMALL, beta=0.0), kl=kl) == \
            trl_config_kwargs(dataclasses.replace(SMALL, beta=0.0))          # no KL term: nothing to map
    engine = RolloutEngineSampler(precision="float32", staleness=1)         # chapter 20's rollout engine
    with pytest.raises(ValueError, match="staleness"):
        trl_config_kwargs(SMALL, sampler=engine)
    assert trl_config_kwargs(SMALL, sampler=engine, allow_unsupported=True) == trl_config_kwargs(SMALL)
    assert trl_config_kwargs(SMALL, sampler=PolicySampler(off_policy_mask_threshold=0.5))["off_policy_mask_threshold"] \
        == 0.5


def test_entropy_knobs_reach_trls_fields(tmp_path):
    """Chapter 18's EntropyControl: TRL's three knobs (and the adaptive rule's target, step and bounds) become
    TRL's fields, which TRL's own config accepts; Clip-Cov and KL-Cov have none and are refused unless
    ``allow_unsupported``, which maps the rest."""
    control = EntropyControl(coef=0.05, adaptive=True, target=0.7, delta=0.01, coef_max=0.5, top_quantile=0.2)
    c = real_trl_config(tmp_path, SMALL, entropy=control)
    assert (c.entropy_coef, c.use_adaptive_entropy, c.entropy_target, c.entropy_coef_delta, c.entropy_coef_min,
            c.entropy_coef_max, c.top_entropy_quantile) == (0.05, True, 0.7, 0.01, 0.0, 0.5, 0.2)
    defaults = trl_config_kwargs(SMALL)
    assert (defaults["entropy_coef"], defaults["use_adaptive_entropy"], defaults["top_entropy_quantile"]) == (0.0, False, 1.0)
    with pytest.raises(ValueError, match="Clip-Cov or KL-Cov"):
        trl_config_kwargs(SMALL, entropy=EntropyControl(cov="kl_cov"))
    assert trl_config_kwargs(SMALL, entropy=EntropyControl(cov="kl_cov", coef=0.05), allow_unsupported=True) == \
        trl_config_kwargs(SMALL, entropy=EntropyControl(coef=0.05))


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


# ---- verl 0.9.1 and OpenRLHF 0.11.2: their GRPO formulas on the same batch as grpo_loss ----------
# CI installs neither engine (both pull a GPU stack), so their formulas are TRANSCRIBED here, each
# with the file and function it comes from (read from `pip download --no-deps verl==0.9.1` and
# `openrlhf==0.11.2`). test_transcriptions_match_the_engines_own_code below runs the engines' own
# function bodies, extracted from the wheels without importing the packages, when
# RL4LLM_ENGINE_WHEELS names a folder holding the two wheels; it is skipped otherwise.
from collections import defaultdict  # noqa: E402

import numpy as np  # noqa: E402


def verl_grpo_advantages(scores, index, epsilon=1e-6, norm_adv_by_std_in_grpo=True):
    """verl/trainer/ppo/core_algos.py, compute_grpo_outcome_advantage (scores: one per response)."""
    scores = scores.clone()
    id2score, id2mean, id2std = defaultdict(list), {}, {}
    for i in range(scores.shape[0]):
        id2score[index[i]].append(scores[i])
    for idx in id2score:
        if len(id2score[idx]) == 1:
            id2mean[idx], id2std[idx] = torch.tensor(0.0), torch.tensor(1.0)
        else:
            stacked = torch.stack(id2score[idx])
            id2mean[idx], id2std[idx] = torch.mean(stacked), torch.std(stacked)   # torch.std: ddof 1
    for i in range(scores.shape[0]):
        if norm_adv_by_std_in_grpo:
            scores[i] = (scores[i] - id2mean[index[i]]) / (id2std[index[i]] + epsilon)
        else:
            scores[i] = scores[i] - id2mean[index[i]]
    return scores


def verl_agg_loss(loss_mat, loss_mask, loss_agg_mode, dp_size=1, batch_num_tokens=None, global_batch_size=None,
                  loss_scale_factor=None):
    """verl/trainer/ppo/core_algos.py, agg_loss (masked_sum: verl/utils/torch_functional.py)."""
    masked_sum = lambda v, m, axis=None: (torch.where(m.bool(), v, 0.0) * m).sum(axis=axis)  # noqa: E731
    if loss_agg_mode == "token-mean":
        if batch_num_tokens is None:
            batch_num_tokens = loss_mask.sum()
        return masked_sum(loss_mat, loss_mask) / batch_num_tokens * dp_size
    if loss_agg_mode in ("seq-mean-token-sum", "seq-mean-token-sum-norm"):
        seq_losses = torch.sum(loss_mat * loss_mask, dim=-1)
        seq_mask = (torch.sum(loss_mask, dim=-1) > 0).float()
        if global_batch_size is None:
            global_batch_size = seq_mask.sum()
        loss = masked_sum(seq_losses, seq_mask) / global_batch_size * dp_size
        if loss_agg_mode == "seq-mean-token-sum-norm":
            loss = loss / (loss_mask.shape[-1] if loss_scale_factor is None else loss_scale_factor)
        return loss
    assert loss_agg_mode == "seq-mean-token-mean"
    seq_mask = torch.sum(loss_mask, dim=-1)
    seq_losses = torch.sum(loss_mat * loss_mask, dim=-1) / (seq_mask + 1e-8)
    seq_mask = (seq_mask > 0).float()
    if global_batch_size is None:
        global_batch_size = seq_mask.sum()
    return masked_sum(seq_losses, seq_mask) / global_batch_size * dp_size


def verl_pg_losses(old_log_prob, log_prob, advantages, clip_ratio_low, clip_ratio_high, clip_ratio_c=3.0):
    """verl/trainer/ppo/core_algos.py, compute_policy_loss_vanilla: the per-token losses before agg_loss."""
    ratio = torch.exp(torch.clamp(log_prob - old_log_prob, min=-20.0, max=20.0))
    pg_losses1 = -advantages * ratio
    pg_losses2 = -advantages * torch.clamp(ratio, 1 - clip_ratio_low, 1 + clip_ratio_high)
    clip_pg_losses1 = torch.maximum(pg_losses1, pg_losses2)
    clip_pg_losses2 = torch.min(-advantages * clip_ratio_c, clip_pg_losses1)
    return torch.where(advantages < 0, clip_pg_losses2, clip_pg_losses1)


def verl_low_var_kl(logprob, ref_logprob):
    """verl/trainer/ppo/core_algos.py, kl_penalty_forward with kl_penalty="low_var_kl" (k3, clamped)."""
    kl = torch.clamp(ref_logprob - logprob, min=-20, max=20)
    return torch.clamp(torch.exp(kl) - kl - 1, min=-10, max=10)


def verl_actor_loss(b, logp, mode, kl_loss_coef=0.0, clip_ratio_c=3.0, **batch_info):
    """verl/workers/utils/losses.py, ppo_loss: pg_loss + kl_loss * kl_loss_coef, both through agg_loss."""
    adv = b["advantages"][:, None] * b["mask"]          # verl's advantages are per token (scores x mask)
    pg = verl_agg_loss(verl_pg_losses(b["old"], logp, adv, 0.2, 0.28, clip_ratio_c), b["mask"], mode, **batch_info)
    if kl_loss_coef:
        pg = pg + kl_loss_coef * verl_agg_loss(verl_low_var_kl(logp, b["ref"]), b["mask"], mode, **batch_info)
    return pg


def openrlhf_group_norm(rewards):
    """openrlhf/trainer/ppo_utils/experience_maker.py, estimator "group_norm" (rewards shaped (N, G))."""
    return (rewards - rewards.mean(-1, keepdim=True)) / (rewards.std(-1, keepdim=True) + 1e-9)


def openrlhf_aggregate_loss(loss, loss_mask, token_level_loss=True, dp_size=1, batch_num_tokens=None,
                            global_batch_size=None):
    """openrlhf/models/loss.py, aggregate_loss (masked_mean: openrlhf/models/utils.py)."""
    if token_level_loss:
        if batch_num_tokens is None:
            return (loss * loss_mask).sum() / loss_mask.sum()
        return (loss * loss_mask).sum() / batch_num_tokens * dp_size
    token_counts = loss_mask.sum(dim=-1)
    seq_loss = (loss * loss_mask).sum(dim=-1) / (token_counts + 1e-8)
    seq_mask = (token_counts > 0).float()
    if global_batch_size is None:
        return (seq_loss * seq_mask).sum() / seq_mask.sum()
    return (seq_loss * seq_mask).sum() / global_batch_size * dp_size


def openrlhf_actor_loss(b, logp, loss_agg_mode, kl_coef=0.0, dual_clip=None, **batch_info):
    """openrlhf/models/loss.py PolicyLoss.forward ("ppo"), plus trainer/ray/ppo_actor.py's KL loss:
    actor_loss + aggregate_loss(kl, mask, **batch_info) * kl_ctl, the k3 of models/utils.py
    compute_approx_kl. The KL call passes no token_level_loss, so it is always a token mean."""
    adv = b["advantages"][:, None] * b["mask"]
    ratio = (logp - b["old"]).clamp(min=-20.0, max=20.0).exp()
    surr1, surr2 = ratio * adv, ratio.clamp(1 - 0.2, 1 + 0.28) * adv
    clip1 = torch.min(surr1, surr2)
    loss = -clip1 if dual_clip is None else -torch.where(adv < 0, torch.max(clip1, dual_clip * adv), clip1)
    actor = openrlhf_aggregate_loss(loss, b["mask"], token_level_loss=loss_agg_mode == "token-mean", **batch_info)
    if kl_coef:
        actor = actor + openrlhf_aggregate_loss(openrlhf_k3(logp, b["ref"]), b["mask"], **batch_info) * kl_coef
    return actor


def openrlhf_k3(log_probs, log_probs_base):
    """openrlhf/models/utils.py, compute_approx_kl with kl_estimator="k3" (unbiased_gradient off)."""
    log_ratio = (log_probs.float() - log_probs_base.float()).clamp(min=-10)
    return ((-log_ratio).exp() - 1 + log_ratio).clamp(min=-10, max=10)


def engine_batch(seed=0, B=8, T=6, far=False):
    """Random rows of lengths 1..T (float64), two groups of 4; ``far`` pushes some ratios past 3."""
    gen = torch.Generator().manual_seed(seed)
    lengths = torch.randint(1, T + 1, (B, 1), generator=gen)
    mask = (torch.arange(T)[None, :] < lengths).double()
    rewards = torch.tensor([[1.0, 0.0, 0.0, 1.0], [1.0, 1.0, 1.0, 0.0]], dtype=torch.float64)
    logp = -torch.rand(B, T, generator=gen, dtype=torch.float64) * 3
    old = logp + (1.5 if far else 0.3) * torch.randn(B, T, generator=gen, dtype=torch.float64)
    ref = logp + 0.3 * torch.randn(B, T, generator=gen, dtype=torch.float64)
    advantages = group_advantages(rewards).reshape(-1)
    beyond = (torch.exp(logp - old) > 3) & (advantages[:, None] < 0) & (mask > 0)
    assert bool(beyond.any()) == far          # the dual clip binds only in the far batch
    return {"logp": logp, "old": old * mask, "ref": ref * mask, "mask": mask,
            "rewards": rewards, "advantages": advantages}


def book(b, loss_type, beta=0.0, max_completion_length=6, **kw):
    loss, _ = grpo_loss(b["logp"], b["old"], b["advantages"], b["mask"], eps_low=0.2, eps_high=0.28, beta=beta,
                        ref_logp=b["ref"], loss_type=loss_type, max_completion_length=max_completion_length, **kw)
    return loss


def test_engine_advantages_against_group_advantages():
    r = torch.tensor([[1.0, 0.0, 0.0, 1.0], [1.0, 1.0, 1.0, 0.0], [0.0, 0.0, 0.0, 0.0]], dtype=torch.float64)
    index = np.repeat(np.arange(3), 4)
    verl = verl_grpo_advantages(r.reshape(-1), index).view(3, 4)
    assert torch.allclose(verl, group_advantages(r, ddof=1, eps=1e-6), rtol=0, atol=1e-15)      # ddof 1, eps 1e-6
    assert torch.allclose(verl_grpo_advantages(r.reshape(-1), index, norm_adv_by_std_in_grpo=False).view(3, 4),
                          group_advantages(r, scale=False), atol=1e-15)
    assert torch.allclose(openrlhf_group_norm(r), group_advantages(r, ddof=1, eps=1e-9), rtol=0, atol=1e-15)
    informative = group_advantages(r[:2], ddof=0, eps=0.0)
    assert torch.allclose(verl[:2] / informative, torch.tensor(math.sqrt(3 / 4), dtype=torch.float64), atol=1e-6)
    lone = verl_grpo_advantages(torch.tensor([1.0]), np.array([0]))                               # a group of one
    assert float(lone) == pytest.approx(1 / (1 + 1e-6))     # keeps its raw reward; the book needs G >= 2


@pytest.mark.parametrize("seed", range(3))
def test_verl_loss_agg_modes_against_grpo_loss(seed):
    b = engine_batch(seed)
    L, T = 6, b["mask"].shape[1]
    kw = dict(kl_loss_coef=0.04)
    n = b["mask"].sum(dim=1)
    # seq-mean-token-mean is grpo, up to verl's 1e-8 in each row's token count
    grpo_eps = book(b, "grpo", beta=0.04)
    verl = verl_actor_loss(b, b["logp"], "seq-mean-token-mean", **kw)
    assert abs(float((verl - grpo_eps).detach())) < 1e-8 * float((1 / n).max()) + 1e-14
    # token-mean is bnpo / dapo, exactly
    assert float(verl_actor_loss(b, b["logp"], "token-mean", **kw)) == pytest.approx(float(book(b, "dapo", beta=0.04)),
                                                                                    rel=1e-13)
    # seq-mean-token-sum-norm is dr_grpo with loss_scale_factor = max_completion_length ...
    assert float(verl_actor_loss(b, b["logp"], "seq-mean-token-sum-norm", loss_scale_factor=L, **kw)) == \
        pytest.approx(float(book(b, "dr_grpo", beta=0.04, max_completion_length=L)), rel=1e-13)
    # ... and, with loss_scale_factor None, divides by the padded width of the batch instead
    padded = {**b, **{k: b[k][:, :4] for k in ("old", "ref", "mask")}, "logp": b["logp"][:, :4]}
    padded["mask"] = b["mask"][:, :4]
    wide = float(verl_actor_loss(padded, padded["logp"], "seq-mean-token-sum-norm", **kw))
    assert wide == pytest.approx(float(book(padded, "dr_grpo", beta=0.04, max_completion_length=L)) * L / 4, rel=1e-13)
    assert T == L


def test_verl_is_dp_invariant_for_token_mean_and_seq_mean():
    """Given the global token and row counts, verl's token-mean is TRL's dapo under data parallelism."""
    from rl4llm.llm.data_parallel import data_parallel_loss

    b = engine_batch(1)
    N, B = b["mask"].sum(), b["mask"].shape[0]
    for mode, loss_type, info in (("token-mean", "dapo", {"batch_num_tokens": N}),
                                  ("seq-mean-token-sum-norm", "dr_grpo", {"global_batch_size": B,
                                                                          "loss_scale_factor": 6})):
        halves = [verl_actor_loss({k: (v[s] if k != "rewards" else v) for k, v in b.items()}, b["logp"][s], mode,
                                  dp_size=2, **info) for s in (slice(0, 4), slice(4, 8))]
        ddp = (halves[0] + halves[1]) / 2                                 # DDP averages the two gradients
        ours, _ = data_parallel_loss(b["logp"], b["old"], b["advantages"], b["mask"], num_processes=2,
                                     loss_type=loss_type, eps_high=0.28, max_completion_length=6)
        assert float(ddp.detach()) == pytest.approx(float(book(b, loss_type).detach()), rel=1e-12)
        assert float(ddp.detach()) == pytest.approx(float(ours.detach()), rel=1e-12)


def test_verl_dual_clip_caps_negative_advantage_tokens_at_ratio_3():
    b = engine_batch(2, far=True)
    adv = b["advantages"][:, None].expand_as(b["mask"])
    ratio = torch.exp(b["logp"] - b["old"])
    beyond = (adv < 0) & (ratio > 3) & (b["mask"] > 0)
    assert int(beyond.sum()) > 0                                          # the batch reaches the second clip
    dual = verl_actor_loss(b, b["logp"], "token-mean")
    plain = verl_actor_loss(b, b["logp"], "token-mean", clip_ratio_c=1e9)
    assert float(plain) == pytest.approx(float(book(b, "dapo")), rel=1e-13)
    # the difference is exactly the cap: per token, -A rho replaced by -A * 3 where A < 0 and rho > 3
    gap = ((-adv * 3) - (-adv * ratio)).detach()[beyond].sum() / b["mask"].sum()
    assert float(dual - plain) == pytest.approx(float(gap), rel=1e-12)
    assert float(openrlhf_actor_loss(b, b["logp"], "token-mean", dual_clip=3.0)) == pytest.approx(float(dual),
                                                                                                 rel=1e-13)


@pytest.mark.parametrize("seed", range(3))
def test_openrlhf_losses_against_grpo_loss(seed):
    b = engine_batch(seed)
    n = b["mask"].sum(dim=1)
    # token-mean: bnpo / dapo, KL included (OpenRLHF computes k3 in float32, hence the tolerance)
    assert float(openrlhf_actor_loss(b, b["logp"], "token-mean", kl_coef=0.04)) == \
        pytest.approx(float(book(b, "dapo", beta=0.04)), rel=1e-7)
    # seq-mean-token-mean: grpo for the policy term, but its KL term is a token mean
    seq = openrlhf_actor_loss(b, b["logp"], "seq-mean-token-mean", kl_coef=0.04)
    k3 = torch.exp(b["ref"] - b["logp"]) - (b["ref"] - b["logp"]) - 1
    expected = book(b, "grpo") + 0.04 * (k3 * b["mask"]).sum() / b["mask"].sum()
    assert abs(float((seq - expected).detach())) < 1e-8 * float((1 / n).max()) + 1e-8
    assert abs(float((seq - book(b, "grpo", beta=0.04)).detach())) > 1e-6              # not the book's grpo with beta
    # the dr_grpo estimator (r - mean) with token-mean: the book's dr_grpo times B L / N
    flat = {**b, "advantages": group_advantages(b["rewards"], scale=False).reshape(-1)}
    B, L, N = 8, 6, float(b["mask"].sum())
    assert float(openrlhf_actor_loss(flat, flat["logp"], "token-mean")) == \
        pytest.approx(float(book(flat, "dr_grpo", max_completion_length=L)) * B * L / N, rel=1e-13)


def _engine_functions(wheel, member, names, namespace):
    """Exec the named top-level functions/classes of one file of a wheel, decorators dropped."""
    import ast
    import zipfile

    with zipfile.ZipFile(wheel) as z:
        path = next(n for n in z.namelist() if n.endswith(member))
        source = z.read(path).decode()
    tree = ast.parse(source)
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name in names:
            node.decorator_list = []
            exec(compile(ast.Module([node], []), path, "exec"), namespace)
    return source


def test_transcriptions_match_the_engines_own_code():
    import os
    import types
    from pathlib import Path
    from typing import Any, Optional

    folder = os.environ.get("RL4LLM_ENGINE_WHEELS")
    if not folder:
        pytest.skip("set RL4LLM_ENGINE_WHEELS to a folder with the verl 0.9.1 and openrlhf 0.11.2 wheels")
    verl_wheel = next(Path(folder).glob("verl-0.9.1-*.whl"))
    orlhf_wheel = next(Path(folder).glob("openrlhf-0.11.2-*.whl"))
    F = {"torch": torch}
    _engine_functions(verl_wheel, "verl/utils/torch_functional.py", {"masked_sum", "masked_mean"}, F)
    ns = {"torch": torch, "np": np, "defaultdict": defaultdict, "Optional": Optional, "Any": Any,
          "verl_F": types.SimpleNamespace(**F), "AlgoConfig": type("AlgoConfig", (), {}), "ActorConfig": object}
    _engine_functions(verl_wheel, "verl/trainer/ppo/core_algos.py",
                      {"compute_grpo_outcome_advantage", "agg_loss", "compute_policy_loss_vanilla",
                       "kl_penalty_forward"}, ns)
    o = {"torch": torch, "nn": torch.nn, "Optional": Optional, "KL_IS_WEIGHT_CLIP": 10.0}
    _engine_functions(orlhf_wheel, "openrlhf/models/utils.py", {"masked_mean", "compute_approx_kl"}, o)
    _engine_functions(orlhf_wheel, "openrlhf/models/loss.py", {"aggregate_loss", "PolicyLoss"}, o)
    maker = _engine_functions(orlhf_wheel, "openrlhf/trainer/ppo_utils/experience_maker.py", set(), {})
    assert "rewards = (rewards - rewards.mean(-1, keepdim=True)) / (rewards.std(-1, keepdim=True) + 1e-9)" in maker
    cli = _engine_functions(orlhf_wheel, "openrlhf/cli/train_ppo_ray.py", set(), {})
    assert '"--algo.kl.init_coef", type=float, default=0.01' in cli               # the chapter's defaults
    assert '"--algo.kl.estimator",\n        type=str,\n        default="k1"' in cli
    assert 'choices=["token-mean", "seq-mean-token-mean"]' in cli                   # no Dr. GRPO normaliser
    actor = _engine_functions(orlhf_wheel, "openrlhf/trainer/ray/ppo_actor.py", set(), {})
    assert "kl_loss = aggregate_loss(kl, experience.action_mask, **loss_batch_info)" in actor   # a token mean
    import zipfile
    with zipfile.ZipFile(verl_wheel) as z:
        yaml = z.read("verl/trainer/config/_generated_ppo_trainer.yaml").decode()
    for line in ("clip_ratio_c: 3.0", "loss_agg_mode: token-mean", "kl_loss_type: low_var_kl", "weight_decay: 0.01",
                 "loss_scale_factor: null"):
        assert line in yaml, line

    r = torch.tensor([1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 0.0, 0.5], dtype=torch.float64)
    index = np.array([0, 0, 0, 0, 1, 1, 1, 1, 2])
    theirs, _ = ns["compute_grpo_outcome_advantage"](r[:, None], torch.ones(9, 1, dtype=torch.float64), index)
    assert torch.equal(theirs[:, 0], verl_grpo_advantages(r, index))
    for seed, far in ((0, False), (1, False), (2, True)):
        b = engine_batch(seed, far=far)
        adv = b["advantages"][:, None] * b["mask"]
        for mode in ("token-mean", "seq-mean-token-mean", "seq-mean-token-sum-norm"):
            for info in ({}, {"loss_scale_factor": 6}, {"dp_size": 2, "batch_num_tokens": 11.0, "global_batch_size": 8}):
                if mode != "seq-mean-token-sum-norm" and "loss_scale_factor" in info:
                    continue
                config = types.SimpleNamespace(clip_ratio=0.2, clip_ratio_low=0.2, clip_ratio_high=0.28,
                                               get=lambda key, default: default, global_batch_info=info)
                pg, _ = ns["compute_policy_loss_vanilla"](b["old"], b["logp"], adv, b["mask"], mode, config)
                mine = verl_agg_loss(verl_pg_losses(b["old"], b["logp"], adv, 0.2, 0.28), b["mask"], mode, **info)
                assert torch.equal(pg, mine), (mode, info)
        assert torch.equal(ns["kl_penalty_forward"](b["logp"], b["ref"], "low_var_kl"), verl_low_var_kl(b["logp"], b["ref"]))
        for mode in ("token-mean", "seq-mean-token-mean"):
            for dual in (None, 3.0):
                loss_fn = o["PolicyLoss"](clip_eps_low=0.2, clip_eps_high=0.28, dual_clip=dual,
                                          token_level_loss=mode == "token-mean")
                theirs = loss_fn(b["logp"], b["old"], adv, action_mask=b["mask"])[0]
                assert torch.allclose(theirs, openrlhf_actor_loss(b, b["logp"], mode, dual_clip=dual), rtol=0, atol=1e-15)
        kl = o["compute_approx_kl"](b["logp"], b["ref"], kl_estimator="k3")
        assert torch.equal(kl, openrlhf_k3(b["logp"], b["ref"]))
        for info in ({}, {"dp_size": 2, "batch_num_tokens": 11.0, "global_batch_size": 8}):
            for token_level in (True, False):
                assert torch.equal(o["aggregate_loss"](kl, b["mask"], token_level, **info),
                                   openrlhf_aggregate_loss(kl, b["mask"], token_level, **info))



# ---- the TRL run and the launch helpers ------------------------------------------------------------
def test_trl_config_kwargs_divides_the_batch_between_processes(tmp_path):
    assert trl_config_kwargs(BUSY, num_processes=3)["per_device_train_batch_size"] == 4
    assert trl_config_kwargs(BUSY, num_processes=1) == trl_config_kwargs(BUSY)
    with pytest.raises(ValueError, match="num_processes"):
        trl_config_kwargs(BUSY, num_processes=5)
    with pytest.raises(ValueError, match="num_processes"):
        trl_config_kwargs(BUSY, num_processes=0)


def test_completion_reward_reads_ids_up_to_the_first_eos():
    from rl4llm.llm.tasks import AdditionTask
    from rl4llm.trl.run import completion_reward

    task = AdditionTask(seed=0)
    tok, counter = task.tokenizer, {}
    reward = completion_reward(task, counter)
    ids = [tok.encode("52<eos>"), tok.encode("5<eos>2"), tok.encode("52"), tok.encode("5<pad>2<eos>")]
    assert reward(["07+45="] * 4, ids) == [1.0, 0.0, 0.0, 0.0]       # no EOS: not an answer
    assert counter["tokens"] == 3 + 2 + 2 + 4
    with pytest.raises(ValueError, match="task"):
        completion_reward("addition")


def test_train_with_trl_runs_the_task_and_measures_like_the_book(tmp_path):
    from rl4llm.llm.evaluation import greedy_accuracy
    from rl4llm.llm.tasks import AdditionTask
    from rl4llm.trl.run import AccuracyClock, train_with_trl, trl_grpo_trainer

    task, m = AdditionTask(seed=0), model()
    before = [p.detach().clone() for p in m.parameters()]
    config = GRPOConfig(steps=3, prompts_per_step=2, group_size=4, warmup_steps=0, device="cpu")
    run = train_with_trl(m, task, trl_config_kwargs(config) | {"use_cpu": True}, eval_every=2)
    assert run.evals["step"] == [0, 2, 3]
    assert run.evals["accuracy"][0] == greedy_accuracy(m, task)
    assert run.evals["accuracy"][-1] == greedy_accuracy(run.policy, task)
    assert 0 < run.evals["train_seconds"][1] <= run.evals["train_seconds"][2] == run.train_seconds
    assert [row["step"] for row in run.log_history if "reward" in row] == [1, 2, 3]
    assert run.sampled_tokens >= 3 * 8                                   # at least EOS for each completion
    assert all(torch.equal(p, q) for p, q in zip(before, m.parameters()))     # the given model is not changed
    with pytest.raises(ValueError, match="eval_every"):
        AccuracyClock(task, 0)
    with pytest.raises(ValueError, match="trl_kwargs"):
        trl_grpo_trainer(m, task, [("max_steps", 1)], output_dir=str(tmp_path))
    with pytest.raises(ValueError, match="task"):
        trl_grpo_trainer(m, "addition", {}, output_dir=str(tmp_path))
    with pytest.raises(ValueError, match="num_threads"):
        train_with_trl(m, task, {}, num_threads=0)
