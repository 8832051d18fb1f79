"""From the book to a real run: TRL + vLLM settings chosen by chapter 19's arithmetic (issue 33, item 5).

:func:`recipe` takes a model's shape (``rl4llm.math.memory``: Qwen2.5-0.5B, 1.5B, 7B), a number of 80 GB
GPUs, full fine-tuning or LoRA, and vLLM's ``colocate`` or ``server`` mode, and chooses, in this order:

1. **where the trainer runs**: colocate trains on every GPU, each also running a vLLM engine that takes
   ``vllm_gpu_memory_utilization`` of it; server gives k GPUs to one vLLM engine, split by tensor
   parallelism (:func:`vllm_serve_command`: ``vllm serve --tensor-parallel-size k``, 0.9 of each GPU's
   memory, data parallelism 1, since TRL 1.16's ``trl/scripts/vllm_serve.py`` says of ``data_parallel_size``
   that for dense models, such as Qwen2.5, a value above 1 "is not supported/useful and will error out"),
   and trains on the rest. k is one of :func:`tensor_parallel_sizes` (whole heads on every GPU), chosen
   for the longest completion cap that fits and then the fewest seconds per trained sequence
   (:func:`recipe_seconds`; so server mode needs 2 GPUs);
2. **the batch**: each training GPU holds ``GROUPS_PER_GPU`` whole groups of G completions per optimizer
   step (``per_device_train_batch_size`` x ``gradient_accumulation_steps`` = ``GROUPS_PER_GPU`` x G, which
   TRL's own check, generation batch divisible by ``num_generations``, then passes on any number of GPUs);
3. **the sharding** (full fine-tuning): the lowest ZeRO stage (none, 2, 3) whose state fits;
4. ``max_completion_length`` T, the longest of ``COMPLETION_LENGTHS``, and then the micro-batch m
   (``per_device_train_batch_size``), the largest of ``MICRO_BATCHES`` dividing the GPU's sequences, such
   that one training GPU's bytes (``memory_budget`` with activation checkpointing, TRL's default, the
   architecture's own activation bytes, no reference model since TRL's ``beta`` is 0, and in place of the
   logits the buffers of TRL's fused log-prob kernel, :func:`logprob_kernel_bytes`) plus
   the colocated engine's share fit in (1 - ``HEADROOM``) x 80 GB; the engine's share is its bf16 weights, its
   working memory (``VLLM_WORKING_BYTES``) and the KV cache of the GPU's sequences, rounded up to a multiple of 0.05;
5. **the learning rate**: the recipe starts at the published runs' 1e-6 (LoRA: 1e-5); its ceiling is chapter 19's
   healthy run (``READING_CONFIG.lr`` on chapter 15's GPT of width 64) transferred by width: Adam moves every
   weight by about the learning rate a step (chapter 16), and a layer's output sums h such moves, so the same
   change of the function needs lr x 64 / h, rounded to two significant digits. LoRA takes ``LORA_LR_FACTOR``
   times that rounded rate: a rule of thumb, not derived here. The transferred rates are 5 to 21 times the 1e-6 of
   published GRPO runs (``PUBLISHED_LEARNING_RATES``): an upper bound to approach while the KL and the entropy
   stay healthy, not a rate known to work.

The weights' precision: TRL 1.16 loads a model named by its id in float32 unless ``model_init_kwargs`` gives a
``dtype`` (``trl.trainer.utils.create_model_from_path``). For full fine-tuning that default is the mixed precision
counted here: without DeepSpeed, fp32 weights and gradients and AdamW's two moments make the same 16 bytes a
parameter (4 + 4 + 8 instead of 2 + 2 + 12), and with DeepSpeed (TRL's ``accelerate_configs/zero2.yaml`` and
``zero3.yaml`` set ``mixed_precision: bf16``) the engine casts the weights to bf16 and keeps the fp32 master copy in
its optimizer. LoRA's frozen base, counted at 2 bytes a parameter, must be loaded in bf16: its recipes set
``model_init_kwargs={"dtype": "bfloat16"}`` (in float32 the 7B base alone would take 30.5 GB, not 15.2).

:func:`recipe_seconds` then estimates the step with ``rl4llm.math.step_time``: sampling at 60% of the
bandwidth, training at 40% of the peak FLOP/s with two extra forward passes (the recomputation of
checkpointing and the old log-probs TRL computes for its vLLM correction) and attention's FLOPs over each token's
mean causal context (``attention_flops_per_token``: at 512 + 8192 tokens, 38% of 2 Psi for the 0.5B, 11% for the
7B), and the weight sync. Every
completion is assumed to run to T, so the seconds are an upper bound for the length. A server of k
tensor-parallel GPUs is counted as one GPU with k times the bandwidth, FLOP/s and memory: the all-reduces
tensor parallelism adds at every layer are left out, so its sampling seconds are a lower bound for k > 1.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

from .._checks import at_least, checked, one_of
from ..llm.model import GPTConfig
from ..llm.run_reading import READING_CONFIG
from ..math.memory import (QWEN25_0_5B, QWEN25_1_5B, QWEN25_7B, SHARDING, ModelShape, activation_bytes_per_token,
                           kv_bytes_per_token, lora_input_bytes_per_token, lora_params, memory_budget,
                           shape_options)
from ..math.step_time import (H100_SXM, NVLINK_ONE_WAY, attention_flops_per_token, generation_seconds, training_seconds,
                              weight_sync_seconds)

#: The models of the recipes, with their published configs (``rl4llm.math.memory``).
MODELS = (QWEN25_0_5B, QWEN25_1_5B, QWEN25_7B)
#: vLLM's two modes in TRL 1.16 and the two kinds of fine-tuning.
MODES, TUNINGS = ("colocate", "server"), ("full", "lora")
#: The share of a vLLM server's GPU memory (the default of TRL 1.16's ``vllm_serve.ScriptArguments``, passed
#: to ``vllm serve`` as ``--gpu-memory-utilization``).
SERVER_MEMORY_UTILIZATION = 0.9
#: The flags TRL 1.16 adds to every ``vllm serve`` it expects (``trl/scripts/vllm_serve.py``'s ``build_command``
#: and ``VLLMClient``'s docstring): NCCL weight transfer, log-probs after temperature, no cap on log-probs; its
#: weight-transfer endpoints also need ``VLLM_SERVER_DEV_MODE=1`` in the server's environment.
VLLM_SERVE_FLAGS = ("--weight-transfer-config '{\"backend\": \"nccl\"}' --logprobs-mode processed_logprobs "
                    "--max-logprobs -1")
#: Share of each GPU kept free for what the count leaves out (CUDA context, allocator, vLLM's CUDA graphs): a guess.
HEADROOM = 0.1
#: What a colocated vLLM engine holds besides its weights and KV cache, and takes out of its share before it
#: sizes the cache: the activations of its profiling pass over TRL's ``max_num_batched_tokens=4096``, its sampler's
#: buffers, CUDA graphs. A guess, like ``HEADROOM``: vLLM's log line "Maximum concurrency" tells what a run got.
VLLM_WORKING_BYTES = 2e9
#: DeepSpeed ZeRO's reduce bucket (``reduce_bucket_size``, 5e8 elements by default, in bf16), which stages 2 and 3
#: hold while the backward pass reduces the gradients. At the optimizer step, after the activations are freed,
#: ZeRO-1/2 also makes an fp32 copy of its gradient partition (``stage_1_and_2.py``, 4 Psi / N bytes): that peak
#: is below the backward pass's in every recipe (:func:`step_peak_bytes`).
DEEPSPEED_BUCKET_BYTES = 2 * 5e8
#: The learning rates of published GRPO runs (full fine-tuning), as their papers state them: DeepSeekMath
#: (Shao et al. 2024, section 4.1, DeepSeekMath-Instruct 7B) and DAPO (Yu et al. 2025, Qwen2.5-32B base).
PUBLISHED_LEARNING_RATES = {"DeepSeekMath, 7B": 1e-6, "DAPO, 32B": 1e-6}
#: Prompt tokens (at most: TRL 1.16's ``GRPOConfig`` has no ``max_prompt_length``, so the prompts must be
#: filtered to it), and whole groups a training GPU holds per optimizer step.
PROMPT_LENGTH, GROUPS_PER_GPU = 512, 4
#: Wait until ``vllm serve`` (port 8000, its default) answers before the trainer starts: loading a 7B model over
#: several GPUs can outlast TRL's ``vllm_server_timeout`` (240 s by default); stop if the server (``$!``) died.
SERVER_WAIT = "until curl -sf http://localhost:8000/health; do kill -0 $! || exit 1; sleep 5; done"
#: The training script a recipe's ``accelerate launch`` runs: the reader's, holding :meth:`Recipe.trainer_call`.
TRAIN_SCRIPT = "train_grpo.py"
#: Candidate completion caps (longest first) and micro-batches (largest first).
COMPLETION_LENGTHS, MICRO_BATCHES = (8192, 4096, 2048, 1024), (8, 4, 2, 1)
#: LoRA's rank and scale (alpha): stated choices, the usual r = 16, alpha = 2 r.
LORA_RANK, LORA_ALPHA = 16, 32
#: LoRA's learning rate over full fine-tuning's: a common rule of thumb, not derived by the book.
LORA_LR_FACTOR = 10
#: Chapter 19's assumptions for a step's seconds (``rl4llm.viz.real_runs.RUN``'s): 40% of the peak FLOP/s,
#: 60% of the memory bandwidth while decoding.
UTILISATION, BANDWIDTH_EFFICIENCY = 0.4, 0.6
#: G, the completions a prompt (TRL's ``num_generations``) every recipe is built for unless told otherwise.
GROUP_SIZE = 8
#: Forward passes a step adds to forward and backward: checkpointing's recomputation, the old log-probs.
EXTRA_FORWARDS = 2
#: Tokens a tile of TRL 1.16's fused LM head and log-prob (``trl/kernels/chunked_logprob.py``'s ``TOKEN_CHUNK_SIZE``;
#: ``GRPOTrainer.__init__`` always installs it with ``add_fused_lm_head``, so the (m, T, V) logits are never built),
#: and the vocabulary entries of one tile (``trl/trainer/utils.py``'s ``_CHUNKED_LOGPROB_CHUNK_SIZE``). The recipes
#: count what that kernel holds in its backward pass (:func:`logprob_kernel_bytes`) in place of the logits.
LOGPROB_TILE, LOGPROB_VOCAB_CHUNK = 4096, 32768


#: One H200's run of the one-GPU colocated recipes' training side (``benchmarks/recipe_gpu.py``, 2026-12-04: torch
#: 2.11 with CUDA 13, transformers 5.24, TRL 1.16, the machine image's PEFT; every run in
#: ``benchmarks/results/recipe_gpu_h200.json``): TRL's own step on random weights of each model's shape, with
#: completions of exactly T = 8192 tokens after 512-token prompts, at the micro-batch that run used; the peak bytes
#: allocated and reserved during the second optimizer step (the first has no AdamW moments yet), its seconds, and the
#: first step's seconds (warm-up included).
#: The colocated vLLM engine was not run (vLLM was not installed there).
H200_TRAINING = {
    ("Qwen2.5-0.5B", "full"): {"micro_batch": 8, "allocated": 20531962880, "reserved": 22189965312, "seconds": 5.62,
                               "first_seconds": 11.68},
    ("Qwen2.5-0.5B", "lora"): {"micro_batch": 8, "allocated": 11128807424, "reserved": 13042188288, "seconds": 7.13,
                               "first_seconds": 7.11},
    ("Qwen2.5-1.5B", "full"): {"micro_batch": 8, "allocated": 48569297920, "reserved": 53609496576, "seconds": 12.43,
                               "first_seconds": 15.24},
    ("Qwen2.5-1.5B", "lora"): {"micro_batch": 8, "allocated": 21922759680, "reserved": 25578962944, "seconds": 15.16,
                               "first_seconds": 15.09},
    ("Qwen2.5-7B", "lora"): {"micro_batch": 4, "allocated": 36540851200, "reserved": 41001418752, "seconds": 45.17,
                             "first_seconds": 45.13}}


@dataclass(frozen=True)
class Recipe:
    """One configuration: the setting, what was chosen, one training GPU's bytes (``train_bytes``) and, colocated,
    the bytes its vLLM engine needs (``engine_bytes``: bf16 weights, working memory and the KV cache of the GPU's
    sequences; 0 in server mode, whose engine has GPUs of its own)."""
    model: ModelShape
    gpus: int
    tuning: str
    mode: str
    group_size: int
    sharding: str
    completion_length: int
    micro_batch: int
    accumulation: int
    vllm_memory: float
    learning_rate: float                 # where to start: the published runs' rate (LoRA: LORA_LR_FACTOR times it)
    learning_rate_ceiling: float         # the width transfer of chapter 19's healthy rate: an upper bound
    train_bytes: float
    engine_bytes: float
    server_gpus: int = 0

    @property
    def trainer_gpus(self) -> int:
        return self.gpus - self.server_gpus

    @property
    def gpu_bytes(self) -> float:
        """One training GPU's bytes: the trainer's and, colocated, the engine's share."""
        return self.train_bytes + (self.vllm_memory * H100_SXM["memory_bytes"] if self.mode == "colocate" else 0)

    @property
    def margin(self) -> float:
        """The share of the GPU left free: 1 - bytes / 80 GB (at least ``HEADROOM`` by construction)."""
        return 1 - self.gpu_bytes / H100_SXM["memory_bytes"]

    def trl_kwargs(self, output_dir: str) -> dict:
        """The keyword arguments of ``trl.GRPOConfig`` (TRL 1.16) for this recipe."""
        kwargs = {"output_dir": output_dir, "per_device_train_batch_size": self.micro_batch,
                  "gradient_accumulation_steps": self.accumulation, "num_generations": self.group_size,
                  "max_completion_length": self.completion_length, "learning_rate": self.learning_rate,
                  "beta": 0.0, "bf16": True, "activation_checkpointing": True, "use_vllm": True, "vllm_mode": self.mode}
        if self.tuning == "lora":                       # TRL loads in float32 otherwise; the count takes a bf16 base
            kwargs["model_init_kwargs"] = {"dtype": "bfloat16"}
        if self.mode == "colocate":     # the engine's share, and its context (else the model's own maximum)
            kwargs["vllm_gpu_memory_utilization"] = self.vllm_memory
            kwargs["vllm_max_model_length"] = PROMPT_LENGTH + self.completion_length
        return kwargs

    def launch(self) -> str:
        """The shell lines that start the run, one per line: in server mode the vLLM server on the last
        ``server_gpus`` GPUs first, and a wait until it answers (``SERVER_WAIT``), then ``accelerate launch`` of
        ``TRAIN_SCRIPT`` on the trainer's GPUs, with an accelerate config of TRL's wheel: ``zero2.yaml`` or
        ``zero3.yaml`` for a ZeRO stage (DeepSpeed), else ``multi_gpu.yaml`` or ``single_gpu.yaml`` (all
        ``mixed_precision: bf16``), so that a user's own default config cannot change what was counted."""
        lines = []
        trainer_devices = ""
        if self.mode == "server":
            serve = ",".join(str(g) for g in range(self.trainer_gpus, self.gpus))
            lines.append(f"CUDA_VISIBLE_DEVICES={serve} " + vllm_serve_command(
                self.model, self.server_gpus, max_model_len=PROMPT_LENGTH + self.completion_length) + " &")
            lines.append(SERVER_WAIT)
            trainer_devices = "CUDA_VISIBLE_DEVICES=" + ",".join(str(g) for g in range(self.trainer_gpus)) + " "
        lines.append(f"TRL_DIR=$(python -c 'import os, trl; print(os.path.dirname(trl.__file__))')")
        name = self.sharding if self.sharding != "none" else ("multi_gpu" if self.trainer_gpus > 1 else "single_gpu")
        config = f' --config_file "$TRL_DIR/accelerate_configs/{name}.yaml"'
        lines.append(f"{trainer_devices}accelerate launch{config} --num_processes {self.trainer_gpus} {TRAIN_SCRIPT}")
        return "\n".join(lines)

    def trainer_call(self) -> str:
        """The Python line of ``TRAIN_SCRIPT`` that builds the trainer (the reward function and the prompts are the
        reader's), with this recipe's ``GRPOConfig`` and, for LoRA, its ``LoraConfig``."""
        config = ", ".join(f"{k}={v!r}" for k, v in self.trl_kwargs("out").items())
        lora = (f', peft_config=LoraConfig(r={LORA_RANK}, lora_alpha={LORA_ALPHA}, target_modules="all-linear")'
                if self.tuning == "lora" else "")
        return (f'GRPOTrainer(model="Qwen/{self.model.name}", reward_funcs=your_reward, train_dataset=your_prompts, '
                f"args=GRPOConfig({config}){lora})  # learning rate: raise it towards {self.learning_rate_ceiling:g} "
                f"(muP-transferred, untested) while the KL and the entropy stay healthy")


def tensor_parallel_sizes(shape: ModelShape, max_gpus: int = 8) -> tuple[int, ...]:
    """The tensor-parallel sizes k <= ``max_gpus`` that the recipes take: those that give every GPU whole query
    heads, whole key-value heads and an equal share of the MLP's columns, k dividing ``n_heads``, ``n_kv_heads``
    and ``intermediate_size`` (Qwen2.5-0.5B: 14 heads and 2 key-value heads, so 1 or 2). vLLM itself needs whole
    query heads only: for a k that is a multiple of ``n_kv_heads`` it copies the key-value heads
    (``QKVParallelLinear``'s ``num_kv_head_replicas``; e.g. 4 for Qwen2.5-1.5B), at the cost of a duplicated
    cache, which the recipes do not take."""
    return tuple(k for k in range(1, max_gpus + 1)
                 if shape.n_heads % k == 0 and shape.n_kv_heads % k == 0 and shape.intermediate_size % k == 0)


def _dense_data_parallel(size, name):
    """Rule: a data-parallel size of 1. Every model here is dense, and TRL 1.16's ``vllm_serve.py`` says a
    data-parallel size above 1 for a dense model "will error out" (vLLM PR #30739)."""
    if size != 1:
        raise ValueError(f"{name} must be 1 for a dense model (TRL 1.16's vllm_serve.py, vLLM PR #30739), "
                         f"got {size!r}")
    return size


def _whole_heads(args):
    """Relation: the tensor-parallel size splits no head (:func:`tensor_parallel_sizes`)."""
    shape, k = args["shape"], args["tensor_parallel_size"]
    if k not in tensor_parallel_sizes(shape, max(k, 1)):
        raise ValueError(f"tensor_parallel_size must divide {shape.name}'s {shape.n_heads} heads, "
                         f"{shape.n_kv_heads} key-value heads and MLP width {shape.intermediate_size}, got {k!r}")


@checked(_whole_heads, data_parallel_size=_dense_data_parallel)
def vllm_serve_command(shape: ModelShape, tensor_parallel_size: int = 1, data_parallel_size: int = 1,
                       max_model_len: int | None = None) -> str:
    """The vLLM server of a server-mode recipe, as TRL 1.16 documents it (``VLLMClient``'s docstring;
    ``trl vllm-serve`` is deprecated there and only runs this command). A data-parallel size above 1 and a
    tensor-parallel size outside :func:`tensor_parallel_sizes` are refused: one that splits a head, and one that
    copies key-value heads, which vLLM accepts but the recipes do not take."""
    context = f" --max-model-len {max_model_len}" if max_model_len is not None else ""
    return (f"VLLM_SERVER_DEV_MODE=1 vllm serve Qwen/{shape.name} --tensor-parallel-size {tensor_parallel_size} "
            f"--gpu-memory-utilization {SERVER_MEMORY_UTILIZATION}{context} {VLLM_SERVE_FLAGS}")


def starting_learning_rate(tuning: str) -> float:
    """Where a recipe starts: the 1e-6 of the published GRPO runs (``PUBLISHED_LEARNING_RATES``, TRL's default
    too), and ``LORA_LR_FACTOR`` times it for LoRA; raise it towards :func:`learning_rate` while the KL and the
    entropy stay healthy."""
    start = min(PUBLISHED_LEARNING_RATES.values())
    return start if tuning == "full" else float(f"{start * LORA_LR_FACTOR:.2g}")


def learning_rate(shape: ModelShape, tuning: str) -> float:
    """The ceiling: chapter 19's healthy rate on chapter 15's GPT (width 64), times 64 / h, rounded to two
    significant digits (Qwen2.5-1.5B: 3e-4 x 64 / 1536 is 1.2499999999999999e-05 in floating point -> 1.2e-05);
    LoRA: ``LORA_LR_FACTOR`` times that rounded rate."""
    full = float(f"{READING_CONFIG.lr * GPTConfig().n_embd / shape.hidden_size:.2g}")
    return full if tuning == "full" else float(f"{full * LORA_LR_FACTOR:.2g}")


@checked(tuning=one_of(TUNINGS), tokens=at_least(1))
def logprob_kernel_bytes(shape: ModelShape, tuning: str, tokens: int) -> dict:
    """What TRL 1.16's fused LM head and log-prob (``ChunkedLogProbFunction`` in ``trl/kernels/chunked_logprob.py``)
    holds in its backward pass over ``tokens`` completion tokens (a micro-batch's, m x T at most): its bf16 tile of
    ``LOGPROB_TILE`` tokens x ``LOGPROB_VOCAB_CHUNK`` vocabulary entries, the fp32 gradient of the hidden states,
    4 x tokens x h bytes (``grad_hidden``: LoRA's adapters sit below the head, so it is built for LoRA too), and, in
    full fine-tuning only, the fp32 gradient of the LM head, 4 x V x h bytes (``grad_weight``; LoRA's head is frozen).
    The recipes count these bytes in place of ``memory_budget``'s logits."""
    tile = 2 * min(tokens, LOGPROB_TILE) * min(shape.vocab_size, LOGPROB_VOCAB_CHUNK)
    head = 4 * shape.vocab_size * shape.hidden_size if tuning == "full" else 0
    return {"tile": float(tile), "hidden gradient": float(4 * tokens * shape.hidden_size), "head gradient": float(head)}


def _engine_bytes(shape: ModelShape, sequences: int, completion_length: int) -> float:
    """A colocated vLLM engine's bf16 weights, its working memory and the KV cache of ``sequences`` sequences
    decoding at once."""
    kv = kv_bytes_per_token(shape.n_layers, shape.n_kv_heads, shape.head_dim)
    return 2 * shape.n_params + VLLM_WORKING_BYTES + sequences * (PROMPT_LENGTH + completion_length) * kv


def _train_bytes(shape, tuning, trainer_gpus, group_size, completion_length, micro_batch, sharding) -> float:
    adapters = {"adapter_params": lora_params(shape, LORA_RANK)} if tuning == "lora" else {}
    budget = memory_budget(shape.n_params, reference=False, prompts=GROUPS_PER_GPU * trainer_gpus, group_size=group_size,
                           prompt_length=PROMPT_LENGTH, completion_length=completion_length, n_gpus=trainer_gpus,
                           sharding=sharding, activation_checkpointing=True, micro_batch=micro_batch,
                           activation_bytes=activation_bytes_per_token(shape)
                           + (lora_input_bytes_per_token(shape) if tuning == "lora" else 0),
                           **shape_options(shape), **adapters)
    budget["logits"] = sum(logprob_kernel_bytes(shape, tuning, micro_batch * completion_length).values())
    buckets = DEEPSPEED_BUCKET_BYTES if sharding != "none" else 0.0
    extra = sum(float32_load_bytes(shape, trainer_gpus, micro_batch, completion_length).values()) \
        if tuning == "full" and sharding == "none" else 0.0
    return sum(v for part, v in budget.items() if part != "kv_cache") + buckets + extra   # the engine's cache apart


def float32_load_bytes(shape: ModelShape, trainer_gpus: int, micro_batch: int, completion_length: int) -> dict:
    """What full fine-tuning without DeepSpeed holds beyond ``memory_budget``'s 16 bytes a parameter, the model being
    loaded in float32 (TRL 1.16's default) and trained under bf16 autocast: autocast's bf16 copy of the weights
    (2 Psi), DDP's fp32 gradient buckets on more than one GPU (4 Psi: a second copy of the gradients, DDP's
    default), and checkpoints of fp32 layer inputs (4 h bytes a token a layer where ``memory_budget`` counts 2 h).
    Autocast keeps its bf16 copies until the forward pass ends, so they sit beside the gradients whenever those of the
    step's earlier micro-batches are kept (``gradient_accumulation_steps`` > 1, as in every recipe here)."""
    tokens = micro_batch * (PROMPT_LENGTH + completion_length)
    return {"autocast bf16 weights": 2.0 * shape.n_params,
            "DDP gradient buckets": 4.0 * shape.n_params if trainer_gpus > 1 else 0.0,
            "fp32 checkpoints beyond bf16's": 2.0 * shape.hidden_size * shape.n_layers * tokens}


def step_peak_bytes(r: "Recipe") -> float:
    """One training GPU's bytes at a ZeRO-1/2 optimizer step: the model state, DeepSpeed's fp32 copy of the GPU's
    gradient partition (4 Psi / N) and, colocated, vLLM's share; the activations and logits are freed by then."""
    state = memory_budget(r.model.n_params, reference=False, n_gpus=r.trainer_gpus, sharding=r.sharding,
                          **({"adapter_params": lora_params(r.model, LORA_RANK)} if r.tuning == "lora" else {}))
    fp32_partition = 4 * r.model.n_params / r.trainer_gpus if r.sharding in ("zero1", "zero2") else 0.0
    engine = r.vllm_memory * H100_SXM["memory_bytes"] if r.mode == "colocate" else 0.0
    return sum(state.values()) + fp32_partition + engine


@checked(gpus=at_least(1), tuning=one_of(TUNINGS), mode=one_of(MODES), group_size=at_least(2))
def recipe(shape: ModelShape, gpus: int, tuning: str, mode: str, group_size: int = GROUP_SIZE) -> Recipe | None:
    """The settings chosen by the module docstring's rules, or None when nothing fits (or server mode on one
    GPU)."""
    if mode == "colocate":
        return _fit(shape, gpus, tuning, mode, group_size, 0)
    fits = [r for k in tensor_parallel_sizes(shape, gpus - 1)
            if (r := _fit(shape, gpus, tuning, mode, group_size, k)) is not None]
    return min(fits, key=lambda r: (-r.completion_length, recipe_seconds(r)["step"] / r.trainer_gpus), default=None)


def _fit(shape: ModelShape, gpus: int, tuning: str, mode: str, group_size: int, server_gpus: int) -> Recipe | None:
    trainer_gpus = gpus - server_gpus
    M, budget = H100_SXM["memory_bytes"], (1 - HEADROOM) * H100_SXM["memory_bytes"]
    sequences = GROUPS_PER_GPU * group_size                              # one training GPU's sequences a step
    stages = ("none",) if tuning == "lora" or trainer_gpus == 1 else ("none", "zero2", "zero3")
    for sharding in stages:
        for T in COMPLETION_LENGTHS:
            if mode == "colocate":
                vllm_memory = math.ceil(_engine_bytes(shape, sequences, T) / M / 0.05 - 1e-9) * 0.05
                engine = vllm_memory * M
            else:
                vllm_memory, engine = SERVER_MEMORY_UTILIZATION, 0.0
                one = 2 * shape.n_params + (PROMPT_LENGTH + T) * kv_bytes_per_token(   # weights, one sequence
                    shape.n_layers, shape.n_kv_heads, shape.head_dim)
                if one > server_gpus * SERVER_MEMORY_UTILIZATION * M:             # on the k GPUs together
                    continue
            for m in (m for m in MICRO_BATCHES if sequences % m == 0):
                train = _train_bytes(shape, tuning, trainer_gpus, group_size, T, m, sharding)
                if train + engine <= budget:
                    return Recipe(shape, gpus, tuning, mode, group_size, sharding, T, m, sequences // m,
                                  round(vllm_memory, 2), starting_learning_rate(tuning), learning_rate(shape, tuning),
                                  train,
                                  _engine_bytes(shape, sequences, T) if mode == "colocate" else 0.0, server_gpus)
    return None


def recipes(group_size: int = GROUP_SIZE, gpu_counts=(1, 8)) -> list[tuple[tuple, Recipe | None]]:
    """Every (model, GPUs, tuning, mode) of ``MODELS``, ``gpu_counts``, ``TUNINGS`` and ``MODES``, with its recipe."""
    return [((shape, gpus, tuning, mode), recipe(shape, gpus, tuning, mode, group_size))
            for shape in MODELS for gpus in gpu_counts for tuning in TUNINGS for mode in MODES]


def recipe_seconds(r: Recipe) -> dict:
    """A step's seconds (``rl4llm.math.step_time``): ``rollout``, ``train``, ``sync`` and their sum (TRL's
    ``GRPOTrainer``'s steps are synchronous). Colocated, every GPU samples its own sequences inside the memory
    it gave vLLM; a server of k tensor-parallel GPUs samples everybody's as one GPU with k times the FLOP/s,
    bandwidth and memory (its all-reduces left out). The sync: a ZeRO-3 trainer gathers the weights over NVLink first; a
    server receives them over NVLink (450 GB/s one way: H100 SXM's 900 GB/s counts both directions); a colocated
    engine copies them within the GPU's memory."""
    shape, psi = r.model, r.model.n_params
    F, W, M = UTILISATION * H100_SXM["bf16_flops"], BANDWIDTH_EFFICIENCY * H100_SXM["memory_bandwidth"], \
        H100_SXM["memory_bytes"]
    sequences = GROUPS_PER_GPU * r.group_size
    kv = kv_bytes_per_token(shape.n_layers, shape.n_kv_heads, shape.head_dim)
    k = 1 if r.mode == "colocate" else r.server_gpus                     # the engine's tensor-parallel GPUs
    engine_sequences, engine_memory = (sequences, r.vllm_memory * M) if r.mode == "colocate" else \
        (sequences * r.trainer_gpus, k * SERVER_MEMORY_UTILIZATION * M)
    rollout = generation_seconds(psi, engine_sequences, PROMPT_LENGTH, r.completion_length, flops_per_second=k * F,
                                 bandwidth=k * W, kv_bytes_per_token=kv, memory_bytes=engine_memory)
    length = PROMPT_LENGTH + r.completion_length
    attention = attention_flops_per_token(shape.n_layers, length / 2, shape.n_heads * shape.head_dim)
    train = training_seconds(psi, sequences * r.trainer_gpus * length, F, gpus=r.trainer_gpus,
                             extra_forwards=EXTRA_FORWARDS, weight_gradients=r.tuning == "full", attention_flops=attention)
    hops = (r.sharding == "zero3") + (r.mode == "server")
    sync = hops * weight_sync_seconds(psi, NVLINK_ONE_WAY) + (r.mode == "colocate") * weight_sync_seconds(
        psi, H100_SXM["memory_bandwidth"])
    return {"rollout": rollout, "train": train, "sync": sync, "step": rollout + train + sync}


def assumptions() -> dict:
    """What :func:`recipe` and :func:`recipe_seconds` assume, read from this module's constants (chapter 19; chapter 21
    prints it beside the recipes): the GPU, the shares of its peak FLOP/s and bandwidth, the prompt length, the groups a
    training GPU holds, the memory left free and vLLM's working memory, the training's extra forward passes, the
    completions' length and the weight sync's links. The sync is counted at the links' full speed (no latency, no
    packing), so its seconds are a lower bound; every completion is counted at its full ``max_completion_length``, and
    no fixed cost a decoding step is counted (``generation_seconds``' ``step_overhead`` is left at 0); a server of k
    GPUs is counted as one GPU with k times the FLOP/s and bandwidth, its GPUs' communication left out."""
    return {"gpu": "H100 SXM", "gpu_memory_bytes": H100_SXM["memory_bytes"], "bf16_flops": H100_SXM["bf16_flops"],
            "memory_bandwidth": H100_SXM["memory_bandwidth"], "share_of_peak_flops": UTILISATION,
            "decoding_share_of_bandwidth": BANDWIDTH_EFFICIENCY, "prompt_length": PROMPT_LENGTH,
            "groups_per_gpu": GROUPS_PER_GPU, "group_size": GROUP_SIZE, "headroom": HEADROOM,
            "vllm_working_bytes": VLLM_WORKING_BYTES,
            "extra_forwards": EXTRA_FORWARDS, "completion_length": "every completion runs to max_completion_length",
            "sync_bandwidth_server": NVLINK_ONE_WAY, "sync_bandwidth_colocate": H100_SXM["memory_bandwidth"]}


def assumption_lines() -> list[str]:
    """:func:`assumptions` as printable lines."""
    a = assumptions()
    return [f"GPU: {a['gpu']}, {a['gpu_memory_bytes'] / 1e9:g} GB, {a['bf16_flops'] / 1e12:g} TFLOP/s bf16 peak, "
            f"{a['memory_bandwidth'] / 1e12:g} TB/s memory bandwidth",
            f"training, prefill and compute-bound decoding at {a['share_of_peak_flops']:.0%} of the peak FLOP/s "
            f"(training with {a['extra_forwards']} extra forward passes); memory-bound decoding at "
            f"{a['decoding_share_of_bandwidth']:.0%} of the memory bandwidth",
            f"prompts of {a['prompt_length']} tokens; {a['groups_per_gpu']} groups a training GPU; "
            f"{a['completion_length']}; no fixed cost a decoding step",
            f"groups of G = {a['group_size']} completions a prompt (TRL's num_generations)",
            f"memory: {a['headroom']:.0%} of each GPU left free; a vLLM engine's working memory "
            f"{a['vllm_working_bytes'] / 1e9:g} GB",
            "a server of k GPUs counted as one GPU with k times the FLOP/s and bandwidth (their communication left "
            "out, so its sampling seconds are a lower bound)",
            f"weight sync at wire speed: {a['sync_bandwidth_server'] / 1e9:g} GB/s over NVLink to a server (and a "
            f"ZeRO-3 trainer's gather before it), {a['sync_bandwidth_colocate'] / 1e12:g} TB/s within the GPU colocated"]


def measured_training(group_size: int = GROUP_SIZE) -> list[dict]:
    """The count of a one-GPU colocated recipe's training side against ``H200_TRAINING``, at the micro-batch the
    H200 ran: one row per measured recipe with the counted and measured bytes (allocated and reserved), their
    ratio, the counted training seconds (``recipe_seconds``' ``train``, at ``UTILISATION`` of the peak FLOP/s,
    which the H200 shares with the H100) and the measured ones, and the share of the peak FLOP/s that the measured
    seconds imply (``UTILISATION`` x counted / measured seconds)."""
    shapes = {shape.name: shape for shape in MODELS}
    rows = []
    for (name, tuning), run in H200_TRAINING.items():
        r = recipe(shapes[name], 1, tuning, "colocate", group_size)
        sequences = GROUPS_PER_GPU * group_size
        count = _train_bytes(r.model, tuning, 1, group_size, r.completion_length, run["micro_batch"], "none")
        seconds = recipe_seconds(r)["train"]
        rows.append({"model": name, "tuning": tuning, "micro_batch": run["micro_batch"],
                     "accumulation": sequences // run["micro_batch"], "count_bytes": count,
                     "measured_bytes": run["allocated"], "reserved_bytes": run["reserved"],
                     "count_over_measured": count / run["allocated"], "count_seconds": seconds,
                     "measured_seconds": run["seconds"], "first_step_seconds": run["first_seconds"],
                     "utilisation": UTILISATION * seconds / run["seconds"]})
    return rows


#: TRL 1.16's metric for each failure signature of a large run (``_metrics`` keys of ``grpo_trainer.py``).
SIGNATURE_METRICS = {"entropy collapse": ("entropy", "frac_reward_zero_std"),
                     "length blow-up": ("completions/mean_length", "completions/clipped_ratio"),
                     "mismatch spike": ("sampling/sampling_logp_difference/max", "sampling/importance_sampling_ratio/min")}


@checked(group_size=at_least(2), completion_tokens=at_least(1), sequences=at_least(1))
def failure_thresholds(group_size: int, completion_tokens: int, sequences: int, clip_max: float = 3.0) -> dict:
    """The threshold a reader watches on each signature's first metric, each from a computed number:

    - **entropy collapse**: G samples of a prompt are all identical with probability sum_y p(y)^G >=
      exp(-(G - 1) H) for a completion of entropy H (Renyi's order-G entropy is at most Shannon's), and an
      identical group is flat whatever the reward. A completion's entropy is the sum of its tokens'
      conditional entropies (the chain rule), about T times the mean token entropy TRL logs; so once that
      falls below ln 2 / ((G - 1) T) nats, for T tokens a completion, at least half the groups are flat.
    - **length blow-up**: a decoding batch of n sequences lasts as long as its longest, so once a share c of
      completions runs into ``max_completion_length``, a batch decodes to the cap with probability
      1 - (1 - c)^n: above c = 1 - 2^(-1/n), more than half of the batches do.
    - **mismatch spike**: TRL's vLLM correction (default mode ``sequence_mask``) gives a sequence weight 0
      when its ratio exp(sum_t (log pi_train - log pi_vllm)) exceeds ``clip_max`` (its
      ``vllm_importance_sampling_clip_max``, 3.0), which the log shows as
      ``sampling/importance_sampling_ratio/min`` = 0. One token whose log-probs differ by more than
      ln(clip_max), in the trainer's favour, masks its sequence unless the other tokens cancel it. TRL logs
      the gap's absolute value (``sampling/sampling_logp_difference/max``), so its sign is not in the log;
      ``importance_sampling_ratio/min`` = 0 is what confirms that sequences are masked.
    """
    return {"entropy collapse": math.log(2) / ((group_size - 1) * completion_tokens),
            "length blow-up": 1 - 2 ** (-1 / sequences),
            "mismatch spike": math.log(clip_max)}


def _grpo_trainer_source() -> str:
    """The source of TRL 1.16's GRPO trainer, whose ``_metrics`` keys :func:`trl_metric_names` reads."""
    import trl.trainer.grpo_trainer as grpo
    return Path(grpo.__file__).read_text()


def trl_metric_names() -> set[str]:
    """Every name TRL 1.16's ``GRPOTrainer`` logs through ``self._metrics[...]``, read from its source
    (f-string keys kept as written, e.g. ``rewards/{reward_func_name}/mean``). ``loss``, ``grad_norm`` and
    ``learning_rate`` come from transformers' ``Trainer`` and are not among them."""
    source = _grpo_trainer_source()
    return set(re.findall(r'_metrics\[(?:mode|"train")\]\[f?"([^"]+)"\]', source))
