"""rl4llm.math.pass_at_k: the exact value, the unbiased estimator (exact mean over the binomial law and Monte
Carlo), the plug-in estimate's bias, and validation."""
import math

import numpy as np
import pytest

from rl4llm.math.pass_at_k import pass_at_k, pass_at_k_estimate, pass_at_k_estimate_mean


def test_exact_values():
    assert np.isclose(pass_at_k(0.2, 1), 0.2) and np.isclose(pass_at_k(0.2, 8), 1 - 0.8 ** 8)
    assert np.allclose(pass_at_k([0.0, 1.0], 5), [0.0, 1.0])


def test_the_estimator_is_the_binomial_ratio_and_unbiased():
    for n, c, k in ((10, 3, 4), (16, 0, 8), (16, 12, 8), (5, 5, 5)):
        assert np.isclose(pass_at_k_estimate(n, c, k), 1 - math.comb(n - c, k) / math.comb(n, k))
    for p in (0.05, 0.2, 0.7):
        assert np.isclose(pass_at_k_estimate_mean(p, 16, 4), pass_at_k(p, 4), atol=1e-12)
    rng = np.random.default_rng(0)
    draws = np.array([pass_at_k_estimate(16, int(c), 4) for c in rng.binomial(16, 0.2, size=20000)])
    assert abs(draws.mean() - pass_at_k(0.2, 4)) < 4 * draws.std(ddof=1) / np.sqrt(draws.size)
    plug_in = sum(math.comb(16, c) * 0.2 ** c * 0.8 ** (16 - c) * (1 - (1 - c / 16) ** 4) for c in range(17))
    assert plug_in < pass_at_k(0.2, 4) - 0.01


def test_validation():
    with pytest.raises(ValueError, match=r"p must be a probability in \[0, 1\]"):
        pass_at_k(1.5, 2)
    with pytest.raises(ValueError, match="k must be an integer >= 1"):
        pass_at_k(0.5, 0)
    with pytest.raises(ValueError, match=r"c must be an integer in \[0, n = 4\]"):
        pass_at_k_estimate(4, 5, 2)
    with pytest.raises(ValueError, match=r"k must be an integer in \[1, n = 4\]"):
        pass_at_k_estimate(4, 1, 5)
