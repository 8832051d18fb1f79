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


def prefix_tree(prompts: torch.Tensor, prompt_of: torch.Tensor, completions: torch.Tensor, mask: torch.Tensor,
                vocab_size: int) -> PrefixTree:
    """The prefix tree of prompts ``prompts`` (N, P) and answers ``completions`` (D, T) with ``mask``, answer i
    following prompt ``prompt_of[i]``: the prompts' positions, then, depth by depth, the distinct (parent node,
    token) pairs of the answers that go on."""
    (N, P), (D, T), device = prompts.shape, completions.shape, prompts.device
    prompt_nodes = torch.arange(N * P, device=device).view(N, P)             # prompt p's token j is node p P + j
    slots = torch.arange(P + T - 1, device=device)
    tokens, positions = [prompts.reshape(-1)], [torch.arange(P, device=device).repeat(N)]
    ancestors = [torch.cat([prompt_nodes.repeat_interleave(P, dim=0), prompt_nodes.new_zeros(N * P, T - 1)], dim=1)]
    visible = [slots <= positions[0][:, None]]
    path = torch.zeros(D, T - 1, dtype=torch.long, device=device)            # each answer's nodes at depths 1 ..
    label, n = prompt_of, N * P               # label: each answer's node at the depth before, within that depth
    for d in range(1, T):
        going_on = mask[:, d] > 0                                          # token d + 1 exists
        if not bool(going_on.any()):
            break
        distinct, inverse = torch.unique((label * vocab_size + completions[:, d - 1])[going_on], return_inverse=True)
        label = torch.zeros_like(label).masked_scatter_(going_on, inverse)
        path[going_on, d - 1] = inverse + n
        first = torch.zeros(len(distinct), dtype=torch.long, device=device).scatter_(
            0, inverse, going_on.nonzero()[:, 0])                          # an answer through each node
        tokens.append(distinct % vocab_size)
        positions.append(torch.full_like(distinct, P + d - 1))
        ancestors.append(torch.cat([prompt_nodes[prompt_of[first]], path[first]], dim=1))
        visible.append((slots < P + d).expand(len(distinct), -1))
        n += len(distinct)
    node_of = torch.cat([prompt_nodes[prompt_of, -1:], path], dim=1)
    return PrefixTree(torch.cat(tokens), torch.cat(positions), torch.cat(ancestors), torch.cat(visible), node_of)


class TreeCache:
    """One layer's keys and values for the tree's nodes, all computed in the same pass: each node gathers its
    path's (``keys`` and ``values``, (n, nh, P + T - 1, hs)), and ``visible`` (n, 1, 1, P + T - 1) hides the rest."""

    def __init__(self, tree: PrefixTree):
        self.ancestors, self.visible = tree.ancestors, tree.visible[:, None, None, :]
        self.length = tree.ancestors.shape[1]

    def extend(self, k: torch.Tensor, v: torch.Tensor) -> None:
        """The nodes' own keys and values (n, nh, 1, hs)."""
        self.keys = k[:, :, 0][self.ancestors].transpose(1, 2)
        self.values = v[:, :, 0][self.ancestors].transpose(1, 2)


def tree_completion_logprobs(model, prompts: torch.Tensor, prompt_of: torch.Tensor, completions: torch.Tensor,
                             mask: torch.Tensor, temperature: float) -> torch.Tensor:
    """log pi_theta(y_t | x, y_<t) of answers ``completions`` (D, T) with ``mask``, answer i following the prompt
    ``prompts[prompt_of[i]]`` ((N, P) token ids): one forward pass over the batch's prefix tree. Equal to
    :func:`~rl4llm.llm.model.completion_logprobs` where ``mask`` is 1 (elsewhere a finite filler)."""
    tree = prefix_tree(prompts, prompt_of, completions, mask, model.config.vocab_size)
    logits, _ = model(tree.tokens[:, None], [TreeCache(tree) for _ in model.h], positions=tree.positions[:, None])
    return temperature_log_softmax(logits[:, 0, :], temperature)[tree.node_of, completions]
