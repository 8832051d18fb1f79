"""rl4llm.exercises: the reference passes; typical wrong answers get the right diagnosis; crashes are reported."""
import numpy as np
import pytest

from rl4llm import gae, policy_gradient, score, sft_gradient, softmax
from rl4llm.exercises import EXERCISES, check
from rl4llm.grpo import group_advantages, grpo_loss
from rl4llm.reuse import clipped_objective


@pytest.mark.parametrize("exercise, reference", [
    ("sft_gradient", sft_gradient), ("score", score), ("policy_gradient", policy_gradient),
    ("group_advantages", group_advantages), ("gae", gae), ("clipped_objective", clipped_objective),
    ("grpo_loss", grpo_loss)])
def test_the_library_function_passes(exercise, reference):
    assert check(exercise, reference).startswith("Correct")


def _gae_off_by_one(r, v, g, l):
    return g * l * gae(r, v, g, l)


@pytest.mark.parametrize("exercise, wrong, says", [
    ("policy_gradient", lambda z, r: -policy_gradient(z, r), "sign is flipped"),
    ("policy_gradient", lambda z, r: softmax(z) * r, "baseline is missing"),
    ("score", lambda z, y: softmax(z) - np.eye(len(z))[y], "sign is flipped"),
    ("sft_gradient", lambda z, t: softmax(z), "onehot(target) term is missing"),
    ("group_advantages", lambda r: group_advantages(r, ddof=1), "ddof=1"),
    ("group_advantages", lambda r: (r - r.mean(-1, keepdims=True)) / np.sqrt(r.var(-1, keepdims=True) + 1e-8),
     "eps is in the wrong place"),
    ("group_advantages", lambda r: group_advantages(r, scale=False), "division by the group's std"),
    ("gae", _gae_off_by_one, "off by one"),
    ("gae", lambda r, v, g, l: gae(r, v, g, 1.0), "lambda is missing"),
    ("clipped_objective", lambda p, a, e: np.clip(p, 1 - e, 1 + e) * a, "unclipped term is missing"),
    ("grpo_loss", lambda *a: (-grpo_loss(*a)[0], {}), "sign is flipped"),
    ("grpo_loss", lambda *a: grpo_loss(*a, loss_type="dapo"), "per token"),
    ("policy_gradient", lambda z, r: 8 * policy_gradient(z, r), "times 8"),
])
def test_typical_mistakes_get_their_diagnosis(exercise, wrong, says):
    message = check(exercise, wrong)
    assert message.startswith("Not yet") and says in message, message


def test_a_crash_or_a_non_function_is_reported_not_raised():
    assert "raised ZeroDivisionError" in check("score", lambda z, y: 1 / 0)
    assert "should be a function" in check("gae", 0.5)
    with pytest.raises(ValueError, match="exercise_id"):
        check("no such exercise", score)


def test_every_exercise_names_its_chapter():
    required = {"sft_gradient": 4, "score": 7, "policy_gradient": 7, "group_advantages": 13, "gae": 12,
                "clipped_objective": 11, "grpo_loss": 13}
    assert {k: EXERCISES[k] for k in required} == required
    assert set(EXERCISES.values()) == set(range(1, 17))


@pytest.mark.parametrize("text, value", [
    ("0.25", 0.25), (" -0.025 ", -0.025), (".5", 0.5), ("1/4", 0.25), ("-1 / 40", -0.025), ("2.5e-1", 0.25),
    (0.25, 0.25), (np.float64(0.25), 0.25), (3, 3.0),
    ("abc", None), ("", None), ("0,25", None), ("1/0", None), ("nan", None), ("inf", None), (True, None),
    ("1/2/3", None), ("٥", None), (float("nan"), None), ([0.25], None)])
def test_a_by_hand_answer_is_parsed_as_the_answer_boxes_do(text, value):
    from rl4llm.exercises import parse_number
    assert parse_number(text) == value


def test_a_numeric_exercise_names_each_common_mistake_and_never_raises():
    from rl4llm.exercises import NumericExercise
    exercise = NumericExercise(7, "the derivative", 0.025, 5e-4, ((-0.025, "the sign is flipped"),))
    assert exercise.verdict("1/40").startswith("Correct: the derivative is 0.025")
    assert exercise.verdict(-0.0252) == "Not yet: the sign is flipped."
    assert exercise.verdict(0.3).startswith("Not yet: that is not within ±0.0005 of the derivative")
    assert exercise.verdict("twenty").startswith("Not yet: enter one number")
    with pytest.raises(ValueError, match="within 2 tolerances"):
        NumericExercise(7, "x", 0.025, 5e-4, ((0.0255, "too close to tell apart"),))


def test_verdicts_show_as_plain_text_and_assert_correct_fails_with_the_verdict(capsys):
    import json

    from IPython.lib.pretty import pretty

    from rl4llm.exercises import answer_key, assert_correct
    verdict = check("score", score)
    assert pretty(verdict) == str(verdict) and verdict.correct
    assert_correct("score", score)
    assert capsys.readouterr().out.startswith("Correct:")
    with pytest.raises(AssertionError, match="Not yet: the sign is flipped"):
        assert_correct("score", lambda z, y: -score(z, y))
    json.dumps(answer_key())                          # the build writes it into the pages
