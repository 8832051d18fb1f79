"""The text of chapters 11, 13, 14 and 21 (corrected in issue 23), pinned: every corrected number recomputed by a
route of its own, the order of numbers and the outputs that print them, figure titles that fit
their figures, and Markdown that renders (no line of an inline formula read as a list item)."""
import itertools
import json
import pathlib
import re

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from rl4llm import CORRECT, LOGITS, PROMPT, REWARDS, grpo_loss, softmax  # noqa: E402
from rl4llm.math.estimators import group_count_law  # noqa: E402
from rl4llm import with_correct_mass  # noqa: E402
from rl4llm.llm.grpo_toys import _two_step_logp, aggregation_weights, k3_loss_gradient  # noqa: E402
from rl4llm.studies.toy_grpo import forward_kl_gradient, grpo_toy_run, run_over_seeds  # noqa: E402
from rl4llm.toy.two_step import MAX_TOKENS, TOKENS, two_step_logits  # noqa: E402
from rl4llm.toy.verifier import addition_reward  # noqa: E402
from test_toy_grpo import _hand_run  # noqa: E402

BOOK = pathlib.Path(__file__).resolve().parents[1] / "book"
CH11, CH13, CH14, CH21 = (BOOK / "11_trust_region_ppo.ipynb", BOOK / "13_grpo_toy.ipynb",
                          BOOK / "14_grpo_choices.ipynb", BOOK / "21_summary.ipynb")
CHAPTERS = (CH11, CH13, CH14, CH21)


def _cells(path):
    return json.loads(path.read_text())["cells"]


def _output(cell) -> str:
    text = []
    for out in cell.get("outputs", []):
        if out["output_type"] == "stream":
            text.append("".join(out["text"]))
        elif "data" in out:
            for kind in ("text/markdown", "text/plain"):
                if kind in out["data"]:
                    text.append("".join(out["data"][kind]))
                    break
    return "\n".join(text)


def _stored(path, cell_id) -> str:
    return next(_output(c) for c in _cells(path) if c.get("id") == cell_id)


def _prose(path) -> str:
    return "\n".join("".join(c["source"]) for c in _cells(path) if c["cell_type"] == "markdown")


# ----------------------------------------------------------------------------- ch13: the K inner steps
@pytest.fixture(scope="module")
def inner_steps():
    """Per learning rate, the mixed groups' clip fraction and step length per inner step, from a
    hand-written loop (not ``grpo_toy_run``), over the chapter's 8 seeds and 30 steps."""
    out = {}
    for lr in (1.0, 0.3):
        rows = [_hand_run(seed, 30, 4, lr) for seed in range(8)]
        clip = np.concatenate([r[0] for r in rows])
        size = np.concatenate([r[1] for r in rows])
        mixed = np.concatenate([r[2] for r in rows]) == 0
        out[lr] = clip[mixed], size[mixed], int(mixed.sum())
    return out


def test_the_second_inner_step_clips_about_a_third_not_most(inner_steps):
    clip, size, n = inner_steps[1.0]
    assert n == 78
    assert round(clip[:, 1].mean(), 4) == 0.3638 < 0.5                 # "about a third", not "most"
    assert round((clip[:, 1] > 0.5).mean(), 4) == 0.2564               # more than half clipped
    assert round((clip[:, 1] == 1).mean(), 4) == 0.1667                # all clipped: a sixth
    assert (clip[:, 2] == 1).mean() > 0.25 and (clip[:, 3] == 1).mean() > 0.25
    later = size[:, 1:].sum(axis=1).mean() / size[:, 0].mean()
    assert round(later, 4) == 0.1829 < 0.2                             # "less than a fifth"
    clip3, size3, n3 = inner_steps[0.3]
    assert n3 == 121 and round(size3[:, 1:].sum(axis=1).mean() / size3[:, 0].mean(), 4) == 1.1825


def test_the_inner_step_table_and_its_ratios_are_stored_as_computed(inner_steps):
    table = _stored(CH13, "c13-inner-table")
    assert table.splitlines()[0] == "| lr | k | clip fraction | > half clipped | all clipped | length |"
    assert "| 1 | 2 | 0.3638 | 0.2564 | 0.1667 | 0.0452 |" in table
    later = _stored(CH13, "c13-inner-later")
    assert "lr 1: 78 mixed groups of 240; inner steps 2-4 together move 0.1829" in later
    assert "lr 0.3: 121 mixed groups of 240; inner steps 2-4 together move 1.1825" in later
    prose = _prose(CH13)
    assert "most ratios" not in prose and "pushes most" not in prose
    assert "0.1829 of its length, less than a fifth" in prose and "0.3638" in prose


def test_slider_run_last_inner_clip_fraction():
    run = grpo_toy_run(steps=10, K=2, seed=0)
    np.testing.assert_array_equal(run["inner_clip_fraction"][:, -1],
                                  [0.25, 0.75, 1, 0.25, 0.25, 0, 0.25, 0, 0, 0.125])
    assert "[0.25  0.75  1.    0.25  0.25  0.    0.25  0.    0.    0.125]" in _stored(CH13, "acdf4bbf")


# ----------------------------------------------------------------------------- ch14: k3 on pi_old's samples
def test_k3_on_pi_old_samples_follows_a_different_expectation_after_the_first_inner_step():
    """The gradient of mean k3 over a batch in pi_old's exact proportions, by autograd through
    grpo_loss, equals sum_y pi_old(y) (1 - pi_ref(y)/pi(y)) (e_y - pi), written here by hand; it
    equals the toy loop's pi - pi_ref only at pi = pi_old."""
    batch = np.repeat(np.arange(5), [1, 4, 2, 2, 1])          # in proportion to pi_old = the toy
    pi_old = pi_ref = softmax(LOGITS)

    def by_hand(z):
        pi = softmax(z)
        return sum(pi_old[y] * (1 - pi_ref[y] / pi[y]) * (np.eye(5)[y] - pi) for y in range(5))

    np.testing.assert_allclose(k3_loss_gradient(LOGITS, LOGITS, batch)["gradient"],
                               forward_kl_gradient(LOGITS, LOGITS), atol=1e-12)   # first inner step: both 0
    z_now = grpo_toy_run(seed=0)["logits"][1]
    on_old = k3_loss_gradient(z_now, LOGITS, batch)["gradient"]
    exact = forward_kl_gradient(z_now, LOGITS)
    np.testing.assert_allclose(on_old, by_hand(z_now), atol=1e-12)
    assert round(float(np.linalg.norm(on_old)), 4) == 0.1285 and round(float(np.linalg.norm(exact)), 4) == 0.1595
    assert round(float(np.linalg.norm(on_old) / np.linalg.norm(exact)), 4) == 0.8055
    cosine = on_old @ exact / np.linalg.norm(on_old) / np.linalg.norm(exact)
    assert round(float(cosine), 4) == 0.9911
    # at a policy with pi_old = pi (another start), the two agree exactly
    z = np.array([0.3, -1.0, 2.0, 0.0, 0.7])
    pi = softmax(z)
    k3 = sum(pi[y] * (1 - pi_ref[y] / pi[y]) * (np.eye(5)[y] - pi) for y in range(5))
    np.testing.assert_allclose(k3, forward_kl_gradient(z, LOGITS), atol=1e-12)
    assert "length ratio 0.8055 | cosine 0.9911" in _stored(CH14, "c14-k3-on-old")


def test_chapter_13_says_its_loop_applies_the_exact_kl_gradient_and_where_that_is_measured():
    """Chapter 13's loop applies beta (pi - pi_ref) at every inner step: its text says so, says that k3 on
    pi_old's samples follows another expectation, and names chapter 14, which measures it (the test above)."""
    prose = " ".join(_prose(CH13).split())
    exact = r"exact expected gradient under the *current* policy, $\beta(\pi - \pi_{\text{ref}})$, at every inner step"
    assert exact in prose
    assert r"drawn from $\pi_{\text{old}}$" in prose and "that term follows a different expectation" in prose
    assert "Chapter 14's section on the KL term measures the difference" in prose


# ----------------------------------------------------------------------------- ch14: which aggregation is unbiased
def test_normalisers_give_back_the_advantages_only_for_dr_grpo_and_dapo():
    rewards, lengths = np.array([1.0, 1.0, 0.0, 0.0]), np.array([2, 8, 2, 8])
    w = {lt: aggregation_weights(rewards, lengths, lt, max_completion_length=8)["per_token"]
         for lt in ("grpo", "dapo", "dr_grpo")}
    A = aggregation_weights(rewards, lengths, "grpo")["advantages"]
    np.testing.assert_allclose(w["dr_grpo"] * 4 * 8, A, atol=1e-12)
    np.testing.assert_allclose(w["dapo"] * lengths.sum(), A, atol=1e-12)
    np.testing.assert_allclose(w["grpo"] * 4, A / lengths, atol=1e-12)
    out = _stored(CH14, "c14-unbiased-check")
    assert "dr_grpo weight x B L_max   : [ 1.  1. -1. -1.]" in out
    assert "grpo weight x B            : [ 0.5    0.125 -0.5   -0.125]" in out


def _gradients_over_pairs():
    """Exact expectation over every batch of B = 2 answers of the two-step toy (49 ordered pairs),
    with the rewards as advantages (no baseline), of the ascent direction -grad loss of each
    loss_type; and grad J, J = sum_a P(a) r(a), by autograd on the same parameters."""
    answers = list(TOKENS)
    reward = {a: addition_reward(PROMPT, a) for a in answers}
    params = {c: torch.tensor(z, dtype=torch.float64, requires_grad=True) for c, z in two_step_logits().items()}

    def flat_grad(value):
        grads = torch.autograd.grad(value, list(params.values()), allow_unused=True, retain_graph=True)
        return torch.cat([torch.zeros_like(p) if g is None else g for g, p in zip(grads, params.values())])

    logp_all, _ = _two_step_logp(params, answers)
    prob = {a: float(p) for a, p in zip(answers, logp_all.detach().sum(dim=1).exp())}
    J = (logp_all.sum(dim=1).exp() * torch.tensor([reward[a] for a in answers], dtype=torch.float64)).sum()
    grad_J = flat_grad(J)
    expected = {lt: torch.zeros_like(grad_J) for lt in ("grpo", "dapo", "dr_grpo")}
    per_batch = []
    for pair in itertools.product(answers, repeat=2):
        weight = prob[pair[0]] * prob[pair[1]]
        logp, mask = _two_step_logp(params, list(pair))
        A = torch.tensor([reward[a] for a in pair], dtype=torch.float64)
        g = {}
        for lt in expected:
            loss, _ = grpo_loss(logp, logp.detach(), A, mask, loss_type=lt, max_completion_length=MAX_TOKENS)
            g[lt] = -flat_grad(loss)
            expected[lt] += weight * g[lt]
        per_batch.append((g, float(mask.sum())))
    return grad_J, expected, per_batch


def test_dr_grpo_is_unbiased_dapo_up_to_a_batch_scale_and_grpo_is_not():
    grad_J, expected, per_batch = _gradients_over_pairs()
    assert grad_J.norm() > 0.1
    torch.testing.assert_close(expected["dr_grpo"] * MAX_TOKENS, grad_J, rtol=0, atol=1e-12)
    for lt in ("grpo", "dapo"):                     # not a multiple of grad J
        e = expected[lt]
        residual = e - (e @ grad_J) / (grad_J @ grad_J) * grad_J
        assert residual.norm() > 1e-3 * e.norm(), lt
    for g, n_tokens in per_batch:                   # each batch: dapo = dr_grpo x (B L_max / tokens)
        torch.testing.assert_close(g["dapo"] * n_tokens, g["dr_grpo"] * 2 * MAX_TOKENS,
                                   rtol=0, atol=1e-12)


def test_leading_zeros_score_and_the_chapter_says_so():
    assert addition_reward(PROMPT, "0" * 10**6 + "5") == 1.0
    assert "a million zeros and a 5: 1.0" in _stored(CH14, "c14-padding-check")
    prose = _prose(CH14)
    assert "reason to pad" in prose
    assert "wrong answers get longer" not in prose             # an incentive, not an observation


# ----------------------------------------------------------------------------- ch21: the crossing point
def test_the_crossing_point_8_to_the_minus_one_seventh_by_enumeration():
    """The baseline loop's and REINFORCE's mean steps on the groups with a wrong answer, along
    grad J, by enumerating every group of 8 with hand-written per-group steps; their ratio is
    (7/8) / (1 - pi(5)^7), 1 exactly at pi(5) = 8^(-1/7)."""
    assert round(8 ** (-1 / 7), 4) == 0.7430
    printed = _stored(CH21, "c16-crossing")
    assert "8^(-1/7) = 0.7430" in printed
    for p5 in (0.70, 0.74, 0.75, 0.80, 8 ** (-1 / 7)):
        pi = with_correct_mass(softmax(LOGITS), CORRECT, p5)
        counts, law = group_count_law(pi, 8)
        n5 = counts[:, CORRECT]
        some_wrong = n5 < 8
        scores = np.eye(5) - pi                                     # row y: grad log pi(y)
        reinforce = sum(w * (counts[m] * REWARDS) @ scores / 8 for m, w in enumerate(law) if some_wrong[m])
        baseline = sum(w * (counts[m] * (REWARDS - n5[m] / 8)) @ scores / 8 for m, w in enumerate(law))
        g = pi * (REWARDS - pi @ REWARDS)
        ratio = (baseline @ g) / (reinforce @ g)
        assert ratio == pytest.approx(7 / 8 / (1 - p5 ** 7), rel=1e-10)
        if p5 != 8 ** (-1 / 7):
            assert f"pi(5) = {p5:.2f}: on the groups with a wrong answer, mean step along grad J, " \
                   f"baseline loop / REINFORCE = {ratio:.4f}" in printed
    assert "$\\pi(5)^7 > 1/8$" in _prose(CH21)


def test_ch21_band_stretches_are_printed():
    assert ("widest 10-90% band: step 1 REINFORCE; step 2 GRPO; steps 3-11 REINFORCE; "
            "steps 12-30 REINFORCE + baseline") in _stored(CH21, "adf0ded3")


def test_ch21_knob_table_names_the_books_and_trls_knobs():
    """Chapter 21's table of chapters 15-20: every book knob is a GRPOConfig field or a key of the knob
    mapping, every TRL field is one the mapping (or the sampler's, with AsyncGRPOConfig's) names, the TRL
    column gives each knob of ``KNOBS`` its field in order ("—" where TRL has none), the legend's "—" is
    used, and each row links its chapter's notebook."""
    import dataclasses
    from rl4llm.llm.trainer import GRPOConfig
    from rl4llm.trl.knobs import KNOBS, SAMPLER_KNOBS
    book_knobs = set(KNOBS) | {f.name for f in dataclasses.fields(GRPOConfig)}
    trl_fields = {field for field, _ in KNOBS.values() if field} | {f for pair in SAMPLER_KNOBS.values() for f in pair if f}
    prose = _prose(CH21)
    table = prose[prose.index("| chapter | book knobs | TRL 1.16 fields |"):]      # in its dropdown
    rows = list(itertools.takewhile(lambda line: line.startswith("|"), table.splitlines()[2:]))
    assert [re.match(r"\| \[(\d+)\]\((\d+)_", row).groups() for row in rows] == [(str(n), str(n)) for n in range(15, 21)]
    for row in rows:
        _, _, knobs, fields, _ = row.split("|")
        assert set(re.findall(r"`([^`]+)`", knobs)) <= book_knobs, row
        assert set(re.findall(r"`([^`]+)`", fields)) <= trl_fields, row
        names, entries = re.findall(r"`([^`]+)`", knobs), re.findall(r"`([^`]+)`|(—)", fields)
        expected = [KNOBS[name][0] or "—" for name in names if name in KNOBS]
        if len(expected) == len(names):
            assert [field or dash for field, dash in entries][:len(names)] == expected, row
        for chapter in re.findall(r"\]\((\d+_\w+\.ipynb)\)", row):
            assert (BOOK / chapter).exists(), chapter
    assert '"—" in the TRL column marks a book knob that TRL 1.16 has no field for' in prose
    chapter_20 = set(re.findall(r"`([^`]+)`", rows[-1].split("|")[2]))
    assert {name for name, (_, chapter) in KNOBS.items() if chapter == 20} <= chapter_20
    # the paragraph after the table names every knob a row lists that an earlier chapter introduces, with that chapter
    after = " ".join(table[table.index("Each row lists the knobs its chapter measures"):].split("\n\n")[0].split())
    for row in rows:
        row_chapter = int(re.match(r"\| \[(\d+)\]", row).group(1))
        for name in re.findall(r"`([^`]+)`", row.split("|")[2]):
            if name in KNOBS and KNOBS[name][1] < row_chapter:
                assert f"`{name}`" in after and f"chapter {KNOBS[name][1]}" in after, (row_chapter, name)
    assert sum(row.count("—") for row in rows) == sum(KNOBS[name][0] is None for row in rows
                                                      for name in re.findall(r"`([^`]+)`", row.split("|")[2]))


@pytest.mark.parametrize("path, cell_id, header", [
    (CH21, "300409b8", "| method | runs | step 5 | 10-90% | step 30 | 10-90% |"),
    (CH21, "5f0c1a02", "| ahead | behind | diff. | floor | verdict |"),
    (CH13, "c13-k-table", "| setting | n | mean | sd | min | max | vs | diff. | floor | verdict |"),
])
def test_tables_have_short_headers(path, cell_id, header):
    table = _stored(path, cell_id)
    assert header in table
    for line in table.splitlines():
        if line.startswith("|") and not line.startswith("|---"):
            assert max(len(cell.strip()) for cell in line.strip("|").split("|")) <= 24, line


# ----------------------------------------------------------------------------- every chapter: order and rendering
NUMBER = re.compile(r"(?<![\d.])-?\d+\.\d{4}(?!\d)")


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_every_four_decimal_number_in_the_prose_follows_an_output_that_prints_it(path):
    printed = ""
    for cell in _cells(path):
        if cell["cell_type"] == "code":
            printed += _output(cell)
            continue
        text = "".join(cell["source"]).split("```{exercise}")[0]     # solutions are pinned elsewhere
        for number in NUMBER.findall(text):
            assert number.lstrip("-") in printed, (path.stem, number)


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_no_line_inside_an_inline_formula_reads_as_a_list_item(path):
    """A line that continues an inline $...$ formula and starts with '+ ', '- ', '* ' or '1. ' is a
    Markdown list item, which breaks the formula (raw TeX in the built book)."""
    for cell in _cells(path):
        if cell["cell_type"] != "markdown":
            continue
        text = re.sub(r"\$\$.*?\$\$", "", "".join(cell["source"]), flags=re.S)
        inside = False
        for line in text.split("\n"):
            assert not (inside and re.match(r"\s*([+*-]|\d+[.)])\s", line)), (path.stem, line)
            if len(re.findall(r"(?<![\\$])\$(?!\$)", line)) % 2:
                inside = not inside


# ----------------------------------------------------------------------------- figure titles fit
def _texts_outside(fig):
    """Titles, labels and legends (not tick labels) that reach past the figure's edges."""
    fig.canvas.draw()
    renderer, box = fig.canvas.get_renderer(), fig.bbox
    ticks = {id(t) for ax in fig.axes for axis in (ax.xaxis, ax.yaxis)
             for t in axis.get_majorticklabels() + axis.get_minorticklabels()}
    outside = []
    for text in fig.findobj(matplotlib.text.Text):
        if id(text) in ticks or not text.get_visible() or not text.get_text():
            continue
        b = text.get_window_extent(renderer)
        if b.x0 < box.x0 - 0.5 or b.x1 > box.x1 + 0.5 or b.y0 < box.y0 - 0.5 or b.y1 > box.y1 + 0.5:
            outside.append(text.get_text())
    return outside


def _draw(draw, figsize, **params):
    from rl4llm.viz import apply_style
    apply_style()
    fig = plt.figure(figsize=figsize)
    try:
        draw(fig, **params)
        return _texts_outside(fig)
    finally:
        plt.close(fig)


@pytest.mark.parametrize("figsize, K", [((10, 3.4), K) for K in (1, 3, 6, 12, 24)])
def test_ch11_inner_steps_titles_fit(figsize, K):
    """The static figure (10 x 3.4 in), at K = 12 in the chapter and at other K: the third panel's title
    fits (the chart that replaced the K animation is checked in a browser, tests/test_browser_charts.py)."""
    from rl4llm.viz.trust_region_ppo import draw_inner_steps
    assert _draw(draw_inner_steps, figsize, K=K, eps=0.2) == []


@pytest.mark.parametrize("figsize, eps", [((8, 5), e) for e in (0.05, 0.1, 0.2, 0.3, 0.5)])
def test_ch11_clip_titles_fit(figsize, eps):
    from rl4llm.viz.trust_region_ppo import draw_clip
    assert _draw(draw_clip, figsize, eps=eps) == []


def test_the_fit_check_sees_a_clipped_title():
    def long_title(fig):
        ax = fig.subplots()
        ax.set_title("a title far too long to fit in a figure this narrow, by any measure")
    assert _draw(long_title, (3, 2)) != []


@pytest.mark.parametrize("params", [{}, {"G": 2}, {"G": 32}, {"eps": 0.05}, {"lr": 3.0}, {"beta": 2.0}])
def test_ch13_slider_titles_fit(params):
    from rl4llm.viz.grpo_toy import draw_grpo_run
    assert _draw(draw_grpo_run, (8, 3.2), **params) == []     # the static figure; the charts: in a browser


def test_run_over_seeds_is_the_chapter_13_table_source(inner_steps):
    """``grpo_toy_run`` over the seeds gives the hand-written loop's clip fractions."""
    out = run_over_seeds(grpo_toy_run, range(8), lr=1.0)
    mixed = out["zero_std"] == 0
    np.testing.assert_array_equal(out["inner_clip_fraction"][mixed], inner_steps[1.0][0])
