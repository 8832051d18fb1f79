"""Chapter 16's solutions and claims, and the intro's promises, checked by running them.

Every number a chapter 16 solution states is recomputed here with the code the solution gives;
claims of the chapter's prose that no printed output shows, and the intro's statements about the
book (exercise labels, sliders, pinned versions), are checked against the library and the
notebooks themselves.
"""
import json
import pathlib
import re

import numpy as np
import pytest
import torch

from rl4llm import CORRECT, LOGITS, REWARDS, group_advantages, grpo_loss, softmax
from rl4llm import methods
from rl4llm.estimators import gradient_samples, group_count_law
from rl4llm.onpolicy import on_policy_loop
from rl4llm.reuse import with_correct_mass
from rl4llm.statistics import noise_floor, standard_error, verdict
from rl4llm.toy_grpo import run_over_seeds

ROOT = pathlib.Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"
CHAPTERS = sorted(BOOK.glob("[0-9][0-9]_*.ipynb"))


def _code_cells(path):
    return ["".join(c["source"]) for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]


def _markdown(path):
    return "\n".join("".join(c["source"]) for c in json.loads(path.read_text())["cells"]
                     if c["cell_type"] == "markdown")


# ----------------------------------------------------------------------------- ex-ch16-knobs
def test_knobs_solution_ppo_step_saturates_in_K():
    got = [round(float(methods.run_ppo(steps=1, K=K)[1]), 4) for K in (1, 4, 16, 64, 256)]
    assert got == [0.2408, 0.2569, 0.3026, 0.3639, 0.3639]


# ----------------------------------------------------------------------------- ex-ch16-samples
@pytest.fixture(scope="module")
def head_start():
    variants = {
        "baseline": (methods.run_reinforce_baseline, {}),
        "grpo K=1": (methods.run_grpo, {"K": 1}),
        "grpo": (methods.run_grpo, {}),
        "baseline lr=4": (methods.run_reinforce_baseline, {"lr": 4.0}),
    }
    return {label: run_over_seeds(run, range(32), steps=5, **kw)[:, 5]
            for label, (run, kw) in variants.items()}


def test_samples_solution_table(head_start):
    stated = {"baseline": (0.4470, 0.0093), "grpo K=1": (0.7767, 0.0092), "grpo": (0.8339, 0.0104),
              "baseline lr=4": (0.9180, 0.0058)}
    for label, (mean, se) in stated.items():
        values = head_start[label]
        assert (round(float(values.mean()), 4), round(standard_error(values), 4)) == (mean, se), label


def test_samples_solution_verdicts(head_start):
    stated = [("grpo K=1", "baseline", 0.3297, 0.0262), ("grpo", "grpo K=1", 0.0572, 0.0278),
              ("baseline lr=4", "grpo", 0.0842, 0.0239)]
    for higher, lower, difference, floor in stated:
        a, b = head_start[higher], head_start[lower]
        assert round(float(a.mean() - b.mean()), 4) == difference
        assert round(noise_floor(a, b), 4) == floor
        assert verdict(a, b).endswith("a real difference")


def test_samples_solution_grpo_with_one_unscaled_step_is_the_baseline_loop():
    for seed in range(32):
        np.testing.assert_allclose(methods.run_grpo(K=1, scale=False, seed=seed),
                                   methods.run_reinforce_baseline(seed=seed), atol=1e-12)


def test_samples_solution_std_divisors():
    """1/std of a 0/1 group of 8 with k right answers: the factor std scaling puts on r - mean."""
    factors = {}
    for k in range(1, 8):
        row = np.r_[np.ones(k), np.zeros(8 - k)]
        factors[k] = float(group_advantages(row)[0] / (row - row.mean())[0])
        assert factors[k] == pytest.approx(1 / np.sqrt(k / 8 * (1 - k / 8)))
    assert round(factors[4], 4) == 2.0 and min(factors.values()) == pytest.approx(2.0)
    assert round(factors[1], 4) == round(factors[7], 4) == 3.0237 == round(max(factors.values()), 4)
    assert round(factors[2], 4) == 2.3094


# ----------------------------------------------------------------------------- chapter 16's prose
@pytest.fixture(scope="module")
def curves():
    return methods.method_curves(steps=30, seeds=range(32))


def test_band_claims(curves):
    """REINFORCE's 10-90% band is the widest from step 3 to 11, the baseline loop's from 12 on."""
    widths = {name: np.diff(np.quantile(c, [0.1, 0.9], axis=0), axis=0)[0]
              for name, c in curves.items() if name != "SFT"}
    widest = [max(widths, key=lambda name: widths[name][step]) for step in range(31)]
    assert set(widest[3:12]) == {"REINFORCE"}
    assert set(widest[12:]) == {"REINFORCE + baseline"}


def test_reinforce_update_is_a_push_towards_5_of_random_length():
    pi = softmax(LOGITS)
    rows = gradient_samples(LOGITS, REWARDS, 8, 0, baseline=0.0)
    towards_5 = np.eye(5)[CORRECT] - pi
    for row in rows:
        assert np.allclose(row, 0.0) or np.allclose(row, towards_5)
    n5 = sum(np.allclose(row, towards_5) for row in rows)
    np.testing.assert_allclose(rows.mean(axis=0), n5 / 8 * towards_5)


def test_reinforce_never_lowers_pi5_on_the_toy(curves):
    assert np.all(np.diff(curves["REINFORCE"], axis=1) >= 0)


def test_all_correct_groups_leave_the_baseline_loop_unchanged():
    for seed in range(8):
        run = on_policy_loop(LOGITS, REWARDS, 8, 1.0, 30, seed)
        all_correct = np.flatnonzero(run["group_reward"] == 1.0)
        assert all_correct.size > 0
        np.testing.assert_array_equal(run["logits"][all_correct + 1], run["logits"][all_correct])


@pytest.mark.parametrize("p5, baseline_ahead", [(0.5, False), (0.74, False), (0.75, True), (0.95, True)])
def test_on_mixed_groups_the_baseline_loop_pushes_harder_once_pi5_exceeds_8_to_the_minus_one_seventh(
        p5, baseline_ahead):
    """Exact expectations over every group of 8 (enumeration), restricted to groups with both a
    right and a wrong answer: the change of z(5) - mean(z) each loop makes, on average."""
    assert round(8 ** (-1 / 7), 3) == 0.743
    pi = with_correct_mass(softmax(LOGITS), CORRECT, p5)
    counts, law = group_count_law(pi, 8)
    n5 = counts[:, CORRECT]
    mixed = (n5 > 0) & (n5 < 8)
    towards_5 = np.eye(5)[CORRECT] - pi
    reinforce = (law * mixed * n5 / 8) @ np.outer(np.ones(len(law)), towards_5)
    rbar = n5 / 8
    baseline = sum(w * (counts[m] * (REWARDS - rbar[m])) @ (np.eye(5) - pi) / 8
                   for m, w in enumerate(law) if mixed[m])
    centred = np.eye(5)[CORRECT] - 0.2                      # z(5) minus the mean logit
    assert (baseline @ centred > reinforce @ centred) == baseline_ahead
    # and over all groups the baseline loop's mean step is exactly 7/8 of REINFORCE's
    all_right = law[n5 == 8].sum()
    np.testing.assert_allclose(baseline, 7 / 8 * p5 * towards_5, atol=1e-12)
    np.testing.assert_allclose(reinforce + all_right * towards_5, p5 * towards_5, atol=1e-12)


def test_the_gap_shrinks_with_a_larger_group():
    gaps = {}
    for G in (8, 32):
        a = run_over_seeds(methods.run_reinforce, range(32), G=G)[:, 30]
        b = run_over_seeds(methods.run_reinforce_baseline, range(32), G=G)[:, 30]
        gaps[G] = float(a.mean() - b.mean())
    assert 0 < gaps[32] < gaps[8] / 2


def test_grpo_loss_puts_the_k3_penalty_inside_the_per_token_average():
    """The formula of chapter 16, computed by hand, against ``grpo_loss`` (loss_type "grpo")."""
    gen = torch.Generator().manual_seed(0)
    B, T, beta, eps = 3, 5, 0.1, 0.2
    logp = -torch.rand(B, T, generator=gen, dtype=torch.float64) - 0.1
    old = logp + 0.3 * torch.randn(B, T, generator=gen, dtype=torch.float64)
    ref = logp + 0.3 * torch.randn(B, T, generator=gen, dtype=torch.float64)
    A = torch.tensor([1.2, -0.4, -0.8], dtype=torch.float64)
    mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 0, 0, 0], [1, 1, 1, 0, 0]], dtype=torch.float64)
    rho = torch.exp(logp - old)
    k3 = torch.exp(ref - logp) - (ref - logp) - 1
    per_token = torch.minimum(rho * A[:, None], rho.clamp(1 - eps, 1 + eps) * A[:, None]) - beta * k3
    objective = ((per_token * mask).sum(dim=1) / mask.sum(dim=1)).mean()
    loss, _ = grpo_loss(logp, old, A, mask, eps_low=eps, beta=beta, ref_logp=ref, loss_type="grpo")
    assert float(loss) == pytest.approx(-float(objective), abs=1e-12)


# ----------------------------------------------------------------------------- the intro's promises
def test_exercise_labels_name_their_chapter():
    """The intro: the site numbers exercises through the book; each label names its chapter."""
    labels = []
    for path in CHAPTERS:
        found = re.findall(r"```\{exercise\}[^\n]*\n:label: (\S+)", _markdown(path))
        assert found, f"{path.name} has no exercise"
        assert all(label.startswith(f"ex-ch{path.name[:2]}-") for label in found), found
        labels += found
    assert "ex-ch09-rloo" in labels and len(labels) == len(set(labels))


def test_intro_slider_claims():
    """Chapters 1-13 have a live slider and its kernel-free animation; 14 has a playground of
    sliders; 15 and 16 have none."""
    live = re.compile(r"\blive\(|\binteract\(|interactive_output|widgets\.\w*Slider|grpo_playground\(")
    animation = re.compile(r"\btwin\(|to_jshtml")
    for path in CHAPTERS:
        number, cells = int(path.name[:2]), _code_cells(path)
        has_live = any(live.search(cell) for cell in cells)
        if number <= 13:
            assert has_live and any(animation.search(cell) for cell in cells), path.name
        elif number == 14:
            assert any("grpo_playground(" in cell for cell in cells)
        else:
            assert not has_live, path.name


def test_intro_pins_for_colab_match_requirements():
    intro = (BOOK / "intro.md").read_text()
    pins = dict(re.findall(r"^([A-Za-z0-9_.-]+)==(\S+)$", (ROOT / "requirements-book.txt").read_text(), re.M))
    stated = re.findall(r"(trl|transformers)==(\S+?)[`\s]", intro)
    assert {name for name, _ in stated} == {"trl", "transformers"}
    for name, version in stated:
        assert pins[name] == version


def test_intro_commands_name_real_files_and_settings():
    intro = (BOOK / "intro.md").read_text()
    for notebook in re.findall(r"book/(\d\d_\w+\.ipynb)", intro):
        assert (BOOK / notebook).exists(), notebook
    config = (ROOT / "_config.yml").read_text()
    assert "colab_url:" in config and "binderhub_url:" in config and re.search(r"^\s+url: https://github\.com/",
                                                                              config, re.M)
    assert (ROOT / "code" / "pyproject.toml").exists()      # what `pip install ../code` installs
