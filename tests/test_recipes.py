"""rl4llm.trl.recipes (chapter 19, "From the book to a real run"): every recipe is a config TRL 1.16's own
``GRPOConfig`` accepts, fits its GPU by a count made here by hand, and the failure thresholds hold by an
independent route (exact sums over random distributions, TRL's own defaults, TRL's source)."""
import math
import tempfile

import numpy as np
import pytest

from rl4llm.math.memory import QWEN25_0_5B, QWEN25_1_5B, QWEN25_7B, activation_bytes_per_token
from rl4llm.math.step_time import H100_SXM, prefix_sharing_savings, training_seconds
from rl4llm.trl import recipes as rc

ALL = rc.recipes()
FOUND = [(key, r) for key, r in ALL if r is not None]


def test_which_settings_have_a_recipe():
    missing = {(shape.name, gpus, tuning, mode) for (shape, gpus, tuning, mode), r in ALL if r is None}
    # server mode needs a GPU for vLLM besides the trainer's; 7B's full state (16 bytes a parameter, 122 GB) > 80 GB
    assert missing == {(s.name, 1, t, "server") for s in rc.MODELS for t in rc.TUNINGS} | {
        ("Qwen2.5-7B", 1, "full", "colocate")}
    assert 16 * QWEN25_7B.n_params > H100_SXM["memory_bytes"]
    assert len(FOUND) == 24 - 7


@pytest.mark.parametrize("key, r", FOUND, ids=lambda x: "-".join(map(str, (x[0].name, *x[1:]))) if isinstance(x, tuple) else "")
def test_every_recipe_is_a_valid_trl_config_that_fits(key, r):
    from trl import GRPOConfig
    with tempfile.TemporaryDirectory() as tmp:
        kwargs = r.trl_kwargs(tmp)
        config = GRPOConfig(**kwargs, use_cpu=True)      # use_cpu: this machine refuses bf16 without a GPU
    for name, value in kwargs.items():
        assert getattr(config, name) == value, name
    assert config.generation_batch_size % config.num_generations == 0
    assert r.micro_batch * r.accumulation == rc.GROUPS_PER_GPU * r.group_size
    assert r.gpu_bytes <= (1 - rc.HEADROOM) * H100_SXM["memory_bytes"] and r.margin >= rc.HEADROOM - 1e-12
    if r.mode == "colocate":                           # vLLM's share holds its weights and the GPU's caches
        assert r.engine_bytes <= r.vllm_memory * H100_SXM["memory_bytes"] < r.engine_bytes + 0.05 * 80e9
    assert config.vllm_importance_sampling_correction and config.beta == 0.0
    assert "accelerate launch" in r.launch()


def test_a_recipe_recounted_by_hand():
    """Qwen2.5-0.5B, full fine-tuning, one GPU: 16 bytes a parameter (no reference at beta = 0), checkpointed
    activations (2 h L + a) m S, in place of the logits TRL's fused log-prob kernel (a bf16 tile of 4096 x 32768, the
    fp32 gradients of the hidden states, 4 m T h, and of the LM head, 4 V h), TRL's float32 load under autocast
    (a bf16 copy of the weights, 2 Psi, and fp32 checkpoints, 2 h L m S more; no DDP on one GPU), and vLLM's 0.1
    of the GPU (its bf16
    weights, 2 GB of working memory and the caches of the GPU's 32 sequences)."""
    r = rc.recipe(QWEN25_0_5B, 1, "full", "colocate")
    s, h, L = rc.PROMPT_LENGTH + r.completion_length, QWEN25_0_5B.hidden_size, QWEN25_0_5B.n_layers
    a = activation_bytes_per_token(QWEN25_0_5B)
    by_hand = (16 * QWEN25_0_5B.n_params + (2 * h * L + a) * r.micro_batch * s
               + 2 * 4096 * 32768 + 4 * r.micro_batch * r.completion_length * h + 4 * QWEN25_0_5B.vocab_size * h
               + 2 * QWEN25_0_5B.n_params + 2 * h * L * r.micro_batch * s)  # float32 load: bf16 copy, fp32 checkpoints
    assert r.train_bytes == pytest.approx(by_hand)
    engine = 2 * QWEN25_0_5B.n_params + 2e9 + 32 * s * (2 * 24 * 2 * 64 * 2)      # weights, working memory, caches
    assert r.engine_bytes == pytest.approx(engine) and r.vllm_memory == 0.1
    # the longer cap or the larger micro-batch would not be chosen over these: T is the longest candidate
    assert (r.completion_length, r.micro_batch, r.accumulation) == (8192, 8, 4)


def test_a_lora_recipe_counts_the_adapters_fp32_inputs():
    """LoRA's recomputed layer adds 4 bytes for every input number of its seven adapted matrices (PEFT's fp32
    cast before A): the 1-GPU 0.5B LoRA recipe by hand, its activations with and without that term."""
    r = rc.recipe(QWEN25_0_5B, 1, "lora", "colocate")
    s, h, L, ff = rc.PROMPT_LENGTH + r.completion_length, QWEN25_0_5B.hidden_size, QWEN25_0_5B.n_layers, \
        QWEN25_0_5B.intermediate_size
    without = rc._train_bytes(QWEN25_0_5B, "full", 1, 8, r.completion_length, r.micro_batch, "none")  # any state
    assert r.train_bytes - (2 * QWEN25_0_5B.n_params + 16 * rc.lora_params(QWEN25_0_5B, rc.LORA_RANK)
                            + (2 * h * L + activation_bytes_per_token(QWEN25_0_5B) + 4 * (6 * h + ff)) * r.micro_batch * s
                            + 2 * 4096 * 32768 + 4 * r.micro_batch * r.completion_length * h) == pytest.approx(0, abs=1)
    assert without > 0


def test_training_seconds_count_attention_at_the_mean_causal_context():
    """0.5B, full, 1 GPU by hand: 32 sequences of 8704 tokens, 10 Psi a token and 5 times attention's forward,
    4 L (S / 2) n_h d_head = 2 x 24 x 8704 x 896 FLOPs a token (38% of 2 Psi), at 40% of 989 TFLOP/s."""
    r = rc.recipe(QWEN25_0_5B, 1, "full", "colocate")
    attention = 2 * 24 * 8704 * 896
    assert attention / (2 * QWEN25_0_5B.n_params) == pytest.approx(0.379, abs=1e-3)
    by_hand = 32 * 8704 * (10 * QWEN25_0_5B.n_params + 5 * attention) / (0.4 * 989e12)
    assert rc.recipe_seconds(r)["train"] == pytest.approx(by_hand)


def test_the_count_against_the_h200_measurement():
    """The measurement as the library holds it equals the record ``benchmarks/recipe_gpu.py`` wrote (the second
    optimizer step's peaks and seconds); the count, at the micro-batch the H200 ran, lies within 6% below every
    measured peak, and the allocator's reserved peak stays inside the 10% margin (8 GB) above the count."""
    import json
    from pathlib import Path
    record = json.loads((Path(__file__).parent.parent / "benchmarks" / "results" / "recipe_gpu_h200.json").read_text())
    assert {(run["model"], run["tuning"]): {"micro_batch": run["micro_batch"],
                                            "allocated": run["peak_allocated_bytes"][-1],
                                            "reserved": run["peak_reserved_bytes"][-1],
                                            "seconds": round(run["step_seconds"][-1], 2),
                                            "first_seconds": round(run["step_seconds"][0], 2)}
            for run in record["runs"]} == rc.H200_TRAINING
    rows = rc.measured_training()
    assert len(rows) == 5
    for row in rows:
        assert 0.94 <= row["count_over_measured"] <= 1.0, row
        assert row["reserved_bytes"] - row["count_bytes"] < rc.HEADROOM * H100_SXM["memory_bytes"], row
    # before the LoRA term (activations of full fine-tuning's layer alone) the LoRA rows were far below the peak
    for row in (row for row in rows if row["tuning"] == "lora"):
        shape = next(m for m in rc.MODELS if m.name == row["model"])
        term = rc.lora_input_bytes_per_token(shape) * row["micro_batch"] * (rc.PROMPT_LENGTH + 8192)
        assert (row["count_bytes"] - term) / row["measured_bytes"] < 0.84


def test_logits_are_counted_as_trls_fused_kernel():
    """TRL 1.16's GRPOTrainer always installs its fused LM head (no (m, T, V) logits), whose kernel works in
    tiles of LOGPROB_TILE tokens x 32768 vocabulary entries; its backward allocates the fp32 gradient of the hidden
    states (N x h) and, when the head trains, of the LM head (V x h), which the recipes count. Qwen2.5-7B, full,
    micro-batch 2 of 8192 tokens: 0.27 + 0.23 + 2.18 GB."""
    import inspect

    import trl.trainer.grpo_trainer as grpo
    from trl.kernels import chunked_logprob
    from trl.trainer import utils
    assert chunked_logprob.TOKEN_CHUNK_SIZE == rc.LOGPROB_TILE == 4096
    assert utils._CHUNKED_LOGPROB_CHUNK_SIZE == rc.LOGPROB_VOCAB_CHUNK == 32768
    init = inspect.getsource(grpo.GRPOTrainer.__init__)
    assert "add_fused_lm_head(" in init and "fused_lm_head=True" in inspect.getsource(grpo)
    backward = inspect.getsource(chunked_logprob.ChunkedLogProbFunction.backward)
    assert "torch.zeros(hidden.shape, device=hidden.device, dtype=torch.float32) if needs_hidden_grad" in backward
    assert "torch.zeros(weight.shape, device=weight.device, dtype=torch.float32) if needs_weight_grad" in backward
    kernel = rc.logprob_kernel_bytes(QWEN25_7B, "full", 2 * 8192)
    assert kernel == {"tile": 2 * 4096 * 32768, "hidden gradient": 4 * 16384 * 3584, "head gradient": 4 * 152064 * 3584}
    assert rc.logprob_kernel_bytes(QWEN25_7B, "lora", 2 * 8192)["head gradient"] == 0
    r = rc.recipe(QWEN25_7B, 8, "full", "colocate")
    assert (r.micro_batch, r.completion_length) == (1, 8192)
    assert sum(kernel.values()) / 1e9 == pytest.approx(0.27 + 0.23 + 2.18, abs=0.01)
    assert sum(kernel.values()) > 4 * 4096 * QWEN25_7B.vocab_size      # more than the fp32 tile counted before


def test_lora_recipes_load_the_base_in_bf16_as_counted():
    """TRL 1.16 loads a model named by its id in float32 unless model_init_kwargs gives a dtype; the LoRA recipes
    count a bf16 base (2 bytes a parameter), so they set it; full fine-tuning keeps TRL's float32 load (the same 16
    bytes a parameter without DeepSpeed; DeepSpeed's bf16 mode casts the weights and keeps an fp32 master)."""
    import inspect

    from trl.trainer.utils import create_model_from_path
    assert 'dtype = kwargs.get("dtype", "float32")' in inspect.getsource(create_model_from_path)
    for _, r in FOUND:
        kwargs = r.trl_kwargs("out")
        if r.tuning == "lora":
            assert kwargs["model_init_kwargs"] == {"dtype": "bfloat16"}
        else:
            assert "model_init_kwargs" not in kwargs


def test_the_launch_names_trls_own_deepspeed_configs():
    """Each ZeRO recipe's --config_file is a file of TRL's wheel, with its ZeRO stage and bf16 mixed precision."""
    import re
    from pathlib import Path

    import trl
    zero = [r for _, r in FOUND if r.sharding != "none"]
    assert zero
    for r in zero:
        path = re.search(r'--config_file "\$TRL_DIR/(\S+)"', r.launch()).group(1)
        text = (Path(trl.__file__).parent / path).read_text()
        assert f"zero_stage: {2 if r.sharding == 'zero2' else 3}" in text and "mixed_precision: 'bf16'" in text
    for _, r in FOUND:                    # every recipe names its config: a user's default cannot change the count
        path = re.search(r'--config_file "\$TRL_DIR/(\S+)"', r.launch()).group(1)
        text = (Path(trl.__file__).parent / path).read_text()
        assert "mixed_precision: 'bf16'" in text
        if r.sharding == "none":
            assert ("distributed_type: MULTI_GPU" in text) == (r.trainer_gpus > 1)
        if r.mode == "server":                    # the server's context is the count's, as TRL would pass it
            from trl.scripts.vllm_serve import ScriptArguments, build_command
            length = rc.PROMPT_LENGTH + r.completion_length
            trl_command = build_command(ScriptArguments(model="m", max_model_len=length))
            assert trl_command[trl_command.index("--max-model-len") + 1] == str(length)
            assert f"--max-model-len {length}" in r.launch()


def test_the_launch_lines_are_shell_commands_and_the_trainer_call_python():
    """Server mode starts vLLM on the last GPUs and the trainer on the others; the trainer call is Python that
    builds GRPOTrainer with the recipe's GRPOConfig (and LoraConfig for LoRA)."""
    import ast
    import shlex
    for _, r in FOUND:
        lines = r.launch().split("\n")
        assert lines[-1].split()[-1] == rc.TRAIN_SCRIPT and all(shlex.split(line) for line in lines)
        if r.mode == "server":
            assert lines[0].startswith("CUDA_VISIBLE_DEVICES=" + ",".join(map(str, range(r.trainer_gpus, r.gpus))))
            assert lines[-1].startswith("CUDA_VISIBLE_DEVICES=" + ",".join(map(str, range(r.trainer_gpus))) + " ")
        call = ast.parse(r.trainer_call()).body[0].value
        assert call.func.id == "GRPOTrainer"
        keywords = {k.arg: k.value for k in call.keywords}
        assert ast.literal_eval(keywords["args"].keywords[0].value) == "out"
        assert ("peft_config" in keywords) == (r.tuning == "lora")


def test_deepspeed_buckets_are_counted_and_the_optimizer_step_peaks_lower():
    """ZeRO-2/3 recipes count DeepSpeed's reduce bucket (5e8 bf16 elements) in the backward pass; the optimizer
    step's fp32 copy of the gradient partition comes after the activations are freed, and peaks lower."""
    zero = [r for _, r in FOUND if r.sharding != "none"]
    plain = rc._train_bytes(zero[0].model, zero[0].tuning, zero[0].trainer_gpus, zero[0].group_size,
                            zero[0].completion_length, zero[0].micro_batch, "none")
    assert rc.DEEPSPEED_BUCKET_BYTES == 2 * 5e8
    for r in zero:
        assert rc.step_peak_bytes(r) < r.gpu_bytes <= (1 - rc.HEADROOM) * H100_SXM["memory_bytes"]
    assert plain > 0


def test_full_fine_tuning_without_deepspeed_counts_the_float32_load():
    """Without DeepSpeed, full fine-tuning trains TRL's float32 load under bf16 autocast: a bf16 copy of the
    weights, fp32 checkpoints and, on more than one GPU, DDP's fp32 gradient buckets; LoRA and ZeRO rows add none."""
    one, eight = rc.recipe(QWEN25_1_5B, 1, "full", "colocate"), rc.recipe(QWEN25_1_5B, 8, "full", "colocate")
    extra = rc.float32_load_bytes(QWEN25_1_5B, 8, 8, 8192)
    assert extra["DDP gradient buckets"] == 4 * QWEN25_1_5B.n_params
    assert rc.float32_load_bytes(QWEN25_1_5B, 1, 8, 8192)["DDP gradient buckets"] == 0
    assert eight.train_bytes - one.train_bytes == pytest.approx(extra["DDP gradient buckets"], rel=1e-6) \
        or eight.micro_batch != one.micro_batch
    lora = rc.recipe(QWEN25_1_5B, 8, "lora", "colocate")
    assert lora.train_bytes == pytest.approx(rc._train_bytes(QWEN25_1_5B, "lora", 8, 8, 8192, lora.micro_batch, "none"))


def test_learning_rate_transfers_by_width():
    assert rc.learning_rate(QWEN25_7B, "full") == pytest.approx(3e-4 * 64 / 3584, rel=0.01) == 5.4e-6
    assert rc.learning_rate(QWEN25_7B, "lora") == pytest.approx(10 * 3e-4 * 64 / 3584, rel=0.01)
    # 3e-4 x 64 / 1536 = 1.25e-5 rounds to 1.2e-5, and LoRA takes 10 times the rounded rate, not 1.3e-4
    assert rc.learning_rate(QWEN25_1_5B, "full") == 1.2e-5 and rc.learning_rate(QWEN25_1_5B, "lora") == 1.2e-4
    for shape in rc.MODELS:
        assert rc.learning_rate(shape, "lora") == pytest.approx(rc.LORA_LR_FACTOR * rc.learning_rate(shape, "full"))
    # the transferred rates lie 5 to 21 times above the published runs' 1e-6 (the docstring's "upper bound")
    ratios = [rc.learning_rate(shape, "full") / 1e-6 for shape in rc.MODELS]
    assert set(rc.PUBLISHED_LEARNING_RATES.values()) == {1e-6} and 5 < min(ratios) and max(ratios) < 22
    # the configurations start at the published rate and carry the transfer as their ceiling
    for _, r in FOUND:
        assert r.trl_kwargs("out")["learning_rate"] == r.learning_rate == (1e-6 if r.tuning == "full" else 1e-5)
        assert r.learning_rate_ceiling == rc.learning_rate(r.model, r.tuning) > r.learning_rate


# ----------------------------------------------------------------------------- the vLLM server
def test_server_is_one_tensor_parallel_engine_never_data_parallel():
    """TRL 1.16's vllm_serve.py: a data-parallel size above 1 "will error out" for dense models (all of these);
    the server's GPUs split one engine by tensor parallelism, whole heads on each GPU."""
    import dataclasses
    from trl.scripts.vllm_serve import ScriptArguments
    help_text = {f.name: f.metadata["help"] for f in dataclasses.fields(ScriptArguments)}["data_parallel_size"]
    assert "For dense models, keep this at 1" in help_text
    for shape in rc.MODELS:
        with pytest.raises(ValueError, match="data_parallel_size"):
            rc.vllm_serve_command(shape, 1, data_parallel_size=2)
    assert rc.tensor_parallel_sizes(QWEN25_0_5B) == (1, 2)          # 14 heads, 2 key-value heads
    assert rc.tensor_parallel_sizes(QWEN25_1_5B) == (1, 2)          # 12 heads, 2 key-value heads
    assert rc.tensor_parallel_sizes(QWEN25_7B) == (1, 2, 4)         # 28 heads, 4 key-value heads
    with pytest.raises(ValueError, match="tensor_parallel_size"):
        rc.vllm_serve_command(QWEN25_0_5B, 7)                        # 7 divides 14 heads, not 2 key-value heads
    servers = [r for _, r in FOUND if r.mode == "server"]
    assert servers and all(r.server_gpus in rc.tensor_parallel_sizes(r.model) for r in servers)
    assert all("--data-parallel-size" not in r.launch() and "trl vllm-serve" not in r.launch() for r in servers)


@pytest.mark.parametrize("shape, k", [(s, k) for s in rc.MODELS for k in rc.tensor_parallel_sizes(s)],
                         ids=lambda x: getattr(x, "name", str(x)))
def test_server_command_matches_trls_own(shape, k):
    """The printed command sets each flag as TRL 1.16's build_command (what the deprecated `trl vllm-serve`
    runs) sets it, data-parallel size 1 included by omission (vLLM's default; TRL passes 1)."""
    import shlex
    from trl.scripts.vllm_serve import ScriptArguments, build_command
    ours = shlex.split(rc.vllm_serve_command(shape, k))
    assert ours[:4] == ["VLLM_SERVER_DEV_MODE=1", "vllm", "serve", f"Qwen/{shape.name}"]
    trl = build_command(ScriptArguments(model=f"Qwen/{shape.name}", tensor_parallel_size=k))
    assert trl[trl.index("serve") + 1] == f"Qwen/{shape.name}"
    trl_flags = dict(zip(trl[trl.index("serve") + 2::2], trl[trl.index("serve") + 3::2]))
    our_flags = dict(zip(ours[4::2], ours[5::2]))
    assert {flag: trl_flags.get(flag) for flag in our_flags} == our_flags
    assert trl_flags["--data-parallel-size"] == "1"
    default = ScriptArguments(model="m").gpu_memory_utilization
    assert float(our_flags["--gpu-memory-utilization"]) == rc.SERVER_MEMORY_UTILIZATION == default


def test_lora_training_skips_the_weight_gradients():
    assert training_seconds(1e9, 100, 1e12, extra_forwards=0, weight_gradients=False) == pytest.approx(4e-1)
    assert training_seconds(1e9, 100, 1e12, extra_forwards=2) == pytest.approx(1.0)


def test_prefix_sharing_by_counting_the_groups():
    """64 prompts x G = 8: the prompts' 512 tokens are prefilled 64 times, not 512 times."""
    saved = prefix_sharing_savings(7e9, 512, 8, 512, 57344, 4e14)
    assert saved["kv_bytes"] == (512 - 64) * 512 * 57344
    assert saved["prefill_seconds"] == pytest.approx(2 * 7e9 * (512 - 64) * 512 / 4e14)


# ----------------------------------------------------------------------------- failure signatures
def test_entropy_threshold_bounds_the_flat_groups():
    """sum_y p(y)^G >= exp(-(G - 1) H) on random distributions (exactly), and at the threshold H = ln 2 /
    ((G - 1) T) a completion of T tokens has entropy ln 2 / (G - 1): at least half the groups are identical."""
    rng = np.random.default_rng(0)
    for G in (2, 4, 8, 16):
        for _ in range(200):
            p = rng.dirichlet(rng.uniform(0.05, 2, size=rng.integers(2, 50)))
            H = -(p * np.log(p)).sum()
            assert (p ** G).sum() >= math.exp(-(G - 1) * H) - 1e-12
    h = rc.failure_thresholds(8, 4096, 32)["entropy collapse"]
    assert math.exp(-(8 - 1) * h * 4096) == pytest.approx(0.5)


def test_length_threshold_and_mismatch_threshold():
    c = rc.failure_thresholds(8, 4096, 32)["length blow-up"]
    assert 1 - (1 - c) ** 32 == pytest.approx(0.5)
    rng = np.random.default_rng(1)                     # Monte Carlo: half the batches of 32 hold a clipped one
    hit = (rng.random((20000, 32)) < c).any(axis=1).mean()
    assert abs(hit - 0.5) < 4 * math.sqrt(0.25 / 20000)
    from trl import GRPOConfig
    with tempfile.TemporaryDirectory() as tmp:
        clip_max = GRPOConfig(output_dir=tmp, use_cpu=True).vllm_importance_sampling_clip_max
    assert rc.failure_thresholds(8, 4096, 32, clip_max)["mismatch spike"] == pytest.approx(math.log(3))


def test_signature_metrics_are_trl_names_and_the_books_own_names():
    from rl4llm.llm.trainer import GRPOTrainer
    trl_names = rc.trl_metric_names()
    assert {m for pair in rc.SIGNATURE_METRICS.values() for m in pair} <= trl_names
    assert {"num_tokens", "step_time", "rewards/{reward_func_name}/mean", "completions/mean_terminated_length",
            "kl"} <= trl_names
    # what the book's trainer logs that TRL's _metrics do not: loss, grad_norm, learning_rate come from
    # transformers' Trainer; num_gen_batches is verl's (dynamic sampling); step, ratio, answers, tokens and
    # seconds are the book's own
    assert set(GRPOTrainer.METRICS) - trl_names == {"step", "ratio", "answers", "tokens", "seconds", "loss",
                                                    "grad_norm", "learning_rate", "num_gen_batches"}


def test_bad_input():
    with pytest.raises(ValueError, match="mode"):
        rc.recipe(QWEN25_0_5B, 1, "full", "remote")
    with pytest.raises(ValueError, match="tuning"):
        rc.recipe(QWEN25_0_5B, 1, "qlora", "colocate")
    with pytest.raises(ValueError, match="gpus"):
        rc.recipe(QWEN25_0_5B, 0, "full", "colocate")
    with pytest.raises(ValueError, match="group_size"):
        rc.failure_thresholds(1, 10, 10)


def test_logprob_kernel_bytes_refuses_an_unknown_tuning_and_no_tokens():
    from rl4llm.trl.recipes import logprob_kernel_bytes

    with pytest.raises(ValueError, match="tuning"):
        logprob_kernel_bytes(QWEN25_7B, "qlora", 1024)
    with pytest.raises(ValueError, match="tokens"):
        logprob_kernel_bytes(QWEN25_7B, "full", 0)


def test_assumptions_are_the_datasheet_and_reproduce_the_sync():
    """``assumptions`` (printed by chapter 21) against H100 SXM's datasheet and chapter 19's stated shares, and the sync
    seconds of every recipe recomputed by hand from its links: 2 bytes a weight over NVLink one way (450 GB/s, half of
    the datasheet's 900 GB/s both ways; twice for ZeRO-3's gather) to a server, over the HBM within a colocated GPU."""
    a = rc.assumptions()
    assert (a["gpu_memory_bytes"], a["bf16_flops"], a["memory_bandwidth"]) == (80e9, 989e12, 3.35e12)
    assert (a["share_of_peak_flops"], a["decoding_share_of_bandwidth"]) == (0.4, 0.6)
    assert (a["prompt_length"], a["groups_per_gpu"]) == (512, 4)
    for _, r in FOUND:
        psi = r.model.n_params
        hand = 2 * psi / 3.35e12 if r.mode == "colocate" else (1 + (r.sharding == "zero3")) * 2 * psi / 450e9
        assert rc.recipe_seconds(r)["sync"] == pytest.approx(hand, rel=1e-12)
        assert r.gpu_bytes <= 0.9 * a["gpu_memory_bytes"]
    lines = rc.assumption_lines()
    assert "80 GB" in lines[0] and "40% of the peak FLOP/s" in lines[1] and "60% of the memory bandwidth" in lines[1]
    assert "prompts of 512 tokens; 4 groups a training GPU" in lines[2] and "450 GB/s" in lines[-1]
    assert all(r.group_size == 8 and r.micro_batch * r.accumulation == 4 * 8 for _, r in FOUND)   # 4 groups of 8
    assert "groups of G = 8 completions a prompt (TRL's num_generations)" in lines[3]
    assert all(r.trl_kwargs("out")["num_generations"] == 8 for _, r in FOUND)
    assert (a["headroom"], a["vllm_working_bytes"], a["extra_forwards"]) == (0.1, 2e9, 2)
