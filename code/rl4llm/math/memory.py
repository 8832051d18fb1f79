"""Where the bytes of a GRPO run go, one GPU at a time (chapter 19, "The arithmetic of a real run").

``memory_budget(n_params, **options)`` returns, for one GPU, the bytes of each part of a run (``PARTS``).
With Psi the number of parameters, b(x) the bytes of a number in precision x (``PRECISION_BYTES``) and
N_d the number of GPUs that share the model state:

- **weights** Psi b(weights); **gradients** Psi b(gradients);
- **master weights** Psi b(fp32), the fp32 copy that mixed precision updates (none without it);
- **optimizer state** Psi s b(state), s the optimizer's state tensors (``OPTIMIZER_STATES``: AdamW 2,
  its two moments; SGD with momentum 1; plain SGD 0). ZeRO's paper (Rajbhandari et al. 2020,
  section 3.1) counts the master weights with the optimizer state: K = 4 + 4 + 4 = 12 bytes for
  mixed-precision Adam, so full fine-tuning costs (2 + 2 + K) Psi = 16 Psi bytes;
- **reference** Psi b(reference) for the frozen reference model of the KL term (0 when it is off);
- **sharding** (ZeRO's stages, ``SHARDING``): stage 1 divides the optimizer state and master weights by
  N_d, stage 2 the gradients too, stage 3 (FSDP's full sharding) the weights and the reference as well;
- **activations**, kept for the backward pass, for a micro-batch of m sequences of S = prompt +
  completion tokens, width h, L layers: 34 m S h L bytes, Korthikanti et al. (2022, section 4.1)'s
  34 s b h per layer with 16-bit activations and attention that does not store its s x s scores (flash
  attention); with activation checkpointing each layer keeps only its 16-bit input (2 m S h bytes) and
  one layer at a time is recomputed whole: (2 L + 34) m S h;
- **logits**, the fp32 scores over the vocabulary V of every completion token of the micro-batch:
  4 m T V bytes (T the completion length), or 4 c V when the loss processes c tokens at a time
  (``logits_chunk=c``);
- **KV cache** of the rollout engine: every sequence of the step (prompts x G) holds 2 L n_kv d_head
  b(kv) bytes per token (``kv_bytes_per_token``) for its S tokens, spread over the engine's GPUs.

The static parts (weights to reference) depend on the model only; the last three on the batch. Every
argument is checked once, here, where it arrives.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from .._checks import at_least, checked, flag, one_of, optional, positive_real

#: Bytes of one number in each precision.
PRECISION_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1}
#: State tensors per parameter that each optimizer keeps (AdamW: first and second moments).
OPTIMIZER_STATES = {"adamw": 2, "sgd_momentum": 1, "sgd": 0}
#: ZeRO stage of each sharding: which parts are divided between the GPUs (FSDP's full sharding is stage 3).
SHARDING = {"none": 0, "zero1": 1, "zero2": 2, "zero3": 3, "fsdp": 3}
#: The parts of a run, in the order the book stacks them.
PARTS = ("weights", "gradients", "master_weights", "optimizer_state", "reference", "activations", "logits",
         "kv_cache")
#: Bytes per layer per token per unit of width that one layer keeps for backward (Korthikanti et al. 2022).
ACTIVATION_BYTES_PER_LAYER = 34
#: Bytes a checkpointed layer keeps: its 16-bit input.
CHECKPOINT_BYTES_PER_LAYER = 2
#: Bytes of an fp32 logit.
LOGIT_BYTES = 4


@dataclass(frozen=True)
class ModelShape:
    """What the batch-dependent parts need to know of a model, as its ``config.json`` gives it."""
    name: str
    n_params: float
    n_layers: int
    hidden_size: int
    n_kv_heads: int
    head_dim: int
    vocab_size: int


#: meta-llama/Llama-2-7b-hf's config.json: 32 layers, width 4096, 32 key-value heads of 128, vocabulary 32,000.
LLAMA2_7B = ModelShape("Llama-2-7B", 6.74e9, 32, 4096, 32, 128, 32000)
#: Qwen/Qwen2.5-1.5B's config.json: 28 layers, width 1536, 2 key-value heads of 128, vocabulary 151,936.
QWEN25_1_5B = ModelShape("Qwen2.5-1.5B", 1.54e9, 28, 1536, 2, 128, 151936)


def _kv_bytes(n_layers: int, n_kv_heads: int, head_dim: int, number_bytes: int) -> int:
    return 2 * n_layers * n_kv_heads * head_dim * number_bytes          # a key and a value per layer and head


_precision = one_of(tuple(PRECISION_BYTES), " (number formats)")


@checked(n_layers=at_least(1), n_kv_heads=at_least(1), head_dim=at_least(1), precision=_precision)
def kv_bytes_per_token(n_layers: int, n_kv_heads: int, head_dim: int, precision: str = "bf16") -> int:
    """Bytes of the KV cache per token: 2 (a key and a value) x layers x key-value heads x head_dim x
    b(precision) (chapter 19). Llama-2-7B in fp16: 2 x 32 x 32 x 128 x 2 = 524,288 bytes, 0.5 MiB."""
    return _kv_bytes(n_layers, n_kv_heads, head_dim, PRECISION_BYTES[precision])


@checked(n_params=positive_real, weights=_precision, gradients=_precision, master_weights=flag,
         optimizer=one_of(tuple(OPTIMIZER_STATES), " (optimizers)"), optimizer_precision=_precision, reference=flag,
         reference_precision=_precision, prompts=at_least(0), group_size=at_least(1), prompt_length=at_least(0),
         completion_length=at_least(0), vocab_size=at_least(0), hidden_size=at_least(0), n_layers=at_least(0),
         n_kv_heads=at_least(0), head_dim=at_least(0), kv_precision=_precision, n_gpus=at_least(1),
         sharding=one_of(tuple(SHARDING), " (sharding stages)"), activation_checkpointing=flag,
         logits_chunk=optional(at_least(1)), micro_batch=optional(at_least(1)), rollout_gpus=optional(at_least(1)))
def memory_budget(n_params, *, weights="bf16", gradients="bf16", master_weights=True, optimizer="adamw",
                  optimizer_precision="fp32", reference=True, reference_precision="bf16", prompts=0, group_size=1,
                  prompt_length=0, completion_length=0, vocab_size=0, hidden_size=0, n_layers=0, n_kv_heads=0,
                  head_dim=0, kv_precision="bf16", n_gpus=1, sharding="none", activation_checkpointing=False,
                  logits_chunk=None, micro_batch=None, rollout_gpus=None) -> dict[str, float]:
    """Bytes of each part of a run (``PARTS``) on one GPU; the formulas are in the module docstring.

    The defaults are full fine-tuning with AdamW in bf16 mixed precision (bf16 weights and gradients, fp32
    master weights and moments) and a bf16 reference model: 18 bytes a parameter, 126 GB for 7B. The batch
    parts are 0 until a batch is given: ``prompts`` x ``group_size`` sequences of ``prompt_length`` +
    ``completion_length`` tokens, split evenly over ``n_gpus`` for training, with the model's
    ``vocab_size``, ``hidden_size``, ``n_layers``, ``n_kv_heads`` and ``head_dim``. A GPU's share is processed
    ``micro_batch`` sequences at a time (default: all at once); the rollout engine runs on ``rollout_gpus``
    GPUs (default: the trainer's, colocated).
    """
    psi, G, gpus = n_params, group_size, n_gpus
    bytes_of = {"weights": PRECISION_BYTES[weights], "gradients": PRECISION_BYTES[gradients],
                "optimizer_precision": PRECISION_BYTES[optimizer_precision],
                "reference_precision": PRECISION_BYTES[reference_precision], "kv_precision": PRECISION_BYTES[kv_precision]}
    states, stage = OPTIMIZER_STATES[optimizer], SHARDING[sharding]
    engine_gpus = gpus if rollout_gpus is None else rollout_gpus
    share = math.ceil(prompts * G / gpus)                               # sequences one trainer GPU holds
    m = share if micro_batch is None else min(share, micro_batch)

    def sharded(from_stage: int) -> float:
        return gpus if stage >= from_stage else 1

    S, T, h, L = prompt_length + completion_length, completion_length, hidden_size, n_layers
    kept = (CHECKPOINT_BYTES_PER_LAYER * L + ACTIVATION_BYTES_PER_LAYER if activation_checkpointing
            else ACTIVATION_BYTES_PER_LAYER * L) if L else 0             # bytes per token per unit of width
    tokens_of_logits = m * T if logits_chunk is None else min(logits_chunk, m * T)
    kv_per_token = _kv_bytes(L, n_kv_heads, head_dim, bytes_of["kv_precision"])
    return {
        "weights": psi * bytes_of["weights"] / sharded(3),
        "gradients": psi * bytes_of["gradients"] / sharded(2),
        "master_weights": psi * PRECISION_BYTES["fp32"] * master_weights / sharded(1),
        "optimizer_state": psi * states * bytes_of["optimizer_precision"] / sharded(1),
        "reference": psi * bytes_of["reference_precision"] * reference / sharded(3),
        "activations": float(kept * m * S * h),
        "logits": float(LOGIT_BYTES * tokens_of_logits * vocab_size),
        "kv_cache": kv_per_token * prompts * G * S / engine_gpus,
    }


def shape_options(shape: ModelShape) -> dict:
    """The keyword arguments of ``memory_budget`` that a model's shape fixes."""
    return {"vocab_size": shape.vocab_size, "hidden_size": shape.hidden_size, "n_layers": shape.n_layers,
            "n_kv_heads": shape.n_kv_heads, "head_dim": shape.head_dim}
