"""Part IV's solutions (chapters 15-16 and 21) and chapter 21's claims, and the intro's promises, checked by
running them.

Every number a solution of chapters 15-17 states is recomputed here with the code the solution gives
(for chapters 15 and 16, whose trained digits depend on the CPU, the solutions state only what holds
on every CPU, and these tests check those statements); claims of chapter 21's prose that no printed
output shows, and the intro's statements about the book (exercise labels, sliders, pinned versions),
are checked against the library and the notebooks themselves.
"""
import json
import pathlib
import re

import numpy as np
import pytest
import torch

from rl4llm import CORRECT, LOGITS, REWARDS, group_advantages, grpo_loss, softmax
from rl4llm.studies import method_runs
from rl4llm.math.estimators import gradient_samples, group_count_law
from rl4llm.studies.onpolicy import on_policy_loop
from rl4llm import with_correct_mass
from rl4llm.math.statistics import noise_floor, standard_error, verdict
from rl4llm.studies.toy_grpo import run_over_seeds
from rl4llm.viz.charts import MIME_TYPE

ROOT = pathlib.Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"
CHAPTERS = sorted(BOOK.glob("[0-9][0-9]_*.ipynb"))


def _code_cells(path):
    return ["".join(c["source"]) for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]


def _markdown(path):
    return "\n".join("".join(c["source"]) for c in json.loads(path.read_text())["cells"]
                     if c["cell_type"] == "markdown")


# ----------------------------------------------------------------------------- ex-ch21-knobs
def test_knobs_solution_ppo_step_saturates_in_K():
    got = [round(float(method_runs.run_ppo(steps=1, K=K)[1]), 4) for K in (1, 4, 16, 64, 256)]
    assert got == [0.2408, 0.2569, 0.3026, 0.3639, 0.3639]
    printed = _stored_output(CH21, "STEP_KNOB = {")
    assert "for K = 1, 4, 16, 64, 256: 0.2408, 0.2569, 0.3026, 0.3639, 0.3639" in printed


def test_knobs_solution_halving_and_doubling_the_step_knob():
    """Over 32 seeds, every sampling method's mean pi(5) after 5 steps falls with the step knob halved and rises
    with it doubled, each a real difference (SFT, deterministic, on its one run); the solution quotes SFT's and
    GRPO's from the solution cell's output."""
    knob = {"SFT": "lr", "REINFORCE": "lr", "REINFORCE + baseline": "lr", "TRPO": "delta", "PPO": "lr", "GRPO": "lr"}
    defaults = {"SFT": 0.5, "TRPO": 0.02}
    printed = _stored_output(CH21, "STEP_KNOB = {")
    for name, run in method_runs.METHODS.items():
        default = defaults.get(name, 1.0)
        if name == "SFT":
            half, as_is, double = (float(run(steps=5, **{knob[name]: f * default})[5]) for f in (0.5, 1, 2))
            assert half < as_is < double
            assert f"{half:.4f}, {as_is:.4f}, {double:.4f}" in printed
            continue
        half, as_is, double = (run_over_seeds(run, range(32), steps=5, **{knob[name]: f * default})[:, 5]
                               for f in (0.5, 1, 2))
        assert verdict(as_is, half).endswith("a real difference") and as_is.mean() > half.mean(), name
        assert verdict(double, as_is).endswith("a real difference") and double.mean() > as_is.mean(), name
        assert ", ".join(f"{v.mean():.4f} ± {standard_error(v):.4f}" for v in (half, as_is, double)) in printed, name
    solution = _solution(CH21, "ex-ch21-knobs")
    assert "from 0.4448 and 0.8283 around SFT's 0.6449 to 0.7522 and 0.9346 around GRPO's 0.8339" in solution
    assert "on seed 0 (the cell below" not in solution


def test_knobs_solution_K_over_32_seeds():
    """PPO's mean pi(5) after 5 steps rises with each doubling of K (2, 4, 8), every step a real difference; GRPO's
    rises too, but only K = 8 against K = 2 clears its noise floor. The solution states both."""
    printed = _stored_output(CH21, "STEP_KNOB = {")
    solution = _solution(CH21, "ex-ch21-knobs")
    stated = {"PPO": (0.6843, 0.7620, 0.8162), "GRPO": (0.8043, 0.8339, 0.8530)}
    for name, means in stated.items():
        by_K = {K: run_over_seeds(method_runs.METHODS[name], range(32), steps=5, K=K)[:, 5] for K in (2, 4, 8)}
        assert tuple(round(float(v.mean()), 4) for v in by_K.values()) == means, name
        assert ", ".join(f"{v.mean():.4f} ± {standard_error(v):.4f}" for v in by_K.values()) in printed, name
        for more, fewer in ((4, 2), (8, 4), (8, 2)):
            real = verdict(by_K[more], by_K[fewer]).endswith("a real difference")
            assert real == (name == "PPO" or (more, fewer) == (8, 2)), (name, more, fewer)
            assert f"K = {more} minus K = {fewer}: {verdict(by_K[more], by_K[fewer])}" in printed
    assert "from 0.6843 to 0.7620 to 0.8162 for $K$ = 2, 4 and 8, each doubling a real difference" in solution
    assert "from 0.8043 to 0.8339 to 0.8530: neither doubling alone clears its noise floor" in solution
    assert "(+0.0487, floor 0.0311)" in solution and "difference of means +0.0487, noise floor 0.0311" in printed


# ----------------------------------------------------------------------------- ex-ch21-samples
@pytest.fixture(scope="module")
def head_start():
    variants = {
        "baseline": (method_runs.run_reinforce_baseline, {}),
        "grpo unscaled": (method_runs.run_grpo, {"scale": False}),
        "grpo K=1": (method_runs.run_grpo, {"K": 1}),
        "grpo": (method_runs.run_grpo, {}),
        "grpo wide clip": (method_runs.run_grpo, {"eps_low": 0.99, "eps_high": 0.99}),
        "baseline lr=4": (method_runs.run_reinforce_baseline, {"lr": 4.0}),
    }
    return {label: run_over_seeds(run, range(32), steps=5, **kw)[:, 5]
            for label, (run, kw) in variants.items()}


def test_samples_solution_table(head_start):
    stated = {"baseline": (0.4470, 0.0093), "grpo unscaled": (0.7271, 0.0120), "grpo K=1": (0.7767, 0.0092),
              "grpo": (0.8339, 0.0104), "grpo wide clip": (0.9569, 0.0039), "baseline lr=4": (0.9180, 0.0058)}
    solution = _solution(CH21, "ex-ch21-samples")
    printed = _stored_output(CH21, "VARIANTS = {")
    for label, (mean, se) in stated.items():
        values = head_start[label]
        assert (round(float(values.mean()), 4), round(standard_error(values), 4)) == (mean, se), label
        assert f"| {mean:.4f} ± {se:.4f} |" in solution and f"{mean:.4f} ± {se:.4f}" in printed, label


def test_samples_solution_verdicts(head_start):
    stated = [("grpo unscaled", "baseline", 0.2800, 0.0304), ("grpo K=1", "baseline", 0.3297, 0.0262),
              ("grpo", "grpo K=1", 0.0572, 0.0278), ("grpo", "grpo unscaled", 0.1068, 0.0318),
              ("grpo wide clip", "grpo", 0.1230, 0.0225), ("baseline lr=4", "grpo", 0.0842, 0.0239)]
    printed = _stored_output(CH21, "VARIANTS = {")
    for higher, lower, difference, floor in stated:
        a, b = head_start[higher], head_start[lower]
        assert round(float(a.mean() - b.mean()), 4) == difference
        assert round(noise_floor(a, b), 4) == floor
        assert verdict(a, b).endswith("a real difference")
        assert f"difference of means +{difference:.4f}, noise floor {floor:.4f} -> a real difference" in printed


def test_samples_solution_each_alone_gives_most_and_the_clip_caps_them(head_start):
    """The reuse alone and the scaling alone each give over 70% of GRPO's lead over the baseline loop; together
    they give less than the sum, and with the clip widened they give more than GRPO."""
    mean = {label: float(values.mean()) for label, values in head_start.items()}
    lead = mean["grpo"] - mean["baseline"]
    for alone in ("grpo unscaled", "grpo K=1"):
        assert mean[alone] - mean["baseline"] > 0.7 * lead
    assert lead < (mean["grpo unscaled"] - mean["baseline"]) + (mean["grpo K=1"] - mean["baseline"])
    assert mean["grpo wide clip"] > mean["grpo"]


def test_samples_solution_grpo_with_one_unscaled_step_is_the_baseline_loop():
    for seed in range(32):
        np.testing.assert_allclose(method_runs.run_grpo(K=1, scale=False, seed=seed),
                                   method_runs.run_reinforce_baseline(seed=seed), atol=1e-12)
    printed = _stored_output(CH21, "VARIANTS = {")
    assert "run_grpo(K=1, scale=False) equals run_reinforce_baseline() to 1e-12 on all 32 seeds: True" in printed


def test_samples_solution_the_widened_clip_almost_never_binds():
    """The share of the group where GRPO's clip binds, over 32 seeds x 5 steps x 4 inner steps: 0.5074 at the
    default clip, 0.0203 with it widened to [0.01, 1.99]; printed and quoted."""
    from rl4llm.studies.toy_grpo import grpo_toy_run
    shares = [round(float(run_over_seeds(grpo_toy_run, range(32), steps=5, **kw)["inner_clip_fraction"].mean()), 4)
              for kw in ({}, {"eps_low": 0.99, "eps_high": 0.99})]
    assert shares == [0.5074, 0.0203]
    printed = _stored_output(CH21, "VARIANTS = {")
    assert "run_grpo() 0.5074, run_grpo(eps_low=0.99, eps_high=0.99) 0.0203" in printed
    assert "falls from 0.5074 to 0.0203 (printed below)" in _solution(CH21, "ex-ch21-samples")


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
    printed = _stored_output(CH21, "VARIANTS = {")
    assert "for k = 1..7: 3.0237, 2.3094, 2.0656, 2.0000, 2.0656, 2.3094, 3.0237" in printed


# ----------------------------------------------------------------------------- chapter 21's prose
@pytest.fixture(scope="module")
def curves():
    return method_runs.method_curves(steps=30, seeds=range(32))


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
        a = run_over_seeds(method_runs.run_reinforce, range(32), G=G)[:, 30]
        b = run_over_seeds(method_runs.run_reinforce_baseline, range(32), G=G)[:, 30]
        gaps[G] = float(a.mean() - b.mean())
    assert 0 < gaps[32] < gaps[8] / 2


def test_grpo_loss_puts_the_k3_penalty_inside_the_per_token_average():
    """The formula of chapter 21, computed by hand, against ``grpo_loss`` (loss_type "grpo")."""
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
    """Chapters 1-14 and 17-20 put their sliders on live charts (a stored Vega-Lite chart that redraws
    in the browser from the library's grid, no widget, no animation); 15 has a playground of sliders
    and a live chart over its stored runs; 16 and 21 have none."""
    live = re.compile(r"\blive\(|\binteract\(|interactive_output|widgets\.\w*Slider|grpo_playground\(")
    animation = re.compile(r"\btwin\(|to_jshtml")
    for path in CHAPTERS:
        number, cells = int(path.name[:2]), _code_cells(path)
        outputs = [o for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"
                   for o in c.get("outputs", [])]
        has_chart = any(MIME_TYPE in o.get("data", {}) for o in outputs)
        has_live = any(live.search(cell) for cell in cells)
        assert not any(animation.search(cell) for cell in cells), path.name
        if number <= 14 or 17 <= number <= 20:
            assert has_chart and not has_live, path.name
        elif number == 15:                 # the playground, and a kernel-free chart over its stored runs
            assert any("grpo_playground(" in cell for cell in cells) and has_chart
        else:
            assert not has_live and not has_chart, path.name
    intro = " ".join((BOOK / "intro.md").read_text().split())
    assert "Chapters 1 to 14 and 17 to 20 put their main knobs on sliders" in intro
    assert "Chapter 16 (a line-by-line check against TRL) and chapter 21 (the summary) have none" in intro


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


# ============================================================================= chapter 15
def _solution(path, label):
    text = _markdown(path)
    start = text.index("```{solution} " + label)
    end = start + 10 + re.search(r"^```$", text[start + 10:], re.M).start()
    return " ".join(text[start:end].split())     # one space between words


def _stored_output(path, needle):
    """The printed output of the one code cell of ``path`` whose source contains ``needle``."""
    cells = [c for c in json.loads(path.read_text())["cells"]
             if c["cell_type"] == "code" and needle in "".join(c["source"])]
    assert len(cells) == 1, needle
    return "".join("".join(o.get("text", "")) for o in cells[0]["outputs"])


CH15, CH16, CH21 = (BOOK / "15_tiny_transformer.ipynb", BOOK / "16_to_trl.ipynb", BOOK / "21_summary.ipynb")


# ----------------------------------------------------------------------------- ex-ch15-seeds
def test_ch15_seeds_solution():
    from rl4llm.math.statistics import seeds_needed, t_quantile
    s, d = 0.04, 0.03
    assert round(8 * s ** 2 / d ** 2, 2) == 14.22
    assert seeds_needed(s, d) == 15
    assert round(t_quantile(0.975, 28), 4) == 2.0484 and round(t_quantile(0.975, 26), 4) == 2.0555
    floor = {n: t_quantile(0.975, 2 * n - 2) * s * np.sqrt(2 / n) for n in (14, 15)}
    assert round(floor[15], 4) == 0.0299 < d < round(floor[14], 4) == 0.0311
    # dropping the sqrt(2) gives 8 seeds, dropping t (one standard error) gives 4; halving d quadruples n
    from rl4llm.exercises.part4 import seeds_by_hand
    assert (seeds_by_hand(s, d, settings=1), seeds_by_hand(s, d, t=1.0)) == (8, 4)
    assert seeds_by_hand(s, d / 2) == 57 and 8 * s ** 2 / (d / 2) ** 2 == pytest.approx(4 * 8 * s ** 2 / d ** 2)


# ----------------------------------------------------------------------------- ex-ch15-verifier
def test_ch15_verifier_solution():
    import sys

    from rl4llm import addition_reward
    from rl4llm.toy.verifier import EOS_MARKER
    assert sys.get_int_max_str_digits() == 4300
    with pytest.raises(ValueError):
        int("7" * 4301)
    long_answer = "0" * 5000 + "76" + EOS_MARKER
    assert addition_reward("29+47=", long_answer) == 1.0         # no int() of the answer: no crash
    with pytest.raises(SyntaxError):
        eval("07+45")                                             # a zero-padded prompt is no Python literal
    assert eval("30+46") == 76 and eval("76.0") == 76
    assert re.fullmatch(r"\d+", "٧٦") and not re.fullmatch(r"[0-9]+", "٧٦") and "٧٦".isdigit()
    assert int("+76") == int("7_6") == int("٧٦") == 76 and float("76e0") == 76
    assert "76<eos><pad>".replace(EOS_MARKER, "") == "76<pad>"
    for completion, reward in (("76<eos><pad>", 1.0), ("076<eos>", 1.0), (" 76 <eos>", 1.0), ("+76", 0.0),
                               ("7 6", 0.0), ("7_6", 0.0), ("٧٦", 0.0), ("76.0", 0.0), ("76e0", 0.0),
                               ("30+46", 0.0), ("abc", 0.0), ("", 0.0)):
        assert addition_reward("29+47=", completion) == reward, completion


# ----------------------------------------------------------------------------- ex-ch15-break
GRID_CLAIMS = ("at lr 1e-3, G=8 ends above G=2 by more than the floor: True",
               "at lr 3e-4, G=8 ends above G=2, but within the floor: True",
               "at lr 3e-4 and 1e-3, G=2 ends within the floor of the warm start: True",
               "at lr 1e-2 every column ends below the warm start (0.2680) by more than the floor: True",
               "at lr 3e-4 and 1e-3, K=4 ends above K=1 after the same 60 steps, by more than the floor: True",
               "with K=1 the clip never binds; with K=4 it binds at every learning rate: True")


def test_ch15_break_solution_states_the_grid_claims():
    """The solution's statements are the grid's printed claims, each weighed against the floor for two
    single runs (one seed per cell; nbval re-checks them on every run, in a kernel on another CPU's
    kernels); the flat-pair bound holds for all p."""
    printed = _stored_output(CH15, "print_claims(grid_claims(")      # the claims live in rl4llm.llm.grid_study
    assert all(claim in printed for claim in GRID_CLAIMS), printed
    solution = _solution(CH15, "ex-ch15-break")
    for phrase in ("ends below the warm start (0.2680), by more than the floor for two single runs",
                   "the two smaller learning rates end within the floor of the warm start in the grid's 60 steps",
                   "$G = 8$ ends above $G = 2$ by more than the floor at $10^{-3}$",
                   "at $3 \\times 10^{-4}$ it also ends higher, but within the floor", "With $K = 1$ the clip never binds",
                   "binds at every learning rate", "$K = 4$ ends above $K = 1$ after the same 60 steps, by more than the floor"):
        assert phrase in solution, phrase
    p = np.linspace(0, 1, 1001)
    flat = p ** 2 + (1 - p) ** 2
    np.testing.assert_allclose(flat, 1 - 2 * p * (1 - p))
    assert flat.min() == pytest.approx(0.5) and p[flat.argmin()] == pytest.approx(0.5)


# ============================================================================= chapter 16
def test_ch16_units_solution():
    from rl4llm.llm.trainer import GRPOConfig
    from rl4llm.trl.knobs import trl_config_kwargs
    kwargs = trl_config_kwargs(GRPOConfig(prompts_per_step=16, group_size=8, inner_steps=2, steps=300,
                                          warmup_steps=10))
    assert {k: kwargs[k] for k in ("per_device_train_batch_size", "num_generations", "num_iterations", "max_steps",
                                   "warmup_steps")} == {"per_device_train_batch_size": 128, "num_generations": 8,
                                                        "num_iterations": 2, "max_steps": 600, "warmup_steps": 20}


def _split_tensors():
    mask = torch.tensor([[1, 0, 0, 0], [1, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 1]], dtype=torch.float64)
    logp = torch.zeros(4, 4, dtype=torch.float64)
    A = torch.tensor([1.0, -1.0, 1.0, -1.0], dtype=torch.float64)
    return logp, A, mask


def test_ch16_split_solution():
    from rl4llm.llm.data_parallel import data_parallel_loss
    logp, A, mask = _split_tensors()
    loss = {(P, t): float(data_parallel_loss(logp, logp, A, mask, num_processes=P, loss_type=t)[0])
            for P in (1, 2) for t in ("bnpo", "dapo", "grpo")}
    assert round(loss[(2, "bnpo")], 4) == 0.1667 and loss[(2, "bnpo")] == pytest.approx(1 / 6)
    assert loss[(2, "dapo")] == pytest.approx(0.25) == loss[(1, "bnpo")]
    assert loss[(1, "grpo")] == pytest.approx(0.0, abs=1e-15) and loss[(2, "grpo")] == pytest.approx(0.0, abs=1e-15)
    # the per-token weights: the gradient of the bnpo loss in each token's loss -A_i is 1/(2 n_p)
    per_token = (-A[:, None] * mask).requires_grad_(True)
    n = mask.sum(dim=1)
    split = 0.5 * (per_token[:2].sum() / n[:2].sum() + per_token[2:].sum() / n[2:].sum())
    (grad,) = torch.autograd.grad(split, per_token)
    assert grad[0, 0] == pytest.approx(1 / 4) and grad[3, 3] == pytest.approx(1 / 12)
    # and the exercise's check uses the same batch
    from rl4llm.exercises import SPECS
    assert SPECS["ex-ch16-split"].value == pytest.approx(loss[(2, "bnpo")])


@pytest.fixture(scope="module")
def default_lr_run():
    """Chapter 16's TRL run with TRL's default learning rate (about half a minute on one CPU thread)."""
    from rl4llm.llm.tasks import AdditionTask
    from rl4llm.llm.trainer import GRPOConfig
    from rl4llm.trl.knobs import trl_config_kwargs, trl_defaults
    from rl4llm.trl.run import train_with_trl
    from rl4llm.llm.warmstart import warm_start
    recipe = GRPOConfig(seed=0, steps=150, prompts_per_step=32, group_size=8, lr=1e-3, warmup_steps=20,
                        anneal_lr=True, eval_every=25, log_kl=False, device="cpu")
    defaults = trl_defaults(["learning_rate"])
    task, warm = AdditionTask(seed=0), warm_start()
    run = train_with_trl(warm.model, task, trl_config_kwargs(recipe) | {"use_cpu": True} | defaults,
                         eval_every=25, num_threads=1)
    return defaults, warm, run


def test_ch16_default_lr_solution(default_lr_run):
    defaults, warm, run = default_lr_run
    assert defaults == {"learning_rate": 1e-06} and 150 * defaults["learning_rate"] == pytest.approx(1.5e-4)
    assert round(warm.accuracy, 4) == 0.2680
    weights = torch.cat([w.detach().abs().flatten() for w in warm.model.parameters()])
    assert round(float(weights.median()), 4) == 0.0214 and 1.5e-4 < float(weights.median()) / 100
    assert run.evals["step"] == list(range(0, 151, 25))
    assert max(abs(a - warm.accuracy) for a in run.evals["accuracy"]) <= 0.02
    logged = [row for row in run.log_history if "reward" in row]
    rewards = [row["reward"] for row in logged]
    assert len(rewards) == 150 and abs(np.mean(rewards[-10:]) - np.mean(rewards[:10])) <= 0.05
    assert min(row["grad_norm"] for row in logged) > 0.1           # the gradient is there; the step is not


def test_ch16_default_lr_solution_quotes_the_chapters_statements():
    printed = _stored_output(CH16, "rises = lambda r")
    for claim in ("TRL's held-out accuracy after 150 steps >= warm start + 0.15 = 0.4180: True",
                  "both: mean sampled reward of the last 10 steps >= first 10 + 0.1: True"):
        assert claim in printed
    solution = _solution(CH16, "ex-ch16-default-lr")
    assert "every logged gradient norm is above 0.1" in solution
    assert "by at least 0.15 and 0.1" in solution and "within 0.02 of the warm start (0.2680)" in solution


# ============================================================================= chapter 21 (the summary)
# ----------------------------------------------------------------------------- ex-ch21-k3
def test_ch21_k3_solution():
    import math
    logp = torch.tensor([[math.log(0.8)]])
    ref = torch.tensor([[math.log(0.2)]])
    loss, _ = grpo_loss(logp, logp, torch.zeros(1), torch.ones(1, 1), beta=1.0, ref_logp=ref)
    assert round(float(loss), 4) == 0.6363 == round(0.25 - math.log(0.25) - 1, 4)
    assert round(-math.log(0.25), 4) == 1.3863
    # pi_theta: the toy's pi with pi(5) = 0.8 and the other answers scaled together (each to a quarter)
    pi_ref = softmax(LOGITS)
    pi = with_correct_mass(pi_ref, CORRECT, 0.8)
    wrong = np.arange(5) != CORRECT
    np.testing.assert_allclose(pi[wrong], pi_ref[wrong] / 4)
    x = np.log(pi_ref / pi)
    k1, k3 = -x, np.exp(x) - x - 1
    assert round(float(k1[0]), 4) == -1.3863 and round(float(k3[0]), 4) == 1.6137
    kl = float(pi @ np.log(pi / pi_ref))
    assert round(kl, 4) == 0.8318
    assert float(pi @ k1) == pytest.approx(kl) and float(pi @ k3) == pytest.approx(kl)
    assert round(float(pi @ (k1 - kl) ** 2), 4) == 1.2300 and round(float(pi @ (k3 - kl) ** 2), 4) == 0.1529
    # k3 = e^x - x - 1 >= 0, zero only at x = 0
    grid = np.linspace(-5, 5, 2001)
    values = np.exp(grid) - grid - 1
    assert values.min() == 0.0 and grid[values.argmin()] == 0.0 and np.all(values[grid != 0] > 0)
    # the solution's arithmetic (KL = 0.6 ln 4, Var k1 = 0.64 (ln 4)^2, Var k3 = 0.16 (3.75 - 2 ln 4)^2)
    # and the solution cell's output
    assert round(0.6 * math.log(4), 4) == 0.8318 and round(0.64 * math.log(4) ** 2, 4) == 1.2300
    assert round(0.16 * (3.75 - 2 * math.log(4)) ** 2, 4) == 0.1529
    printed = _stored_output(CH21, "k3 of the sampled 5, from grpo_loss")
    for line in ("k3 of the sampled 5, from grpo_loss: 0.6363", "a sampled wrong answer: k1 = -1.3863, k3 = 1.6137",
                 "mean k1 = 0.8318, mean k3 = 0.8318, KL(pi_theta || pi_ref) = 0.8318", "variances: k1 1.2300, k3 0.1529"):
        assert line in printed, line


# ----------------------------------------------------------------------------- ex-ch21-ahead
def test_ch21_ahead_solution():
    from rl4llm.exercises import SPECS
    from rl4llm.trl.knobs import old_logps_recomputed
    cases = {"(a)": (4, None, 1), "(b)": (1, None, 2), "(c)": (4, 8, 1), "(d)": (2, 1, 2), "(e)": (8, 2, 2)}
    remainders = {case: gas % ((gas if spg is None else spg) * K) for case, (gas, spg, K) in cases.items()}
    assert remainders == {"(a)": 0, "(b)": 1, "(c)": 4, "(d)": 0, "(e)": 0}
    assert {case: old_logps_recomputed(*args) for case, args in cases.items()} == {
        case: r != 0 for case, r in remainders.items()}
    assert sum(old_logps_recomputed(*args) for args in cases.values()) == 2
    assert all(old_logps_recomputed(*args, vllm_correction=True) for args in cases.values())
    printed = _stored_output(CH21, "old_logps_recomputed(gas, fields.get")
    for line in ("(a) gradient_accumulation_steps=4: 4 % (4 x 1) = 0; old log-probs computed: False",
                 "(b) gradient_accumulation_steps=1, num_iterations=2: 1 % (1 x 2) = 1; old log-probs computed: True",
                 "(c) gradient_accumulation_steps=4, steps_per_generation=8: 4 % (8 x 1) = 4; old log-probs computed: True",
                 "(d) gradient_accumulation_steps=2, num_iterations=2, steps_per_generation=1: 2 % (1 x 2) = 0; "
                 "old log-probs computed: False",
                 "(e) gradient_accumulation_steps=8, num_iterations=2, steps_per_generation=2: 8 % (2 x 2) = 0; "
                 "old log-probs computed: False",
                 "computed in 2 of the 5; with vLLM's correction on, in 5 of the 5"):
        assert line in printed, line
    solution = _solution(CH21, "ex-ch21-ahead")
    for text in ("(a) 4 % (4 × 1) = 0: no", "(b) 1 % (1 × 2) = 1: yes", "(c) 4 % (8 × 1) = 4: yes",
                 "(d) 2 % (1 × 2) = 0: no", "(e) 8 % (2 × 2) = 0: no", "So the count is 2", "§5", "`num_iterations`",
                 "`steps_per_generation`", "`gradient_accumulation_steps`"):
        assert text in solution, text
    assert SPECS["ex-ch21-ahead"].value == 2


# ----------------------------------------------------------------------------- ex-ch21-write-exact-gradient
def test_ch21_exact_gradient_solution():
    from rl4llm.studies.method_runs import run_exact_gradient
    assert round(float(run_exact_gradient(30, 7 / 8)[30]), 4) == 0.9561
    printed = _stored_output(CH21, "exact gradient, lr = 1:")
    assert "exact gradient, lr = 7/8: 0.9561" in printed
    # without the baseline the step adds J pi, and the toy's curves part from the first step on
    pi = softmax(LOGITS)
    J = float(pi @ REWARDS)
    np.testing.assert_allclose(pi * REWARDS, pi * (REWARDS - J) + J * pi)
    no_baseline = softmax(LOGITS + pi * REWARDS)[CORRECT]
    assert abs(no_baseline - run_exact_gradient(1)[1]) > 1e-3


def test_ch21_samples_is_the_experiment():
    text = _markdown(CH21)
    assert "```{exercise} Same budget of samples (experiment)\n:label: ex-ch21-samples" in text
