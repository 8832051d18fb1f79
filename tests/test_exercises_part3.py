"""The checked exercises of chapters 10-14: the library's functions pass their checks, typical wrong
functions (written here, independently of the checks' own mistake list) get the right diagnosis, each
by-hand number is accepted in every natural form, and each listed wrong number gets its message."""
import json
import re
from pathlib import Path

import numpy as np
import pytest
import torch

from rl4llm import LOGITS, CORRECT, clipped_objective, gae, importance_ratios, log_softmax, softmax, td_errors
from rl4llm.exercises import SPECS, check
from rl4llm.exercises._core import MALFORMED
from rl4llm.exercises.part3 import BOOSTED_LOGITS
from rl4llm.math.credit import group_advantages
from rl4llm.llm.grpo import grpo_loss

BOOK = Path(__file__).resolve().parents[1] / "book"
CHAPTERS = ["10_importance_sampling", "11_trust_region_ppo", "12_critic_gae", "13_grpo_toy", "14_grpo_choices"]


def _verdict_says(message: str, *words: str) -> None:
    assert message.startswith("Not yet"), message
    for word in words:
        assert word in message, (word, message)


# ----------------------------------------------------------------------------- function checks
def test_the_library_function_passes_the_new_check():
    assert check("importance_ratios", importance_ratios).startswith("Correct:")


def _quiet(f):
    def wrapped(*args):
        with np.errstate(all="ignore"):
            return f(*args)
    return wrapped


@pytest.mark.parametrize("wrong, says", [
    (lambda new, old: np.exp(log_softmax(old) - log_softmax(new)), ("upside down", "pi_new / pi_old")),
    (_quiet(lambda new, old: np.asarray(new, float) / np.asarray(old, float)), ("ratio of logits",)),
    (lambda new, old: log_softmax(new) - log_softmax(old), ("log-ratio", "exponentiate")),
    (lambda new, old: np.exp(np.subtract(new, old)), ("normaliser is missing",)),
    (_quiet(lambda new, old: softmax(new) / softmax(old)), ("underflow", "log space")),
    (_quiet(lambda new, old: (np.exp(new) / np.exp(new).sum()) / (np.exp(old) / np.exp(old).sum())),
     ("overflows", "log space")),
])
def test_typical_importance_ratio_mistakes_get_their_diagnosis(wrong, says):
    _verdict_says(check("importance_ratios", wrong), *says)


def test_dividing_probabilities_passes_everywhere_but_the_underflow_case():
    """The only case that separates softmax(new) / softmax(old) from the log-space ratio is the last,
    where the probabilities underflow; on every other case they agree."""
    cases = SPECS["importance_ratios"].cases()
    with np.errstate(all="ignore"):
        agree = [np.allclose(softmax(n) / softmax(o), importance_ratios(n, o)) for n, o in cases]
    assert agree == [True] * (len(cases) - 1) + [False]
    new, old = cases[-1]
    assert np.all(np.isfinite(importance_ratios(new, old))) and np.any(softmax(old) == 0)


def _gae_forwards(r, v, g=1.0, lam=1.0, last_value=0.0):
    delta = td_errors(r, v, g, last_value)
    out = np.zeros_like(delta)
    for t in range(delta.size):
        out[t] = delta[t] + (g * lam * out[t - 1] if t else 0.0)
    return out


@pytest.mark.parametrize("wrong, says", [
    (_gae_forwards, ("forwards",)),
    (lambda r, v, g=1.0, lam=1.0, last_value=0.0: gae(r, v, 1.0, g * lam, last_value), ("TD errors",)),  # gamma = 1 in delta
    (lambda r, v, g=1.0, lam=1.0, last_value=0.0: g * lam * gae(r, v, g, lam, last_value), ("off by one",)),
])
def test_typical_gae_mistakes_get_their_diagnosis(wrong, says):
    _verdict_says(check("gae", wrong), *says)


def test_the_clip_on_the_wrong_side_and_the_missing_clip_are_diagnosed():
    def capped_above(ratio, advantage, eps, eps_high=None):     # rho capped at 1 + eps for either sign of A
        high = eps if eps_high is None else eps_high
        return np.minimum(np.asarray(ratio, float), 1 + high) * np.asarray(advantage, float)
    assert not np.allclose(capped_above(2.0, -0.2, 0.2), clipped_objective(2.0, -0.2, 0.2))
    _verdict_says(check("clipped_objective", capped_above), "wrong side", "A < 0")
    _verdict_says(check("clipped_objective", lambda p, a, e, eps_high=None: np.asarray(p) * np.asarray(a)),
                  "clip is missing")


def test_the_chapter_functions_still_pass_their_checks():
    for exercise, reference in [("group_advantages", group_advantages), ("grpo_loss", grpo_loss),
                                ("gae", gae), ("clipped_objective", clipped_objective)]:
        assert check(exercise, reference).startswith("Correct:"), exercise


def _starter_cells():
    for name in CHAPTERS:
        cells = json.loads((BOOK / f"{name}.ipynb").read_text())["cells"]
        for i, cell in enumerate(cells):
            if "exercise-code" in cell["metadata"].get("tags", []):
                yield name, "".join(cell["source"]), "".join(cells[i + 1]["source"])


@pytest.mark.parametrize("chapter, starter, check_source", list(_starter_cells()),
                         ids=lambda x: x if isinstance(x, str) and len(x) < 40 else None)
def test_each_starter_cell_holds_a_correct_solution(chapter, starter, check_source):
    """Each coding exercise's reference solution, run as the notebook runs it, passes its check."""
    exercise, function = re.search(r'check\("([\w.-]+)",\s*(\w+)\)\s*$', check_source).groups()
    namespace: dict = {}
    exec(starter, namespace)
    assert check(exercise, namespace[function]).startswith("Correct:"), (chapter, exercise)


def test_every_chapter_has_its_starters():
    found = {(name, re.search(r"def (\w+)\(", starter).group(1)) for name, starter, _ in _starter_cells()}
    assert found == {("10_importance_sampling", "my_importance_ratios"),
                     ("11_trust_region_ppo", "my_clipped_objective"), ("12_critic_gae", "my_gae"),
                     ("13_grpo_toy", "my_group_advantages"), ("14_grpo_choices", "my_grpo_loss")}


# ----------------------------------------------------------------------------- by-hand numbers
BY_HAND = {
    # id: (right answers in several forms, {wrong answer: key words of its message})
    "ex-ch10-weight": (["5/3", 5 / 3, "1.667", "1.6667"],
                       {"3/5": ["upside down"], 2: ["softmax's sum", "10 -> 12"], "0.5108": ["log-ratio"],
                        "1/3": ["pi_new(5) itself"], "0.8333": ["every OTHER answer", "2 x 10/12"],
                        1.6: ["2 x (1 - 0.2)", "grows from 10 to 12"]}),
    "ex-ch11-negative": ([-0.4, "-0.4", "-2/5", "-.4"],
                         {-0.3: ["wrong side", "1 - eps = 0.8"], 0.4: ["sign is flipped"],
                          "-0.6": ["upper edge"]}),
    "ex-ch12-by-hand": ([0.11425, "0.1143", "0.1142", "0.11425"],
                        {"0.0514": ["off by one"], 0.31: ["lambda is missing"], "0.2058": ["TD errors"],
                         "0.13": ["missing from the weights"], "0.225": ["missing everywhere", "gamma = 1"]}),
    "ex-ch13-advantage": ([0.3015, "0.3015", "0.30151"],
                          {"0.2611": ["ddof=1"], "1.2060": ["baseline is missing"], 0.125: ["std is missing"],
                           "0.7273": ["variance"], "-0.3015": ["sign is flipped"]}),
    "ex-ch14-trl-advantage": ([1.4997, "1.4997", "1.49970", "1.4998"],
                              {"1.5": ["without TRL's eps", "0.5001"],
                               "1.7321": ["ddof=0", "G - 1 = 3"], "1.7317": ["ddof=0"], 2: ["baseline is missing"],
                               "1.9996": ["baseline is missing"], "0.75": ["std is missing"], 3: ["variance 0.25"],
                               "-1.4997": ["sign is flipped"], "-1.5": ["sign is flipped"]}),
}


@pytest.mark.parametrize("exercise", sorted(BY_HAND))
def test_by_hand_answers_are_accepted(exercise):
    for answer in BY_HAND[exercise][0]:
        assert check(exercise, answer).startswith("Correct:"), (exercise, answer)


@pytest.mark.parametrize("exercise", sorted(BY_HAND))
def test_by_hand_mistakes_get_their_messages(exercise):
    spec = SPECS[exercise]
    wrongs = BY_HAND[exercise][1]
    assert len(wrongs) == len(spec.mistakes)        # every listed mistake is exercised here
    for answer, words in wrongs.items():
        _verdict_says(check(exercise, answer), *words)
    generic = check(exercise, spec.value + 0.25)
    assert generic == spec.wrong_message and generic.startswith("Not yet")
    assert check(exercise, "abc") == MALFORMED


def test_by_hand_values_are_the_library_numbers():
    assert SPECS["ex-ch10-weight"].value == pytest.approx(importance_ratios(BOOSTED_LOGITS, LOGITS)[CORRECT])
    assert SPECS["ex-ch10-weight"].value == pytest.approx(5 / 3)
    assert SPECS["ex-ch11-negative"].value == pytest.approx(clipped_objective(0.6, -0.5, 0.2)) == -0.4
    assert SPECS["ex-ch12-by-hand"].value == pytest.approx(0.11425)
    assert SPECS["ex-ch13-advantage"].value == pytest.approx(0.125 / np.sqrt(0.171875))
    assert float(group_advantages(torch.tensor([1.0, 0.5, 0.0, 0.0]))[1]) == pytest.approx(0.3015, abs=5e-5)
    trl = float(group_advantages(torch.tensor([1.0, 0.0, 0.0, 0.0], dtype=torch.float64), ddof=1, eps=1e-4)[0])
    assert SPECS["ex-ch14-trl-advantage"].value == pytest.approx(trl, rel=1e-12) == pytest.approx(0.75 / 0.5001)
