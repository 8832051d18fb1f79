"""The key/value caches of the tiny GPT (chapter 15): what lets a new token attend to every earlier one
without recomputing their keys and values.

Both caches hold one layer's keys and values, shaped (B, n_head, T_past, head_dim), and share the
members attention uses, so it never asks which one it has: ``extend(k, v)`` appends the new tokens' keys
and values, ``keys`` / ``values`` are everything cached so far, and ``visible`` is None: a new token sees
every key (a prefix tree's cache, :class:`rl4llm.llm.prefix_tree.TreeCache`, shows each position its own path).

- :class:`ConcatCache` extends by concatenation: differentiable, so :func:`rl4llm.llm.model.completion_logprobs`
  can run each prompt once and copy its cache to the G rows of its group, gradients flowing through the copy.
- :class:`LayerCache` writes into buffers preallocated for ``capacity`` positions, so a sampling step copies
  only the new keys and values, not the whole cache (:func:`rl4llm.llm.model.sample`); ``select(rows)`` keeps
  the rows a sampler sharing prefixes still needs (:mod:`rl4llm.llm.prefix_sharing`).
"""
from __future__ import annotations

import torch


class ConcatCache:
    """One layer's keys and values, extended by concatenation (differentiable)."""
    visible = None

    def __init__(self, k: torch.Tensor, v: torch.Tensor):
        self.keys, self.values = k, v                                      # (B, nh, T, hs) each

    @property
    def length(self) -> int:
        return self.keys.shape[2]

    def extend(self, k: torch.Tensor, v: torch.Tensor) -> None:
        self.keys = torch.cat([self.keys, k], dim=2)                       # (B, nh, T_past + T, hs)
        self.values = torch.cat([self.values, v], dim=2)


class LayerCache:
    """One layer's keys and values in buffers preallocated for ``capacity`` positions (for sampling)."""
    visible = None

    def __init__(self, k: torch.Tensor, v: torch.Tensor, capacity: int):
        B, H, T, D = k.shape
        self._k, self._v = k.new_empty(B, H, capacity, D), v.new_empty(B, H, capacity, D)
        self._k[:, :, :T], self._v[:, :, :T] = k, v
        self.length = T

    @property
    def keys(self) -> torch.Tensor:
        return self._k[:, :, :self.length]                                 # (B, nh, T_past, hs)

    @property
    def values(self) -> torch.Tensor:
        return self._v[:, :, :self.length]

    def select(self, rows: torch.Tensor) -> "LayerCache":
        """A new cache whose row i is this cache's row ``rows[i]`` (rows may repeat or be left out)."""
        chosen = LayerCache.__new__(LayerCache)
        chosen._k, chosen._v, chosen.length = self._k.index_select(0, rows), self._v.index_select(0, rows), self.length
        return chosen

    def extend(self, k: torch.Tensor, v: torch.Tensor) -> None:
        end = self.length + k.shape[2]
        self._k[:, :, self.length:end], self._v[:, :, self.length:end] = k, v
        self.length = end
