"""rl4llm.studies.dynamic_sampling: the flat-group law against enumeration and simulation, the run against its
exact path, and validation."""
import itertools

import numpy as np
import pytest

from rl4llm.studies.dynamic_sampling import (draws_per_kept_group, dynamic_sampling_exact, dynamic_sampling_run,
                                            expected_rounds, flat_probability, groups_drawn_per_kept_group)
from rl4llm.toy.five_token import LOGITS, REWARDS
from rl4llm.math.distributions import softmax


def test_flat_probability_by_enumeration():
    pi = softmax(LOGITS)
    for G in (1, 2, 3, 4):
        flat = sum(np.prod(pi[list(g)]) for g in itertools.product(range(5), repeat=G)
                   if len(set(REWARDS[list(g)])) == 1)
        assert np.isclose(flat_probability(pi, REWARDS, G), flat)
    assert np.isclose(flat_probability(pi, REWARDS, 4), 0.8 ** 4 + 0.2 ** 4)
    assert np.isclose(draws_per_kept_group(pi, REWARDS, 4), 1 / (1 - 0.8 ** 4 - 0.2 ** 4))


def test_draws_per_kept_group_by_simulation():
    draws = groups_drawn_per_kept_group(softmax(LOGITS), REWARDS, 4, 4000, seed=0)
    exact = draws_per_kept_group(softmax(LOGITS), REWARDS, 4)
    assert draws.min() >= 1 and abs(draws.mean() - exact) < 4 * draws.std(ddof=1) / np.sqrt(draws.size)
    run = dynamic_sampling_run(True, G=4, n_groups=3, steps=2, seed=0)
    assert run["answers_drawn"][-1] == 4 * run["groups_drawn"].sum() and np.all(run["groups_drawn"] >= 3)


def test_without_dynamic_sampling_every_step_costs_the_batch_and_the_run_tracks_the_exact_path():
    run = dynamic_sampling_run(False, G=4, n_groups=2, steps=5, seed=0)
    assert run["groups_drawn"].tolist() == [2] * 5 and run["answers_drawn"][-1] == 40
    finals = {d: np.mean([dynamic_sampling_run(d, G=4, n_groups=2, steps=5, lr=0.25, seed=s)["J"][-1]
                          for s in range(40)]) for d in (True, False)}
    for d in (True, False):
        assert abs(finals[d] - dynamic_sampling_exact(d, G=4, steps=5, lr=0.25)["J"][-1]) < 0.02
    assert finals[True] > finals[False]


def test_validation():
    with pytest.raises(ValueError, match="G must be an integer >= 1"):
        flat_probability([0.5, 0.5], [0, 1], 0)
    with pytest.raises(ValueError, match="probs and rewards must have the same shape"):
        flat_probability([0.5, 0.5], [0, 1, 1], 2)
    with pytest.raises(ValueError, match="every group is flat"):
        draws_per_kept_group([1.0, 0.0], [1, 0], 3)
    with pytest.raises(ValueError, match="every group is flat"):
        groups_drawn_per_kept_group([1.0, 0.0], [1, 0], 3, 10, seed=0)
    with pytest.raises(ValueError, match="n_kept must be an integer >= 1"):
        groups_drawn_per_kept_group([0.5, 0.5], [1, 0], 3, 0, seed=0)
    with pytest.raises(ValueError, match="G must be an integer >= 2"):
        dynamic_sampling_run(G=1)
    with pytest.raises(ValueError, match="lr must be"):
        dynamic_sampling_exact(lr=-1.0)


@pytest.mark.parametrize("flat", [0.0, 0.5, 2 / 3, 0.75, 0.9])
def test_expected_rounds_matches_simulated_rounds(flat):
    """verl's rounds simulated group by group: rounds of 3 x 64 groups until 64 informative ones are kept."""
    rng, batch = np.random.default_rng(0), 64
    rounds = np.empty(4000, dtype=int)
    for i in range(rounds.size):
        kept = r = 0
        while kept < batch:
            kept += rng.binomial(3 * batch, 1 - flat)
            r += 1
        rounds[i] = r
    se = rounds.std(ddof=1) / np.sqrt(rounds.size)
    assert abs(expected_rounds(flat, batch) - rounds.mean()) < 4 * se + 1e-4      # at 0.5 every simulated step takes 1 round (se 0); E[R] - 1 is 1e-6


def test_expected_rounds_limits():
    assert expected_rounds(0.0, 64) == 1.0                                  # no flat group: one round always suffices
    # one group a round (oversample 1, batch 1): the rounds are geometric with mean 1 / (1 - flat)
    assert np.isclose(expected_rounds(0.8, 1, 1), 1 / 0.2)
    with pytest.raises(ValueError, match="flat"):
        expected_rounds(1.0, 64)
