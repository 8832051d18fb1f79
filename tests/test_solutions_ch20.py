"""Chapter 20's experiment solution (ex-ch20-one-step-off), checked by running it.

The trained digits depend on the CPU, so the solution states only what holds on every CPU (bounds with
margin, and the one gap chapter 20's cell prints at the chapter's learning rate); these tests rerun the
experiment as the exercise asks and check each statement.
"""
import json
import pathlib
import re
from dataclasses import replace

import numpy as np
import pytest

from rl4llm.math.statistics import holm, noise_floor, welch_p_value

BOOK = pathlib.Path(__file__).resolve().parents[1] / "book"
CH20 = BOOK / "20_sampler_trainer.ipynb"


def _solution(label):
    text = "\n".join("".join(c["source"]) for c in json.loads(CH20.read_text())["cells"] if c["cell_type"] == "markdown")
    start = text.index("```{solution} " + label)
    end = start + 10 + re.search(r"^```$", text[start + 10:], re.M).start()
    return " ".join(text[start:end].split())


def _exercise(label):
    text = "\n".join("".join(c["source"]) for c in json.loads(CH20.read_text())["cells"] if c["cell_type"] == "markdown")
    start = text.index(":label: " + label)
    return text[start:text.index("```", start)]


@pytest.fixture(scope="module")
def one_step_off():
    """The exercise as asked: BASE at its learning rate and at a tenth, three seeds, one-step-off against
    synchronous, and the k = 1 gap at each rate (408 training steps, about 0.38 of the lab's 1,074)."""
    from rl4llm.llm.sampler_study import gap_summary, staleness_gaps
    from rl4llm.llm.samplers import RolloutEngineSampler
    from rl4llm.llm.tasks import AdditionTask
    from rl4llm.llm.trainer import GRPOConfig, compare_over_seeds
    from rl4llm.llm.warmstart import warm_start
    task, warm = AdditionTask(seed=0, n_eval=500), warm_start()
    base = GRPOConfig(steps=30, prompts_per_step=32, eval_every=30, log_kl=False)
    settings = {"synchronous": {},
                "one step off": {"sampler": RolloutEngineSampler(precision="float32", staleness=1, correction=False)}}
    out = {}
    for lr in (base.lr, base.lr / 10):
        config = replace(base, lr=lr)
        runs = compare_over_seeds(warm.model, task, config, settings, [0, 1, 2])
        gap = gap_summary(**staleness_gaps(warm.model, task, replace(config, steps=24), (1,))[1])
        out[lr] = runs, gap
    return base.lr, warm.accuracy, out


def test_ch20_one_step_off_solution(one_step_off):
    lr, warm_accuracy, out = one_step_off
    assert lr == 1e-3
    (fast, fast_gap), (slow, slow_gap) = out[1e-3], out[1e-4]
    assert sum(len(finals) for runs, _ in out.values() for finals in runs.values()) == 12    # the exercise's "twelve runs"
    # at 1e-3 both runs end below the warm start (why the chapter's lab trains at a smaller rate)
    assert max(fast["synchronous"].max(), fast["one step off"].max()) < warm_accuracy
    # at 1e-3: every one-step-off seed below every synchronous seed, and the difference clears its floor
    assert fast["one step off"].max() < fast["synchronous"].min()
    assert fast["synchronous"].mean() - fast["one step off"].mean() > noise_floor(fast["one step off"], fast["synchronous"])
    # the two comparisons made together: Holm's adjustment over the 2 (the exercise asks for it) doubles 1e-3's p,
    # the smaller; 1e-4's stays above 0.05 (1e-3's adjusted p is CPU-dependent: the solution gives only the rule,
    # a p between 0.025 and 0.05 doubles past 0.05, and accepts either verdict, so it is not checked here)
    p = [welch_p_value(runs["one step off"], runs["synchronous"]) for runs in (fast, slow)]
    adjusted = holm(p)
    assert p[0] < 0.05 and p[0] < p[1] and np.isclose(adjusted[0], 2 * p[0]) and adjusted[1] >= 0.05
    # at 1e-4: within the floor (and, unstated, within 0.02)
    difference = slow["one step off"].mean() - slow["synchronous"].mean()
    assert abs(difference) <= noise_floor(slow["one step off"], slow["synchronous"]) and abs(difference) < 0.02
    # the gap: above 0.05 per token at 1e-3 (the staleness cell prints it at k = 1), under a fifth of it at 1e-4
    assert fast_gap["mean"] > 0.05 and slow_gap["mean"] < 0.02 and slow_gap["mean"] < fast_gap["mean"] / 5
    # the weight's spread sqrt(e^{s^2} - 1), s the per-sequence std: above 0.3 at 1e-3, far smaller (below 0.05) at 1e-4
    spread = {lr: np.sqrt(np.expm1(gap["sequence_std"] ** 2)) for lr, gap in ((1e-3, fast_gap), (1e-4, slow_gap))}
    assert spread[1e-3] > 0.3 and spread[1e-4] < 0.05


def test_ch20_one_step_off_solution_states_what_the_test_checks():
    solution = _solution("ex-ch20-one-step-off")
    assert "twelve runs of 30" in " ".join(_exercise("ex-ch20-one-step-off").split())
    assert "Holm's step-down over the 2" in " ".join(_exercise("ex-ch20-one-step-off").split())
    for statement in ("both runs end below the warm start", "every one-step-off seed ends below every synchronous seed", "clears its noise floor", "Holm's adjustment over the 2 comparisons doubles its $p$",
                      "within its noise floor of the synchronous run", "above 0.05", "under a fifth of it",
                      "above 0.3", "far smaller at 1e-4", "can need no correction"):
        assert statement in solution, statement
