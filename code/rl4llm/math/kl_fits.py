"""Forward vs reverse KL: fitting a one-peaked q to a two-peaked p (chapter 5).

On the bins 0, 1, ..., n_bins - 1, a "peak" with centre m and width s is the discretised normal
q_i = softmax(-(i - m)^2 / (2 s^2)). The target p is a mixture of two such peaks. Fitting the
one-peaked q by a grid search over (m, s) shows the two behaviours of KL:

- forward KL(p || q), what SFT minimises: q must cover every bin where p has mass (mode covering),
  so the best q is wide and sits between the peaks;
- reverse KL(q || p): q is only charged where q itself has mass, so the best q hugs one peak
  (mode seeking).
"""
from __future__ import annotations

import numpy as np

from .._checks import as_float_array, integer_at_least, positive_real, probability_array, real_in_range
from .distributions import kl_divergence, softmax

DIRECTIONS = ("forward", "reverse")


def discretised_peak(centre: float, width: float, n_bins: int) -> np.ndarray:
    """q_i = softmax(-(i - centre)^2 / (2 width^2)) over i = 0..n_bins-1 (chapter 5)."""
    centre = real_in_range(centre, "centre", -1e6, 1e6)
    width = positive_real(width, "width")
    bins = np.arange(integer_at_least(n_bins, "n_bins", 1))
    return softmax(-((bins - centre) ** 2) / (2 * width ** 2))


def two_peaked(n_bins: int = 60, centres=(20.0, 40.0), width: float = 3.0, weights=(0.6, 0.4)) -> np.ndarray:
    """p = w_1 peak(c_1, width) + w_2 peak(c_2, width): a distribution with two modes (chapter 5)."""
    weights = probability_array(weights, "weights")
    centres = as_float_array(centres, "centres")
    if weights.shape != (2,) or centres.shape != (2,):
        raise ValueError(f"centres and weights must each hold 2 numbers, got shapes {centres.shape} and {weights.shape}")
    return sum(w * discretised_peak(c, width, n_bins) for w, c in zip(weights, centres))


def kl_grid(p, direction: str, centres, widths) -> np.ndarray:
    """KL(p || q) (``"forward"``) or KL(q || p) (``"reverse"``) for q = discretised_peak(c, w) over the
    grid: entry [a, b] is the divergence at centres[a], widths[b] (chapter 5)."""
    p = probability_array(p, "p")
    if direction not in DIRECTIONS:
        raise ValueError(f"direction must be one of {DIRECTIONS}, got {direction!r}")
    centres, widths = as_float_array(centres, "centres"), as_float_array(widths, "widths")
    grid = np.empty((centres.size, widths.size))
    for a, c in enumerate(centres):
        for b, w in enumerate(widths):
            q = discretised_peak(c, w, p.size)
            grid[a, b] = kl_divergence(p, q) if direction == "forward" else kl_divergence(q, p)
    return grid


def fit_single_peak(p, direction: str, centres, widths) -> tuple[float, float, np.ndarray]:
    """(centre, width, q) of the one-peaked q minimising ``kl_grid`` over the grid (chapter 5).

    Ties go to the first minimiser in grid order (lowest centre, then lowest width).
    """
    grid = kl_grid(p, direction, centres, widths)
    a, b = np.unravel_index(int(np.argmin(grid)), grid.shape)
    centre, width = float(np.ravel(centres)[a]), float(np.ravel(widths)[b])
    return centre, width, discretised_peak(centre, width, np.size(p))
