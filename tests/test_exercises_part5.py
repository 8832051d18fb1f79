"""The checks of Part V: each passes the library's function or number, and gives each typical wrong
answer, written here the way a student would write it, the right diagnosis."""
import math

import numpy as np
import pytest

from rl4llm import kl_estimators
from rl4llm.exercises import EXERCISES, SPECS, answer_key, check
from rl4llm.exercises._core import MALFORMED
from rl4llm.exercises import part5
from rl4llm.studies.estimator_bias import estimate_of_group, two_step_task
from rl4llm.studies.kl_penalties import leash_gradient

CHAPTER_17 = {"ex-ch17-k2": 17, "ex-ch17-k3-weight": 17, "ex-ch17-shrink": 17, "ex-ch17-dapo-weight": 17,
              "ex-ch17-sapo-weight": 17, "ex-ch17-soft-punishment": 17, "ex-ch17-beta": 17, "ex-ch17-missed-kl": 17,
              "kl_estimators": 17}


def test_chapter_17_ids_and_chapters():
    assert CHAPTER_17.keys() <= part5.SPECS.keys()
    assert {k: EXERCISES[k] for k in CHAPTER_17} == CHAPTER_17


def test_the_library_function_passes():
    assert check("kl_estimators", kl_estimators).startswith("Correct:")


def test_every_listed_mistake_gets_its_own_message():
    spec = SPECS["kl_estimators"]
    for explanation, mistake in spec.mistakes:
        assert check("kl_estimators", mistake) == f"Not yet: {explanation}.", explanation


def _student_k3_upside_down(logp, logp_ref):
    r = np.exp(np.asarray(logp) - logp_ref)
    return np.asarray(logp) - logp_ref, (np.asarray(logp) - logp_ref) ** 2 / 2, r - np.log(r) - 1


def test_a_student_slip_is_named_and_a_crash_reported():
    assert "upside down" in check("kl_estimators", _student_k3_upside_down)
    assert check("kl_estimators", lambda a, b: 1 / 0).startswith("Not yet: your function raised ZeroDivisionError")
    assert check("kl_estimators", 3.0).startswith("Not yet: the answer should be a function")


@pytest.mark.parametrize("exercise", ["ex-ch17-k2", "ex-ch17-k3-weight", "ex-ch17-shrink", "ex-ch17-dapo-weight",
                                      "ex-ch17-sapo-weight", "ex-ch17-soft-punishment"])
def test_by_hand_values_and_every_mistake(exercise):
    spec = SPECS[exercise]
    assert check(exercise, spec.value).startswith("Correct:")
    for wrong, explanation in spec.mistakes:
        assert check(exercise, wrong) == f"Not yet: {explanation}.", explanation
    assert check(exercise, "abc") == MALFORMED
    assert exercise in answer_key()


def test_by_hand_values_from_the_library():
    k1, k2, _ = kl_estimators(math.log(0.8), math.log(0.2))
    assert np.isclose(SPECS["ex-ch17-k2"].value, k2)
    # the ratio-corrected k3's gradient on one sampled 5 is its weight times grad ln pi(5) = onehot - pi
    z = np.log([0.05, 0.05, 0.8, 0.05, 0.05])
    z_ref = np.log([0.2, 0.2, 0.2, 0.2, 0.2])
    pi = np.exp(z)
    grad = leash_gradient(z, z_ref, "k3_corrected", samples=[2])
    assert np.allclose(grad, SPECS["ex-ch17-k3-weight"].value * (np.eye(5)[2] - pi)) and np.isclose(k1, math.log(4))
    task = two_step_task()
    group = [task.answers.index("05"), task.answers.index("4")]
    dapo = estimate_of_group(task, group, "group_mean", "dapo", 3)
    assert np.allclose(dapo, 0.3 * task.scores[group[0]] - 0.3 * task.scores[group[1]])
    assert np.isclose(SPECS["ex-ch17-dapo-weight"].value, 0.3)


def test_the_shrunk_estimators_error_by_hand_and_exactly():
    """ex-ch17-shrink: (7/8)^2 Var_RLOO + |grad J|^2 / 64 from the table's printed 0.0150 and 0.1855 lands within
    the tolerance of the exact 0.01204; the group-mean estimate is 7/8 of RLOO's on every group."""
    from rl4llm import estimator_moments, one_step_task

    task = one_step_task()
    rloo = estimator_moments(task, 8, "rloo")
    assert round(rloo["variance"], 4) == part5.SHRINK_RLOO_VARIANCE
    assert round(float(np.linalg.norm(task.gradient)), 4) == part5.SHRINK_GRADIENT_NORM
    exact = (7 / 8) ** 2 * rloo["variance"] + float(task.gradient @ task.gradient) / 64
    assert np.isclose(SPECS["ex-ch17-shrink"].value, exact)
    by_hand = (7 / 8) ** 2 * 0.0150 + 0.1855 ** 2 / 64
    assert check("ex-ch17-shrink", by_hand).startswith("Correct:") and round(by_hand, 5) == 0.01202


def test_the_sapo_weight_is_the_closed_form_and_the_trl_knobs():
    """SAPO's weight on the by-hand token (A = +1, rho = 1.5): rho sech^2(tau (rho - 1) / 2) with TRL 1.16's
    sapo_temperature_pos = 1, the worked solution's 1.5 x 0.9400 = 1.410."""
    from rl4llm.llm.objectives import SOFT_KNOBS

    tau = SOFT_KNOBS["sapo_temperature_pos"]
    assert tau == 1.0
    assert np.isclose(SPECS["ex-ch17-sapo-weight"].value, 1.5 / math.cosh(tau * 0.5 / 2) ** 2, atol=1e-12)
    assert round(SPECS["ex-ch17-sapo-weight"].value, 3) == 1.410


def test_the_soft_punishment_answer_is_trls_reward_function():
    """ex-ch17-soft-punishment: a right answer of 10 tokens, cap 12, buffer 6, scores 1 + (6 - 10) / 6 = 1/3, as
    TRL 1.16's get_soft_overlong_punishment computes the punishment (the chapter's cell checks the same reward
    function on the length toy's answers)."""
    from trl.rewards import get_soft_overlong_punishment

    punishment = get_soft_overlong_punishment(max_completion_len=12, soft_punish_cache=6)([[0] * 10])[0]
    assert np.isclose(SPECS["ex-ch17-soft-punishment"].value, 1 + punishment) and np.isclose(punishment, -2 / 3)


@pytest.mark.parametrize("exercise, wrong, says", [
    ("ex-ch18-draws", 1.923, "that is 1 / P(flat)"),
    ("ex-ch17-dapo-weight", 0.6, "the advantage is missing"),
    ("ex-ch17-dapo-weight", 0.375, "grpo's weight on the tokens of \"4\""),      # |-1/2| / (2 x 2) x 3
    ("ex-ch17-dapo-weight", -0.3, "dapo's weight on the tokens of \"4\""),      # -1/2 x 3 / 5
    ("ex-ch17-k2", 0.18, "squares the difference of the probabilities"),
    ("ex-ch17-shrink", 0.0115, "that is the variance alone"),
    ("ex-ch17-sapo-weight", 1.5, "that is CISPO's weight"),
    ("ex-ch17-sapo-weight", 0.0, "that is the clip's weight"),
    ("ex-ch17-sapo-weight", 1.18, "the half is missing"),
    ("ex-ch17-soft-punishment", -0.667, "that is R_length alone"),
    ("ex-ch17-soft-punishment", 0.667, "divided by the buffer"),
    ("ex-ch19-decode", 0.0042, "that is in seconds"),
    ("ex-ch20-opsm-kl", 1, "that is the mask's value"),
])
def test_the_slips_issue_33_names_get_their_diagnosis(exercise, wrong, says):
    """Each slip a close read found the checks missing now gets its own message."""
    from rl4llm.exercises import check

    said = check(exercise, wrong)
    assert said.startswith("Not yet:") and says in said, said


def test_the_leash_experiments_result_by_the_closed_forms():
    """ex-ch17-beta's answer box: at beta = 0.25 the reverse leash's fixed point pi_ref e^(r/beta) normalised,
    0.2 e^4 / (0.2 e^4 + 0.8), less the forward one's, the root of p (1 - p) = beta (p - 0.2); the exact paths
    after 1500 steps reach both. The two slips the reader named (40 steps, the leashes swapped) are told apart."""
    beta = 0.25
    reverse = 0.2 * math.exp(1 / beta) / (0.2 * math.exp(1 / beta) + 0.8)
    forward = ((1 - beta) + math.sqrt((1 - beta) ** 2 + 0.8 * beta)) / 2      # p^2 - (1 - beta) p - 0.2 beta = 0
    assert (round(reverse, 3), round(forward, 3)) == (0.932, 0.812)
    assert SPECS["ex-ch17-beta"].value == pytest.approx(reverse - forward, abs=1e-4)
    assert check("ex-ch17-beta", round(reverse - forward, 3)).startswith("Correct:")
    assert "sign is flipped" in check("ex-ch17-beta", forward - reverse)
    assert "after 40 steps" in check("ex-ch17-beta", 0.893 - 0.810)
    assert "beta = 1" in check("ex-ch17-beta", 0.405 - 0.447)


def test_the_shrink_checker_names_the_best_shrink():
    """RLOO shrunk by its best factor 0.70 (MSE 0.0105 as printed beside the table; 0.01045 from the rounded
    variance and |grad J| the exercise gives) is a named slip."""
    mse = 0.7 ** 2 * 0.0150 + 0.3 ** 2 * 0.1855 ** 2
    assert "RLOO shrunk by 0.70" in check("ex-ch17-shrink", mse)
    assert "RLOO shrunk by 0.70" in check("ex-ch17-shrink", 0.0105)          # as the chapter prints it


def test_the_missed_kl_gradient_by_hand_and_by_central_differences():
    """ex-ch17-missed-kl: pi(5) KL_5 (1 - pi(5)) = 0.2 x 0.5827 x 0.8, and the central difference in the first-step
    logit of 5 of the answers' KL written out: the first step's own KL (0 where pi = pi_ref, with zero gradient)
    plus pi(5) KL_5 (the context after 0 is unmoved)."""
    from rl4llm.math.two_step import two_step_policy
    ref = two_step_policy()[""]                                       # the first step's logits, pi_ref's and pi's
    kl5 = 0.3 * math.log(0.3 / 0.8) + 0.7 * math.log(0.7 / 0.2)

    def answers_kl(z5):
        z = ref.copy()
        z[2] = z5                                                     # vocabulary order 0, 4, 5, 6, 15
        pi, pi_ref = np.exp(z) / np.exp(z).sum(), np.exp(ref) / np.exp(ref).sum()
        return float(pi @ np.log(pi / pi_ref) + pi[2] * kl5)

    h = 1e-5
    central = (answers_kl(ref[2] + h) - answers_kl(ref[2] - h)) / (2 * h)
    value = SPECS["ex-ch17-missed-kl"].value
    assert value == pytest.approx(0.2 * kl5 * 0.8, rel=1e-9) and value == pytest.approx(central, rel=1e-6)
    assert round(value, 4) == 0.0932
    assert "per-token k2" in check("ex-ch17-missed-kl", 0.0)
    assert "answers' KL itself" in check("ex-ch17-missed-kl", 0.1165)
    assert "forward KL" in check("ex-ch17-missed-kl", 0.0855)
