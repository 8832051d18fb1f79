"""Chapter 20's checks: each passes the library's number, and gives each typical wrong answer, written here
the way a student would compute it, the right diagnosis."""
import math

import numpy as np
import pytest
import torch

from rl4llm.exercises import EXERCISES, SPECS, answer_key, check
from rl4llm.exercises._core import MALFORMED
from rl4llm.llm.rollout_correction import importance_weights, off_policy_mask
from rl4llm.llm.sampler_study import lognormal_weight_moments

CHAPTER_20 = ("ex-ch20-sequence-weight", "ex-ch20-opsm-kl", "ex-ch20-one-step-off", "ex-ch20-async-clip")


@pytest.mark.parametrize("exercise", CHAPTER_20)
def test_each_by_hand_check_knows_its_answer_and_at_least_four_mistakes(exercise):
    spec = SPECS[exercise]
    assert EXERCISES[exercise] == 20 and len(spec.mistakes) >= 4
    verdicts = [check(exercise, wrong) for wrong, _ in spec.mistakes]
    assert verdicts == [f"Not yet: {explanation}." for _, explanation in spec.mistakes]
    assert check(exercise, spec.value).startswith("Correct:") and check(exercise, "abc") == MALFORMED
    assert exercise in answer_key()


def test_values_from_the_library_and_by_hand():
    trainer, engine = torch.log(torch.tensor([[0.5, 0.8]])), torch.log(torch.tensor([[0.2, 0.4]]))
    mask = torch.ones(1, 2)
    weight = {mode: float(importance_weights(trainer, engine, mask, mode=mode))
              for mode in ("sequence_mask", "sequence_truncate")}
    assert math.isclose(SPECS["ex-ch20-sequence-weight"].value, weight["sequence_truncate"], rel_tol=1e-6)
    assert SPECS["ex-ch20-sequence-weight"].value == 3.0 and weight["sequence_mask"] == 0.0     # differ above the cap
    assert math.isclose(0.5 / 0.2 * 0.8 / 0.4, 5.0)                 # the exact ratio, above the cap 3
    tokens = {mode: importance_weights(trainer, engine, mask, mode=mode).flatten().tolist()
              for mode in ("token_mask", "token_truncate")}
    assert all(math.isclose(a, b, rel_tol=1e-6) for w in tokens.values() for a, b in zip(w, (2.5, 2.0)))   # < cap
    assert math.isclose(SPECS["ex-ch20-opsm-kl"].value, 0.7)
    engine3, policy3 = torch.tensor([[-0.1, -0.3, -0.2]]), torch.tensor([[-0.9, -1.0, -0.8]])
    dropped = off_policy_mask(torch.tensor([-1.0]), policy3, engine3, torch.ones(1, 3), 0.5)
    kept = off_policy_mask(torch.tensor([-1.0]), policy3, engine3, torch.ones(1, 3), 0.75)
    assert float(dropped) == 0.0 and float(kept) == 1.0          # 0.7 is between the two thresholds


def test_students_slips_are_named():
    r = 0.5 / 0.2 * 0.8 / 0.4                                               # 5, above the cap
    assert "that is masking, not truncation" in check("ex-ch20-sequence-weight", 0.0)
    assert "the exact ratio" in check("ex-ch20-sequence-weight", r)
    assert "geometric mean" in check("ex-ch20-sequence-weight", math.sqrt(r))
    assert "upside down" in check("ex-ch20-sequence-weight", 0.2 / 0.5 * 0.4 / 0.8)
    assert "averages the token ratios" in check("ex-ch20-sequence-weight", (2.5 + 2) / 2)
    assert "take its exponential" in check("ex-ch20-sequence-weight", math.log(0.5 / 0.2) + math.log(0.8 / 0.4))
    assert "token mode" in check("ex-ch20-sequence-weight", 0.5 / 0.2)
    assert "second token's weight" in check("ex-ch20-sequence-weight", 0.8 / 0.4)
    assert "adds the token ratios" in check("ex-ch20-sequence-weight", 2.5 + 2)
    assert check("ex-ch20-sequence-weight", 3.0).startswith("Correct:")
    assert "sum over the tokens" in check("ex-ch20-opsm-kl", 0.8 + 0.7 + 0.6)
    assert "sign is flipped" in check("ex-ch20-opsm-kl", -0.7)
    k3 = np.mean([math.exp(-g) - 1 + g for g in (0.8, 0.7, 0.6)])          # r - 1 - ln r, r = pi_theta / pi_samp
    assert "k3 estimate" in check("ex-ch20-opsm-kl", k3)
    kept, dropped = check("ex-ch20-opsm-kl", 1.0), check("ex-ch20-opsm-kl", 0.0)     # the mask's values, not its measure
    assert "that is the mask's value" in kept and "this one is dropped" in kept
    assert "that is the mask's value" in dropped and "this sequence is dropped" in dropped


def test_the_coding_exercise_passes_the_library_and_names_each_slip():
    assert EXERCISES["lognormal_weight_moments"] == 20
    assert check("lognormal_weight_moments", lognormal_weight_moments).startswith("Correct:")
    phi = lambda x: 0.5 * (1 + math.erf(x / math.sqrt(2)))                  # noqa: E731

    def uncentred(s, cap, rule):            # ln r ~ N(0, s^2): the -s^2/2 forgotten
        if rule == "none":
            return math.exp(s * s / 2), math.exp(2 * s * s) - math.exp(s * s)
        first = math.exp(s * s / 2) * phi((math.log(cap) - s * s) / s)
        second = math.exp(2 * s * s) * phi((math.log(cap) - 2 * s * s) / s)
        if rule == "truncate":
            above = 1 - phi(math.log(cap) / s)
            first, second = first + cap * above, second + cap ** 2 * above
        return first, second - first ** 2

    def second_moment(s, cap, rule):
        mean, var = lognormal_weight_moments(s, cap, rule)
        return mean, var + mean ** 2

    def truncate_as_mask(s, cap, rule):
        return lognormal_weight_moments(s, cap, "mask" if rule == "truncate" else rule)

    assert "mean -s^2/2 is missing" in check("lognormal_weight_moments", uncentred)
    assert "E[w^2] - E[w]^2" in check("lognormal_weight_moments", second_moment)

    def standard_deviation(s, cap, rule):
        mean, var = lognormal_weight_moments(s, cap, rule)
        return mean, math.sqrt(var)

    assert "the second value is the standard deviation" in check("lognormal_weight_moments", standard_deviation)
    assert "keeps the mass above the cap" in check("lognormal_weight_moments", truncate_as_mask)

    def mask_mean_one(s, cap, rule):        # the masked weight's mean taken as 1, the variance E[w^2] - 1
        mean, var = lognormal_weight_moments(s, cap, rule)
        return (1.0, var + mean ** 2 - 1) if rule == "mask" else (mean, var)

    assert "masked weight's mean is not 1" in check("lognormal_weight_moments", mask_mean_one)


def test_the_weight_std_by_simulation_and_from_the_moments():
    """ex-ch20-one-step-off's number: the std of exp(x), x ~ N(-s^2/2, s^2) at s = 0.3495, from the library's
    uncapped moments (E[w] = 1) and from 400,000 draws (within 4 standard errors of the std's estimate)."""
    s = 0.3495
    value = SPECS["ex-ch20-one-step-off"].value
    mean, variance = lognormal_weight_moments(s, 3.0, "none")          # no cap: mean 1, variance e^{s^2} - 1
    assert mean == pytest.approx(1.0) and math.sqrt(variance) == pytest.approx(value, rel=1e-12)
    w = np.exp(np.random.default_rng(0).normal(-s * s / 2, s, 400_000))
    se_of_std = w.std(ddof=1) * math.sqrt((np.mean((w - w.mean()) ** 4) / w.var() ** 2 - 1) / (4 * len(w)))
    assert abs(w.std(ddof=1) - value) < 4 * se_of_std and abs(w.mean() - 1) < 4 * w.std() / math.sqrt(len(w))
    assert round(value, 4) == 0.3604
    assert "log-ratio's std" in check("ex-ch20-one-step-off", 0.3495)
    assert "variance" in check("ex-ch20-one-step-off", 0.1299)


def test_async_clip_ratio_by_autograd():
    """ex-ch20-async-clip: the ratio exp(log pi_theta - log pi_engine) = e^-0.4, and the clipped term of a token with
    A = -1 at that ratio has zero gradient in log pi_theta (autograd through TRL's min(rho A, clip(rho) A)), while
    the rescored ratio 1 keeps the gradient -1."""
    from rl4llm.math.ppo_clip import clip_binds
    assert math.isclose(SPECS["ex-ch20-async-clip"].value, math.exp(-0.4))
    for engine_logp, grad in ((-0.5, 0.0), (-0.9, -1.0)):          # the engine's, then GRPOTrainer's rescored log pi_old
        logp = torch.tensor(-0.9, requires_grad=True)
        rho = torch.exp(logp - engine_logp)
        term = torch.minimum(rho * -1.0, torch.clamp(rho, 0.8, 1.2) * -1.0)
        term.backward()
        assert math.isclose(float(logp.grad), grad, abs_tol=1e-12)
    assert bool(clip_binds(np.array([math.exp(-0.4)]), np.array([-1.0]), 0.2))
