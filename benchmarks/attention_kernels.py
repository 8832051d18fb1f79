"""Why the trainer's attention is torch's fused kernel: the alternatives, timed at the trainer's own shapes.

    python benchmarks/attention_kernels.py [--repeats 300]

At ``grpo_vs_trl.py``'s speed recipe (32 prompts x G = 8, one CPU thread) attention is the largest
single cost of a step (about a quarter, in torch's profiler), so it is the first place to look for a
faster trainer. This script times, forward and forward + backward, in microseconds a call:

- ``sdpa``: ``F.scaled_dot_product_attention``, what :class:`rl4llm.llm.model.CausalSelfAttention` calls;
- ``sdpa math``: the same call restricted to torch's unfused "math" backend;
- ``by hand``: softmax(q k^T / sqrt(d) + mask) v in three tensor operations;
- ``broadcast`` (decoding only): one query as a broadcast product summed over the head size, no matrix
  product at all (faster than ``sdpa`` here, alone, yet the trainer's step with it was no faster:
  ``results/speed_record_2core_cpu.md``);
- ``shared prefix`` (decoding only): the G rows of a group attend to their prompt's keys once, as one
  (G x d) by (d x P) product per prompt and head, instead of G copies of the prompt's cache (the
  trick behind cascade or "Hydragen" attention for shared prefixes), and to their own completion keys
  apart; one softmax over both.

on the shapes of one outer step: the prompts' prefill (32 rows, 6 causal queries), a decoding step
(256 rows, one query, 6 prompt keys and 1-3 completion keys) and the loss pass's completion block
(256 rows, 3 queries after a 6-token prompt; and 144 rows, about the informative groups' share that
``FastGRPOTrainer``'s loss pass runs at the speed recipe's start). Every variant's output is checked against ``sdpa``'s
first. The LAST line printed is the table as one JSON object (this repository's 2-core machine's is
``results/attention_kernels_2core_cpu.json``).
"""
from __future__ import annotations

import argparse
import json
import math
import time

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

N_PROMPTS, G, HEADS, HEAD_SIZE, PROMPT = 32, 8, 4, 16, 6     # the speed recipe on the chapter's model


def allowed(T: int, L: int) -> torch.Tensor | None:
    """Query i of T (the last T of L positions) may see keys 0 .. L - T + i; None when T == 1 (all)."""
    return None if T == 1 else torch.ones(T, L, dtype=torch.bool).tril(diagonal=L - T)


def sdpa(q, k, v):
    return F.scaled_dot_product_attention(q, k, v, attn_mask=allowed(q.shape[2], k.shape[2]))


def sdpa_math(q, k, v):
    with sdpa_kernel(SDPBackend.MATH):
        return sdpa(q, k, v)


def by_hand(q, k, v):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    mask = allowed(q.shape[2], k.shape[2])
    if mask is not None:
        scores = scores.masked_fill(~mask, -math.inf)
    return scores.softmax(dim=-1) @ v


def broadcast(q, k, v):
    """One query: softmax over the keys of (q * k) summed over the head size, then the weighted sum of the values."""
    weights = ((q * k).sum(dim=-1, keepdim=True) / math.sqrt(q.shape[-1])).softmax(dim=2)     # (B, nh, L, 1)
    return (weights * v).sum(dim=2, keepdim=True)


def shared_prefix(q, k, v):
    """Decoding with the prompt's keys held once per group: k, v here are (prompt part, completion part)."""
    (kp, kc), (vp, vc) = k, v                         # (N, nh, P, hs) and (N G, nh, t, hs)
    B, nh, _, hs = q.shape
    groups = q.view(N_PROMPTS, G, nh, hs).transpose(1, 2)                       # (N, nh, G, hs)
    to_prompt = (groups @ kp.transpose(-2, -1)).transpose(1, 2).reshape(B, nh, 1, PROMPT)
    to_own = q @ kc.transpose(-2, -1)                                           # (N G, nh, 1, t)
    p = (torch.cat([to_prompt, to_own], dim=-1) / math.sqrt(hs)).softmax(dim=-1)
    from_prompt = p[..., :PROMPT].reshape(N_PROMPTS, G, nh, PROMPT).transpose(1, 2) @ vp   # (N, nh, G, hs)
    return from_prompt.transpose(1, 2).reshape(B, nh, 1, hs) + p[..., PROMPT:] @ vc


def leaves(*shapes):
    return [torch.randn(*s, requires_grad=True) for s in shapes]


def timed(fn, args, repeats: int) -> tuple[float, float]:
    """Microseconds a call: forward, then forward + backward of the output's sum."""
    for _ in range(10):
        fn(*args).sum().backward()
    start = time.perf_counter()
    for _ in range(repeats):
        fn(*args)
    forward = (time.perf_counter() - start) / repeats
    start = time.perf_counter()
    for _ in range(repeats):
        fn(*args).sum().backward()
    return 1e6 * forward, 1e6 * (time.perf_counter() - start) / repeats


def cases():
    """(name, q, k, v, the shared-prefix inputs or None) at the step's shapes."""
    B = N_PROMPTS * G
    q, k, v = leaves(*[(N_PROMPTS, HEADS, PROMPT, HEAD_SIZE)] * 3)
    yield "prefill: 32 rows x 6 queries", q, k, v, None
    for t in (1, 2, 3):
        q, = leaves((B, HEADS, 1, HEAD_SIZE))
        kp, vp = leaves(*[(N_PROMPTS, HEADS, PROMPT, HEAD_SIZE)] * 2)
        kc, vc = leaves(*[(B, HEADS, t, HEAD_SIZE)] * 2)
        k = torch.cat([kp.repeat_interleave(G, dim=0), kc], dim=2)
        v = torch.cat([vp.repeat_interleave(G, dim=0), vc], dim=2)
        yield f"decode: 256 rows x 1 query, {PROMPT + t} keys", q, k, v, ((kp, kc), (vp, vc))
    for rows in (B, 144):           # every row, or the informative groups' (FastGRPOTrainer's loss pass)
        q, = leaves((rows, HEADS, 3, HEAD_SIZE))
        k, v = leaves(*[(rows, HEADS, PROMPT + 3, HEAD_SIZE)] * 2)
        yield f"loss pass: {rows} rows x 3 queries, 9 keys", q, k, v, None


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=300)
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    rows = []
    print(f"{'shape':<42} {'variant':<14} {'forward us':>10} {'fwd+bwd us':>10} {'max |diff|':>10}")
    for name, q, k, v, split in cases():
        variants = {"sdpa": (sdpa, (q, k, v)), "sdpa math": (sdpa_math, (q, k, v)), "by hand": (by_hand, (q, k, v))}
        if split is not None:
            variants["broadcast"] = (broadcast, (q, k, v))
            variants["shared prefix"] = (shared_prefix, (q, *split))
        reference = sdpa(q, k, v).detach()
        for variant, (fn, inputs) in variants.items():
            forward, both = timed(fn, inputs, args.repeats)
            diff = float((fn(*inputs).detach() - reference).abs().max())
            rows.append({"shape": name, "variant": variant, "forward_us": forward, "forward_backward_us": both,
                         "max_abs_diff": diff})
            print(f"{name:<42} {variant:<14} {forward:>10.0f} {both:>10.0f} {diff:>10.1e}", flush=True)
    print(json.dumps({"torch": torch.__version__, "cpu_capability": torch.backends.cpu.get_cpu_capability(),
                      "rows": rows}))


if __name__ == "__main__":
    main()
