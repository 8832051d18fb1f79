"""The text of chapters 3 and 5-9 (corrected in issue 23): the numbers its sentences state, each computed
the way the chapter's cell computes it, and an independent route where one exists."""
import math

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from rl4llm import CORRECT, LOGITS, PROMPT, REWARDS, addition_reward, estimator_variance, expected_reward  # noqa: E402
from rl4llm.math.estimators import (gradient_samples, group_estimator_moments, jhat_distribution,  # noqa: E402
                               jhat_study, policy_gradient_by_finite_differences,
                               total_variance_and_standard_error)
from rl4llm.studies.onpolicy import SEED_RUN, learning_curve_band, repeated_band, seed_study  # noqa: E402
from rl4llm.math.statistics import noise_floor, t_quantile, welch_dof  # noqa: E402
from rl4llm.math.two_step import (answer_probabilities, expected_verifier_reward, two_step_policy,  # noqa: E402
                             two_step_policy_gradient)
from rl4llm.viz.sequences import draw_string_probabilities  # noqa: E402
from rl4llm.viz.monte_carlo import JHAT_GROUPS, REFERENCE_RUNS, draw_jhat, reference_spread  # noqa: E402
from rl4llm.toy.verifier import ASCII_WHITESPACE  # noqa: E402


# ----------------------------------------------------------------------------- chapter 3
def test_ch03_log_probability_labels_are_minus_ln_p_like_the_axis():
    fig = plt.figure(figsize=(8, 3.4))
    draw_string_probabilities(fig)
    right = fig.axes[1]
    assert right.get_xlabel().startswith("-ln P (nats)")
    labels = sorted(t.get_text() for t in right.texts)
    assert labels == ["1.8326", "3.9120"]
    probs = answer_probabilities()
    assert [f"{-math.log(probs[a]):.4f}" for a in ("5", "05")] == ["1.8326", "3.9120"]
    plt.close(fig)


# ----------------------------------------------------------------------------- chapter 5
def test_ch05_completions_printed_beside_int():
    for text in ("\u00a05", "5\u2028"):
        assert int(text) == 5 and addition_reward(PROMPT, text) == 0.0
    for text in ("5\x1c", "5\x1f"):             # int rejects them; str.strip() would remove them
        with pytest.raises(ValueError):
            int(text)
        assert text.strip() == "5" and addition_reward(PROMPT, text) == 0.0
    assert int("0_5") == 5 and addition_reward(PROMPT, "0_5") == 0.0       # the summary's example
    assert int("5_0") == 50
    assert addition_reward(PROMPT, "0" * 10**6 + "5") == 1.0
    assert sorted(ASCII_WHITESPACE) == sorted(" \t\n\r\x0c\x0b")


def test_ch05_tree_gradient_agrees_with_finite_differences():
    policy = two_step_policy()
    exact = two_step_policy_gradient(policy)
    numeric = policy_gradient_by_finite_differences(expected_verifier_reward, policy, h=1e-6)
    assert set(numeric) == set(exact) == {"", "5", "0"}
    for context in exact:
        assert np.max(np.abs(numeric[context] - exact[context])) < 1e-8
    np.testing.assert_allclose(np.round(numeric[""], 4), [0.002, -0.072, 0.124, -0.036, -0.018])
    np.testing.assert_allclose(np.round(numeric["5"], 4), [0.032, -0.032])
    np.testing.assert_allclose(np.round(numeric["0"], 4), [0.016, -0.016])


def test_policy_gradient_by_finite_differences_on_a_quadratic_and_bad_inputs():
    f = lambda policy: float(np.sum(policy["a"] ** 2) + 3 * policy["b"][0])      # noqa: E731
    g = policy_gradient_by_finite_differences(f, {"a": [1.0, -2.0], "b": [0.5]})
    np.testing.assert_allclose(g["a"], [2.0, -4.0], atol=1e-6)
    np.testing.assert_allclose(g["b"], [3.0], atol=1e-6)
    with pytest.raises(ValueError, match="objective"):
        policy_gradient_by_finite_differences(3.0, {"a": [1.0]})
    with pytest.raises(ValueError, match="policy"):
        policy_gradient_by_finite_differences(f, {})
    with pytest.raises(ValueError, match="policy"):
        policy_gradient_by_finite_differences(f, [1.0, 2.0])
    with pytest.raises(ValueError, match="policy"):
        policy_gradient_by_finite_differences(f, {"a": [[1.0]]})
    with pytest.raises(ValueError, match="h"):
        policy_gradient_by_finite_differences(f, {"a": [1.0]}, h=0.0)


# ----------------------------------------------------------------------------- chapter 6
def test_ch06_jhat_bars_with_standard_errors():
    assert JHAT_GROUPS == 20_000
    study = jhat_study(4, 0.2, JHAT_GROUPS, seed=0)
    assert [round(f, 4) for f in study["frequencies"]] == [0.4104, 0.4138, 0.1492, 0.0256, 0.0010]
    assert [round(p, 4) for p in study["law"]] == [0.4096, 0.4096, 0.1536, 0.0256, 0.0016]
    assert [round(s, 4) for s in study["frequency_standard_errors"]] == [0.0035, 0.0035, 0.0025, 0.0011, 0.0003]
    assert [f"{z:+.1f}" for z in study["z"]] == ["+0.2", "+1.2", "-1.7", "+0.0", "-2.1"]
    summary = []
    for G in (1, 4, 64):
        s = jhat_study(G, 0.2, JHAT_GROUPS, seed=0)
        seen = s["law"] * JHAT_GROUPS >= 5
        z = s["z"][seen]
        summary.append((int(seen.sum()), round(float(np.abs(z).max()), 1), int(np.sum(np.abs(z) > 2))))
    assert summary == [(2, 0.4, 0), (5, 2.1, 1), (22, 2.4, 2)]


def test_jhat_frequency_standard_errors_by_redrawing():
    """Independent route: the spread of a bar over 400 seeds is the standard error the study states."""
    shares = np.array([jhat_study(4, 0.2, 2000, seed=s)["frequencies"] for s in range(400)])
    se = jhat_study(4, 0.2, 2000, seed=0)["frequency_standard_errors"]
    np.testing.assert_allclose(shares.std(axis=0, ddof=1)[:4], se[:4], rtol=0.15)
    np.testing.assert_allclose(shares.mean(axis=0), jhat_distribution(0.2, 4)[1], atol=4 * se.max() / 20)
    with pytest.raises(ValueError, match="n_groups"):
        jhat_study(4, 0.2, 0)


def test_draw_jhat_draws_two_standard_error_ticks():
    fig = plt.figure()
    draw_jhat(fig, G=4)
    ticks = [c for c in fig.axes[0].collections if len(c.get_segments()) == 5]
    assert len(ticks) == 1
    study = jhat_study(4, 0.2, JHAT_GROUPS, seed=0)
    for (x0, y0), (x1, y1) in [seg for seg in ticks[0].get_segments()]:
        assert x0 == x1
    lengths = [seg[1][1] - seg[0][1] for seg in ticks[0].get_segments()]
    np.testing.assert_allclose(lengths, 4 * study["frequency_standard_errors"])
    plt.close(fig)


@pytest.fixture(scope="module")
def pool():
    return seed_study(4096, seed=1, **SEED_RUN)


def test_ch06_one_sigma_for_text_and_figure(pool):
    assert REFERENCE_RUNS == 4096
    assert round(pool["std"], 4) == 0.0951
    assert reference_spread(1) == pool["std"]


def test_ch06_five_runs_against_sigma(pool):
    five = seed_study(5, seed=0, **SEED_RUN)
    assert round(five["std"], 4) == 0.0644
    sigma = pool["std"]
    assert round(five["std"] / sigma, 2) == 0.68
    fives = pool["finals"][:4095].reshape(819, 5).std(axis=1, ddof=1)
    assert round(fives.mean(), 4) == 0.0871 and round(fives.std(ddof=1), 4) == 0.0366


def test_ch06_welch_degrees_of_freedom_and_t(pool):
    equal = [welch_dof(np.arange(n), np.arange(n)) for n in (2, 3, 4, 8, 30)]
    assert equal == pytest.approx([2 * n - 2 for n in (2, 3, 4, 8, 30)], rel=1e-12)
    assert [round(t_quantile(0.975, d), 2) for d in equal] == [4.3, 2.78, 2.45, 2.14, 2.0]
    sigma = pool["std"]
    out = {}
    for n in (4, 64):
        a = seed_study(n, seed=20, **SEED_RUN)["finals"]
        b = seed_study(n, seed=21, **{**SEED_RUN, "G": 8})["finals"]
        dof = welch_dof(b, a)
        sets = pool["finals"].reshape(-1, n).std(axis=1, ddof=1)
        sd_a = a.std(ddof=1)
        share = np.mean(sets >= sd_a) if sd_a > sigma else np.mean(sets <= sd_a)
        out[n] = (round(dof, 2), round(t_quantile(0.975, dof), 2), round(sd_a / sigma, 2), round(float(share), 3),
                  round(noise_floor(b, a), 4))
        # the floor is Welch's t times the standard error of the difference
        se = math.sqrt(a.var(ddof=1) / n + b.var(ddof=1) / n)
        assert noise_floor(b, a) == pytest.approx(t_quantile(0.975, dof) * se)
    assert out[4] == (3.34, 3.01, 1.51, 0.094, 0.2218)
    assert out[64] == (107.78, 1.98, 0.75, 0.0, 0.0210)


# ----------------------------------------------------------------------------- chapter 7
def test_ch07_the_second_column_is_the_first_read_twice():
    samples = gradient_samples(LOGITS, REWARDS, n=100_000, seed=0)
    np.testing.assert_allclose(samples[:, 1], -0.5 * samples[:, CORRECT], rtol=0, atol=1e-12)


# ----------------------------------------------------------------------------- chapter 8
def test_ch08_four_independent_monte_carlo_checks():
    rows = (((REWARDS, 0.0), "-0.9"), ((REWARDS, 0.2), "-0.8"), ((REWARDS + 10, 0.0), "+1.6"),
            ((REWARDS + 10, 10.2), "+0.2"))
    for seed, ((r, b), z_text) in enumerate(rows, start=1):
        exact = estimator_variance(LOGITS, r, b)
        mc, se = total_variance_and_standard_error(gradient_samples(LOGITS, r, 200_000, seed=seed, baseline=b))
        z = (mc - exact) / se
        assert f"{z:+.1f}" == z_text and abs(z) < 2


def test_ch08_ratios_for_a_group_of_eight():
    r10 = REWARDS + 10
    b10 = expected_reward(LOGITS, r10)
    constant = estimator_variance(LOGITS, r10, 0.0, 8) / estimator_variance(LOGITS, r10, b10, 8)
    single = estimator_variance(LOGITS, r10, 0.0) / estimator_variance(LOGITS, r10, b10)
    assert round(constant) == round(single) == 788
    own = (group_estimator_moments(LOGITS, r10, 8, 0.0)["total_variance"]
           / group_estimator_moments(LOGITS, r10, 8, "mean")["total_variance"])
    assert round(own) == 843
    # independent route for the constant baseline: enumeration of groups gives variance / G
    assert group_estimator_moments(LOGITS, r10, 8, 0.0)["total_variance"] == pytest.approx(
        estimator_variance(LOGITS, r10, 0.0, 8))


# ----------------------------------------------------------------------------- chapter 9
def test_ch09_where_the_band_is_widest():
    band = learning_curve_band(G=8, lr=1.0, steps=30, n_seeds=100, seed=0)
    widths = band["high"] - band["low"]
    widest = np.flatnonzero(widths.round(4) == widths.round(4).max())
    assert widest.tolist() == [7, 8] and round(widths.max(), 4) == 0.1687
    assert [round(band["median"][t], 4) for t in (7, 8)] == [0.5806, 0.6464]
    redrawn = repeated_band(G=8, lr=1.0, steps=30, n_repeats=30, n_seeds=100, seed=1)
    steps, counts = np.unique(np.argmax(redrawn["width"], axis=1), return_counts=True)
    assert dict(zip(steps.tolist(), counts.tolist())) == {5: 2, 6: 11, 7: 14, 8: 3}
    wobble = [round(redrawn["median"][:, t].std(ddof=1), 4) for t in (5, 10, 20, 30)]
    assert wobble == [0.0073, 0.0055, 0.0021, 0.0014]


SETTINGS = {"G = 8, lr = 0.5": (8, 0.5), "G = 8, lr = 1": (8, 1.0), "G = 8, lr = 2": (8, 2.0),
            "G = 8, lr = 4": (8, 4.0), "G = 4, lr = 1": (4, 1.0), "G = 16, lr = 1": (16, 1.0)}


@pytest.fixture(scope="module")
def settings_tables():
    return {name: repeated_band(G, lr, steps=10, n_repeats=30, n_seeds=100, seed=100 * k)
            for k, (name, (G, lr)) in enumerate(SETTINGS.items())}


def test_ch09_settings_use_disjoint_seeds_and_every_verdict_is_real(settings_tables):
    medians = {name: t["median"][:, 10] for name, t in settings_tables.items()}
    assert round(medians["G = 8, lr = 1"].mean(), 3) == 0.749
    widths5 = {name: t["width"][:, 5] for name, t in settings_tables.items()}
    assert [round(widths5[n].mean(), 3) for n in ("G = 8, lr = 1", "G = 8, lr = 2")] == [0.155, 0.190]
    assert [round(widths5[n].std(ddof=1), 3) for n in ("G = 8, lr = 1", "G = 8, lr = 2")] == [0.010, 0.018]
    assert round(widths5["G = 8, lr = 2"].mean() - widths5["G = 8, lr = 1"].mean(), 3) == 0.035
    pairs = [("G = 8, lr = 1", "G = 8, lr = 0.5", ("median", 10), ("width", 5)),
             ("G = 8, lr = 2", "G = 8, lr = 1", ("median", 10), ("width", 5)),
             ("G = 8, lr = 4", "G = 8, lr = 2", ("median", 10), ("width", 5)),
             ("G = 8, lr = 1", "G = 4, lr = 1", ("width", 5), ("width", 10)),
             ("G = 16, lr = 1", "G = 8, lr = 1", ("width", 5), ("width", 10))]
    for b, a, *compared in pairs:
        for key, step in compared:
            x, y = settings_tables[b][key][:, step], settings_tables[a][key][:, step]
            assert abs(x.mean() - y.mean()) > noise_floor(x, y), (b, a, key, step)
    # the same seeds for two settings would correlate their summaries; disjoint seeds do not share draws
    shared = [repeated_band(8, lr, steps=10, n_repeats=30, n_seeds=100, seed=0)["median"][:, 10] for lr in (1.0, 2.0)]
    assert np.corrcoef(*shared)[0, 1] > 0.4
    one_figure = [learning_curve_band(8, lr, steps=10, seed=0) for lr in (1.0, 2.0)]
    printed = [round(f["high"][5] - f["low"][5], 4) for f in one_figure]      # the cell prints them rounded
    assert printed == [0.1495, 0.1647] and round(printed[1] - printed[0], 4) == 0.0152 < 0.035 / 2
