"""rl4llm.studies.sequence_ratios: the enumeration against its definitions, against Monte Carlo and against
grpo_loss's autograd (the clip rule), and its validation."""
import numpy as np
import pytest
import torch

from rl4llm import grpo_loss, sequence_ratio
from rl4llm.studies.sequence_ratios import (CHAIN_MAX_EXACT, WEIGHTINGS, chain_sequences, reweighted_moments,
                                    sample_chain, token_coefficients, two_step_sequences)


@pytest.mark.parametrize("task", [two_step_sequences(2, 1.0), chain_sequences(3, 2, 1.0)])
def test_probabilities_sum_to_one_and_the_product_weight_is_unbiased(task):
    assert np.isclose(task.probs.sum(), 1) and np.isclose(task.probs_old.sum(), 1)
    assert np.isclose(task.baseline, task.probs_old @ task.rewards)
    m = reweighted_moments(task, "sequence_is")
    assert m["bias_norm"] < 1e-12 and m["zero_share"] == 0


def test_the_gradient_is_the_score_function_identity_by_finite_differences():
    # the chain's J(pi) = mean_t pi_t(5); its gradient in the logits of position t is pi_t(5)(e5 - pi_t) / L
    task = chain_sequences(2, 1, 1.0)
    pi = np.exp(task.logp[:5, 1])          # answers (0, y): the second token runs over the vocabulary
    expected = np.tile(pi[2] * (np.eye(5)[2] - pi) / 2, 2)
    assert np.allclose(task.gradient, expected)


def test_without_drift_every_weighting_is_the_on_policy_estimate():
    task = chain_sequences(2, 0, 1.0)
    base = reweighted_moments(task, "sequence_is")
    for w in ("token", "gspo", "token_clip", "cispo"):
        m = reweighted_moments(task, w)
        assert np.allclose(m["mean"], base["mean"]) and np.isclose(m["variance"], base["variance"])


def test_the_product_weight_variance_grows_with_length_and_gspo_is_biased():
    variances = [reweighted_moments(chain_sequences(L, 3, 1.0), "sequence_is")["variance"] for L in (1, 2, 3)]
    assert variances[0] < variances[1] < variances[2]
    assert reweighted_moments(two_step_sequences(1, 1.0), "gspo")["relative_bias"] > 0.01
    assert reweighted_moments(chain_sequences(1, 3, 1.0), "gspo")["bias_norm"] < 1e-12   # one token: s = rho


def test_coefficients_follow_the_definitions():
    task = two_step_sequences(3, 1.0)
    A = task.rewards - task.baseline
    rho = np.exp(task.mask * (task.logp - task.logp_old))
    s = sequence_ratio(task.logp, task.logp_old, task.mask)
    assert np.allclose(token_coefficients(task.logp, task.logp_old, task.mask, A, "gspo", 0.2, 0.2),
                       s[:, None] * task.mask)
    assert np.allclose(token_coefficients(task.logp, task.logp_old, task.mask, A, "cispo", None, 1.28),
                       np.minimum(rho, 1.28) * task.mask)
    assert (rho[task.mask > 0] < 0.8).any()          # a ratio CISPO's one-sided cap leaves alone


@pytest.mark.parametrize("level,weighting,eps", [("token", "token_clip", 0.2), ("sequence", "gspo_clip", 0.05)])
def test_the_clipped_coefficients_are_grpo_loss_gradients(level, weighting, eps):
    """-d grpo_loss / d logp_t (dr_grpo with L_max = 1, B = 1 per answer) is c_t A for every token."""
    task = two_step_sequences(3, 1.0)
    A = task.rewards - task.baseline
    logp = torch.tensor(task.logp, requires_grad=True)
    for i in range(len(task.answers)):
        loss, _ = grpo_loss(logp[i:i + 1], torch.tensor(task.logp_old[i:i + 1]), torch.tensor(A[i:i + 1]),
                            torch.tensor(task.mask[i:i + 1]), eps_low=eps, loss_type="dr_grpo",
                            max_completion_length=1, importance_sampling_level=level)
        (grad,) = torch.autograd.grad(loss, logp)
        c = token_coefficients(task.logp, task.logp_old, task.mask, A, weighting, eps, eps)
        assert np.allclose(-grad.numpy()[i], c[i] * A[i], atol=1e-12)


@pytest.mark.parametrize("weighting", WEIGHTINGS)
def test_monte_carlo_agrees_with_the_enumeration(weighting):
    from rl4llm.studies.sequence_ratios import sample_reweighted
    exact = reweighted_moments(chain_sequences(3, 2, 1.0), weighting)
    mc = sample_reweighted(sample_chain(3, 40000, seed=1, steps=2, lr=1.0), weighting)
    assert np.all(np.abs(mc["mean"] - exact["mean"]) < 5 * mc["mean_se"] + 1e-12)
    assert abs(mc["variance"] - exact["variance"]) < 5 * mc["variance_se"] + 1e-12
    assert abs(mc["zero_share"] - exact["zero_share"]) < 0.02


def test_validation():
    with pytest.raises(ValueError, match="weighting must be one of"):
        reweighted_moments(two_step_sequences(), "ppo")
    with pytest.raises(ValueError, match=r"L must be an integer in \[1, 6\]"):
        chain_sequences(CHAIN_MAX_EXACT + 1)
    with pytest.raises(ValueError, match="steps must be an integer >= 0"):
        two_step_sequences(-1)
    with pytest.raises(ValueError, match="lr must be"):
        chain_sequences(2, 1, 0.0)
    with pytest.raises(ValueError, match="eps_low must be in"):
        reweighted_moments(two_step_sequences(), "token_clip", eps_low=1.5)
    with pytest.raises(ValueError, match="task must be a SequenceTask"):
        reweighted_moments("toy", "token")
    from rl4llm.studies.sequence_ratios import sample_reweighted
    with pytest.raises(ValueError, match="at least 2 sampled answers"):
        sample_reweighted(sample_chain(2, 1, seed=0), "token")


def test_product_weight_split_by_hand_on_the_chain_of_two():
    # independent route: every answer (y1, y2) of the chain built by hand from the toy's softmax
    import itertools
    from rl4llm import LOGITS, REWARDS, softmax
    from rl4llm.math.gradients import policy_gradient_step
    from rl4llm.studies.sequence_ratios import product_weight_split
    z = policy_gradient_step(policy_gradient_step(LOGITS.copy(), REWARDS, 0.5), REWARDS, 0.5)
    pi, old = softmax(z), softmax(LOGITS)
    J_old = old[2]
    terms = []
    for y1, y2 in itertools.product(range(5), repeat=2):
        q, w = old[y1] * old[y2], pi[y1] * pi[y2] / (old[y1] * old[y2])
        A = ((y1 == 2) + (y2 == 2)) / 2 - J_old
        score = A * np.concatenate([np.eye(5)[y1] - pi, np.eye(5)[y2] - pi])
        terms.append((q, w, score))
    w2 = sum(q * w ** 2 for q, w, _ in terms)
    y2 = sum(q * s @ s for q, _, s in terms)
    second = sum(q * w ** 2 * s @ s for q, w, s in terms)
    split = product_weight_split(chain_sequences(2, 2, 0.5))
    assert np.isclose(split["w2"], w2) and np.isclose(split["score2"], y2)
    assert np.isclose(split["second_moment"], second)
    assert np.isclose(split["independent"] + split["covariance"], second)
    m = reweighted_moments(chain_sequences(2, 2, 0.5), "sequence_is")
    assert np.isclose(split["second_moment"] - split["mean_squared"], m["variance"])
    assert np.isclose(split["mean_squared"], m["gradient"] @ m["gradient"])


def test_product_weight_split_without_drift_has_no_covariance():
    from rl4llm.studies.sequence_ratios import product_weight_split
    split = product_weight_split(chain_sequences(3, 0, 1.0))
    assert np.isclose(split["w2"], 1) and abs(split["covariance"]) < 1e-12
