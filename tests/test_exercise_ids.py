"""An exercise's id is its label in the book (``ex-chNN-...``); the function ids that api.md fixes
(``score``, ``grpo_loss``, ...) are aliases of the coding exercises' labels, one table made from the
registration (rl4llm.exercises)."""
import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from rl4llm import clipped_objective, gae, policy_gradient, score, sft_gradient
from rl4llm.course.assignments import exercises
from rl4llm.exercises import (ALIASES, EXERCISES, FUNCTIONS, SPECS, FunctionExercise, NumericExercise, _by_label,
                              check, coding_label, label_of)
from rl4llm.course.grading.sandbox import allowed_helpers
from rl4llm.math.credit import group_advantages
from rl4llm.llm.grpo import grpo_loss

CHAPTERS = sorted((Path(__file__).resolve().parents[1] / "book").glob("[0-9][0-9]_*.ipynb"))
LABEL = re.compile(r"ex-ch(\d\d)-[a-z0-9]+(?:-[a-z0-9]+)*")
#: The function ids api.md names (outside checks call ``check`` with them).
API_FUNCTION_IDS = {"policy_gradient": policy_gradient, "score": score, "sft_gradient": sft_gradient,
                    "group_advantages": group_advantages, "gae": gae, "clipped_objective": clipped_objective,
                    "grpo_loss": grpo_loss}


def test_every_exercise_is_keyed_by_a_label_of_its_chapter():
    for label, spec in SPECS.items():
        match = LABEL.fullmatch(label)
        assert match and int(match.group(1)) == spec.chapter, label


def test_each_coding_exercise_has_one_function_id_among_them_api_mds():
    coding = {label for label, spec in SPECS.items() if isinstance(spec, FunctionExercise)}
    assert sorted(ALIASES.values()) == sorted(coding) == sorted(FUNCTIONS)
    assert set(API_FUNCTION_IDS) <= set(ALIASES)
    assert all(FUNCTIONS[label] == function and label_of(function) == label for function, label in ALIASES.items())
    assert all(SPECS[function] is SPECS[label] for function, label in ALIASES.items())


def test_every_checked_exercise_of_the_book_is_checked_under_its_label():
    """A chapter's check cell may name a coding exercise by its function id or by its label: both are its label."""
    coding = [e for path in CHAPTERS for e in exercises(path) if e.check_id]
    assert coding
    for e in coding:
        assert label_of(e.check_id) == e.label and EXERCISES[e.check_id] == EXERCISES[e.label] == e.chapter, e


def test_specs_hold_each_exercise_once_and_exercises_every_id_check_accepts():
    assert len(SPECS) == len(set(SPECS)) == len(list(SPECS.values()))
    assert set(EXERCISES) == set(SPECS) | set(ALIASES)
    assert all(EXERCISES[i] == SPECS[i].chapter for i in EXERCISES)
    assert "score" in SPECS and "no such exercise" not in SPECS


@pytest.mark.parametrize("function", sorted(API_FUNCTION_IDS))
def test_a_function_id_and_its_label_give_the_same_verdicts(function):
    right, crashing = API_FUNCTION_IDS[function], lambda *args, **kwargs: 1 / 0
    for answer, verdict in ((right, "Correct:"), (crashing, "Not yet:")):
        assert check(function, answer) == check(ALIASES[function], answer)
        assert check(ALIASES[function], answer).startswith(verdict)


def test_a_by_hand_exercise_is_checked_under_its_label():
    spec = SPECS["ex-ch07-partial-credit"]
    assert isinstance(spec, NumericExercise) and check("ex-ch07-partial-credit", spec.value).startswith("Correct:")


def test_an_unknown_id_names_the_parameter_labels_and_function_ids():
    for bad in ("no such exercise", "ex-ch07-score", None, ["score"]):
        with pytest.raises(ValueError, match=r"exercise_id must be an exercise label .*ex-ch07-write-score.*"
                                             r"function id .*'score'"):
            check(bad, score)


def test_the_label_of_a_coding_exercise_is_derived_from_its_function_and_chapter():
    assert coding_label("score", 7) == "ex-ch07-write-score"
    assert coding_label("group_mean_baseline_gradient", 9) == "ex-ch09-write-group-gradient"
    assert coding_label("addition_reward", 15) == "ex-ch15-verifier"


def test_two_registrations_of_one_label_are_refused():
    by_hand = NumericExercise(7, "a number", 1.0, 0.01)
    coding = FunctionExercise(7, score, lambda: [])
    assert _by_label(SimpleNamespace(SPECS={"score": coding}))[1] == {"score": "ex-ch07-write-score"}
    with pytest.raises(RuntimeError, match="ex-ch07-write-score"):
        _by_label(SimpleNamespace(SPECS={"ex-ch07-write-score": by_hand}), SimpleNamespace(SPECS={"score": coding}))


def test_the_grader_withholds_the_function_being_written_under_either_id():
    assert "softmax" not in allowed_helpers("ex-ch01-write-softmax")
    assert allowed_helpers("ex-ch01-write-softmax") == allowed_helpers("softmax")
    assert "softmax" in allowed_helpers("ex-ch07-write-score")
