"""rl4llm.math.memory and rl4llm.math.step_time (chapter 19): the bytes and seconds of a real run, checked against
published figures (ZeRO's paper, the 16 bytes a parameter of mixed-precision AdamW, Llama-2-7B's KV cache,
Qwen2.5's vocabulary) and against independent routes (a loop for the vectorised decoding sum)."""
import math

import pytest

from rl4llm import (generation_seconds, kv_bytes_per_token, memory_budget, schedule, training_seconds,
                    weight_sync_seconds)
from rl4llm.math.memory import LLAMA2_7B, PARTS, QWEN25_1_5B, SHARDING, shape_options
from rl4llm.math.step_time import H100_SXM, SCHEDULES, attention_flops_per_token

GB, MiB = 1e9, 2 ** 20
STATIC = ("weights", "gradients", "master_weights", "optimizer_state", "reference")


def static_bytes(budget):
    return sum(budget[p] for p in STATIC)


# ----------------------------------------------------------------------------- published figures
def test_full_fine_tuning_with_adamw_in_mixed_precision_is_16_bytes_a_parameter():
    no_ref = memory_budget(7e9, reference=False)
    assert static_bytes(no_ref) / 7e9 == 16
    assert static_bytes(no_ref) == 112 * GB
    assert (no_ref["weights"], no_ref["gradients"], no_ref["master_weights"], no_ref["optimizer_state"]) == (
        2 * 7e9, 2 * 7e9, 4 * 7e9, 8 * 7e9)
    with_ref = memory_budget(7e9)
    assert static_bytes(with_ref) == 7e9 * 18 == 126 * GB
    assert list(with_ref) == list(PARTS)
    assert with_ref["activations"] == with_ref["logits"] == with_ref["kv_cache"] == 0


@pytest.mark.parametrize("sharding, published_gb", [("none", 120), ("zero1", 31.4), ("zero2", 16.6), ("zero3", 1.9)])
def test_zero_paper_figure_1(sharding, published_gb):
    """Rajbhandari et al. 2020, Figure 1: 7.5B parameters, N_d = 64 GPUs, K = 12: 120 GB, 31.4 GB,
    16.6 GB and 1.9 GB per GPU (the paper rounds to one decimal)."""
    budget = memory_budget(7.5e9, reference=False, n_gpus=64, sharding=sharding)
    assert budget["master_weights"] + budget["optimizer_state"] == pytest.approx(12 * 7.5e9 / (64 if sharding != "none" else 1))
    assert round(static_bytes(budget) / GB, 1) == published_gb


def test_zero_stages_by_formula():
    """(2 + 2 + K) Psi, 4 Psi + K Psi / N_d, 2 Psi + (2 + K) Psi / N_d, (2 + 2 + K) Psi / N_d, for other sizes."""
    for psi, nd in ((1e9, 8), (70e9, 16), (3e9, 3)):
        got = [static_bytes(memory_budget(psi, reference=False, n_gpus=nd, sharding=s))
               for s in ("none", "zero1", "zero2", "zero3")]
        assert got == pytest.approx([16 * psi, 4 * psi + 12 * psi / nd, 2 * psi + 14 * psi / nd, 16 * psi / nd])
    assert memory_budget(1e9, sharding="fsdp", n_gpus=4) == memory_budget(1e9, sharding="zero3", n_gpus=4)
    assert memory_budget(1e9, n_gpus=4, sharding="zero3")["reference"] == 2e9 / 4
    assert memory_budget(1e9, n_gpus=4, sharding="zero2")["reference"] == 2e9


def test_other_optimizers_and_precisions():
    assert static_bytes(memory_budget(1e9, optimizer="sgd", reference=False)) == 8e9
    assert static_bytes(memory_budget(1e9, optimizer="sgd_momentum", reference=False)) == 12e9
    pure_fp32 = memory_budget(1e9, weights="fp32", gradients="fp32", master_weights=False, reference=False)
    assert static_bytes(pure_fp32) == 16e9                      # 4 + 4 + 8: no master copy needed
    assert memory_budget(1e9, reference_precision="fp32")["reference"] == 4e9
    assert memory_budget(1e9, reference=False)["reference"] == 0


def test_kv_cache_per_token_of_llama2_7b_is_half_a_mib():
    """meta-llama/Llama-2-7b-hf: 32 layers, 32 key-value heads, head_dim 128 (4096 / 32), fp16."""
    assert kv_bytes_per_token(32, 32, 128, "fp16") == 524288 == 0.5 * MiB
    shape = LLAMA2_7B
    assert (shape.n_layers, shape.n_kv_heads, shape.head_dim, shape.hidden_size // 32) == (32, 32, 128, 128)
    assert kv_bytes_per_token(shape.n_layers, shape.n_kv_heads, shape.head_dim) == 0.5 * MiB   # bf16: also 2 bytes
    # Qwen2.5-1.5B's grouped-query attention: 2 key-value heads, 28 layers: 28 KiB a token
    assert kv_bytes_per_token(28, 2, 128) == 28 * 1024


def test_kv_cache_of_a_step_spreads_over_the_engines_gpus():
    options = {**shape_options(LLAMA2_7B), "prompts": 16, "group_size": 8, "prompt_length": 512,
               "completion_length": 1536, "kv_precision": "fp16"}
    one = memory_budget(LLAMA2_7B.n_params, **options)["kv_cache"]
    assert one == 16 * 8 * 2048 * 0.5 * MiB                     # 128 sequences of 2048 tokens: 128 GiB
    assert memory_budget(LLAMA2_7B.n_params, n_gpus=8, **options)["kv_cache"] == one / 8
    assert memory_budget(LLAMA2_7B.n_params, n_gpus=8, rollout_gpus=2, **options)["kv_cache"] == one / 2


def test_fp32_logits_of_qwen25_vocabulary():
    """B x T x V x 4 bytes with V = 151,936 (Qwen2.5-1.5B's config.json): 64 completions of 4096 tokens
    need 159.3 GB at once, 8192 tokens 318.6 GB; 1024 tokens at a time need 0.62 GB."""
    assert QWEN25_1_5B.vocab_size == 151936
    options = {**shape_options(QWEN25_1_5B), "prompts": 8, "group_size": 8, "completion_length": 4096}
    logits = memory_budget(QWEN25_1_5B.n_params, **options)["logits"]
    assert logits == 64 * 4096 * 151936 * 4
    assert round(logits / GB, 1) == 159.3
    long = memory_budget(QWEN25_1_5B.n_params, **{**options, "completion_length": 8192})["logits"]
    assert round(long / GB, 1) == 318.6
    chunked = memory_budget(QWEN25_1_5B.n_params, logits_chunk=1024, **options)["logits"]
    assert chunked == 1024 * 151936 * 4
    assert memory_budget(QWEN25_1_5B.n_params, logits_chunk=10 ** 9, **options)["logits"] == logits
    assert memory_budget(QWEN25_1_5B.n_params, micro_batch=4, **options)["logits"] == logits / 16
    assert memory_budget(QWEN25_1_5B.n_params, n_gpus=8, **options)["logits"] == logits / 8


def test_activations_follow_korthikanti_et_al():
    """34 s b h bytes per layer (section 4.1, flash attention: no 5 a s / h term), times L; with full
    checkpointing 2 s b h per layer plus one layer recomputed whole."""
    s, b, h, L = 2048, 4, 4096, 32
    options = {"prompts": b, "prompt_length": 512, "completion_length": s - 512, "hidden_size": h, "n_layers": L,
               "vocab_size": 32000, "n_kv_heads": 32, "head_dim": 128}
    plain = memory_budget(7e9, **options)["activations"]
    assert plain == 34 * s * b * h * L
    checkpointed = memory_budget(7e9, activation_checkpointing=True, **options)["activations"]
    assert checkpointed == (2 * L + 34) * s * b * h
    assert plain / checkpointed == pytest.approx(34 * 32 / 98)
    assert memory_budget(7e9, micro_batch=1, **options)["activations"] == plain / 4


# ----------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("kwargs, named", [
    ({"n_params": 0}, "n_params"), ({"n_params": -1e9}, "n_params"), ({"n_params": float("nan")}, "n_params"),
    ({"weights": "int3"}, "weights"), ({"optimizer": "adam"}, "optimizer"), ({"sharding": "zero4"}, "sharding"),
    ({"gradients": 2}, "gradients"), ({"weights": ["bf16"]}, "weights"), ({"reference": 1}, "reference"), ({"master_weights": "yes"}, "master_weights"),
    ({"group_size": 0}, "group_size"), ({"prompts": -1}, "prompts"), ({"prompts": 2.5}, "prompts"),
    ({"n_gpus": 0}, "n_gpus"), ({"logits_chunk": 0}, "logits_chunk"), ({"micro_batch": 0}, "micro_batch"),
    ({"rollout_gpus": 0}, "rollout_gpus"), ({"vocab_size": True}, "vocab_size"),
    ({"activation_checkpointing": None}, "activation_checkpointing"), ({"kv_precision": "int8"}, "kv_precision"),
])
def test_bad_input_names_the_parameter(kwargs, named):
    kwargs = {"n_params": 1e9, **kwargs}
    with pytest.raises(ValueError, match=named):
        memory_budget(kwargs.pop("n_params"), **kwargs)


def test_bad_input_of_the_time_functions():
    for call, named in ((lambda: kv_bytes_per_token(0, 1, 1), "n_layers"), (lambda: kv_bytes_per_token(1, 1, 1, "x"), "precision"),
                        (lambda: training_seconds(1e9, 0, 1e15), "tokens"),
                        (lambda: training_seconds(1e9, 10, 1e15, extra_forwards=-1), "extra_forwards"),
                        (lambda: generation_seconds(1e9, 0, 1, 1, flops_per_second=1, bandwidth=1), "sequences"),
                        (lambda: generation_seconds(1e9, 1, 1, 1, flops_per_second=1, bandwidth=0), "bandwidth"),
                        (lambda: weight_sync_seconds(1e9, -1), "bandwidth"),
                        (lambda: schedule(1, 1, -1, "synchronous"), "sync_s"),
                        (lambda: schedule(1, 1, 1, "sync"), "mode"),
                        (lambda: schedule(1, 1, 1, "asynchronous", max_staleness=0), "max_staleness")):
        with pytest.raises(ValueError, match=named):
            call()
    assert set(SHARDING) >= {"none", "zero1", "zero2", "zero3", "fsdp"}


# ----------------------------------------------------------------------------- seconds
def test_training_seconds_is_six_psi_flops_a_token_plus_the_reference_forward():
    assert training_seconds(7e9, 1e6, 1e15, extra_forwards=0) == pytest.approx(6 * 7e9 * 1e6 / 1e15)
    assert training_seconds(7e9, 1e6, 1e15) == pytest.approx(8 * 7e9 * 1e6 / 1e15)
    assert training_seconds(7e9, 1e6, 1e15, gpus=8, extra_forwards=2) == pytest.approx(10 * 7e9 * 1e6 / 8e15)
    # attention's forward A a token: forward, a backward of twice it and e more forwards, frozen base or not
    for gradients, linear in ((True, 10), (False, 8)):
        assert training_seconds(7e9, 1e6, 1e15, extra_forwards=2, weight_gradients=gradients, attention_flops=1e9) \
            == pytest.approx((linear * 7e9 + 5 * 1e9) * 1e6 / 1e15)


def test_attention_flops_by_counting_a_causal_sequences_products():
    """torch's FlopCounterMode on the products of a causal sequence decoded token by token (token t's scores
    against t keys, and its weighted sum of t values, on one layer of width d): their sum equals S tokens at the
    mean context (S + 1) / 2; and the 7B at 4608 tokens gives Kaplan et al.'s 2 n_layer n_ctx d_attn."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode
    S, d = 16, 8
    q, k, v = torch.randn(S, d), torch.randn(S, d), torch.randn(S, d)
    with FlopCounterMode(display=False) as counter:
        for t in range(1, S + 1):
            (q[t - 1:t] @ k[:t].T).softmax(-1) @ v[:t]
    assert counter.get_total_flops() == S * attention_flops_per_token(1, (S + 1) / 2, d)
    assert attention_flops_per_token(28, 4608 / 2, 3584) == 2 * 28 * 4608 * 3584
    with pytest.raises(ValueError, match="context"):
        attention_flops_per_token(2, -1.0, 8)


def test_generation_seconds_against_a_step_by_step_loop():
    psi, n, P, T, F, W, kv = 7e9, 32, 100, 300, 989e12, 3.35e12, 524288

    def loop():
        total = 2 * psi * n * P / F
        for t in range(T):
            total += max((2 * psi + n * (P + t) * kv) / W, 2 * psi * n / F)
        return total
    assert generation_seconds(psi, n, P, T, flops_per_second=F, bandwidth=W, kv_bytes_per_token=kv) == pytest.approx(loop())


def test_a_fixed_cost_per_decoding_step_adds_once_a_step_of_each_wave():
    """step_overhead = c adds c to each of the T decoding steps of every wave, by a loop that counts the steps
    one by one; the default 0 changes nothing."""
    psi, P, T, F, W, kv, M = 7e9, 100, 300, 989e12, 3.35e12, 524288, 80e9

    def run(n, **kw):
        return generation_seconds(psi, n, P, T, flops_per_second=F, bandwidth=W, kv_bytes_per_token=kv,
                                  memory_bytes=M, **kw)
    fit = math.floor((M - 2 * psi) / ((P + T) * kv))
    assert fit == 314
    for n, waves in ((1, 1), (32, 1), (fit + 1, 2)):
        assert run(n, step_overhead=0.003) == pytest.approx(run(n) + 0.003 * waves * T)
        assert run(n, step_overhead=0.0) == run(n)
    with pytest.raises(ValueError, match="step_overhead"):
        run(1, step_overhead=-1e-3)


def test_the_kv_cache_limits_how_many_sequences_decode_at_once():
    """64 sequences of 512 + 4096 tokens with Llama-2-7B's cache (0.5 MiB a token) need 154.6 GB; an 80 GB
    GPU holding 14 GB of bf16 weights fits 27 of them, so they decode in waves of 27, 27 and 10, each wave
    the same as a separate call; Qwen2.5-7B's grouped-query cache (4 KV heads, 56 KiB a token) fits 249."""
    from rl4llm.math.step_time import concurrent_sequences

    F, W, M = 0.4 * H100_SXM["bf16_flops"], H100_SXM["memory_bandwidth"], H100_SXM["memory_bytes"]
    llama, qwen = kv_bytes_per_token(32, 32, 128), kv_bytes_per_token(28, 4, 128)
    assert llama == 2 ** 19 and qwen == 57344 and 64 * 4608 * llama / 1e9 == pytest.approx(154.6, abs=0.05)
    assert concurrent_sequences(7e9, M, 4608, llama) == math.floor((80e9 - 14e9) / (4608 * llama)) == 27
    assert concurrent_sequences(7e9, M, 4608, qwen) == 249

    def one(n, **kw):
        return generation_seconds(7e9, n, 512, 4096, flops_per_second=F, bandwidth=W, kv_bytes_per_token=llama, **kw)
    assert one(64, memory_bytes=M) == pytest.approx(2 * one(27) + one(10))
    assert one(64, memory_bytes=M) > one(64)                  # the unlimited batch was impossible, and faster
    assert one(20, memory_bytes=M) == one(20)                 # all fit: one wave
    with pytest.raises(ValueError, match="memory_bytes"):
        one(4, memory_bytes=14.5e9)
    with pytest.raises(ValueError, match="context_length"):
        concurrent_sequences(7e9, M, 0, llama)


def test_grouped_query_rollout_at_60_percent_bandwidth_outlasts_training():
    """Chapter 19's step (64 prompts x G = 8 over 8 sampling GPUs, 512 + 4096 tokens): with Qwen2.5-7B's
    KV shape and 60% of the datasheet's bandwidth, decoding takes 48.8 s; training on 8 GPUs 41.7 s."""
    F, W, M = 0.4 * H100_SXM["bf16_flops"], H100_SXM["memory_bandwidth"], H100_SXM["memory_bytes"]
    rollout = generation_seconds(7e9, 64, 512, 4096, flops_per_second=F, bandwidth=0.6 * W,
                                 kv_bytes_per_token=kv_bytes_per_token(28, 4, 128), memory_bytes=M)
    train = training_seconds(7e9, 512 * 4608, F, gpus=8)
    assert round(rollout, 1) == 48.8 and round(train, 1) == 41.7


def test_decoding_is_bound_by_bandwidth_at_small_batches():
    """Each step reads the weights once, whatever the batch: one sequence or 64 take the same time per token
    while the weights dominate, until 2 Psi n / F overtakes Psi b / W at n = F b / (2 W) (295 on an H100)."""
    F, W = H100_SXM["bf16_flops"], H100_SXM["memory_bandwidth"]
    one = generation_seconds(7e9, 1, 0, 1000, flops_per_second=F, bandwidth=W)
    assert one == pytest.approx(1000 * 14e9 / W)
    assert generation_seconds(7e9, 64, 0, 1000, flops_per_second=F, bandwidth=W) == pytest.approx(one)
    assert math.floor(F * 2 / (2 * W)) == 295
    many = generation_seconds(7e9, 1024, 0, 1000, flops_per_second=F, bandwidth=W)
    assert many == pytest.approx(1000 * 2 * 7e9 * 1024 / F)


def test_weight_sync_seconds():
    assert weight_sync_seconds(7e9, 50e9) == pytest.approx(0.28)        # 14 GB of bf16 weights at 50 GB/s
    assert weight_sync_seconds(7e9, 50e9, weight_bytes=4) == pytest.approx(0.56)


def test_schedules():
    """R = 10, T = 5, S = 1 (sampling slower) and R = 4 (sampling faster than training plus sync)."""
    slow = {m: schedule(10, 5, 1, m) for m in SCHEDULES}
    assert slow["synchronous"] == {"wall": 16, "sampler_idle": 6, "trainer_idle": 11, "staleness": 0}
    assert slow["one_step_off"] == {"wall": 11, "sampler_idle": 1, "trainer_idle": 6, "staleness": 1}
    assert slow["asynchronous"] == {"wall": 10, "sampler_idle": 0, "trainer_idle": 5, "staleness": 1}
    fast = {m: schedule(4, 5, 1, m, max_staleness=3) for m in SCHEDULES}
    assert [fast[m]["wall"] for m in SCHEDULES] == [10, 6, 6]
    assert [fast[m]["staleness"] for m in SCHEDULES] == [0, 1, 3]
    assert schedule(4, 5, 0, "synchronous")["wall"] == 9


# ----------------------------------------------------------------------------- chapter 19's charts
# Their data at every slider position, their openings and the stored charts: test_charts.py (the charts
# viz.real_runs declares).
def test_the_tiny_gpt_is_a_point_of_the_fits_chart():
    pytest.importorskip("torch")
    from rl4llm.viz import real_runs as rr
    tiny = rr.tiny_gpt_params()
    from rl4llm.llm.model import GPT, GPTConfig
    assert tiny == GPT(GPTConfig()).num_parameters()          # chapter 15's model, whatever its size
    assert tiny in rr.model_sizes(1e5, 1e11, extra=(tiny, 7e9, 70e9))
    assert rr.model_state_gb(tiny, 1, 0) == pytest.approx(18 * tiny / 1e9)


# ----------------------------------------------------------------------------- architectures, LoRA, QLoRA
from rl4llm.math.memory import (ADAPTER_BYTES, NF4_BYTES, QWEN25_0_5B, QWEN25_7B, ModelShape,  # noqa: E402
                                activation_bytes_per_token, linear_shapes, lora_input_bytes_per_token, lora_params,
                                parameter_count)


def _hf_model(shape):
    """The shape as a Hugging Face model on the meta device: built from a config object, nothing downloaded."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM
    config_class, model_class = (Qwen2Config, Qwen2ForCausalLM) if shape.qkv_bias else (LlamaConfig, LlamaForCausalLM)
    config = config_class(vocab_size=shape.vocab_size, hidden_size=shape.hidden_size, num_hidden_layers=shape.n_layers,
                          num_attention_heads=shape.n_heads, num_key_value_heads=shape.n_kv_heads,
                          intermediate_size=shape.intermediate_size, tie_word_embeddings=shape.tied_embeddings)
    with torch.device("meta"):
        return model_class(config)


@pytest.mark.parametrize("shape", [QWEN25_0_5B, QWEN25_1_5B, QWEN25_7B, LLAMA2_7B], ids=lambda s: s.name)
def test_parameter_count_matches_a_transformers_model_of_the_shape(shape):
    """The count by formula equals the parameters of transformers' own model of the same config (meta device);
    the published sizes: Llama-2-7B 6.74B, Qwen2.5 0.49B, 1.54B, 7.62B (and the constants in the code)."""
    model = _hf_model(shape)
    assert sum(parameter_count(shape).values()) == sum(p.numel() for p in model.parameters())
    assert round(sum(parameter_count(shape).values()) / 1e9, 2) == round(shape.n_params / 1e9, 2)
    linear = sum(m.weight.numel() for name, m in model.named_modules()
                 if type(m).__name__ == "Linear" and name != "lm_head")
    assert parameter_count(shape)["linear"] == linear


@pytest.mark.parametrize("shape", [QWEN25_0_5B, QWEN25_7B, LLAMA2_7B], ids=lambda s: s.name)
@pytest.mark.parametrize("rank, targets", [(16, None), (8, ("q_proj", "v_proj"))])
def test_lora_parameters_by_an_independent_tally_of_the_models_linear_layers(shape, rank, targets):
    """PEFT is not installed: tally r (in_features + out_features) over the nn.Linear modules of transformers'
    model whose names end in a target (PEFT's rule), which knows nothing of ``linear_shapes``."""
    model = _hf_model(shape)
    wanted = targets or ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
    tally = sum(rank * (m.in_features + m.out_features) for name, m in model.named_modules()
                if type(m).__name__ == "Linear" and name.split(".")[-1] in wanted)
    assert lora_params(shape, rank, *(() if targets is None else (targets,))) == tally


@pytest.mark.parametrize("shape", [QWEN25_0_5B, QWEN25_1_5B, QWEN25_7B, LLAMA2_7B], ids=lambda s: s.name)
def test_lora_input_bytes_by_a_tally_of_one_layers_linear_inputs(shape):
    """4 bytes for every input number of every adapted matrix of one layer: in_features tallied over transformers'
    own first decoder layer (nothing of ``linear_shapes``), and Qwen2.5's 4 (6 h + d_ff) by hand."""
    layer = _hf_model(shape).model.layers[0]
    tally = sum(m.in_features for name, m in layer.named_modules() if type(m).__name__ == "Linear")
    assert lora_input_bytes_per_token(shape) == 4 * tally
    if shape.qkv_bias:
        assert lora_input_bytes_per_token(shape) == 4 * (6 * shape.hidden_size + shape.intermediate_size)
    assert lora_input_bytes_per_token(shape, ("q_proj", "v_proj")) == 8 * shape.hidden_size
    with pytest.raises(ValueError, match="targets"):
        lora_input_bytes_per_token(shape, ("qkv",))


def test_lora_and_qlora_budgets():
    """LoRA: frozen bf16 base, 16 bytes a trainable parameter, no reference copy; QLoRA: the linear layers in
    NF4 at 4.127 bits (Dettmers et al. 2023: 0.127 bits of constants with double quantisation)."""
    assert NF4_BYTES * 8 == pytest.approx(4.127, abs=5e-4)
    assert (NF4_BYTES * 8 - 4) == pytest.approx(8 / 64 + 32 / (64 * 256))
    psi, counts = QWEN25_7B.n_params, parameter_count(QWEN25_7B)
    adapters = lora_params(QWEN25_7B, 16)
    lora = memory_budget(psi, adapter_params=adapters)
    assert lora["weights"] == 2 * psi and lora["reference"] == 0
    assert (lora["gradients"], lora["master_weights"], lora["optimizer_state"]) == (4 * adapters, 4 * adapters, 8 * adapters)
    assert sum(ADAPTER_BYTES.values()) == 16
    qlora = memory_budget(psi, adapter_params=adapters, quantized_params=counts["linear"])
    assert qlora["weights"] == pytest.approx(counts["linear"] * NF4_BYTES + (counts["embeddings"] + counts["other"]) * 2)
    assert static_bytes(qlora) / GB < 6.5 and static_bytes(lora) / GB > 15.8
    sharded = memory_budget(psi, adapter_params=adapters, n_gpus=8, sharding="zero3")
    assert sharded["weights"] == lora["weights"] / 8 and sharded["optimizer_state"] == lora["optimizer_state"] / 8
    with pytest.raises(ValueError, match="quantized_params"):
        memory_budget(1e9, adapter_params=10, quantized_params=2e9)
    with pytest.raises(ValueError, match="targets"):
        lora_params(QWEN25_7B, 8, ("qkv",))
    with pytest.raises(ValueError, match="rank"):
        lora_params(QWEN25_7B, 0)


# ----------------------------------------------------------------------------- activations by direct count
def _saved_bytes_per_token(shape, flash, dropout, batch=2, seq=16):
    """Run one decoder layer of the shape in bf16 under torch's saved-tensor hooks and add up the distinct
    storages autograd keeps (parameters excluded), per token. Written from the operations, not the formula."""
    import torch
    import torch.nn.functional as F
    torch.manual_seed(0)
    dt, h, n_h, n_kv, d = torch.bfloat16, shape.hidden_size, shape.n_heads, shape.n_kv_heads, shape.head_dim
    lin = {name: torch.nn.Linear(i, o, dtype=dt) for name, (i, o) in linear_shapes(shape).items()}
    norms = [torch.nn.LayerNorm(h, dtype=dt) for _ in range(2)]
    p_drop = 0.1 if dropout else 0.0
    params = {p.untyped_storage().data_ptr() for m in [*lin.values(), *norms] for p in m.parameters()}

    def layer(x):
        y = norms[0](x)
        q = lin["q_proj"](y).view(batch, seq, n_h, d).transpose(1, 2)
        k = lin["k_proj"](y).view(batch, seq, n_kv, d).transpose(1, 2)
        v = lin["v_proj"](y).view(batch, seq, n_kv, d).transpose(1, 2)
        if flash:
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        else:
            k, v = (t.repeat_interleave(n_h // n_kv, dim=1) for t in (k, v))
            causal = torch.full((seq, seq), float("-inf"), dtype=dt).triu(1)      # added: nothing saved for it
            scores = (q @ k.transpose(-1, -2) / d ** 0.5 + causal).softmax(-1)
            a = F.dropout(scores, p_drop) @ v
        x = x + F.dropout(lin["o_proj"](a.transpose(1, 2).reshape(batch, seq, n_h * d)), p_drop)
        y = norms[1](x)
        inner = F.gelu(lin["up_proj"](y)) if shape.mlp == "gelu" else F.silu(lin["gate_proj"](y)) * lin["up_proj"](y)
        return x + F.dropout(lin["down_proj"](inner), p_drop)

    kept = {}

    def pack(t):
        storage = t.untyped_storage()
        if storage.data_ptr() not in params:
            kept[storage.data_ptr()] = storage.nbytes()
        return t

    x = torch.randn(batch, seq, h, dtype=dt, requires_grad=True)
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        layer(x).sum().backward()
    return sum(kept.values()) / (batch * seq)


GPT_TINY = ModelShape("GPT-style", 0, 1, 64, 4, 16, 0, 4, 256, "gelu")
SWIGLU_GQA_TINY = ModelShape("SwiGLU, GQA", 0, 1, 64, 2, 16, 0, 4, 96)


@pytest.mark.parametrize("shape, flash, dropout", [(GPT_TINY, False, True), (GPT_TINY, True, False),
                                                   (SWIGLU_GQA_TINY, True, False), (SWIGLU_GQA_TINY, False, False),
                                                   (SWIGLU_GQA_TINY, True, True)])
def test_activation_bytes_match_the_tensors_autograd_saves(shape, flash, dropout):
    """Two differences of torch on a CPU from a GPU, which the comparison adds: its LayerNorm keeps the mean and
    rstd in bf16 (2 + 2 bytes a token, the formula's ``rmsnorm`` 4 rather than ``layernorm``'s fp32 8), and its
    dropout keeps a bf16 mask (2 bytes an element, where CUDA's fused dropout keeps a 1-byte one)."""
    seq = 16
    formula = activation_bytes_per_token(shape, flash=flash, dropout=dropout, context=seq, norm="rmsnorm")
    cpu_masks = (2 * shape.hidden_size + shape.n_heads * seq * (not flash)) if dropout else 0
    assert _saved_bytes_per_token(shape, flash, dropout, seq=seq) == formula + cpu_masks


def test_gpt3_layer_is_korthikantis_34_plus_5as_and_swiglu_differs():
    h, a, s = 4096, 32, 2048
    gpt = ModelShape("GPT-3-like", 0, 1, h, a, h // a, 0, a, 4 * h, "gelu")
    korthikanti = 34 * h + 5 * a * s
    assert activation_bytes_per_token(gpt, flash=False, dropout=True, context=s, norm="layernorm") == korthikanti + 16
    assert activation_bytes_per_token(gpt, dropout=True, norm="layernorm") == 34 * h + 4 * a + 16
    # Qwen2.5-7B: SwiGLU with d_ff = 5.29 h and 4 key-value heads: about 55 h, not 34 h
    assert activation_bytes_per_token(QWEN25_7B) / QWEN25_7B.hidden_size == pytest.approx(54.89, abs=0.01)
    # the chart oracle of chapter 19 (rl4llm.viz.real_runs) states Qwen2.5-1.5B's value as a number
    assert activation_bytes_per_token(QWEN25_1_5B) == 91192


def test_draw_metrics_log_axis_and_reference_line():
    """Chapter 19's KL panel: a log axis from the given floor, a dotted line at the given value, and a legend that
    names each run and the line once (read back from matplotlib's own axes, not from draw_metrics)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from types import SimpleNamespace

    from rl4llm.viz import real_runs as rr

    def trainer(scale):
        steps = list(range(1, 11))
        return SimpleNamespace(metrics={"step": steps, "kl": [scale * s for s in steps], "entropy": [1.0] * 10})

    runs = {"healthy": [trainer(0.01), trainer(0.02)], "learning rate too high": [trainer(1.0)],
            "every group flat": [trainer(0.0)]}
    fig = plt.figure()
    rr.draw_metrics(fig, runs, [("kl", "KL"), ("entropy", "entropy")], "title", log_from={"kl": 1e-3},
                    lines={"kl": (0.2, "the healthy seeds' highest KL")})
    kl_axis, entropy_axis = fig.axes[:2]
    assert kl_axis.get_yscale() == "log" and kl_axis.get_ylim()[0] == pytest.approx(1e-3)
    assert entropy_axis.get_yscale() == "linear"
    flat_lines = [line for line in kl_axis.get_lines() if set(line.get_ydata()) == {0.2}]
    assert len(flat_lines) == 1 and flat_lines[0].get_linestyle() == ":"
    names = [text.get_text() for text in kl_axis.get_legend().get_texts()]
    assert names == ["healthy", "learning rate too high", "every group flat", "the healthy seeds' highest KL"]
    plt.close(fig)
