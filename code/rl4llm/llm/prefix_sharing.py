"""Identical prefixes computed once: the speed change of :class:`rl4llm.llm.fast_trainer.FastGRPOTrainer`
(chapter 15's trainer; issue 36's speed record).

The G answers of a prompt often begin alike: a policy that has learnt the first digit draws it in most of its
G samples, and an informative group holds few distinct answers. The network's output at a position depends only
on the tokens before it, so rows that share their prompt and their first t tokens get the same next-token
distribution, and the same log-probs and gradient for every token they share. Two passes use it:

- **sampling** (:func:`next_shared_logits`, run by :func:`rl4llm.llm.model.sample` with ``share_prefixes=True``):
  after each drawn token, the model runs once per distinct (prompt, tokens so far) among the unfinished rows, each
  with its parent's key/value cache (:meth:`rl4llm.llm.kv_cache.LayerCache.select`), and every row reads its
  prefix's logits. Each row still draws its own token from the same generator, in the same order, so the draws are
  the plain sampler's (to float rounding of the logits);
- **the loss's pass** (:func:`distinct_completions`, then :func:`rl4llm.llm.model.prompted_completion_logprobs`):
  the log-probs of each distinct (prompt, completion) once, indexed back to every row that holds it; autograd's
  indexing backward adds up the gradient of the rows that repeat it, as if each had had its own pass.
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


def distinct_completions(tokens: torch.Tensor, prompt_len: int, group_size: int, rows: torch.Tensor) -> tuple:
    """The distinct (group, completion) pairs among ``rows`` of ``tokens`` (B, P + T), whose runs of
    ``group_size`` share their prompt (as :func:`~rl4llm.llm.model.sample` returns them). Returns ``(prompts,
    completions, prompt_of, row_of)``: the groups' prompts (N, P), the distinct completions (D, T), the prompt of
    each (``prompts[prompt_of[d]]``), and for each of ``rows`` its distinct completion (``completions[row_of[i]]``)."""
    key = torch.cat([(rows // group_size)[:, None], tokens[rows, prompt_len:]], dim=1)
    distinct, row_of = torch.unique(key, dim=0, return_inverse=True)        # sorted by group, then completion
    groups, prompt_of = torch.unique(distinct[:, 0], return_inverse=True)
    return tokens[groups * group_size, :prompt_len], distinct[:, 1:], prompt_of, row_of
