"""Forward vs reverse KL fits of a one-peaked q to a two-peaked p (rl4llm.math.kl_fits)."""
import math

import numpy as np
import pytest

from rl4llm import kl_divergence
from rl4llm.math.kl_fits import DIRECTIONS, discretised_peak, fit_single_peak, kl_grid, two_peaked

CENTRES = np.arange(0.0, 60.0, 2.0)
WIDTHS = np.arange(1.0, 16.0, 1.0)


def test_discretised_peak_is_a_symmetric_distribution():
    q = discretised_peak(10.0, 2.0, 21)
    assert q.sum() == pytest.approx(1.0, abs=1e-14)
    np.testing.assert_allclose(q, q[::-1], rtol=1e-12)
    assert int(np.argmax(q)) == 10
    # independent route: the normal density's ratio between neighbouring bins
    assert q[11] / q[10] == pytest.approx(math.exp(-1 / 8), rel=1e-12)


def test_two_peaked_has_its_modes_at_the_centres():
    p = two_peaked()
    assert p.sum() == pytest.approx(1.0, abs=1e-12) and p.size == 60
    assert p[20] > p[19] and p[20] > p[21] and p[40] > p[39] and p[40] > p[41]
    assert p[30] < 0.1 * p[40]  # a valley between the peaks
    np.testing.assert_allclose(p[:30].sum(), 0.6, atol=1e-3)  # the mass of the first peak


def test_forward_fit_covers_both_modes_by_matching_moments():
    """Independent route: over all normals, forward KL is minimised by the mean and std of p."""
    p = two_peaked()
    bins = np.arange(p.size)
    mean = p @ bins
    std = math.sqrt(p @ (bins - mean) ** 2)
    centre, width, q = fit_single_peak(p, "forward", np.arange(0.0, 60.0, 1.0), WIDTHS)
    assert abs(centre - mean) <= 1.0 and abs(width - std) <= 1.0
    assert q[30] > q[20] and q[30] > q[40]  # the fitted peak sits in the valley between p's modes


def test_reverse_fit_seeks_the_larger_mode():
    p = two_peaked()
    centre, width, q = fit_single_peak(p, "reverse", CENTRES, WIDTHS)
    assert (centre, width) == (20.0, 3.0)
    # q is then one of p's components, and KL(q || p) ~ -ln 0.6 (the other component adds ~nothing)
    assert kl_divergence(q, p) == pytest.approx(-math.log(0.6), abs=1e-3)


def test_kl_grid_entries_are_the_divergences():
    p = two_peaked()
    fwd, rev = kl_grid(p, "forward", CENTRES, WIDTHS), kl_grid(p, "reverse", CENTRES, WIDTHS)
    assert fwd.shape == rev.shape == (CENTRES.size, WIDTHS.size)
    q = discretised_peak(CENTRES[5], WIDTHS[3], p.size)
    assert fwd[5, 3] == pytest.approx(kl_divergence(p, q))
    assert rev[5, 3] == pytest.approx(kl_divergence(q, p))
    assert np.all(fwd > 0) and np.all(rev > 0)
    assert not np.allclose(fwd, rev)  # KL is not symmetric


def test_fit_of_a_one_peaked_target_recovers_it_in_both_directions():
    p = discretised_peak(24.0, 5.0, 60)
    for direction in DIRECTIONS:
        centre, width, q = fit_single_peak(p, direction, CENTRES, WIDTHS)
        assert (centre, width) == (24.0, 5.0)
        np.testing.assert_allclose(q, p, rtol=1e-12)


@pytest.mark.parametrize("kwargs, name", [
    (dict(centre=np.nan, width=1.0, n_bins=5), "centre"), (dict(centre=1.0, width=0.0, n_bins=5), "width"),
    (dict(centre=1.0, width=-1.0, n_bins=5), "width"), (dict(centre=1.0, width=1.0, n_bins=0), "n_bins"),
    (dict(centre=1.0, width=1.0, n_bins=2.0), "n_bins")])
def test_bad_peak_raises(kwargs, name):
    with pytest.raises(ValueError, match=name):
        discretised_peak(**kwargs)


def test_bad_fit_inputs_raise():
    p = two_peaked()
    with pytest.raises(ValueError, match="direction"):
        kl_grid(p, "sideways", CENTRES, WIDTHS)
    with pytest.raises(ValueError, match=r"\bp\b"):
        fit_single_peak(p * 2, "forward", CENTRES, WIDTHS)
    with pytest.raises(ValueError, match="widths"):
        kl_grid(p, "forward", CENTRES, [])
    with pytest.raises(ValueError, match="width"):
        kl_grid(p, "forward", CENTRES, [0.0])
    with pytest.raises(ValueError, match="weights"):
        two_peaked(weights=(0.5, 0.6))
    with pytest.raises(ValueError, match="centres"):
        two_peaked(centres=(1.0, 2.0, 3.0))
