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

from .._checks import as_float_array, at_least, checked, in_range, one_of, positive_real, probability_array
from .distributions import kl_divergence, probability_vector, softmax

DIRECTIONS = ("forward", "reverse")

#: The range of a peak's centre (any bin a chart shows, far from float overflow).
CENTRE_RANGE = (-1e6, 1e6)


@checked(centre=in_range(*CENTRE_RANGE), width=positive_real, n_bins=at_least(1))
def discretised_peak(centre: float, width: float, n_bins: int) -> np.ndarray:
    """q_i = softmax(-(i - centre)^2 / (2 width^2)) over i = 0..n_bins-1 (chapter 5)."""
    bins = np.arange(n_bins)
    return softmax(-((bins - centre) ** 2) / (2 * width ** 2))


def _pair(rule):
    """Rule: what ``rule`` accepts, holding exactly 2 numbers."""
    def check(x, name):
        arr = rule(x, name)
        if arr.shape != (2,):
            raise ValueError(f"{name} must hold 2 numbers, got shape {arr.shape}")
        return arr
    return check


def _centres(x, name):
    """Rule: peak centres, each in CENTRE_RANGE."""
    arr = as_float_array(x, name)
    if np.any((arr < CENTRE_RANGE[0]) | (arr > CENTRE_RANGE[1])):
        raise ValueError(f"{name} must be numbers in [{CENTRE_RANGE[0]:g}, {CENTRE_RANGE[1]:g}], got {x!r}")
    return arr


def _widths(x, name):
    """Rule: peak widths, each > 0."""
    arr = as_float_array(x, name)
    if np.any(arr <= 0):
        raise ValueError(f"{name} must be numbers > 0, got {x!r}")
    return arr


@checked(n_bins=at_least(1), centres=_pair(_centres), width=positive_real, weights=_pair(probability_array))
def two_peaked(n_bins: int = 60, centres=(20.0, 40.0), width: float = 3.0, weights=(0.6, 0.4)) -> np.ndarray:
    """p = w_1 peak(c_1, width) + w_2 peak(c_2, width): a distribution with two modes (chapter 5)."""
    return sum(w * discretised_peak.unchecked(c, width, n_bins) for w, c in zip(weights, centres))


@checked(p=probability_vector, direction=one_of(DIRECTIONS), centres=_centres, widths=_widths)
def kl_grid(p, direction: str, centres, widths) -> np.ndarray:
    """KL(p || q) (``"forward"``) or KL(q || p) (``"reverse"``) for q = discretised_peak(c, w) over the
    grid: entry [a, b] is the divergence at centres[a], widths[b] (chapter 5)."""
    grid = np.empty((centres.size, widths.size))
    for a, c in enumerate(centres):
        for b, w in enumerate(widths):
            q = discretised_peak.unchecked(c, w, p.size)
            grid[a, b] = kl_divergence.unchecked(p, q) if direction == "forward" else kl_divergence.unchecked(q, p)
    return grid


def fit_single_peak(p, direction: str, centres, widths) -> tuple[float, float, np.ndarray]:
    """(centre, width, q) of the one-peaked q minimising ``kl_grid`` over the grid (chapter 5).

    Ties go to the first minimiser in grid order (lowest centre, then lowest width).
    """
    grid = kl_grid(p, direction, centres, widths)
    a, b = np.unravel_index(int(np.argmin(grid)), grid.shape)
    centre, width = float(np.ravel(centres)[a]), float(np.ravel(widths)[b])
    return centre, width, discretised_peak(centre, width, np.size(p))
