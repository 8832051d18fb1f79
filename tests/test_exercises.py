"""rl4llm.exercises: the reference passes; typical wrong answers (the mistakes issue 19 lists included) get the
right diagnosis; crashes, None and in-place changes are reported."""
from pathlib import Path

import numpy as np
import pytest
import torch

from rl4llm import gae, policy_gradient, score, sft_gradient, softmax
from rl4llm.exercises import EXERCISES, check
from rl4llm.math.credit import group_advantages
from rl4llm.llm.grpo import grpo_loss
from rl4llm import clipped_objective


@pytest.mark.parametrize("exercise, reference", [
    ("sft_gradient", sft_gradient), ("score", score), ("policy_gradient", policy_gradient),
    ("group_advantages", group_advantages), ("gae", gae), ("clipped_objective", clipped_objective),
    ("grpo_loss", grpo_loss)])
def test_the_library_function_passes(exercise, reference):
    assert check(exercise, reference).startswith("Correct")


def _gae_off_by_one(r, v, g=1.0, l=1.0, last_value=0.0):
    return g * l * gae(r, v, g, l, last_value)


@pytest.mark.parametrize("exercise, wrong, says", [
    ("policy_gradient", lambda z, r: -policy_gradient(z, r), "sign is flipped"),
    ("policy_gradient", lambda z, r: softmax(z) * r, "baseline is missing"),
    ("score", lambda z, y: softmax(z) - np.eye(len(z))[y], "sign is flipped"),
    ("sft_gradient", lambda z, t: softmax(z), "onehot(target) term is missing"),
    ("group_advantages", lambda r, scale=True, ddof=0, eps=1e-8: group_advantages(r, scale, 1, eps), "ddof=1"),
    ("group_advantages", lambda r, scale=True, ddof=0, eps=1e-8: (r - r.mean(-1, keepdims=True)) / (
        np.sqrt(r.var(-1, ddof=ddof, keepdims=True) + eps) if scale else 1.0), "eps is in the wrong place"),
    ("group_advantages", lambda r, **settings: group_advantages(r, scale=False), "division by the group's std"),
    ("group_advantages", lambda r, scale=True, ddof=0, eps=1e-8: group_advantages(r, True, ddof, eps),
     "scale is ignored"),
    ("group_advantages", lambda r, scale=True, ddof=0, eps=1e-8: group_advantages(r, scale, 0, eps),
     "ddof is ignored"),
    ("group_advantages", lambda r, scale=True, ddof=0, eps=1e-8: group_advantages(r, scale, ddof), "eps is ignored"),
    ("gae", _gae_off_by_one, "off by one"),
    ("gae", lambda r, v, g=1.0, l=1.0, last_value=0.0: gae(r, v, g, 1.0, last_value), "lambda is missing"),
    ("gae", lambda r, v, g=1.0, l=1.0, last_value=0.0: gae(r, v, g, l), "last_value is ignored"),
    ("clipped_objective", lambda p, a, e, eps_high=None: np.clip(p, 1 - e, 1 + (e if eps_high is None else eps_high)) * a,
     "unclipped term is missing"),
    ("clipped_objective", lambda p, a, e, eps_high=None: clipped_objective(p, a, e), "eps_high is ignored"),
    ("grpo_loss", lambda *a, **k: (-grpo_loss(*a, **k)[0], {}), "sign is flipped"),
    ("grpo_loss", lambda *a, **k: grpo_loss(*a, **({**k, "loss_type": "dapo"} if k.get("loss_type", "grpo") == "grpo"
                                                   else k)), "per token"),
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
                "clipped_objective": 11, "grpo_loss": 14}
    assert {k: EXERCISES[k] for k in required} == required
    chapters = sorted((Path(__file__).resolve().parents[1] / "book").glob("[0-9][0-9]_*.ipynb"))
    assert set(EXERCISES.values()) == {int(path.name[:2]) for path in chapters}


@pytest.mark.parametrize("text, value", [
    ("0.25", 0.25), (" -0.025 ", -0.025), (".5", 0.5), ("1/4", 0.25), ("-1 / 40", -0.025), ("2.5e-1", 0.25),
    (0.25, 0.25), (np.float64(0.25), 0.25), (3, 3.0),
    ("abc", None), ("", None), ("0,25", 0.25), ("\u22120.5", -0.5), ("1,000.5", None), ("1/0", None), ("nan", None), ("inf", None), (True, None),
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


def test_two_slips_with_different_messages_must_be_told_apart():
    """An answer within the tolerance of two slips would get whichever is listed first: two wrong values
    with different messages must be more than 2 tolerances apart; the same message may repeat."""
    from rl4llm.exercises import NumericExercise
    with pytest.raises(ValueError, match="within 2 tolerances of each other"):
        NumericExercise(7, "x", 0.025, 5e-4, ((0.1, "one slip"), (0.1009, "another slip")))
    same = NumericExercise(7, "x", 0.025, 5e-4, ((0.1, "one slip"), (0.1009, "one slip")))
    assert same.verdict(0.1005) == "Not yet: one slip."


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


# ----------------------------------------------------------------------------- the mistakes issue 19 names
def _student_grpo_loss(kl="k3", pick=torch.minimum, token_mean_for=(), fixed_width=False, symmetric=False,
                       use_beta=True):
    """A student's grpo_loss, written from the formula, with the slips the switches name."""
    def loss(logp, old_logp, advantages, mask, *, eps_low=0.2, eps_high=None, beta=0.0, ref_logp=None,
             loss_type="grpo", max_completion_length=None):
        high = eps_low if eps_high is None or symmetric else eps_high
        ratio, a = torch.exp(logp - old_logp), advantages[:, None]
        per_token = -pick(ratio * a, torch.clamp(ratio, 1 - eps_low, 1 + high) * a)
        if beta > 0 and use_beta:
            x = ref_logp - logp
            per_token = per_token + beta * ((torch.exp(x) - x - 1) if kl == "k3" else -x)
        m = mask
        if loss_type == "grpo" and "grpo" not in token_mean_for:
            return ((per_token * m).sum(1) / m.sum(1).clamp(min=1)).mean(), {}
        if loss_type in ("bnpo", "dapo", "grpo") or loss_type in token_mean_for:
            return (per_token * m).sum() / m.sum().clamp(min=1), {}
        width = mask.shape[1] if fixed_width else max_completion_length
        return (per_token * m).sum() / (mask.shape[0] * width), {}
    return loss


def _softmax_two_slips(z, t=1.0):
    """No max subtracted, and the temperature multiplied."""
    e = np.exp(np.asarray(z, float) * t)
    return e / e.sum(axis=-1, keepdims=True)


def _clip_in_place(ratio, advantage, eps, eps_high=None):
    high = eps if eps_high is None else eps_high
    unclipped = ratio * advantage
    np.clip(ratio, 1 - eps, 1 + high, out=ratio)
    return np.minimum(unclipped, ratio * advantage)


@pytest.mark.parametrize("exercise, wrong, says", [
    ("grpo_loss", _student_grpo_loss(kl="k1"), "k1"),
    ("grpo_loss", _student_grpo_loss(token_mean_for=("dr_grpo",)), "dr_grpo is computed as a token mean"),
    ("grpo_loss", _student_grpo_loss(use_beta=False), "beta is ignored"),
    ("grpo_loss", _student_grpo_loss(fixed_width=True), "max_completion_length is ignored"),
    ("grpo_loss", _student_grpo_loss(pick=torch.maximum), "max instead of min"),
    ("grpo_loss", _student_grpo_loss(symmetric=True), "eps_high is ignored"),
    ("grpo_loss", lambda *a, loss_type="grpo", max_completion_length=None, **k: grpo_loss(*a, **k), "loss_type is ignored"),
    ("softmax", _softmax_two_slips, "two slips at once: the max is not subtracted"),
    ("softmax", lambda z, t=1.0: None, "returned None"),
    ("clipped_objective", _clip_in_place, "modifies its inputs in place"),
    ("clipped_objective", lambda p, a, e, eps_high=None: np.minimum(p * a, np.clip(p, 1 - e, 1 + e) * a),
     "eps_high is ignored"),
])
def test_the_mistakes_issue_19_names_get_their_diagnosis(exercise, wrong, says):
    message = check(exercise, wrong)
    assert message.startswith("Not yet") and says in message, message


def test_a_function_that_mutates_its_inputs_cannot_fool_the_check():
    """The check runs every function on copies: the in-place clip is caught, and the same clip on a
    copy is named as the slip it is not (it is correct)."""
    def clip_on_a_copy(ratio, advantage, eps, eps_high=None):
        return _clip_in_place(np.array(ratio, dtype=float), advantage, eps, eps_high)
    assert check("clipped_objective", clip_on_a_copy).startswith("Correct:")
    assert "in place" in check("clipped_objective", _clip_in_place)


@pytest.mark.parametrize("exercise, answer, says", [
    ("ex-ch05-forward-kl", -0.8664, "sign is flipped"), ("ex-ch05-forward-kl", 0.09, "four decimals"),
    ("ex-ch07-partial-credit", 0.15, "dJ/dz(5)"), ("ex-ch08-lenient-baseline", 0.2324, "15 is left out"),
    ("ex-ch12-by-hand", 0.225, "gamma is missing everywhere"), ("ex-ch13-advantage", -0.3015, "sign is flipped"),
    ("ex-ch21-k3", -1.3863, "k3's log term alone")])
def test_the_common_wrong_numbers_get_their_own_message(exercise, answer, says):
    message = check(exercise, answer)
    assert message.startswith("Not yet") and says in message, message


def test_a_long_difference_is_described_not_printed():
    message = check("softmax", lambda z, t=1.0: np.zeros_like(np.asarray(z, float)) + 0.3)
    assert message.startswith("Not yet: on arguments") and message.count("[") <= 4, message


def test_a_wrong_answer_is_told_how_many_decimals_to_keep():
    """Rounding to the decimals the message asks for stays within half the tolerance: a correctly rounded answer
    is never refused for its rounding alone."""
    from rl4llm.exercises import SPECS, NumericExercise
    numeric = [s for s in SPECS.values() if isinstance(s, NumericExercise)]
    assert numeric
    for spec in numeric:
        assert 0.5 * 10 ** -spec.decimals <= spec.tolerance / 2
        assert spec.verdict(round(spec.value, spec.decimals)).startswith("Correct")
        assert f"keep {spec.decimals} decimal" in spec.wrong_message and spec.key()["decimals"] == spec.decimals
