"""Tests for rl4llm.math.credit: returns, TD errors and GAE (chapter 12)."""
import numpy as np
import pytest

from rl4llm.math.credit import (EXAMPLE_REWARDS, EXAMPLE_VALUES, advantage_table, discounted_returns, gae,
                           group_baseline_advantages, td_errors)

#: Chapter 12's made-up episode: nothing until a win at the end, and a critic along the way.
REWARDS = [0.0, 0.0, 1.0]
VALUES = [0.5, 0.6, 0.7]


def direct_gae(rewards, values, gamma, lam, last_value=0.0):
    """A_t = sum_l (gamma lam)^l delta_{t+l}, with delta written out independently of the library."""
    r, v = np.asarray(rewards, float), np.asarray(values, float)
    v_next = np.append(v[1:], last_value)
    delta = [r[t] + gamma * v_next[t] - v[t] for t in range(r.size)]
    return np.array([sum((gamma * lam) ** l * delta[t + l] for l in range(r.size - t)) for t in range(r.size)])


def test_td_errors_of_the_text():
    assert np.allclose(td_errors(REWARDS, VALUES), [0.1, 0.1, 0.3])


def test_advantage_table_of_the_text():
    assert np.allclose(gae(REWARDS, VALUES, lam=0.0), [0.1, 0.1, 0.3])
    assert np.allclose(gae(REWARDS, VALUES, lam=0.5), [0.225, 0.25, 0.3])
    assert np.allclose(gae(REWARDS, VALUES, lam=1.0), [0.5, 0.4, 0.3])
    step0 = [gae(REWARDS, VALUES, lam=lam)[0] for lam in (0.0, 0.5, 1.0)]
    assert np.allclose(step0, [0.1, 0.225, 0.5])
    # the last step has no future to fold in: delta_2 = 0.3 for every lambda and gamma
    for lam in np.linspace(0, 1, 11):
        for gamma in (0.5, 0.9, 1.0):
            last = gae(REWARDS, VALUES, gamma, lam)[-1]
            assert last == pytest.approx(td_errors(REWARDS, VALUES, gamma)[-1]) == pytest.approx(0.3)


def test_monte_carlo_check():
    # G_0 - V(s_0) = 1 - 0.5 = 0.5 equals GAE at lambda = 1
    returns = discounted_returns(REWARDS)
    assert np.allclose(returns, [1.0, 1.0, 1.0])
    assert returns[0] - VALUES[0] == pytest.approx(0.5)
    assert np.allclose(returns - VALUES, gae(REWARDS, VALUES, lam=1.0))


def test_gae_against_direct_sum_random_episodes():
    rng = np.random.default_rng(0)
    for _ in range(20):
        T = int(rng.integers(1, 9))
        r, v = rng.normal(size=T), rng.normal(size=T)
        gamma, lam, last = rng.uniform(0.01, 1.0), rng.uniform(0.0, 1.0), rng.normal()
        assert np.allclose(gae(r, v, gamma, lam, last), direct_gae(r, v, gamma, lam, last))
        # lambda = 0 is the TD error; lambda = 1 is the discounted return minus V (telescoping)
        assert np.allclose(gae(r, v, gamma, 0.0, last), td_errors(r, v, gamma, last))
        assert np.allclose(gae(r, v, gamma, 1.0, last), discounted_returns(r, gamma, last) - v)


def test_discounted_returns_direct():
    r = np.array([1.0, -2.0, 0.5, 3.0])
    gamma = 0.9
    expected = [sum(gamma ** l * r[t + l] for l in range(4 - t)) + gamma ** (4 - t) * 2.0 for t in range(4)]
    assert np.allclose(discounted_returns(r, gamma, last_value=2.0), expected)


def test_advantage_table():
    assert np.allclose(EXAMPLE_REWARDS, REWARDS) and np.allclose(EXAMPLE_VALUES, VALUES)
    table = advantage_table(REWARDS, VALUES)
    assert np.allclose(table["delta"], [0.1, 0.1, 0.3])
    assert np.allclose(table["advantages"], [[0.1, 0.1, 0.3], [0.225, 0.25, 0.3], [0.5, 0.4, 0.3]])
    assert np.allclose(table["monte_carlo"], [0.5, 0.4, 0.3])
    gamma_table = advantage_table(REWARDS, VALUES, gamma=0.9, lams=[0.3])
    assert np.allclose(gamma_table["advantages"][0], direct_gae(REWARDS, VALUES, 0.9, 0.3))
    with pytest.raises(ValueError, match="lam"):
        advantage_table(REWARDS, VALUES, lams=[0.5, 2.0])


def test_grpo_flat_credit():
    flat = group_baseline_advantages(1.0, 0.5, 3)
    assert np.allclose(flat, [0.5, 0.5, 0.5])
    assert group_baseline_advantages(0.0, 0.25, 1).tolist() == [-0.25]


@pytest.mark.parametrize("lam", [-0.1, 1.1, float("nan"), "0.5"])
def test_bad_lambda(lam):
    with pytest.raises(ValueError, match="lam"):
        gae(REWARDS, VALUES, 1.0, lam)


@pytest.mark.parametrize("gamma", [0.0, -0.5, 1.01, float("inf")])
def test_bad_gamma(gamma):
    with pytest.raises(ValueError, match="gamma"):
        td_errors(REWARDS, VALUES, gamma)
    with pytest.raises(ValueError, match="gamma"):
        gae(REWARDS, VALUES, gamma, 0.5)
    with pytest.raises(ValueError, match="gamma"):
        discounted_returns(REWARDS, gamma)


def test_bad_shapes_and_values():
    with pytest.raises(ValueError, match="rewards"):
        td_errors([0.0, 1.0], VALUES)
    with pytest.raises(ValueError, match="rewards"):
        gae([[0.0, 1.0]], [[0.5, 0.6]])
    with pytest.raises(ValueError, match="values"):
        gae(REWARDS, [0.5, float("nan"), 0.7])
    with pytest.raises(ValueError, match="rewards"):
        discounted_returns([])
    with pytest.raises(ValueError, match="last_value"):
        gae(REWARDS, VALUES, last_value=float("inf"))
    with pytest.raises(ValueError, match="length"):
        group_baseline_advantages(1.0, 0.5, 0)
