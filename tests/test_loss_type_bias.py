"""Every loss type's exact expected update on the toys (rl4llm.llm.loss_type_bias): on-policy it is the
registry's weight route (estimator_bias), off-policy without a binding clip it is importance sampling's
unbiased estimate, and chapter 17's numbers."""
import numpy as np
import pytest

from rl4llm.llm.loss_type_bias import LOSS_SETTINGS, loss_type_moments, toy_policies
from rl4llm.math.loss_types import LOSS_TYPES
from rl4llm.studies.estimator_bias import advantages, estimator_moments, one_step_task, two_step_task


def rloo(r):
    return advantages(r[None], None, "rloo")[0]


@pytest.mark.parametrize("loss_type", list(LOSS_TYPES))
def test_on_policy_it_is_the_registrys_weight_on_both_toys(loss_type):
    """Two independent routes: autograd through grpo_loss per group, and the registry's token_weight."""
    for toy, task in (("one_step", one_step_task()), ("two_step", two_step_task())):
        ours = loss_type_moments(toy, 3, loss_type, advantage=rloo)
        theirs = estimator_moments(task, 3, "rloo", loss_type)
        np.testing.assert_allclose(ours["mean"], theirs["mean"], atol=1e-14)
        assert ours["variance"] == pytest.approx(theirs["variance"], rel=1e-12)
        np.testing.assert_allclose(ours["gradient"], task.gradient, atol=1e-14)   # autograd's grad J, too


def test_on_policy_the_new_types_are_old_ones():
    """At rho = 1 SAPO's gate and GSPO's ratio give grpo's update, VESPO's weight dapo's, LUSPO L_max times
    dr_grpo's (its scale: 3 on the two-step toy)."""
    m = {label: loss_type_moments("two_step", 3, t, level, advantage=rloo) for label, (t, level) in LOSS_SETTINGS.items()}
    for new, old in (("sapo", "grpo"), ("gspo", "grpo"), ("vespo", "dapo"), ("cispo", "dapo"), ("bnpo", "dapo")):
        np.testing.assert_allclose(m[new]["mean"], m[old]["mean"], atol=1e-14)
    np.testing.assert_allclose(m["luspo"]["mean"], 3 * m["dr_grpo"]["mean"], atol=1e-14)
    assert m["dr_grpo"]["relative_bias"] < 1e-12 and m["luspo"]["angle"] < 1e-5


def test_ahead_without_a_binding_clip_it_is_unbiased_importance_sampling():
    """One-token answers, pi ahead of pi_old, leave-one-out advantages: E_old[rho (r - b) grad ln pi] = grad J(pi)
    exactly, since b does not depend on the answer and E_old[rho grad ln pi] = 0. A clip or cap too wide to bind
    leaves it so; the clip at 0.2 binds at lead 2 and biases it."""
    policies = toy_policies("one_step", 2.0)
    assert (policies["probs"] / policies["probs_old"]).max() > 1.2
    wide = loss_type_moments("one_step", 4, "dapo", lead=2.0, advantage=rloo, eps_low=0.99, eps_high=0.99)
    capped = loss_type_moments("one_step", 4, "cispo", lead=2.0, advantage=rloo, eps_high=10.0)
    clipped = loss_type_moments("one_step", 4, "dapo", lead=2.0, advantage=rloo)
    assert wide["relative_bias"] < 1e-12 and capped["relative_bias"] < 1e-12
    assert clipped["relative_bias"] > 0.1


def test_validation():
    with pytest.raises(ValueError, match="toy must be one of"):
        loss_type_moments("three_step")
    with pytest.raises(ValueError, match="loss_type must be one of"):
        loss_type_moments("two_step", 3, "ppo")
    with pytest.raises(ValueError, match="G must be"):
        loss_type_moments("two_step", 1)
    with pytest.raises(ValueError, match="lead must be"):
        loss_type_moments("two_step", 3, lead=-1.0)
    with pytest.raises(ValueError, match="advantage must be a function"):
        loss_type_moments("two_step", 3, advantage="rloo")


def test_chapter_17s_numbers_ahead_of_the_sampler():
    """The two-step toy, G = 4, RLOO, pi one exact ascent step of size 2 ahead: the clipped types turn by 35 to
    41 degrees and keep a quarter to a third of the step; CISPO, SAPO, GSPO, LUSPO and VESPO stay within 5."""
    m = {label: loss_type_moments("two_step", 4, t, level, 2.0, advantage=rloo) for label, (t, level) in LOSS_SETTINGS.items()}
    angles = {label: round(v["angle"], 2) for label, v in m.items()}
    assert angles == {"grpo": 34.86, "bnpo": 39.49, "dapo": 39.49, "dr_grpo": 41.47, "cispo": 3.82, "sapo": 4.94,
                      "gspo": 2.71, "luspo": 1.22, "vespo": 3.75}
    assert [round(m[k]["scale"], 2) for k in ("dr_grpo", "grpo", "cispo")] == [0.24, 0.36, 1.41]
    assert round(m["vespo"]["relative_bias"], 4) == 0.1489 and round(m["luspo"]["relative_bias"], 4) == 1.7148


def test_chapter_17s_numbers_on_the_one_step_toy_ahead():
    """One token per answer: the clip binds on "5" (ratio 1.387) and keeps 0.2 of the step, along grad J."""
    policies = toy_policies("one_step", 2.0)
    assert round(policies["probs"][2] / policies["probs_old"][2], 3) == 1.387
    clipped = loss_type_moments("one_step", 4, "dapo", lead=2.0, advantage=rloo)
    assert round(clipped["scale"], 4) == 0.2 and clipped["angle"] < 1e-5
    assert round(loss_type_moments("one_step", 4, "vespo", lead=2.0, advantage=rloo)["relative_bias"], 4) == 0.4555


def test_the_settings_are_every_registered_type_at_the_level_trl_asks_for():
    assert {t for t, _ in LOSS_SETTINGS.values()} == set(LOSS_TYPES)
    for label, (loss_type, level) in LOSS_SETTINGS.items():
        assert LOSS_TYPES[loss_type].importance_sampling_level in (None, level), label


def test_monte_carlo_draws_land_on_the_exact_moments_ahead_of_the_sampler():
    """Groups drawn from pi_old at random (another route to the law of a group than the enumeration): the mean
    within 4 standard errors of the exact E[X] in every logit, the total variance within 4 of its errors."""
    from rl4llm.math.estimators import total_variance_and_standard_error
    from rl4llm.llm.loss_type_bias import sample_loss_type_updates

    for loss_type in ("dapo", "vespo"):
        exact = loss_type_moments("two_step", 4, loss_type, lead=2.0, advantage=rloo)
        x = sample_loss_type_updates("two_step", 4, loss_type, lead=2.0, advantage=rloo, n_groups=3000, seed=1)
        z = np.abs(x.mean(axis=0) - exact["mean"]) / (x.std(axis=0, ddof=1) / np.sqrt(len(x)))
        assert z.max() < 4, (loss_type, z.max())
        v, v_se = total_variance_and_standard_error(x)
        assert abs(v - exact["variance"]) < 4 * v_se, loss_type
