"""Tests for rl4llm.studies.kl_penalties (chapter 17): the three estimators against their formulas and the
exact KL by enumeration and Monte Carlo; each leash's closed-form gradient against autograd through the
penalty as a trainer writes it, against the closed forms of both KL directions, against finite differences of the KL, and against Monte Carlo; the
training runs against their exact paths; and every bad input."""
import math

import numpy as np
import pytest
import torch

from rl4llm import LOGITS, kl_divergence, kl_estimators, softmax
from rl4llm.math.estimators import sample_groups
from rl4llm.studies.kl_penalties import (LEASH_DIRECTIONS, LEASHES, kl_estimator_moments, leash_exact_run,
                                  leash_gradient, leash_run, moved_policy)
from rl4llm.llm.grpo import KL_ESTIMATORS
from rl4llm.llm.grpo_toys import k3_loss_gradient
from rl4llm.studies.toy_grpo import forward_kl_gradient, reverse_kl_gradient

from numerics import finite_difference

Z = moved_policy(0.5)


def test_formulas_on_one_token():
    k1, k2, k3 = kl_estimators(math.log(0.8), math.log(0.2))
    assert np.isclose(k1, math.log(4)) and np.isclose(k2, math.log(4) ** 2 / 2)
    assert np.isclose(k3, 0.25 - math.log(0.25) - 1)
    assert all(isinstance(k, np.ndarray) for k in (k1, k2, k3))


def leash_penalty_by_autograd(z, z_ref, leash, samples=None):
    """The independent route: the leash's penalty as a trainer writes it in torch, differentiated by autograd
    (the expectation weights pi(y) held fixed)."""
    zt = torch.tensor(z, dtype=torch.float64, requires_grad=True)
    logp = torch.log_softmax(zt, dim=0)
    ref = torch.log_softmax(torch.tensor(z_ref, dtype=torch.float64), dim=0)
    u = ref - logp                                                  # KL_ESTIMATORS' argument: ln pi_ref - ln pi
    term = {"k1_reward": (-u).detach() * logp, "k1_loss": KL_ESTIMATORS["k1"](u), "k2_loss": KL_ESTIMATORS["k2"](u),
            "k3_loss": KL_ESTIMATORS["k3"](u), "k3_corrected": torch.exp(logp - logp.detach()) * KL_ESTIMATORS["k3"](u)}
    penalty = term[leash]
    if samples is None:
        (torch.softmax(zt, dim=0).detach() * penalty).sum().backward()
    else:
        penalty[torch.as_tensor(samples)].mean().backward()
    return zt.grad.numpy()


@pytest.mark.parametrize("leash", LEASHES)
def test_each_leash_gradient_is_autograd_through_its_penalty(leash):
    ys = np.array([0, 2, 2, 1, 4, 3, 2])
    np.testing.assert_allclose(leash_gradient(Z, LOGITS, leash), leash_penalty_by_autograd(Z, LOGITS, leash),
                               rtol=0, atol=1e-14)
    np.testing.assert_allclose(leash_gradient(Z, LOGITS, leash, samples=ys),
                               leash_penalty_by_autograd(Z, LOGITS, leash, ys), rtol=0, atol=1e-14)


def test_the_estimators_in_numpy_match_the_losss_torch_ones():
    logp, ref = np.array([-0.5, -2.0]), np.array([-1.0, -1.0])
    ours = kl_estimators(logp, ref)
    u = torch.tensor(ref - logp)
    for name, k in zip(("k1", "k2", "k3"), ours):
        np.testing.assert_allclose(k, KL_ESTIMATORS[name](u).numpy(), rtol=1e-15)


def test_moments_exact_and_by_monte_carlo():
    m = kl_estimator_moments(Z)
    pi = softmax(Z)
    assert np.isclose(m["kl"], kl_divergence(pi, softmax(LOGITS)))
    assert abs(m["k1"]["bias"]) < 1e-12 and abs(m["k3"]["bias"]) < 1e-12 and m["k2"]["bias"] > 0.01
    assert m["k3"]["variance"] < m["k1"]["variance"]
    ys = sample_groups(pi, 1, 200_000, np.random.default_rng(3))[:, 0]
    for name, k in zip(("k1", "k2", "k3"), kl_estimators(np.log(pi)[ys], np.log(softmax(LOGITS))[ys])):
        se = k.std(ddof=1) / math.sqrt(k.size)
        assert abs(k.mean() - m[name]["mean"]) < 4 * se
        assert abs(k.var(ddof=1) - m[name]["variance"]) < 0.02 * m[name]["variance"] + 1e-12


def test_each_leash_follows_its_direction():
    closed = {"forward": forward_kl_gradient(Z, LOGITS), "reverse": reverse_kl_gradient(Z, LOGITS),
              "none": np.zeros(5)}
    for leash in LEASHES:
        assert np.allclose(leash_gradient(Z, LOGITS, leash), closed[LEASH_DIRECTIONS[leash]], atol=1e-12), leash
    reverse_by_fd = finite_difference(lambda z: kl_divergence(softmax(z), softmax(LOGITS)), Z)
    forward_by_fd = finite_difference(lambda z: kl_divergence(softmax(LOGITS), softmax(z)), Z)
    assert np.allclose(closed["reverse"], reverse_by_fd, atol=1e-8)
    assert np.allclose(closed["forward"], forward_by_fd, atol=1e-8)


def test_k3_leashes_agree_with_chapter_13s_autograd():
    ys = np.array([0, 2, 2, 1, 4, 3, 2])
    for corrected, leash in ((False, "k3_loss"), (True, "k3_corrected")):
        theirs = k3_loss_gradient(Z, LOGITS, ys, bias_correction=corrected)["gradient"]
        assert np.allclose(leash_gradient(Z, LOGITS, leash, samples=ys), theirs)


@pytest.mark.parametrize("leash", LEASHES)
def test_sampled_leash_gradient_averages_to_the_exact_one(leash):
    ys = sample_groups(softmax(Z), 1, 20_000, np.random.default_rng(5))[:, 0]
    chunks = np.array([leash_gradient(Z, LOGITS, leash, samples=c) for c in np.split(ys, 100)])
    se = chunks.std(axis=0, ddof=1) / math.sqrt(len(chunks))
    assert np.all(np.abs(chunks.mean(axis=0) - leash_gradient(Z, LOGITS, leash)) < 4 * se + 1e-12)


def test_reverse_leashes_share_every_per_sample_gradient():
    ys = np.array([3])
    grads = [leash_gradient(Z, LOGITS, leash, samples=ys) for leash in ("k1_reward", "k2_loss", "k3_corrected")]
    assert np.allclose(grads[0], grads[1]) and np.allclose(grads[0], grads[2])


def test_runs_follow_their_exact_paths_and_are_seeded():
    for leash in ("k1_reward", "k3_loss"):
        runs = np.array([leash_run(leash, beta=1.0, steps=20, seed=s)["pi_correct"][-1] for s in range(12)])
        exact = leash_exact_run(leash, beta=1.0, steps=20)["pi_correct"][-1]
        assert abs(runs.mean() - exact) < 4 * runs.std(ddof=1) / math.sqrt(runs.size) + 1e-3
    a, b = leash_run("k2_loss", steps=5, seed=2), leash_run("k2_loss", steps=5, seed=2)
    assert np.array_equal(a["pi_correct"], b["pi_correct"]) and a["kl"][0] == 0.0
    assert np.allclose(a["pi_correct"], leash_run("k3_corrected", steps=5, seed=2)["pi_correct"], rtol=0, atol=1e-12)


@pytest.mark.parametrize("beta, reverse, forward, reverse_at_40, forward_at_40", [
    (0.25, 0.932, 0.812, 0.893, 0.810), (1.0, 0.405, 0.447, 0.405, 0.447), (4.0, 0.243, 0.246, 0.243, 0.246)])
def test_the_fixed_points_of_ex_ch17_beta(beta, reverse, forward, reverse_at_40, forward_at_40):
    """Chapter 17's ex-ch17-beta solution: the reverse leash's fixed point 0.2 e^(1/beta) / (0.2 e^(1/beta) + 0.8),
    the forward one's root of p (1 - p) = beta (p - 0.2), each the end of its exact path run long, and where
    the exact paths stand after the chapter's 40 steps."""
    p_reverse = 0.2 * math.exp(1 / beta) / (0.2 * math.exp(1 / beta) + 0.8)
    p_forward = ((1 - beta) + math.sqrt((1 - beta) ** 2 + 0.8 * beta)) / 2
    assert math.isclose(p_forward * (1 - p_forward), beta * (p_forward - 0.2), abs_tol=1e-12)
    assert (round(p_reverse, 3), round(p_forward, 3)) == (reverse, forward)
    for leash, fixed, at_40 in (("k2_loss", p_reverse, reverse_at_40), ("k3_loss", p_forward, forward_at_40)):
        path = leash_exact_run(leash, beta=beta, steps=1500)["pi_correct"]
        assert abs(path[-1] - fixed) < 1e-3 and round(path[40], 3) == at_40


def test_beta_zero_leaves_only_the_reward():
    a = leash_exact_run("k3_loss", beta=0.0, steps=5)
    assert np.allclose(a["pi_correct"], leash_exact_run("k1_loss", beta=0.7, steps=5)["pi_correct"])


def test_bad_inputs():
    with pytest.raises(ValueError, match="logp and logp_ref must have the same shape"):
        kl_estimators([0.0, -1.0], [-1.0])
    with pytest.raises(ValueError, match="logp must be finite"):
        kl_estimators([-math.inf], [0.0])
    with pytest.raises(ValueError, match="logp"):
        kl_estimators([math.nan], [0.0])
    with pytest.raises(ValueError, match="leash must be one of"):
        leash_gradient(Z, LOGITS, "k3")
    with pytest.raises(ValueError, match="samples must be"):
        leash_gradient(Z, LOGITS, "k3_loss", samples=[9])
    with pytest.raises(ValueError, match="beta must be"):
        leash_run("k3_loss", beta=-1.0)
    with pytest.raises(ValueError, match="G must be"):
        leash_run("k3_loss", G=1)
    with pytest.raises(ValueError, match="pi_correct must be"):
        moved_policy(1.0)
    with pytest.raises(ValueError, match="ref_logits"):
        kl_estimator_moments(Z, LOGITS[:3])


def test_the_kl_bias_charts_y_axis_holds_every_bar_at_every_position():
    """k2's bias is negative at some pi(5): the chart's y domain spans the lowest and highest stored value,
    with a rule at zero; the charts whose values are never negative keep their axis's foot at 0."""
    pytest.importorskip("altair")
    from rl4llm.viz.charts import chart_rows
    from rl4llm.viz.estimators import ESTIMATORS, kl_bias_chart, kl_std_chart

    def domains(spec):
        return {tuple(layer["encoding"]["y"]["scale"]["domain"]) for layer in spec["layer"]
                if "scale" in layer.get("encoding", {}).get("y", {})}

    spec = kl_bias_chart().to_dict()
    values = [row[k] for row in chart_rows(spec) for k in ESTIMATORS]
    (low, high), = domains(spec)
    assert min(values) < -0.1 and low < min(values) and high > max(values) > 0.1
    assert any(layer.get("mark", {}).get("type") == "rule" and layer.get("data", {}).get("values") == [{"value": 0}]
               for layer in spec["layer"])
    (foot, _), = domains(kl_std_chart().to_dict())
    assert foot == 0
