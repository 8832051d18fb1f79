"""The loss's forward pass over the batch's prefix tree: a speed change of
:class:`rl4llm.llm.fast_trainer.FastGRPOTrainer` (chapter 15's trainer; issue 36's speed record).

:func:`rl4llm.llm.model.completion_logprobs` runs each prompt once and every answer's every position, though the
answers of a group begin alike ("84", "85" and "84" again share their first digit). A position's output depends
only on the tokens up to it, so each distinct (prompt, y_1 .. y_d) needs one position, whatever the number of
answers through it. The batch is then a tree per prompt: the prompt's positions, then the answer prefixes that
some answer continues (its token d + 1 exists), each one token (y_d) at its own absolute position P + d - 1.

Each prompt's tree is laid out as one sequence, as tree attention does for speculative decoding (SpecInfer,
Medusa): its P prompt tokens, then its prefixes, parents before children, then filler up to the longest tree's
length M. A causal mask would let a prefix see its siblings; the tree's mask lets each position see its own path
(the prompt up to it, then its ancestors and itself) and nothing else, so its output is the one it has in its
answers' own pass. All N trees go through the model as one batch (N, M) (:class:`TreeCache` hands attention the
mask), so the pass costs the trees' distinct positions and one fused attention call per layer: at the benchmark's
speed recipe, from the warm start, about 160 answer positions instead of the informative answers' 413. Each
answer's log-probs are read back from the positions on its path, so autograd adds up the gradient of the answers
that share a position, as if each had had its own pass (``tests/test_prefix_sharing.py`` holds values and gradients
equal to the per-answer pass).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from .._checks import checked
from .model import temperature_log_softmax


@dataclass
class PrefixTree:
    """The batch's prefix trees, one row per prompt, laid out as sequences of length M: ``tokens`` and
    ``positions`` (N, M), the prompt's tokens, then its prefixes' last tokens, then filler (token 0 at position 0);
    ``visible`` (N, M, M), which of its row's positions each position sees (its path; a filler position, only
    itself); ``node_of`` (D, T), for each answer the position, flattened (prompt M + slot), whose logits predict its
    token t (a masked token reads position 0)."""
    tokens: torch.Tensor
    positions: torch.Tensor
    visible: torch.Tensor
    node_of: torch.Tensor


def _prefixes_fit_in_64_bits(args):
    """Relation: every prefix's integer, below N (V + 1)^(T - 1), fits in a 64-bit integer."""
    N, T, V = len(args["prompts"]), args["completions"].shape[1], args["vocab_size"]
    if N * (V + 1) ** (T - 1) >= 2 ** 63:
        raise ValueError(f"completions must be short enough that the prefixes of {N} prompts and {T} tokens of a "
                         f"{V}-token vocabulary fit in 64-bit integers")


@checked(_prefixes_fit_in_64_bits)
def prefix_tree(prompts: torch.Tensor, prompt_of: torch.Tensor, completions: torch.Tensor, mask: torch.Tensor,
                vocab_size: int) -> PrefixTree:
    """The prefix trees of prompts ``prompts`` (N, P) and answers ``completions`` (D, T) with ``mask``, answer i
    following prompt ``prompt_of[i]``. Each prefix (prompt, y_1 .. y_d) of an answer that goes on after token d
    (d = 1 .. T - 1) is one integer: prompt (V + 1)^(T - 1) plus the T - 1 digits y_1 + 1 .. y_d + 1, then zeros,
    in base V + 1 (V = ``vocab_size``), so that sorted, the distinct prefixes come prompt by prompt, each parent
    before its children."""
    (N, P), (D, T), device = prompts.shape, completions.shape, prompts.device
    base = vocab_size + 1
    codes, code = torch.empty(D, T - 1, dtype=torch.long, device=device), prompt_of * base ** (T - 1)
    for d in range(1, T):
        code = code + (completions[:, d - 1] + 1) * base ** (T - 1 - d)
        codes[:, d - 1] = code
    going_on = mask[:, 1:] > 0                                             # (D, T - 1): token d + 1 exists
    distinct, inverse = torch.unique(codes[going_on], return_inverse=True)
    answer, depth = going_on.nonzero().unbind(1)                           # an answer through each prefix, its depth
    first = torch.zeros_like(distinct).scatter_(0, inverse, answer)
    depth = torch.zeros_like(distinct).scatter_(0, inverse, depth + 1)
    tree_of = distinct // base ** (T - 1)                                  # each prefix's prompt
    counts = torch.bincount(tree_of, minlength=N)
    M = P + int(counts.max()) if len(distinct) else P
    slot = P + torch.arange(len(distinct), device=device) - (counts.cumsum(0) - counts)[tree_of]
    flat = tree_of * M + slot                                              # each prefix's position, flattened
    path = torch.zeros(D, T - 1, dtype=torch.long, device=device)            # each answer's prefixes at depths 1 ..
    path[going_on] = flat[inverse]
    tokens = torch.zeros(N, M, dtype=torch.long, device=device)
    positions = torch.zeros(N, M, dtype=torch.long, device=device)
    tokens[:, :P], positions[:, :P] = prompts, torch.arange(P, device=device)
    tokens.view(-1)[flat], positions.view(-1)[flat] = completions[first, depth - 1], P - 1 + depth
    visible = torch.eye(M, dtype=torch.bool, device=device).repeat(N, 1, 1)        # filler: itself
    visible[:, :P, :P] = torch.ones(P, P, dtype=torch.bool, device=device).tril()  # the prompt, causally
    visible[tree_of, slot, :P] = True                                      # a prefix: its prompt, then its path
    on_path = path[first]                                                  # (prefixes, T - 1), the first depth ones
    below = torch.arange(T - 1, device=device) < depth[:, None]
    visible.view(N * M, M)[flat[:, None].expand_as(on_path)[below], on_path[below] % M] = True
    return PrefixTree(tokens, positions, visible, torch.cat([(prompt_of * M + P - 1)[:, None], path], dim=1))


class TreeCache:
    """One layer's keys and values of the trees' positions, all computed in the same pass, and ``visible``
    (N, 1, M, M), the trees' mask, which attention applies in place of a causal one."""
    length = 0

    def __init__(self, tree: PrefixTree):
        self.visible = tree.visible[:, None]

    def extend(self, k: torch.Tensor, v: torch.Tensor) -> None:
        """The positions' own keys and values (N, nh, M, hs)."""
        self.keys, self.values = k, v


def tree_completion_logprobs(model, prompts: torch.Tensor, prompt_of: torch.Tensor, completions: torch.Tensor,
                             mask: torch.Tensor, temperature: float) -> torch.Tensor:
    """log pi_theta(y_t | x, y_<t) of answers ``completions`` (D, T) with ``mask``, answer i following the prompt
    ``prompts[prompt_of[i]]`` ((N, P) token ids): one forward pass over the batch's prefix trees. Equal to
    :func:`~rl4llm.llm.model.completion_logprobs` where ``mask`` is 1 (elsewhere a finite filler)."""
    tree = prefix_tree(prompts, prompt_of, completions, mask, model.config.vocab_size)
    logits, _ = model(tree.tokens, [TreeCache(tree) for _ in model.h], positions=tree.positions)
    return temperature_log_softmax(logits.flatten(0, 1), temperature)[tree.node_of, completions]
