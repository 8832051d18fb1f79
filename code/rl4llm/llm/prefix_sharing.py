"""Identical prefixes computed once, in sampling: a speed change of :class:`rl4llm.llm.fast_trainer.FastGRPOTrainer`
(chapter 15's trainer; issue 36's speed record).

The G answers of a prompt often begin alike: a policy that has learnt the first digit draws it in most of its
G samples. The network's output at a position depends only on the tokens before it, so rows that share their
prompt and their first t tokens get the same next-token distribution. :func:`rl4llm.llm.model.sample` with
``share_prefixes=True`` uses it: after each drawn token, the model runs once per distinct (prompt, tokens so far)
among the unfinished rows (:func:`next_shared_logits`), each with its parent's key/value cache
(:meth:`rl4llm.llm.kv_cache.LayerCache.select`), and every row reads its prefix's logits. Each row still draws its
own token from the same generator, in the same order, so the draws are the plain sampler's (to float rounding of
the logits). The loss's pass shares prefixes too, over the answers' prefix tree (:mod:`rl4llm.llm.prefix_tree`).
"""
from __future__ import annotations

import torch


def next_shared_logits(model, past: list, prefix: torch.Tensor, drawn: torch.Tensor,
                       alive: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """One sampling step over distinct prefixes. ``prefix`` (B,) is each row's prefix, an index into the rows of
    ``past`` (one :class:`~rl4llm.llm.kv_cache.LayerCache` per layer); ``drawn`` (B,) the token each row just drew,
    ``alive`` (B,) the rows still sampling. The distinct (prefix, token) pairs of the alive rows become the new
    prefixes: ``past`` is replaced, in place, by their parents' caches, extended by one forward pass over their
    last tokens. Returns every row's next-token logits (B, vocab) and the rows' new prefixes (a finished row reads
    prefix 0; its draws are masked)."""
    vocab = model.config.vocab_size
    distinct, new_prefix = torch.unique((prefix * vocab + drawn)[alive], return_inverse=True)
    past[:] = [cache.select(distinct // vocab) for cache in past]
    logits, _ = model((distinct % vocab)[:, None], past)                     # (distinct prefixes, 1, vocab)
    prefix = torch.zeros_like(prefix).masked_scatter_(alive, new_prefix)
    return logits[:, -1, :][prefix], prefix
