"""A step's seconds under the three schedules, for chapter 19's setting (``RUN``): rollout, training and the
weight sync of one step, and the wall time of a step when sampling and training share the GPUs or split them.
The formulas are ``rl4llm.math.step_time``'s; this module fixes the setting that chapter 19's time charts, its
schedule table and its exercise on the best split all use."""
from __future__ import annotations

from ..math.memory import kv_bytes_per_token
from ..math.step_time import (H100_SXM, NVLINK_ONE_WAY, SCHEDULES, generation_seconds, schedule, training_seconds,
                              weight_sync_seconds)

#: A run's setting, shared by the time charts (stated in the chapter): 64 prompts of 512 tokens per step,
#: 40% of the GPU's peak FLOP/s achieved, decoding at 60% of its memory bandwidth, weights sent over one
#: 400 Gb/s InfiniBand link (50 GB/s).
RUN = {"prompts": 64, "prompt_length": 512, "utilisation": 0.4, "bandwidth_efficiency": 0.6, "link_bandwidth": 50e9,
       "gpus": 16}

#: The KV cache of a token at 7B, in Qwen2.5-7B's grouped-query shape (28 layers, 4 key-value heads of 128,
#: bf16): 57,344 bytes. The time charts scale it with the model's size (:func:`kv_bytes`).
KV_AT_7B = kv_bytes_per_token(28, 4, 128)


def kv_bytes(n_params: float) -> int:
    """The KV cache of a token, ``KV_AT_7B`` scaled with the model's size (a stated approximation: a
    model's layers and heads grow with it)."""
    return round(KV_AT_7B * n_params / 7e9)


def step_seconds(n_params: float, G: int, completion: int, rollout_gpus: int, train_gpus: int, *,
                 extra_forwards: int = 1) -> dict:
    """Rollout, training and weight-sync seconds of one step of ``RUN``. Each sampling GPU holds a full
    copy of the weights and its share of the sequences (the busiest one sets the pace); each decoding step
    reads the weights and every sequence's KV cache (:func:`kv_bytes`) at ``RUN``'s bandwidth efficiency,
    and sequences whose caches do not fit beside the weights in 80 GB decode in later waves. Training counts
    (6 + 2 ``extra_forwards``) Psi FLOPs a token: 1, the default, is 8 Psi (a reference forward pass, no
    checkpointing); 2 is 10 Psi (chapter 19: TRL 1.16 with vLLM, full fine-tuning, its defaults)."""
    F = RUN["utilisation"] * H100_SXM["bf16_flops"]
    sequences = RUN["prompts"] * G
    tokens = sequences * (RUN["prompt_length"] + completion)
    return {"rollout": generation_seconds(n_params, -(-sequences // rollout_gpus), RUN["prompt_length"], completion,
                                          flops_per_second=F,
                                          bandwidth=RUN["bandwidth_efficiency"] * H100_SXM["memory_bandwidth"],
                                          kv_bytes_per_token=kv_bytes(n_params), memory_bytes=H100_SXM["memory_bytes"]),
            "train": training_seconds(n_params, tokens, F, gpus=train_gpus, extra_forwards=extra_forwards),
            "sync": weight_sync_seconds(n_params, RUN["link_bandwidth"])}


def schedule_walls(n_params: float, rollout_gpus: int, G: int = 8, completion: int = 4096, *,
                   extra_forwards: int = 1) -> dict:
    """A step's wall seconds under each schedule: synchronous on all of ``RUN``'s GPUs in turn (the
    weights resharded over NVLink, one way), one-step-off and asynchronous with ``rollout_gpus`` of them sampling.
    ``extra_forwards`` sets training's FLOPs a token, as in :func:`step_seconds`."""
    gpus = RUN["gpus"]
    together = step_seconds(n_params, G, completion, gpus, gpus, extra_forwards=extra_forwards)
    apart = step_seconds(n_params, G, completion, rollout_gpus, gpus - rollout_gpus, extra_forwards=extra_forwards)
    colocated_sync = weight_sync_seconds(n_params, NVLINK_ONE_WAY)
    out = {"synchronous": schedule(together["rollout"], together["train"], colocated_sync, "synchronous")}
    for mode in SCHEDULES[1:]:
        out[mode] = schedule(apart["rollout"], apart["train"], apart["sync"], mode)
    return out
