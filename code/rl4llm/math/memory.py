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
  completion tokens, width h, L layers: a m S L bytes, with a the bytes one layer keeps per token
  (``activation_bytes``; default 34 h, Korthikanti et al. (2022, section 4.1)'s 34 s b h for GPT-3's
  layer with 16-bit activations and attention that does not store its s x s scores; other
  architectures differ: :func:`activation_bytes_per_token` derives a for each); with activation
  checkpointing each layer keeps only its 16-bit input (2 h a token) and one layer at a time is
  recomputed whole: (2 h L + a) m S;
- **logits**, the fp32 scores over the vocabulary V of every completion token of the micro-batch:
  4 m T V bytes (T the completion length), or 4 c V when the loss processes c tokens at a time
  (``logits_chunk=c``);
- **KV cache** of the rollout engine: every sequence of the step (prompts x G) holds 2 L n_kv d_head
  b(kv) bytes per token (``kv_bytes_per_token``) for its S tokens, spread over the engine's GPUs.

The static parts (weights to reference) depend on the model only; the last three on the batch. Every
argument is checked once, here, where it arrives.

**LoRA and QLoRA** (Hu et al. 2021; Dettmers et al. 2023). LoRA freezes the base and trains, for each
adapted d_out x d_in matrix W, two matrices B (d_out x r) and A (r x d_in), W + (alpha / r) B A: r (d_in +
d_out) parameters a matrix (:func:`lora_params`), Psi_a in all. With ``adapter_params`` = Psi_a:

- **weights**: the frozen base, Psi b(weights) (bf16: 2 bytes), of which ``quantized_params`` are stored in
  4-bit NF4 instead (QLoRA: the linear layers; embeddings and norms stay in b(weights)). NF4 keeps 4 bits
  a weight plus one absmax constant per block of 64; QLoRA's double quantisation stores those constants in
  8 bits, with one fp32 constant per block of 256 of them: 4 + 8/64 + 32/(64 x 256) = 4.127 bits, 0.5159
  bytes a weight (``NF4_BYTES``; Dettmers et al. 2023, section 3);
- **gradients**, **master weights**, **optimizer state**: those of the adapters alone, kept in fp32 (PEFT
  casts adapters to fp32 by default): 4 + 4 + 8 = 16 bytes a trainable parameter; the frozen base has no
  gradient, master copy or moments;
- **reference**: 0, because the reference policy is the base with the adapters switched off: no second copy;
- **activations**: PEFT casts each adapted matrix's input to fp32 before A, which keeps it for its gradient, so a
  LoRA layer keeps :func:`lora_input_bytes_per_token` more a token than the same layer fully fine-tuned; pass it in
  ``activation_bytes`` (the recipes of ``rl4llm.trl.recipes`` do).
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
#: Bytes a weight in NF4 with QLoRA's double quantisation: 4 bits, an 8-bit constant per 64 weights, an fp32
#: constant per 256 of those (Dettmers et al. 2023): (4 + 8 / 64 + 32 / (64 * 256)) / 8.
NF4_BYTES = (4 + 8 / 64 + 32 / (64 * 256)) / 8
#: Bytes a trainable LoRA parameter costs: its fp32 value (the master copy), fp32 gradient, two fp32 moments.
ADAPTER_BYTES = {"gradients": 4, "master_weights": 4, "optimizer_state": 8}
#: The linear layers of a decoder layer, by Hugging Face's module names (their shapes: :func:`linear_shapes`).
#: PEFT's ``target_modules="all-linear"`` adapts all seven.
LINEAR_MODULES = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


@dataclass(frozen=True)
class ModelShape:
    """What the batch-dependent parts need to know of a model, as its ``config.json`` gives it: layers,
    width, key-value heads and their size, vocabulary, and, for :func:`parameter_count` and
    :func:`activation_bytes_per_token`, the query heads, the MLP's intermediate size and kind
    (``"swiglu"``: gate, up and down projections; ``"gelu"``: two), whether the input and output embeddings
    are one matrix, and whether the query, key and value projections have biases."""
    name: str
    n_params: float
    n_layers: int
    hidden_size: int
    n_kv_heads: int
    head_dim: int
    vocab_size: int
    n_heads: int = 0
    intermediate_size: int = 0
    mlp: str = "swiglu"
    tied_embeddings: bool = False
    qkv_bias: bool = False


#: meta-llama/Llama-2-7b-hf's config.json: 32 layers, width 4096, 32 heads (and 32 key-value heads) of 128,
#: intermediate size 11,008, vocabulary 32,000, untied embeddings, no biases.
LLAMA2_7B = ModelShape("Llama-2-7B", 6.74e9, 32, 4096, 32, 128, 32000, 32, 11008)
#: Qwen/Qwen2.5-0.5B's config.json: 24 layers, width 896, 14 heads and 2 key-value heads of 64, intermediate
#: size 4,864, vocabulary 151,936, tied embeddings, biases on q, k, v (494,032,768 parameters by count).
QWEN25_0_5B = ModelShape("Qwen2.5-0.5B", 494032768, 24, 896, 2, 64, 151936, 14, 4864, "swiglu", True, True)
#: Qwen/Qwen2.5-1.5B's config.json: 28 layers, width 1536, 12 heads and 2 key-value heads of 128,
#: intermediate size 8,960, vocabulary 151,936, tied embeddings, biases on q, k, v (1,543,714,304 parameters by
#: count).
QWEN25_1_5B = ModelShape("Qwen2.5-1.5B", 1543714304, 28, 1536, 2, 128, 151936, 12, 8960, "swiglu", True, True)
#: Qwen/Qwen2.5-7B's config.json: 28 layers, width 3584, 28 heads and 4 key-value heads of 128, intermediate
#: size 18,944, vocabulary 152,064, untied embeddings, biases on q, k, v (7,615,616,512 parameters by count).
QWEN25_7B = ModelShape("Qwen2.5-7B", 7615616512, 28, 3584, 4, 128, 152064, 28, 18944, "swiglu", False, True)
#: Bytes of one layer's per-token statistics that a norm keeps: RMSNorm its fp32 reciprocal RMS, LayerNorm its
#: fp32 mean as well.
NORM_STAT_BYTES = {"rmsnorm": 4, "layernorm": 8}


def linear_shapes(shape: ModelShape) -> dict[str, tuple[int, int]]:
    """(d_in, d_out) of each linear layer of one decoder layer (``LINEAR_MODULES``; a GELU MLP has only the
    up and down projections)."""
    h, q, kv, ff = shape.hidden_size, shape.n_heads * shape.head_dim, shape.n_kv_heads * shape.head_dim, \
        shape.intermediate_size
    shapes = {"q_proj": (h, q), "k_proj": (h, kv), "v_proj": (h, kv), "o_proj": (q, h), "gate_proj": (h, ff),
              "up_proj": (h, ff), "down_proj": (ff, h)}
    if shape.mlp == "gelu":
        del shapes["gate_proj"]
    return shapes


def parameter_count(shape: ModelShape) -> dict[str, int]:
    """The parameters of a decoder-only transformer by part, from its shape: ``embeddings`` V h (twice when
    the output matrix is not tied to the input's), ``linear`` L x the sum of d_in d_out over
    :func:`linear_shapes`, ``other`` the biases of q, k, v (L (n_h + 2 n_kv) d_head when present) and the
    norms' weights (2 h a layer and a final h). QLoRA quantises the ``linear`` part."""
    L, h, V = shape.n_layers, shape.hidden_size, shape.vocab_size
    linear = L * sum(d_in * d_out for d_in, d_out in linear_shapes(shape).values())
    biases = L * (shape.n_heads + 2 * shape.n_kv_heads) * shape.head_dim * shape.qkv_bias
    return {"embeddings": V * h * (1 if shape.tied_embeddings else 2), "linear": linear,
            "other": biases + (2 * L + 1) * h}


def _targets_are_linear_layers(args):
    """Relation: every LoRA target is a linear layer of the shape (:func:`linear_shapes`)."""
    shapes = linear_shapes(args["shape"])
    unknown = set(args["targets"]) - set(shapes)
    if unknown:
        raise ValueError(f"targets must be linear layers of the shape, {sorted(shapes)}, got {sorted(unknown)}")


@checked(_targets_are_linear_layers, rank=at_least(1))
def lora_params(shape: ModelShape, rank: int, targets=LINEAR_MODULES) -> int:
    """LoRA's trainable parameters: r (d_in + d_out) for each adapted matrix (B is d_out x r, A is r x d_in),
    for the ``targets`` of every layer (Hu et al. 2021). Default: every linear layer (PEFT's "all-linear",
    which leaves the output embedding out)."""
    shapes = linear_shapes(shape)
    return shape.n_layers * sum(rank * (shapes[t][0] + shapes[t][1]) for t in targets)


@checked(_targets_are_linear_layers)
def lora_input_bytes_per_token(shape: ModelShape, targets=LINEAR_MODULES) -> int:
    """What LoRA adds to one decoder layer's activations, per token: 4 bytes for every input number of every
    adapted matrix, 4 x sum of d_in over the ``targets`` (q, k and v count their shared input once each), since
    PEFT casts each adapted matrix's input to the adapters' dtype, fp32 by default, before A, and A keeps that
    input for its gradient (chapter 19). For Qwen2.5 with "all-linear": 4 (6 h + d_ff) bytes, o's input being
    n_h d_head = h. Measured on an H200 with TRL 1.16 and PEFT (``benchmarks/recipe_gpu.py``), LoRA's peak was
    about 4.2-4.4 bytes a token above full fine-tuning's count for every such number, which is what made this
    term necessary: without it the LoRA recipes' count was 17-27% below the measured peak."""
    shapes = linear_shapes(shape)
    return 4 * sum(shapes[t][0] for t in targets)


@checked(flash=flag, dropout=flag, context=at_least(0), norm=one_of(tuple(NORM_STAT_BYTES), " (norms)"))
def activation_bytes_per_token(shape: ModelShape, *, flash: bool = True, dropout: bool = False, context: int = 0,
                               norm: str = "rmsnorm") -> int:
    """Bytes one decoder layer keeps for the backward pass, per token, with 16-bit activations (chapter 19).

    Each operation keeps what its backward needs, 2 bytes a number (h width, n_h query heads, n_kv key-value
    heads of d_head, d_ff the MLP's intermediate size, S = ``context``, the sequence length):

    - two norms: each its input, 2 h, and its per-token statistics (``NORM_STAT_BYTES``);
    - attention: the q, k, v projections' input, 2 h; Q, K and V, 2 (n_h + 2 n_kv) d_head; the output (the o
      projection's input), 2 n_h d_head; with flash attention its fp32 log-sum-exp, 4 n_h, and no S x S
      scores; without it (eager attention, keys and values repeated to n_h heads) the softmax's output,
      2 n_h S, and K and V at n_h heads;
    - MLP: its input, 2 h; GELU (two matrices, d_ff = 4 h in GPT): the GELU's input and output, 2 x 2 d_ff;
      SwiGLU: the gate's output, its SiLU, the up projection's output and their product, 4 x 2 d_ff;
    - dropout (``dropout=True``): a 1-byte mask after the attention and after the MLP, h each, and on the
      attention probabilities (n_h S) with their 2-byte output, 3 n_h S.

    GPT-3's layer (n_kv = n_h, d_ff = 4 h, GELU, dropout, no flash) gives 34 h + 5 n_h S bytes plus the
    norms' statistics: Korthikanti et al. (2022)'s 34 s b h + 5 a s^2 b per layer, divided by s b tokens.
    """
    h, d, n_h = shape.hidden_size, shape.head_dim, shape.n_heads
    n_kv = shape.n_kv_heads if flash else n_h
    norms = 2 * (2 * h + NORM_STAT_BYTES[norm])
    attention = 2 * h + 2 * (n_h + 2 * n_kv) * d + 2 * n_h * d + (4 * n_h if flash else 2 * n_h * context)
    mlp = 2 * h + (2 if shape.mlp == "gelu" else 4) * 2 * shape.intermediate_size
    dropouts = (2 * h + 3 * n_h * context * (not flash)) if dropout else 0
    return norms + attention + mlp + dropouts


def _kv_bytes(n_layers: int, n_kv_heads: int, head_dim: int, number_bytes: int) -> int:
    return 2 * n_layers * n_kv_heads * head_dim * number_bytes          # a key and a value per layer and head


_precision = one_of(tuple(PRECISION_BYTES), " (number formats)")


@checked(n_layers=at_least(1), n_kv_heads=at_least(1), head_dim=at_least(1), precision=_precision)
def kv_bytes_per_token(n_layers: int, n_kv_heads: int, head_dim: int, precision: str = "bf16") -> int:
    """Bytes of the KV cache per token: 2 (a key and a value) x layers x key-value heads x head_dim x
    b(precision) (chapter 19). Llama-2-7B in fp16: 2 x 32 x 32 x 128 x 2 = 524,288 bytes, 0.5 MiB."""
    return _kv_bytes(n_layers, n_kv_heads, head_dim, PRECISION_BYTES[precision])


def _quantized_at_most_all(args):
    """Relation: the NF4-quantized parameters (QLoRA) are at most all of them."""
    if args["quantized_params"] > args["n_params"]:
        raise ValueError(f"quantized_params must be at most n_params ({args['n_params']:.4g}), "
                         f"got {args['quantized_params']}")


@checked(_quantized_at_most_all, n_params=positive_real, weights=_precision, gradients=_precision, master_weights=flag,
         optimizer=one_of(tuple(OPTIMIZER_STATES), " (optimizers)"), optimizer_precision=_precision, reference=flag,
         reference_precision=_precision, prompts=at_least(0), group_size=at_least(1), prompt_length=at_least(0),
         completion_length=at_least(0), vocab_size=at_least(0), hidden_size=at_least(0), n_layers=at_least(0),
         n_kv_heads=at_least(0), head_dim=at_least(0), kv_precision=_precision, n_gpus=at_least(1),
         sharding=one_of(tuple(SHARDING), " (sharding stages)"), activation_checkpointing=flag,
         logits_chunk=optional(at_least(1)), micro_batch=optional(at_least(1)), rollout_gpus=optional(at_least(1)),
         activation_bytes=optional(at_least(1)), adapter_params=optional(at_least(1)), quantized_params=at_least(0))
def memory_budget(n_params, *, weights="bf16", gradients="bf16", master_weights=True, optimizer="adamw",
                  optimizer_precision="fp32", reference=True, reference_precision="bf16", prompts=0, group_size=1,
                  prompt_length=0, completion_length=0, vocab_size=0, hidden_size=0, n_layers=0, n_kv_heads=0,
                  head_dim=0, kv_precision="bf16", n_gpus=1, sharding="none", activation_checkpointing=False,
                  logits_chunk=None, micro_batch=None, rollout_gpus=None, activation_bytes=None, adapter_params=None,
                  quantized_params=0) -> dict[str, float]:
    """Bytes of each part of a run (``PARTS``) on one GPU; the formulas are in the module docstring.

    The defaults are full fine-tuning with AdamW in bf16 mixed precision (bf16 weights and gradients, fp32
    master weights and moments) and a bf16 reference model: 18 bytes a parameter, 126 GB for 7B. The batch
    parts are 0 until a batch is given: ``prompts`` x ``group_size`` sequences of ``prompt_length`` +
    ``completion_length`` tokens, split evenly over ``n_gpus`` for training, with the model's
    ``vocab_size``, ``hidden_size``, ``n_layers``, ``n_kv_heads`` and ``head_dim``. A GPU's share is processed
    ``micro_batch`` sequences at a time (default: all at once); the rollout engine runs on ``rollout_gpus``
    GPUs (default: the trainer's, colocated). ``activation_bytes`` is what one layer keeps per token
    (default 34 ``hidden_size``; :func:`activation_bytes_per_token` for an architecture). With
    ``adapter_params`` the run is LoRA's (``quantized_params`` of the frozen base in NF4: QLoRA).
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
    layer = ACTIVATION_BYTES_PER_LAYER * h if activation_bytes is None else activation_bytes
    kept = (CHECKPOINT_BYTES_PER_LAYER * h * L + layer if activation_checkpointing else layer * L) if L else 0
    tokens_of_logits = m * T if logits_chunk is None else min(logits_chunk, m * T)
    kv_per_token = _kv_bytes(L, n_kv_heads, head_dim, bytes_of["kv_precision"])
    if adapter_params is None:
        state = {"weights": psi * bytes_of["weights"] / sharded(3), "gradients": psi * bytes_of["gradients"] / sharded(2),
                 "master_weights": psi * PRECISION_BYTES["fp32"] * master_weights / sharded(1),
                 "optimizer_state": psi * states * bytes_of["optimizer_precision"] / sharded(1),
                 "reference": psi * bytes_of["reference_precision"] * reference / sharded(3)}
    else:                                                               # LoRA: the base is frozen and is the reference
        base = (psi - quantized_params) * bytes_of["weights"] + quantized_params * NF4_BYTES
        state = {"weights": base / sharded(3), **{part: adapter_params * size / sharded(2 if part == "gradients" else 1)
                                                  for part, size in ADAPTER_BYTES.items()}, "reference": 0.0}
    return {
        **state,
        "activations": float(kept * m * S),
        "logits": float(LOGIT_BYTES * tokens_of_logits * vocab_size),
        "kv_cache": kv_per_token * prompts * G * S / engine_gpus,
    }


def shape_options(shape: ModelShape) -> dict:
    """The keyword arguments of ``memory_budget`` that a model's shape fixes."""
    return {"vocab_size": shape.vocab_size, "hidden_size": shape.hidden_size, "n_layers": shape.n_layers,
            "n_kv_heads": shape.n_kv_heads, "head_dim": shape.head_dim}
