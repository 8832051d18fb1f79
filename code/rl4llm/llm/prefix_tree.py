"""The loss's forward pass over the batch's prefix tree: a speed change of
:class:`rl4llm.llm.fast_trainer.FastGRPOTrainer` (chapter 15's trainer; issue 36's speed record).

:func:`rl4llm.llm.model.completion_logprobs` runs each prompt once and every answer's every position, though the
answers of a group begin alike ("84", "85" and "84" again share their first digit). A position's output depends
only on the tokens up to it, so each distinct (prompt, y_1 .. y_d) needs one position, whatever the number of
answers through it. The batch is then a tree: its nodes are the prompts' positions and those answer prefixes
that some answer continues (its token d + 1 exists). A node is one token at its own absolute position (prompt
token j at j, node y_1 .. y_d at P + d - 1) that attends to the keys of its ancestors, its own included, and to
nothing else (:class:`TreeCache`); its logits predict the next token of every answer through it (a prompt's last
position predicts token 1). All the nodes go through the model in one batch, each a sequence of one token, so the
pass costs the tree's distinct positions: at the benchmark's speed recipe, from the warm start, about 160 answer
positions instead of the informative answers' 413. The log-probs are read back for every answer, so autograd adds
up the gradient of the answers that share a node, as if each had had its own pass (``tests/test_prefix_sharing.py``
holds values and gradients equal to the per-answer pass).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from .._checks import checked
from .model import temperature_log_softmax


@dataclass
class PrefixTree:
    """The batch's prefix tree, one row per node: ``tokens``, ``positions``; ``ancestors`` (n, P + T - 1): the
    node's path from its prompt's first token to itself, then filler; ``visible`` (n, P + T - 1): which of those
    are its path; ``node_of`` (D, T): for each answer, the node whose logits predict its token t (masked tokens
    read any node)."""
    tokens: torch.Tensor
    positions: torch.Tensor
    ancestors: torch.Tensor
    visible: torch.Tensor
    node_of: torch.Tensor


def _prefixes_fit_in_64_bits(args):
    """Relation: every prefix's integer, N V^(T-1) T at most, fits in a 64-bit integer."""
    N, T, V = len(args["prompts"]), args["completions"].shape[1], args["vocab_size"]
    if N * V ** (T - 1) * T >= 2 ** 63:
        raise ValueError(f"completions must be short enough that the prefixes of {N} prompts and {T} tokens of a "
                         f"{V}-token vocabulary fit in 64-bit integers")


@checked(_prefixes_fit_in_64_bits)
def prefix_tree(prompts: torch.Tensor, prompt_of: torch.Tensor, completions: torch.Tensor, mask: torch.Tensor,
                vocab_size: int) -> PrefixTree:
    """The prefix tree of prompts ``prompts`` (N, P) and answers ``completions`` (D, T) with ``mask``, answer i
    following prompt ``prompt_of[i]``: the prompts' positions, then the distinct prefixes (prompt, y_1 .. y_d) of
    the answers that go on after token d (d = 1 .. T - 1), each written as one integer, its digits in base
    ``vocab_size``, with d appended."""
    (N, P), (D, T), device = prompts.shape, completions.shape, prompts.device
    prompt_nodes = torch.arange(N * P, device=device).view(N, P)             # prompt p's token j is node p P + j
    codes, code = torch.empty(D, T - 1, dtype=torch.long, device=device), prompt_of
    for d in range(1, T):
        code = code * vocab_size + completions[:, d - 1]
        codes[:, d - 1] = code * T + d
    going_on = mask[:, 1:] > 0                                             # (D, T - 1): token d + 1 exists
    distinct, inverse = torch.unique(codes[going_on], return_inverse=True)
    path = torch.zeros(D, T - 1, dtype=torch.long, device=device)            # each answer's nodes at depths 1 ..
    path[going_on] = inverse + N * P
    first = torch.zeros_like(distinct).scatter_(0, inverse, going_on.nonzero()[:, 0])   # an answer through each node
    depth = distinct % T
    positions = torch.cat([torch.arange(P, device=device).repeat(N), P - 1 + depth])
    prompt_rows = torch.cat([prompt_nodes.repeat_interleave(P, dim=0), prompt_nodes.new_zeros(N * P, T - 1)], dim=1)
    ancestors = torch.cat([prompt_rows, torch.cat([prompt_nodes[prompt_of[first]], path[first]], dim=1)])
    visible = torch.arange(P + T - 1, device=device) <= positions[:, None]
    tokens = torch.cat([prompts.reshape(-1), completions[first, depth - 1]])
    return PrefixTree(tokens, positions, ancestors, visible, torch.cat([prompt_nodes[prompt_of, -1:], path], dim=1))


class TreeCache:
    """One layer's keys and values for the tree's nodes, all computed in the same pass: each node gathers its
    path's (``keys`` and ``values``, (n, nh, P + T - 1, hs)), and ``visible`` (n, 1, 1, P + T - 1) hides the rest."""

    def __init__(self, tree: PrefixTree):
        self.ancestors, self.visible = tree.ancestors, tree.visible[:, None, None, :]
        self.length = tree.ancestors.shape[1]

    def extend(self, k: torch.Tensor, v: torch.Tensor) -> None:
        """The nodes' own keys and values (n, nh, 1, hs)."""
        self.keys = k.squeeze(2)[self.ancestors].transpose(1, 2)
        self.values = v.squeeze(2)[self.ancestors].transpose(1, 2)


def tree_completion_logprobs(model, prompts: torch.Tensor, prompt_of: torch.Tensor, completions: torch.Tensor,
                             mask: torch.Tensor, temperature: float) -> torch.Tensor:
    """log pi_theta(y_t | x, y_<t) of answers ``completions`` (D, T) with ``mask``, answer i following the prompt
    ``prompts[prompt_of[i]]`` ((N, P) token ids): one forward pass over the batch's prefix tree. Equal to
    :func:`~rl4llm.llm.model.completion_logprobs` where ``mask`` is 1 (elsewhere a finite filler)."""
    tree = prefix_tree(prompts, prompt_of, completions, mask, model.config.vocab_size)
    logits, _ = model(tree.tokens[:, None], [TreeCache(tree) for _ in model.h], positions=tree.positions[:, None])
    return temperature_log_softmax(logits.squeeze(1), temperature)[tree.node_of, completions]
