"""The addition task and its character tokenizer (chapter 15)."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rl4llm.llm.tasks import (MAX_COMPLETION_LEN, PAD_MARKER, PROMPT_LEN, AdditionTask, CharTokenizer,
                          addition_prompt)
from rl4llm.toy.verifier import EOS_MARKER

TOK = CharTokenizer()


def test_vocabulary_is_digits_plus_equals_eos_pad():
    assert TOK.vocab == tuple("0123456789") + ("+", "=", EOS_MARKER, PAD_MARKER)
    assert len(TOK) == 14
    assert TOK.vocab[TOK.eos_id] == EOS_MARKER and TOK.vocab[TOK.pad_id] == PAD_MARKER


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(CharTokenizer().vocab), max_size=20))
def test_round_trip_text(pieces):
    text = "".join(pieces)
    assert TOK.decode(TOK.encode(text)) == text
    assert len(TOK.encode(text)) == len(pieces)   # each marker is one token


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 13), max_size=20))
def test_round_trip_ids(ids):
    assert TOK.encode(TOK.decode(ids)) == ids


def test_decode_maps_eos_to_the_verifier_marker():
    assert TOK.decode(TOK.encode("52") + [TOK.eos_id, TOK.pad_id]) == "52" + EOS_MARKER + PAD_MARKER


def test_prompts_are_fixed_width():
    assert addition_prompt(7, 45) == "07+45="
    assert addition_prompt(0, 0) == "00+00="
    task = AdditionTask(seed=0)
    assert task.train_prompt_ids.shape == (9500, PROMPT_LEN)
    assert task.eval_prompt_ids.shape == (500, PROMPT_LEN)
    assert {len(p) for p in task.prompts(task.train_pairs)} == {PROMPT_LEN}
    np.testing.assert_array_equal(task.prompt_ids(task.eval_pairs), task.eval_prompt_ids)


def test_split_covers_every_pair_once_and_is_seeded():
    task = AdditionTask(seed=3, n_eval=500)
    both = np.concatenate([task.train_pairs, task.eval_pairs])
    assert len(task.train_pairs) == 9500 and len(task.eval_pairs) == 500
    assert len({tuple(p) for p in both.tolist()}) == 10_000
    assert both.min() == 0 and both.max() == 99
    np.testing.assert_array_equal(AdditionTask(seed=3).eval_pairs, task.eval_pairs)
    assert not np.array_equal(AdditionTask(seed=4).eval_pairs, task.eval_pairs)


def test_targets_are_the_sum_then_eos_and_the_verifier_accepts_them():
    task = AdditionTask(seed=0)
    targets = task.target_ids(task.eval_pairs)
    assert targets.shape == (500, MAX_COMPLETION_LEN)
    for (a, b), row in zip(task.eval_pairs.tolist()[:50], targets[:50]):
        assert TOK.decode(row).replace(PAD_MARKER, "") == f"{a + b}{EOS_MARKER}"
    np.testing.assert_array_equal(task.rewards(task.eval_pairs, targets), np.ones(500))


def _reward_by_hand(a, b, ids):
    """Independent route: digits up to the first EOS token, compared as an integer."""
    ids = list(ids)
    answer = ids[:ids.index(TOK.eos_id)] if TOK.eos_id in ids else ids
    if not answer or any(i > 9 for i in answer):
        return 0.0
    return float(int("".join(map(str, answer))) == a + b)


def test_verifier_on_sampled_garbage():
    rng = np.random.default_rng(0)
    task = AdditionTask(seed=0)
    pairs = task.train_pairs[:400]
    garbage = rng.integers(0, len(TOK), size=(400, 6))
    # plant some right answers (with and without leading zeros) among the garbage
    for i in range(0, 400, 7):
        a, b = pairs[i]
        garbage[i, :] = TOK.pad_id
        garbage[i, :4] = np.array(TOK.encode(f"{a + b:03d}" + EOS_MARKER))[:4]
    rewards = task.rewards(pairs, garbage)
    expected = [_reward_by_hand(a, b, row) for (a, b), row in zip(pairs.tolist(), garbage.tolist())]
    np.testing.assert_array_equal(rewards, expected)
    assert rewards.sum() >= 400 // 7


@pytest.mark.parametrize("call, name", [
    (lambda: TOK.encode("1-2"), "text"),
    (lambda: TOK.encode(12), "text"),
    (lambda: TOK.decode([0, 14]), "ids"),
    (lambda: TOK.decode([[0, 1]]), "ids"),
    (lambda: addition_prompt(100, 1), "a"),
    (lambda: addition_prompt(1, -1), "b"),
    (lambda: AdditionTask(n_eval=0), "n_eval"),
    (lambda: AdditionTask(n_eval=5001), "n_eval"),
    (lambda: AdditionTask(seed=-1), "seed"),
    (lambda: AdditionTask().prompts([1, 2]), "pairs"),
    (lambda: AdditionTask().prompts([[1, 200]]), "pairs"),
    (lambda: AdditionTask().rewards([[1, 2]], np.zeros((2, 4), dtype=int)), "completion_ids"),
])
def test_bad_inputs(call, name):
    with pytest.raises(ValueError, match=name):
        call()


@pytest.mark.parametrize("seed, n_eval", [(0, 500), (3, 1), (4, 2), (5, 777), (6, 5000)])
def test_no_held_out_sum_is_trained_on_in_either_order(seed, n_eval):
    """The split is by unordered pair: (a, b) is held out exactly when (b, a) is (chapter 15)."""
    task = AdditionTask(seed=seed, n_eval=n_eval)
    held = {tuple(p) for p in task.eval_pairs.tolist()}
    train = {tuple(p) for p in task.train_pairs.tolist()}
    assert len(held) == n_eval and len(held | train) == 10_000 and not held & train
    assert all((b, a) in held for a, b in held)
