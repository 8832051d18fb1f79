"""rl4llm.studies.sequence_kl: the answers' KL gradient on the two-step toy against finite differences, Monte
Carlo and autograd; what each per-token penalty keeps of it; validation."""
import numpy as np
import pytest
import torch

from rl4llm.math.distributions import softmax
from rl4llm.studies.sequence_kl import PARAMETERS, PER_TOKEN, _moved, answer_kl, sequence_kl_gradients
from rl4llm.toy.five_token import LOGITS
from rl4llm.math.two_step import ANSWERS, CHOICES, two_step_policy


def _perturbed(policy, i, h):
    flat = [(c, j) for c, tokens in CHOICES.items() for j in range(len(tokens))]
    c, j = flat[i]
    moved = {k: v.copy() for k, v in policy.items()}
    moved[c][j] += h
    return moved


@pytest.mark.parametrize("p", [0.05, 0.3, 0.6, 0.95])
def test_the_kl_gradient_equals_central_differences(p):
    policy, reference = _moved(p), two_step_policy()
    h = 1e-6
    fd = np.array([(answer_kl(_perturbed(policy, i, h), reference) - answer_kl(_perturbed(policy, i, -h), reference))
                   / (2 * h) for i in range(len(PARAMETERS))])
    assert np.allclose(sequence_kl_gradients(p)["gradient"], fd, atol=1e-8)


def test_the_chapters_numbers_and_their_closed_form():
    """Only the context after "5" moved (P(EOS | 5) 0.8 -> 0.3): the answers' KL is pi(5) KL_5, its first-step
    gradient pi(5) KL_5 (e_5 - pi); per-token k2 and corrected k3 put 0 there, 63% of the gradient's norm."""
    r = sequence_kl_gradients(0.3)
    pi = softmax(LOGITS)
    assert np.isclose(r["kl"], pi[2] * r["kl_after_5"]) and np.isclose(r["kl_after_5"], 0.3 * np.log(0.3 / 0.8)
                                                                       + 0.7 * np.log(0.7 / 0.2))
    first = r["slices"][""]
    assert np.allclose(r["gradient"][first], pi[2] * r["kl_after_5"] * (np.eye(5)[2] - pi))
    assert np.allclose(np.round(r["gradient"][first], 3), [-0.012, -0.047, 0.093, -0.023, -0.012])
    for name in ("k2_loss", "k3_corrected"):
        g = r["per_token"][name]
        assert np.all(g[first] == 0) and np.allclose(g[r["slices"]["5"]], r["gradient"][r["slices"]["5"]])
        assert round(r["missed"][name], 4) == 0.6316
    assert r["missed"]["k1_reward"] < 1e-12 and r["missed"]["k1_loss"] == 1.0
    assert r["missed"]["k3_loss"] > 0.6


def test_nothing_moved_nothing_to_follow():
    r = sequence_kl_gradients(0.8)
    assert abs(r["kl"]) < 1e-15 and np.allclose(r["gradient"], 0)
    assert all(np.allclose(g, 0) for g in r["per_token"].values())


def test_per_token_k2_by_autograd_and_k1_in_the_reward_by_monte_carlo():
    """Autograd of sum_a sg(pi(a)) sum_t x_t^2 / 2 equals the per-token k2 gradient; REINFORCE on the shaped
    return -sum_t x_t, sampled, lands within 4 standard errors of the answers' KL gradient."""
    r = sequence_kl_gradients(0.3)
    policy, reference = _moved(0.3), two_step_policy()
    z = {c: torch.tensor(v, requires_grad=True) for c, v in policy.items()}
    loss = 0.0
    for steps in ANSWERS.values():
        logp = [torch.log_softmax(z[c], 0)[CHOICES[c].index(t)] for c, t in steps]
        x = [lp - float(np.log(softmax(reference[c])[CHOICES[c].index(t)])) for lp, (c, t) in zip(logp, steps)]
        loss = loss + float(torch.exp(sum(logp)).detach()) * sum(xt ** 2 / 2 for xt in x)
    loss.backward()
    assert np.allclose(np.concatenate([z[c].grad.numpy() for c in CHOICES]), r["per_token"]["k2_loss"])

    rng = np.random.default_rng(0)
    names, probs, estimates = list(ANSWERS), [], {}
    for name in names:
        steps = ANSWERS[name]
        probs.append(np.prod([softmax(policy[c])[CHOICES[c].index(t)] for c, t in steps]))
        x = sum(np.log(softmax(policy[c])[CHOICES[c].index(t)] / softmax(reference[c])[CHOICES[c].index(t)])
                for c, t in steps)
        s = np.concatenate([np.eye(len(CHOICES[k]))[CHOICES[k].index(t)] - softmax(policy[k]) if k == c else
                            np.zeros(len(CHOICES[k])) for c, t in steps for k in CHOICES]).reshape(len(steps), -1).sum(0)
        estimates[name] = x * s
    draws = rng.choice(len(names), size=200_000, p=np.array(probs) / sum(probs))
    samples = np.array([estimates[names[i]] for i in draws])
    se = samples.std(axis=0, ddof=1) / np.sqrt(len(samples))
    assert np.all(np.abs(samples.mean(axis=0) - r["gradient"]) <= 4 * se + 1e-12)


@pytest.mark.parametrize("bad", [0.0, 1.0, -0.2, float("nan"), "0.3"])
def test_bad_probability(bad):
    with pytest.raises(ValueError, match="p_eos_after_5"):
        sequence_kl_gradients(bad)


def test_the_penalties_listed():
    assert set(sequence_kl_gradients()["per_token"]) == set(PER_TOKEN)
