"""Where the seconds of a GRPO step go: sampling, training, moving weights, and how they overlap (chapter 19).

With Psi parameters, F the FLOP/s a GPU sustains, W the bytes it reads per second from its memory:

- **training** ``training_seconds``: a forward pass costs about 2 Psi FLOPs a token and forward plus
  backward about 6 Psi (Kaplan et al. 2020, section 2.1; attention over the context adds
  ``attention_flops_per_token``, left out of the count); a step trains on every token of the batch
  and runs ``extra_forwards`` more forward passes (the reference model's log-probs; the old policy's
  when K > 1, or with TRL's vLLM correction; the recomputation of activation checkpointing):
  (6 + 2 e) Psi tokens / (F x GPUs). A frozen weight needs no gradient of its own: a backward pass
  through a frozen base (LoRA) costs 2 Psi, not 4 Psi, so (4 + 2 e) Psi.
- **generation** ``generation_seconds``: the prompts' prefill costs 2 Psi FLOPs a token; then each
  decoding step adds one token to every sequence on the GPU and must read all the weights (Psi b bytes)
  and every sequence's KV cache once, whatever the batch, while it computes 2 Psi FLOPs per sequence:
  a step takes max((Psi b + KV bytes) / W, 2 Psi n / F) (the roofline), so at small batches decoding is
  bound by memory bandwidth, not by FLOPs. W is the bandwidth a decoding step sustains, a fraction of
  the datasheet's. The KV caches must fit beside the weights: with M bytes of GPU memory at most
  ``concurrent_sequences`` = floor((M - Psi b) / ((P + T) kv)) sequences decode at once, and a larger
  batch decodes in waves of that many, one after the other.
- **prefix sharing** ``prefix_sharing_savings``: the G completions of a prompt share its P tokens, so an
  engine that caches prefixes (vLLM's prefix caching) prefills and stores them once a group, not G times:
  it saves 2 Psi n P (1 - 1/G) FLOPs of prefill and n P (1 - 1/G) tokens of KV cache.
- **weight sync** ``weight_sync_seconds``: Psi b bytes over a link of B bytes/s (a ZeRO-3 trainer first
  gathers its shards, Psi b bytes more over its own links).
- **scheduling** ``schedule``: with rollout R, training T and sync S seconds a step,
  synchronous: R + T + S, the sampler idle while the trainer works and back (staleness 0);
  one-step-off: the sampler makes the next batch while the trainer trains on this one, and both stop
  for the sync: max(R, T) + S (staleness 1); fully asynchronous: the sampler never waits and takes in
  new weights while it generates: max(R, T + S), and when it is the faster side it runs ahead until
  the bound ``max_staleness``. Idle time is a step's wall time minus the side's own work.
"""
from __future__ import annotations

import math

import numpy as np

from .._checks import at_least, checked, flag, in_range, integer_at_least, positive_real, real_in_range

#: FLOPs a token per parameter: forward; forward and backward.
FORWARD_FLOPS, TRAIN_FLOPS = 2, 6
#: The three schedules, from the most on-policy to the least.
SCHEDULES = ("synchronous", "one_step_off", "asynchronous")
#: NVIDIA's H100 SXM datasheet: 80 GB of HBM3 at 3.35 TB/s, 989 TFLOP/s dense bf16, NVLink 900 GB/s.
H100_SXM = {"memory_bytes": 80e9, "bf16_flops": 989e12, "memory_bandwidth": 3.35e12, "nvlink_bandwidth": 900e9}
#: NVIDIA's H200 (SXM) datasheet: the H100's bf16 peak, with 141 GB of HBM3e at 4.8 TB/s (chapter 19's measurement ran
#: on one; an H100 runs its memory-bound kernels about 1.4 times slower).
H200_SXM = {"memory_bytes": 141e9, "bf16_flops": 989e12, "memory_bandwidth": 4.8e12}
#: NVLink's rate one way, what a weight transfer gets: the datasheet's 900 GB/s counts both directions together.
NVLINK_ONE_WAY = H100_SXM["nvlink_bandwidth"] / 2


@checked(n_layers=at_least(1), context=in_range(0.0, math.inf), attention_width=at_least(1))
def attention_flops_per_token(n_layers: int, context: float, attention_width: int) -> float:
    """The forward FLOPs a token spends attending to ``context`` tokens, which 2 Psi leaves out (chapter 19):
    4 L c d_attn, d_attn = n_heads d_head: its scores q.k and its weighted sum of the values each take c d_attn
    multiply-adds a layer. A token of a causal sequence of S tokens attends to about S / 2 of them, so the
    sequence's mean is 2 L S d_attn, Kaplan et al. (2020, Table 1)'s 2 n_layer n_ctx d_attn with n_ctx = S."""
    return 4.0 * n_layers * context * attention_width


@checked(n_params=positive_real, tokens=positive_real, flops_per_second=positive_real, gpus=at_least(1),
         extra_forwards=at_least(0), weight_gradients=flag, attention_flops=in_range(0.0, math.inf))
def training_seconds(n_params, tokens, flops_per_second, *, gpus=1, extra_forwards=1, weight_gradients=True,
                     attention_flops=0.0) -> float:
    """(6 + 2 e) Psi tokens / (F x gpus): forward and backward on every token, and ``extra_forwards`` = e
    more forward passes (1: the reference model's log-probs). Without ``weight_gradients`` (a frozen base,
    LoRA) the backward pass skips the weights' gradients, 2 Psi a token: (4 + 2 e) Psi. ``attention_flops`` = A,
    attention's forward FLOPs a token (:func:`attention_flops_per_token`; 0 leaves attention out), adds (3 + e) A:
    its backward costs twice its forward, like the weights', and a frozen base does not spare it."""
    per_token = (TRAIN_FLOPS - FORWARD_FLOPS * (not weight_gradients) + FORWARD_FLOPS * extra_forwards) * n_params \
        + (TRAIN_FLOPS // FORWARD_FLOPS + extra_forwards) * attention_flops
    return per_token * tokens / (flops_per_second * gpus)


@checked(n_params=positive_real, sequences=at_least(1), group_size=at_least(1), prompt_length=at_least(0),
         kv_bytes_per_token=at_least(0), flops_per_second=positive_real)
def prefix_sharing_savings(n_params, sequences, group_size, prompt_length, kv_bytes_per_token, flops_per_second) -> dict:
    """What prefilling a group's shared prompt once, not G times, saves (chapter 19): seconds of prefill,
    2 Psi n P (1 - 1/G) / F, and bytes of KV cache, n P (1 - 1/G) kv, for n sequences in groups of G."""
    repeated = sequences * prompt_length * (1 - 1 / group_size)              # prompt tokens processed G - 1 extra times
    return {"prefill_seconds": FORWARD_FLOPS * n_params * repeated / flops_per_second,
            "kv_bytes": repeated * kv_bytes_per_token}


def _fits_one_sequence(args):
    """Relation: ``memory_bytes`` holds the weights and one sequence's KV cache."""
    weights = args["n_params"] * args["weight_bytes"]
    per_sequence = args["context_length"] * args["kv_bytes_per_token"]
    if args["memory_bytes"] - weights < per_sequence:
        raise ValueError(f"memory_bytes must hold the weights ({weights:.4g} bytes) and one sequence's KV cache "
                         f"({per_sequence:.4g} bytes), got {args['memory_bytes']:.4g}")


@checked(_fits_one_sequence, n_params=positive_real, memory_bytes=positive_real, context_length=at_least(1),
         kv_bytes_per_token=at_least(1), weight_bytes=positive_real)
def concurrent_sequences(n_params, memory_bytes, context_length, kv_bytes_per_token, *, weight_bytes=2) -> int:
    """floor((M - Psi b) / (context kv)): how many sequences of ``context_length`` tokens keep their KV
    caches beside the weights in ``memory_bytes`` of GPU memory (chapter 19). ValueError if not one."""
    return math.floor((memory_bytes - n_params * weight_bytes) / (context_length * kv_bytes_per_token))


def generation_seconds(n_params, sequences, prompt_length, completion_length, *, flops_per_second, bandwidth,
                       weight_bytes=2, kv_bytes_per_token=0, memory_bytes=None, step_overhead=0.0) -> float:
    """Prefill, then one decoding step per completion token for ``sequences`` sequences on one GPU:
    sum over steps t of max((Psi b + n (P + t) kv) / W, 2 Psi n / F), plus 2 Psi n P / F for the prompts.
    ``bandwidth`` W is what decoding sustains. With ``memory_bytes`` (and a KV cache), the sequences
    decode in waves of at most :func:`concurrent_sequences`, one after the other. ``step_overhead``: seconds
    that every decoding step pays on top (kernel launches, scheduling, sampling; an assumption, chapter 19's
    sweep), T of them a wave; the default 0 leaves them out."""
    psi, F, W, b = (positive_real(x, name) for x, name in ((n_params, "n_params"), (flops_per_second,
                    "flops_per_second"), (bandwidth, "bandwidth"), (weight_bytes, "weight_bytes")))
    overhead = real_in_range(step_overhead, "step_overhead", 0, math.inf)
    n, P, T = (integer_at_least(x, name, low) for x, name, low in ((sequences, "sequences", 1),
               (prompt_length, "prompt_length", 0), (completion_length, "completion_length", 1)))
    kv = integer_at_least(kv_bytes_per_token, "kv_bytes_per_token", 0)
    fit = n if memory_bytes is None or kv == 0 else concurrent_sequences(psi, memory_bytes, P + T, kv, weight_bytes=b)
    waves = [fit] * (n // fit) + ([n % fit] if n % fit else [])
    context = P + np.arange(T)                                              # tokens cached before step t
    seconds = 0.0
    for m in waves:                                                         # m sequences decode together
        memory = (psi * b + m * context * kv) / W
        compute = FORWARD_FLOPS * psi * m / F
        seconds += float(np.maximum(memory, compute).sum() + FORWARD_FLOPS * psi * m * P / F) + T * overhead
    return seconds


@checked(n_params=positive_real, bandwidth=positive_real, weight_bytes=positive_real)
def weight_sync_seconds(n_params, bandwidth, *, weight_bytes=2) -> float:
    """Psi b / B: the seconds to send every weight once over a link of ``bandwidth`` bytes/s."""
    return n_params * weight_bytes / bandwidth


def schedule(rollout_s, train_s, sync_s, mode, *, max_staleness=4) -> dict:
    """A step's wall time, each side's idle seconds and the staleness (optimizer steps between the
    weights that sampled a batch and the weights it trains) under ``mode`` (``SCHEDULES``)."""
    R, T = positive_real(rollout_s, "rollout_s"), positive_real(train_s, "train_s")
    S = real_in_range(sync_s, "sync_s", 0, math.inf)
    if not isinstance(mode, str) or mode not in SCHEDULES:
        raise ValueError(f"mode must be one of {list(SCHEDULES)}, got {mode!r}")
    k = integer_at_least(max_staleness, "max_staleness", 1)
    if mode == "synchronous":
        wall, staleness = R + T + S, 0
    elif mode == "one_step_off":
        wall, staleness = max(R, T) + S, 1
    else:
        wall, staleness = max(R, T + S), k if R < T + S else 1
    return {"wall": wall, "sampler_idle": wall - R, "trainer_idle": wall - T, "staleness": staleness}
