"""Chapter 18's checks: each passes the library's number, and gives each typical wrong answer, written here
the way a student would compute it, the right diagnosis."""
import math

import numpy as np
import pytest

from rl4llm import draws_per_kept_group, pass_at_k_estimate, sequence_ratio
from rl4llm.exercises import EXERCISES, SPECS, answer_key, check
from rl4llm.exercises._core import MALFORMED

CHAPTER_18 = ("ex-ch18-gspo-ratio", "ex-ch18-draws", "ex-ch18-pass-at-k", "ex-ch18-crossing", "ex-ch18-prefilter",
              "ex-ch18-cispo-weights",
              "ex-ch18-holm")


def test_ids_and_chapter():
    assert {k: EXERCISES[k] for k in CHAPTER_18} == dict.fromkeys(CHAPTER_18, 18)


@pytest.mark.parametrize("exercise,mistake", [(e, i) for e in CHAPTER_18 for i in range(4)])
def test_every_listed_mistake_gets_its_own_message(exercise, mistake):
    wrong, explanation = SPECS[exercise].mistakes[mistake]
    assert check(exercise, wrong) == f"Not yet: {explanation}."


@pytest.mark.parametrize("exercise", CHAPTER_18)
def test_the_value_passes_text_is_refused_and_the_answer_key_holds_it(exercise):
    assert len(SPECS[exercise].mistakes) >= 4
    assert check(exercise, SPECS[exercise].value).startswith("Correct:")
    assert check(exercise, "abc") == MALFORMED and exercise in answer_key()


def test_values_from_the_library_and_by_hand():
    log_rho = np.log([[1.6, 0.9]])
    assert np.isclose(SPECS["ex-ch18-gspo-ratio"].value, sequence_ratio(log_rho, 0 * log_rho, 1 + 0 * log_rho)[0])
    assert np.isclose(SPECS["ex-ch18-gspo-ratio"].value, 1.2)                      # sqrt(1.44)
    assert np.isclose(SPECS["ex-ch18-draws"].value, draws_per_kept_group([0.2, 0.8], [1, 0], 3))
    assert np.isclose(SPECS["ex-ch18-draws"].value, 1 / (1 - 0.2 ** 3 - 0.8 ** 3))
    assert np.isclose(SPECS["ex-ch18-pass-at-k"].value, pass_at_k_estimate(10, 2, 4))
    assert np.isclose(SPECS["ex-ch18-pass-at-k"].value, 1 - 70 / 210)
    assert np.isclose(SPECS["ex-ch18-cispo-weights"].value, 1.28 + 0.9 + 1.1)     # the 1.3 token capped at 1.28
    assert np.isclose(SPECS["ex-ch18-holm"].value, 4 * 0.0286)                    # the smallest of four p-values


def test_students_slips_are_named():
    # each slip computed the way a student would, not read from the spec
    assert "product of the token ratios" in check("ex-ch18-gspo-ratio", 1.6 * 0.9)
    assert "arithmetic mean" in check("ex-ch18-gspo-ratio", (1.6 + 0.9) / 2)
    assert "mean log-ratio itself" in check("ex-ch18-gspo-ratio", (math.log(1.6) + math.log(0.9)) / 2)
    assert "upside down" in check("ex-ch18-gspo-ratio", math.sqrt(1 / 1.6 * 1 / 0.9))
    assert "only the all-wrong groups" in check("ex-ch18-draws", 1 / (1 - 0.8 ** 3))
    assert "P(flat) itself" in check("ex-ch18-draws", 0.8 ** 3 + 0.2 ** 3)
    assert "P(a group is kept)" in check("ex-ch18-draws", 1 - 0.8 ** 3 - 0.2 ** 3)
    assert "counts answers" in check("ex-ch18-draws", 3 / (1 - 0.8 ** 3 - 0.2 ** 3))
    assert "plugs c / n" in check("ex-ch18-pass-at-k", 1 - 0.8 ** 4)
    assert "pass@k is 1 minus it" in check("ex-ch18-pass-at-k", math.comb(8, 4) / math.comb(10, 4))
    assert "that is pass@1" in check("ex-ch18-pass-at-k", 2 / 10)
    assert "union bound" in check("ex-ch18-pass-at-k", 4 * 2 / 10)
    assert "raw token ratios" in check("ex-ch18-cispo-weights", 1.3 + 0.9 + 1.1)
    assert "PPO's clip" in check("ex-ch18-cispo-weights", 0.9 + 1.1)
    assert "1 + eps = 1.2" in check("ex-ch18-cispo-weights", 1.2 + 0.9 + 1.1)
    assert "caps at 0.28" in check("ex-ch18-cispo-weights", 3 * 0.28)
    assert "unadjusted" in check("ex-ch18-holm", 0.0286)
    assert "m - 1 = 3" in check("ex-ch18-holm", 3 * 0.0286)
    assert "divides by 4" in check("ex-ch18-holm", 0.0286 / 4)
    assert "largest p by 4" in check("ex-ch18-holm", 4 * 0.5358)
    assert "capped at 1" in check("ex-ch18-holm", min(1.0, 4 * 0.5358))


def test_the_coding_exercise_passes_the_library_and_names_each_slip():
    assert EXERCISES["pass_at_k_estimate"] == 18
    assert check("pass_at_k_estimate", pass_at_k_estimate).startswith("Correct:")
    for explanation, mistake in SPECS["pass_at_k_estimate"].mistakes:
        assert check("pass_at_k_estimate", mistake) == f"Not yet: {explanation}."


def _student_with_a_loop(n, c, k):
    """A right answer written another way: the product form, 1 - prod_{i=n-c+1}^{n} (1 - k / i)."""
    if n - c < k:
        return 1.0
    out = 1.0
    for i in range(n - c + 1, n + 1):
        out *= 1 - k / i
    return 1 - out


def test_a_students_variants_and_crashes():
    assert check("pass_at_k_estimate", _student_with_a_loop).startswith("Correct:")
    assert "plugs c / n" in check("pass_at_k_estimate", lambda n, c, k: 1 - (1 - c / n) ** k)
    assert "swapped" in check("pass_at_k_estimate", lambda n, c, k: 1 - math.comb(c, k) / math.comb(n, k))
    assert check("pass_at_k_estimate", lambda n, c, k: None).startswith("Not yet: your function returned None")
    assert check("pass_at_k_estimate", lambda n, c, k: 1 / 0).startswith("Not yet: your function raised")


def test_the_product_weight_experiments_numbers():
    """ex-ch18-length's solution: from the printed 1 + chi^2 = 1.00943, L = ln 10 / ln 1.00943 = 245.3, so 246
    tokens, where 1.00943^246 = 10.06 (10.07 unrounded; the rounded 1.0094 gives 246.1, so 247); with the printed
    sum pi^4 / pi_old^3 = 1.0616, one answer's w^2 has a relative variance of about 24 000 there (2.4 million
    answers for a 10% standard error); at L = 6 the Monte Carlo mean of w^2 lies within two standard errors
    of the table's exact 1.0580."""
    from rl4llm import LOGITS, chain_sequences, sample_chain, softmax

    pi, old = softmax(chain_sequences(1, 2, 0.5).logp[:, 0]), softmax(LOGITS)
    m2, m4 = float(pi @ (pi / old)), float(pi ** 4 @ (1 / old ** 3))
    assert (round(m2, 5), round(m4, 4)) == (1.00943, 1.0616)
    assert round(math.log(10) / math.log(1.00943), 1) == 245.3
    assert round(1.00943 ** 246, 2) == 10.06                                 # the five-decimal route the solution takes
    L = math.ceil(math.log(10) / math.log(m2))
    assert (L, round(m2 ** L, 2)) == (246, 10.07)
    assert round(math.log(10) / math.log(1.0094), 1) == 246.1 and math.ceil(math.log(10) / math.log(1.0094)) == 247
    relative = (m4 / m2 ** 2) ** L - 1
    assert 24_000 < relative < 24_500 and round(relative / 0.01, -5) == 2_400_000
    assert 24_000 < (1.0616 / 1.00943 ** 2) ** 246 - 1 < 24_500            # with the digits the solution writes
    # the experiment's answer box: L, and the slips told apart (the four-decimal 1 + chi^2, not rounding up)
    assert SPECS["ex-ch18-length"].value == L and check("ex-ch18-length", "246").startswith("Correct:")
    assert "four-decimal" in check("ex-ch18-length", math.ceil(math.log(10) / math.log(1.0094)))
    assert "round ln 10 / ln(1 + chi^2) up" in check("ex-ch18-length", math.floor(math.log(10) / math.log(m2)))
    assert "mixes logarithms" in check("ex-ch18-length", math.log10(10) / math.log(m2))
    task = sample_chain(6, 20_000, seed=0, steps=2, lr=0.5)
    w2 = np.exp((task.mask * (task.logp - task.logp_old)).sum(axis=1)) ** 2
    mean, se = w2.mean(), w2.std(ddof=1) / math.sqrt(len(w2))
    assert round(m2 ** 6, 4) == 1.0580 and abs(mean - m2 ** 6) < 2 * se


def test_the_group_mean_dynamic_sampling_experiments_claims():
    """ex-ch18-group-mean's solution: with Dr. GRPO's advantage, dynamic sampling ends with the higher J by more
    than three noise floors (a real difference by verdict), each mean within 3 standard errors of its exact
    path, and the dynamic batch draws more than its 2 groups at every step, on average over the 20 seeds."""
    from rl4llm import dynamic_sampling_exact, dynamic_sampling_run, verdict
    from rl4llm.math.statistics import noise_floor, standard_error

    from rl4llm.studies.dynamic_sampling import CHAPTER_18_RUN

    settings = dict(G=4, n_groups=2, steps=15, lr=0.25, advantage="group_mean")
    assert CHAPTER_18_RUN == {k: settings[k] for k in ("G", "n_groups", "steps", "lr")}
    runs = {d: [dynamic_sampling_run(dynamic=d, seed=s, **settings) for s in range(20)] for d in (True, False)}
    final = {d: np.array([r["J"][-1] for r in rs]) for d, rs in runs.items()}
    exact = {d: float(np.asarray(dynamic_sampling_exact(dynamic=d, **settings)["J"])[-1]) for d in (True, False)}
    assert final[True].mean() - final[False].mean() > 3 * noise_floor(final[True], final[False])
    assert "a real difference" in verdict(final[True], final[False])
    assert all(abs(final[d].mean() - exact[d]) < 3 * standard_error(final[d]) for d in final)
    assert np.all(np.mean([r["groups_drawn"] for r in runs[True]], axis=0) > 2)
    assert np.all(np.array([r["groups_drawn"] for r in runs[False]]) == 2)
    # the experiment's answer box: the exact paths' gain (0.4138 - 0.3367, the chapter's printed paths), which the
    # 20 seeds' gain estimates within 3 of its standard errors; the seeds' gain and GRPO's advantage are slips
    gain = exact[True] - exact[False]
    assert SPECS["ex-ch18-group-mean"].value == pytest.approx(gain) and round(gain, 4) == round(0.4138 - 0.3367, 4)
    seeds_gain = final[True].mean() - final[False].mean()
    assert abs(seeds_gain - gain) < 3 * math.hypot(standard_error(final[True]), standard_error(final[False]))
    assert "20 seeds' means" in check("ex-ch18-group-mean", seeds_gain)
    grpo = [float(np.asarray(dynamic_sampling_exact(dynamic=d, **{**settings, "advantage": "grpo"})["J"])[-1])
            for d in (True, False)]
    assert "GRPO's advantage" in check("ex-ch18-group-mean", grpo[0] - grpo[1])


def test_the_pass_at_k_checker_tries_the_edges():
    """A function right everywhere except at an edge (no right sample, all right, k = 1, k = n) is caught there."""
    import math
    from rl4llm.exercises import check

    def right(n, c, k):
        return 1.0 - math.comb(n - c, k) / math.comb(n, k)
    assert check("ex-ch18-write-pass-at-k", right).correct
    for wrong_at in (lambda n, c, k: k == n, lambda n, c, k: c == 0, lambda n, c, k: c == n, lambda n, c, k: k == 1):
        def edge_wrong(n, c, k, _at=wrong_at):
            return 0.5 if _at(n, c, k) else right(n, c, k)
        assert not check("ex-ch18-write-pass-at-k", edge_wrong).correct


def test_the_crossing_by_simulation_and_by_hand():
    """ex-ch18-crossing: set B's pass@64 less set A's, by the solution's arithmetic and by drawing 64 tries of each
    prompt 20,000 times (a Monte Carlo estimate within 4 standard errors); A leads at k = 1, B at k = 64."""
    by_hand = ((1 - 0.7 ** 64) + (1 - 0.95 ** 64)) / 2 - ((1 - 0.4 ** 64) + 0.0) / 2
    assert SPECS["ex-ch18-crossing"].value == pytest.approx(by_hand, abs=1e-12) and round(by_hand, 4) == 0.4812
    rng = np.random.default_rng(0)

    def solved(p, trials=20_000):                  # any right answer among 64 tries, per trial
        return (rng.random((trials, 64)) < p).any(axis=1)
    lead = (solved(0.3).astype(float) + solved(0.05) - solved(0.6) - solved(0.0)) / 2
    assert abs(lead.mean() - by_hand) < 4 * lead.std(ddof=1) / math.sqrt(len(lead))
    assert (0.3 + 0.05) / 2 < (0.6 + 0.0) / 2           # pass@1: the sharpened set A leads
    assert "pass@1's difference" in check("ex-ch18-crossing", -0.125)
    assert "averages the chances" in check("ex-ch18-crossing", 0.0)
    assert "sign is flipped" in check("ex-ch18-crossing", -0.4812)


def test_the_prefilter_by_simulation_and_by_hand():
    """ex-ch18-prefilter: the prompts kept from 500 at p = 0.9 and 500 at p = 0.05 (8 answers each, kept when
    0 < c < 8), by the solution's arithmetic and by filtering 400 simulated pools (within 4 standard errors)."""
    by_hand = 500 * (1 - 0.1 ** 8 - 0.9 ** 8) + 500 * (1 - 0.95 ** 8 - 0.05 ** 8)
    assert SPECS["ex-ch18-prefilter"].value == pytest.approx(by_hand, abs=1e-9) and round(by_hand, 1) == 453.1
    rng = np.random.default_rng(0)
    chances = np.repeat([0.9, 0.05], 500)
    right = rng.binomial(8, chances, size=(400, 1000))
    kept = ((right > 0) & (right < 8)).sum(axis=1)
    assert abs(kept.mean() - by_hand) < 4 * kept.std(ddof=1) / math.sqrt(len(kept))
    assert "only the never-right" in check("ex-ch18-prefilter", 668.3)
    assert "averages the chances" in check("ex-ch18-prefilter", 991.6)
    assert "dropped prompts" in check("ex-ch18-prefilter", 546.9)
