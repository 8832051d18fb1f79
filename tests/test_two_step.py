"""The "5" vs "05" toy: the two-step policy under SFT and RL (rl4llm.math.two_step)."""
import itertools

import numpy as np
import pytest

from rl4llm import CORRECT, LOGITS, PROMPT, VOCAB, addition_reward, softmax
from rl4llm import toy
from rl4llm.math.two_step import (ANSWERS, CHOICES, answer_probabilities, answer_rewards, continuation_values,
                             expected_verifier_reward, first_token_rewards, string_probabilities,
                             training_curves, two_spellings, two_step_policy, two_step_policy_gradient,
                             two_step_sft_gradient, two_step_sft_loss)
from numerics import finite_difference

SLIDER_LRS = (0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 5.0)   # chapter 5's learning-rate slider: 0.1 .. 5


def random_policy(rng):
    return {context: rng.normal(size=len(tokens)) for context, tokens in CHOICES.items()}


def flat(policy):
    return np.concatenate([policy[c] for c in CHOICES])


def unflat(vector):
    out, start = {}, 0
    for context, tokens in CHOICES.items():
        out[context] = np.asarray(vector[start:start + len(tokens)], dtype=float)
        start += len(tokens)
    return out


# ----------------------------------------------------------------------------- the policy and its answers
def test_string_probabilities_on_the_toy():
    probs = string_probabilities()
    assert probs["5"] == pytest.approx(0.16, rel=1e-13)
    assert probs["05"] == pytest.approx(0.02, rel=1e-13)
    assert probs == pytest.approx(string_probabilities(LOGITS))
    assert probs == pytest.approx(string_probabilities(two_step_policy()))


def test_answer_probabilities_by_hand_and_sum_to_one():
    """Independent route: each answer's product written out with the chapter-3 conditionals."""
    pi = softmax(LOGITS)
    by_hand = {"0": pi[0] * (1 - toy.P_5_AFTER_0), "4": pi[1], "5": pi[2] * toy.P_EOS_AFTER_5, "6": pi[3],
               "15": pi[4], "05": pi[0] * toy.P_5_AFTER_0 * toy.P_EOS_AFTER_05,
               "50": pi[2] * (1 - toy.P_EOS_AFTER_5)}
    assert answer_probabilities() == pytest.approx(by_hand, rel=1e-13)
    rng = np.random.default_rng(0)
    for _ in range(10):
        assert sum(answer_probabilities(random_policy(rng)).values()) == pytest.approx(1.0, abs=1e-13)


def test_answer_probabilities_agree_with_chapter_13s_torch_tree():
    """Independent route: chapter 13 walks the answers' tokens through the same tree in torch
    (grpo_toys._two_step_logp, from toy.two_step.TOKENS rather than ANSWERS' choices)."""
    torch = pytest.importorskip("torch")
    from rl4llm.llm.grpo_toys import _two_step_logp
    rng = np.random.default_rng(1)
    for policy in [two_step_policy()] + [random_policy(rng) for _ in range(5)]:
        logp, mask = _two_step_logp({c: torch.tensor(z) for c, z in policy.items()}, list(ANSWERS))
        theirs = dict(zip(ANSWERS, (logp * mask).sum(dim=1).exp().tolist()))
        assert answer_probabilities(policy) == pytest.approx(theirs, rel=1e-12)


def test_only_5_and_05_are_correct_among_short_strings():
    """Enumerate every string of one or two tokens: the verifier accepts exactly "5" and "05"."""
    strings = list(VOCAB) + ["".join(pair) for pair in itertools.product(VOCAB, repeat=2)]
    correct = {s for s in strings if addition_reward(PROMPT, s) == 1.0}
    assert correct == {"5", "05"}
    assert {a for a, r in answer_rewards().items() if r == 1.0} == {"5", "05"}
    assert set(answer_rewards().values()) == {0.0, 1.0}


# ----------------------------------------------------------------------------- J, Q and the exact gradient
def test_expected_reward_and_first_token_values_at_the_toy():
    assert expected_verifier_reward() == pytest.approx(0.18, rel=1e-13)
    np.testing.assert_allclose(first_token_rewards(), [0.2, 0.0, 0.8, 0.0, 0.0], rtol=1e-14)
    np.testing.assert_array_equal(first_token_rewards("2+4="), [0, 0, 0, 1, 0])  # only "6" sums to 6
    np.testing.assert_array_equal(first_token_rewards("2+5="), np.zeros(5))       # no answer is 7
    q = continuation_values()
    np.testing.assert_allclose(q["5"], [1.0, 0.0])   # after "5": EOS gives "5", "0" gives "50"
    np.testing.assert_allclose(q["0"], [1.0, 0.0])   # after "0": "5" gives "05", EOS gives "0"


def test_expected_reward_is_the_enumerated_sum_and_the_sampled_mean():
    """J by enumeration of the seven answers, and against a Monte Carlo mean (within 4 standard errors)."""
    rng = np.random.default_rng(2)
    policy = random_policy(rng)
    probs, rewards = answer_probabilities(policy), answer_rewards()
    J = expected_verifier_reward(policy)
    assert J == pytest.approx(sum(probs[a] * rewards[a] for a in ANSWERS), rel=1e-13)
    assert J == pytest.approx(string_probabilities(policy)["5"] + string_probabilities(policy)["05"], rel=1e-13)
    assert softmax(policy[""]) @ first_token_rewards(logits=policy) == pytest.approx(J, rel=1e-13)
    n = 200_000                                            # sample whole answers, token by token
    pis = {c: softmax(z) for c, z in policy.items()}
    first = rng.choice(len(VOCAB), size=n, p=pis[""])
    second = rng.random(n)
    correct = (((first == VOCAB.index("5")) & (second < pis["5"][0]))
               | ((first == VOCAB.index("0")) & (second < pis["0"][0])))
    se = correct.std() / np.sqrt(n)
    assert abs(correct.mean() - J) < 4 * se


def test_policy_gradient_matches_finite_differences_and_the_score_function_sum():
    """Two independent routes for dJ/dz at every context: central differences of J, and the
    enumeration sum over answers of P(a) r(a) sum_t (onehot(t) - pi_c)."""
    rng = np.random.default_rng(3)
    rewards = answer_rewards()
    for policy in [two_step_policy()] + [random_policy(rng) for _ in range(5)]:
        grads = two_step_policy_gradient(policy)
        numeric = finite_difference(lambda v: expected_verifier_reward(unflat(v)), flat(policy))
        np.testing.assert_allclose(flat(grads), numeric, atol=1e-9)
        probs = answer_probabilities(policy)
        score_sum = {c: np.zeros(len(t)) for c, t in CHOICES.items()}
        for answer, choices in ANSWERS.items():
            for context, token in choices:
                score = np.eye(len(CHOICES[context]))[CHOICES[context].index(token)] - softmax(policy[context])
                score_sum[context] += probs[answer] * rewards[answer] * score
        np.testing.assert_allclose(flat(grads), flat(score_sum), atol=1e-14)


def test_policy_gradient_at_the_toy():
    grads = two_step_policy_gradient()
    np.testing.assert_allclose(grads[""], [0.002, -0.072, 0.124, -0.036, -0.018], atol=1e-14)
    np.testing.assert_allclose(grads["5"], [0.032, -0.032], atol=1e-14)   # 0.2 x 0.8 x 0.2
    np.testing.assert_allclose(grads["0"], [0.016, -0.016], atol=1e-14)   # 0.1 x 0.2 x 0.8


def test_sft_loss_and_gradient():
    rng = np.random.default_rng(4)
    assert two_step_sft_loss() == pytest.approx(-np.log(0.16), rel=1e-13)
    for label in ANSWERS:
        for policy in [two_step_policy(), random_policy(rng)]:
            assert two_step_sft_loss(policy, label) == pytest.approx(-np.log(answer_probabilities(policy)[label]))
            grads = two_step_sft_gradient(policy, label)
            numeric = finite_difference(lambda v: two_step_sft_loss(unflat(v), label), flat(policy))
            np.testing.assert_allclose(flat(grads), numeric, atol=1e-8)
    grads = two_step_sft_gradient()
    np.testing.assert_allclose(grads[""], [0.1, 0.4, -0.8, 0.2, 0.1], atol=1e-14)
    np.testing.assert_allclose(grads["5"], [-0.2, 0.2], atol=1e-14)
    np.testing.assert_array_equal(grads["0"], [0.0, 0.0])   # SFT on "5" never visits the context "0"


# ----------------------------------------------------------------------------- the training curves
def test_training_curves_start_at_the_toy_and_match_single_steps():
    curves = training_curves(1.0, 3)
    np.testing.assert_array_equal(curves["step"], [0, 1, 2, 3])
    for name in ("sft", "rl"):
        assert curves[f"{name}_5"][0] == pytest.approx(0.16)
        assert curves[f"{name}_05"][0] == pytest.approx(0.02)
        assert curves[f"{name}_eos_after_5"][0] == pytest.approx(0.8)
        assert curves[f"{name}_5_after_0"][0] == pytest.approx(0.2)
    start = two_step_policy()
    sft = two_step_sft_gradient(start)
    after = {c: start[c] - sft[c] for c in CHOICES}
    assert curves["sft_5"][1] == pytest.approx(string_probabilities(after)["5"], rel=1e-13)
    assert curves["sft_pi5"][1] == pytest.approx(0.4207, abs=5e-5)   # chapter 4's step on the first token
    rl = two_step_policy_gradient(start)
    after = {c: start[c] + rl[c] for c in CHOICES}
    assert curves["rl_05"][1] == pytest.approx(string_probabilities(after)["05"], rel=1e-13)


def test_sft_drains_05_and_never_touches_p5_after_0():
    curves = training_curves(1.0, 30)
    assert np.all(np.diff(curves["sft_05"]) < 0)
    assert np.all(np.diff(curves["sft_5"]) > 0)
    np.testing.assert_allclose(curves["sft_5_after_0"], 0.2, rtol=1e-14)


def test_rl_lifts_05_first_then_drains_it_while_raising_p5_after_0():
    """What chapter 5 says of the exact RL curves at lr 1 over 25 steps."""
    curves = training_curves(1.0, 25)
    total = curves["rl_5"] + curves["rl_05"]
    assert np.all(np.diff(total) > 0)                       # ascent on J
    assert np.all(np.diff(curves["rl_5_after_0"]) > 0)      # RL repairs the path through 0 ...
    assert np.all(np.diff(curves["rl_eos_after_5"]) > 0)
    assert (curves["rl_eos_after_5"][-1] - 0.8) > (curves["rl_5_after_0"][-1] - 0.2)   # ... more slowly
    peak = int(np.argmax(curves["rl_05"]))
    assert 0 < peak < 25 and curves["rl_05"][-1] < curves["rl_05"][0]
    assert curves["sft_05"][-1] < curves["rl_05"][-1]        # RL drains it too, but less than SFT
    # z(0)'s push pi(0) (Q(0) - J) is positive only while J < P(5 | 0): at step 0, not after step 1
    assert total[0] < curves["rl_5_after_0"][0] and total[1] > curves["rl_5_after_0"][1]


@pytest.mark.parametrize("lr", SLIDER_LRS)
def test_over_the_slider_range_sft_drains_at_once_and_rl_lifts_first(lr):
    curves = training_curves(lr, 25)
    assert curves["sft_05"][1] < curves["sft_05"][0]
    assert curves["rl_05"][1] > curves["rl_05"][0]


def test_zero_steps_and_zero_learning_rate():
    curves = training_curves(0.5, 0)
    assert all(len(v) == 1 for v in curves.values())
    flat_run = training_curves(0.0, 4)
    np.testing.assert_allclose(flat_run["sft_05"], 0.02)
    np.testing.assert_allclose(flat_run["rl_5"], 0.16)


# ----------------------------------------------------------------------------- chapter 3's slider
def test_two_spellings_at_the_toy():
    out = two_spellings()
    assert out == pytest.approx({"pi_5": 0.2, "5": 0.16, "05": 0.02, "correct": 0.18}, rel=1e-13)


@pytest.mark.parametrize("pi_0, p", [(0.01, 0.2), (0.1, 0.9), (0.5, 0.5), (0.9, 0.05), (0.3, 1e-3)])
def test_two_spellings_agree_with_the_policy(pi_0, p):
    """Independent route: set z(0) so that softmax gives pi_0, the logits after "0" to ln(p, 1 - p)."""
    weights = np.exp(LOGITS)
    z = LOGITS.copy()
    z[0] = np.log(pi_0 / (1 - pi_0) * (weights.sum() - weights[0]))
    policy = two_step_policy(z)
    policy["0"] = np.log([p, 1 - p])
    assert softmax(z)[0] == pytest.approx(pi_0)
    out = two_spellings(pi_0, p)
    assert out["5"] == pytest.approx(string_probabilities(policy)["5"], rel=1e-12)
    assert out["05"] == pytest.approx(string_probabilities(policy)["05"], rel=1e-12)
    assert out["correct"] == pytest.approx(expected_verifier_reward(policy), rel=1e-12)


def test_two_spellings_edges():
    assert two_spellings(0.0, 0.2)["05"] == 0.0
    assert two_spellings(1.0, 0.2)["5"] == 0.0
    assert two_spellings(1.0, 1.0)["correct"] == pytest.approx(1.0)


@pytest.mark.parametrize("kwargs, name", [({"pi_0": -0.1}, "pi_0"), ({"pi_0": 1.5}, "pi_0"),
                                          ({"pi_0": np.nan}, "pi_0"), ({"p_5_after_0": 2.0}, "p_5_after_0"),
                                          ({"p_5_after_0": "0.2"}, "p_5_after_0")])
def test_two_spellings_bad_input(kwargs, name):
    with pytest.raises(ValueError, match=name):
        two_spellings(**kwargs)


# ----------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("bad", [[0.0, 1.0], np.zeros((5, 1)), [np.nan] * 5, "01234"])
def test_bad_logits_raise(bad):
    with pytest.raises(ValueError, match="logits"):
        string_probabilities(bad)
    with pytest.raises(ValueError, match="logits"):
        training_curves(1.0, 2, bad)


@pytest.mark.parametrize("bad", [{"": LOGITS}, {"": LOGITS, "5": [0.0, 0.0], "0": [0.0]},
                                 {"": LOGITS, "5": [0.0, np.inf], "0": [0.0, 0.0]}])
def test_bad_policy_dicts_raise(bad):
    with pytest.raises(ValueError, match="logits"):
        answer_probabilities(bad)
    with pytest.raises(ValueError, match="logits"):
        two_step_policy_gradient(bad)


def test_bad_label_raises():
    with pytest.raises(ValueError, match="label"):
        two_step_sft_loss(LOGITS, "55")
    with pytest.raises(ValueError, match="label"):
        two_step_sft_gradient(LOGITS, 5)


@pytest.mark.parametrize("lr, steps, name", [(np.nan, 3, "lr"), (np.inf, 3, "lr"), ("1", 3, "lr"),
                                             (1.0, -1, "steps"), (1.0, 2.5, "steps"), (1.0, True, "steps")])
def test_bad_lr_and_steps_raise(lr, steps, name):
    with pytest.raises(ValueError, match=name):
        training_curves(lr, steps)


def test_a_huge_learning_rate_saturates_without_nan():
    curves = training_curves(1e308, 3)
    assert all(np.all(np.isfinite(v)) for v in curves.values())
    assert curves["sft_5"][-1] == pytest.approx(1.0) and curves["rl_5"][-1] == pytest.approx(1.0)


def test_malformed_prompt_raises():
    with pytest.raises(ValueError, match="prompt"):
        first_token_rewards("2+3")
    with pytest.raises(ValueError, match="prompt"):
        two_step_policy_gradient(LOGITS, "2+3")
    for bad in ([2, 3], None):
        with pytest.raises(ValueError, match="prompt"):
            answer_rewards(bad)
