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


def test_over_prompts_is_the_mean_of_the_per_prompt_estimates_and_their_standard_error():
    from rl4llm.math.pass_at_k import pass_at_k_over_prompts

    counts, n, ks = np.array([0, 3, 8, 1]), 8, np.array([1, 2, 8])
    per_prompt = np.array([[1 - math.comb(n - c, k) / math.comb(n, k) for k in ks] for c in counts])
    mean, se = pass_at_k_over_prompts(counts, n, ks)
    assert np.allclose(mean, per_prompt.mean(axis=0))
    assert np.allclose(se, per_prompt.std(axis=0, ddof=1) / np.sqrt(len(counts)))


def test_over_prompts_is_unbiased_for_the_prompt_sets_pass_at_k():
    from rl4llm.math.pass_at_k import pass_at_k_over_prompts

    rng = np.random.default_rng(1)
    p = rng.beta(0.3, 2.0, size=400)                      # many hard prompts, a few easy ones
    n, ks = 16, np.array([1, 4, 16])
    truth = np.array([pass_at_k(p, int(k)).mean() for k in ks])
    # exactly: the mean over the binomial law of each prompt's estimate, averaged over prompts
    exact_mean = np.array([np.mean([pass_at_k_estimate_mean(q, n, int(k)) for q in p]) for k in ks])
    assert np.allclose(exact_mean, truth, atol=1e-12)
    # Monte Carlo: 300 independent sets of n samples per prompt; their mean within 4 standard errors
    draws = np.array([pass_at_k_over_prompts(rng.binomial(n, p), n, ks)[0] for _ in range(300)])
    se = draws.std(axis=0, ddof=1) / np.sqrt(len(draws))
    assert np.all(np.abs(draws.mean(axis=0) - truth) < 4 * se)
    # the standard error over prompts is the estimate's spread over prompt sets drawn afresh from the same
    # population (prompt-to-prompt spread and sampling noise together), within 20%
    fresh = np.array([pass_at_k_over_prompts(rng.binomial(n, rng.beta(0.3, 2.0, size=400)), n, ks)[0]
                      for _ in range(300)])
    one_se = pass_at_k_over_prompts(rng.binomial(n, p), n, ks)[1]
    assert np.allclose(one_se, fresh.std(axis=0, ddof=1), rtol=0.2)


def test_over_prompts_validation():
    from rl4llm.math.pass_at_k import pass_at_k_over_prompts

    with pytest.raises(ValueError, match=r"counts must be integers in \[0, n = 4\]"):
        pass_at_k_over_prompts(np.array([1, 5]), 4, np.array([1]))
    with pytest.raises(ValueError, match=r"ks must be integers in \[1, n = 4\]"):
        pass_at_k_over_prompts(np.array([1, 2]), 4, np.array([1, 8]))
    with pytest.raises(ValueError, match="counts must be a 1-D array of at least 2 integers"):
        pass_at_k_over_prompts(np.array([1]), 4, np.array([1]))
    with pytest.raises(ValueError, match="counts must be a 1-D array of at least 2 integers"):
        pass_at_k_over_prompts(np.array([1.0, 2.0]), 4, np.array([1]))
    with pytest.raises(ValueError, match="ks must be a non-empty 1-D array of integers >= 1"):
        pass_at_k_over_prompts(np.array([1, 2]), 4, np.array([0, 1]))
    with pytest.raises(ValueError, match="n must be an integer >= 1"):
        pass_at_k_over_prompts(np.array([0, 0]), 0, np.array([1]))
