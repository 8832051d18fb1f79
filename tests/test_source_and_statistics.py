"""The book's helpers for showing library code and judging differences over seeds."""
import math

import numpy as np
import pytest

from rl4llm import gae, group_advantages, softmax
from rl4llm.math.statistics import (false_alarm_rate_of_two_se, noise_floor, seeds_needed, standard_error, t_quantile,
                               verdict, welch_dof)
from rl4llm.viz.source import show_source


def test_source_is_shown_exactly_as_written_with_its_declared_checks():
    import inspect
    import textwrap

    text = show_source(group_advantages).text
    assert text == textwrap.dedent(inspect.getsource(group_advantages))
    assert text.startswith("@checked(") and "def group_advantages(" in text         # the ranges, then the signature
    assert '"""A_i = (r_i - mean_j r_j)' in text and "raise ValueError" not in text  # the body is the formula
    compile(show_source(gae).text, "gae", "exec")                                    # valid Python
    listing = show_source(softmax)._repr_markdown_()
    assert listing == "```python\n" + show_source(softmax).text.rstrip() + "\n```\n"
    assert "<" not in listing.split("\n", 1)[0]                 # a fence, not a highlighter's HTML


def test_a_listing_holding_backticks_gets_a_longer_fence():
    from rl4llm.viz.source import show_code
    assert show_code("x = '```'", "python")._repr_markdown_() == "````python\nx = '```'\n````\n"
    assert repr(show_code("a: 1\n", "yaml")) == "a: 1\n"


@pytest.mark.parametrize("p, dof, expected", [(0.975, 1, 12.7062), (0.975, 4, 2.7764), (0.975, 10, 2.2281),
                                              (0.95, 30, 1.6973), (0.975, 1e6, 1.9600), (0.5, 3, 0.0)])
def test_t_quantiles_match_the_table(p, dof, expected):
    assert t_quantile(p, dof) == pytest.approx(expected, abs=1e-4)
    assert t_quantile(1 - p, dof) == pytest.approx(-expected, abs=1e-4)


def test_noise_floor_is_welchs_t_times_the_standard_error_of_the_difference():
    a, b = [0.0, 1.0, 2.0], [1.0, 1.5, 2.0]
    se = math.sqrt(1.0 / 3 + 0.25 / 3)
    assert welch_dof(a, b) == pytest.approx((1 / 3 + 0.25 / 3) ** 2 / ((1 / 3) ** 2 / 2 + (0.25 / 3) ** 2 / 2))
    assert noise_floor(a, b) == pytest.approx(t_quantile(0.975, welch_dof(a, b)) * se)
    assert standard_error(a) == pytest.approx(1 / math.sqrt(3))
    assert "not distinguishable" in verdict(a, b) and "a real difference" in verdict([5.0, 5.1], [0.0, 0.1])


def test_the_floor_calls_noise_a_difference_at_most_5_percent_of_the_time_and_two_se_more():
    """Independent route: simulate many pairs of 3-seed runs of the same setting."""
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(20000, 3)), rng.normal(size=(20000, 3))
    alarms = np.mean([abs(x.mean() - y.mean()) > noise_floor(x, y) for x, y in zip(a[:4000], b[:4000])])
    assert 0.02 < alarms <= 0.05 + 0.01      # Welch is slightly conservative with 3 seeds
    se = np.sqrt(a.var(axis=1, ddof=1) / 3 + b.var(axis=1, ddof=1) / 3)
    two_se = np.mean(np.abs(a.mean(axis=1) - b.mean(axis=1)) > 2 * se)
    assert two_se == pytest.approx(false_alarm_rate_of_two_se(3), abs=0.01)
    assert false_alarm_rate_of_two_se(3) > 0.1


@pytest.mark.parametrize("call, name", [(lambda: noise_floor([1.0], [1.0, 2.0]), "a"),
                                        (lambda: noise_floor([1.0, 2.0], [[1.0, 2.0]]), "b"),
                                        (lambda: t_quantile(1.0, 3), "p"), (lambda: t_quantile(0.9, 0), "dof"),
                                        (lambda: false_alarm_rate_of_two_se(1), "n"),
                                        (lambda: noise_floor([1.0, 2.0], [1.0, 2.0], level=0.0), "level")])
def test_bad_inputs(call, name):
    with pytest.raises(ValueError, match=name):
        call()


@pytest.mark.parametrize("s, expected", [(0.03, 19), (0.05, 50)])
def test_seeds_needed_is_the_first_n_whose_floor_clears_the_difference(s, expected):
    """Chapter 15's exercise: 8 s^2 / 0.02^2 seeds would do with a z of 2; the t quantile adds a few."""
    n = seeds_needed(s, 0.02)
    assert n == expected
    floor = lambda k: t_quantile(0.975, 2 * k - 2) * s * math.sqrt(2 / k)
    assert floor(n) < 0.02 <= floor(n - 1)
    with pytest.raises(ValueError, match="difference"):
        seeds_needed(0.03, 0.0)
