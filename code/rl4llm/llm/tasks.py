"""The task of the final chapter: two-digit addition as text, and its character tokenizer (chapter 15).

A prompt is ``"a+b="`` with both operands written with two digits (``"07+45="``), so every prompt
has the same length and no prompt needs padding (chapter 15 explains why padding plus absolute
positions silently corrupts log-probabilities). The completion the verifier wants is the decimal
sum (``"52"``) followed by the end-of-sequence token. The 10,000 pairs (a, b) with a, b in 0..99
are split by *unordered* pair: the held-out split takes whole sets {a, b} (both orders, or the one
pair a + a), so no held-out sum is ever trained on in either order (a split of ordered pairs leaves
the mirror (b, a) of about 95% of held-out pairs in training). The reward is :func:`rl4llm.toy.verifier.addition_reward` on the decoded text.

Numpy only: the model and the trainer turn these arrays into tensors.
"""
from __future__ import annotations

import numpy as np

from .._checks import at_least, checked, integer_in_range
from ..toy.verifier import EOS_MARKER, addition_rewards_of_ids

#: The text marker a padding token decodes to (so decode(encode(s)) == s for every valid text).
PAD_MARKER = "<pad>"
#: Operands a, b range over 0..MAX_OPERAND; prompts write each with OPERAND_WIDTH digits.
MAX_OPERAND = 99
OPERAND_WIDTH = 2
#: Length of every prompt in tokens: two digits, '+', two digits, '='.
PROMPT_LEN = 2 * OPERAND_WIDTH + 2
#: Longest completion the verifier can accept: three digits (99 + 99 = 198) and EOS.
MAX_COMPLETION_LEN = len(str(2 * MAX_OPERAND)) + 1
#: The tokenizer's vocabulary, in id order: the ten digits, '+', '=', then EOS and PAD.
VOCAB = tuple("0123456789+=") + (EOS_MARKER, PAD_MARKER)
#: The model's context for this task: a prompt and its longest answer (10 tokens), rounded up to a
#: power of two (16), which leaves ``max_new_tokens`` room past the longest answer.
BLOCK_SIZE = 1 << (PROMPT_LEN + MAX_COMPLETION_LEN - 1).bit_length()
#: The digit each token writes, -1 for the others (what the verifier reads from token ids).
DIGIT_VALUES = np.array([int(t) if t in "0123456789" else -1 for t in VOCAB])
#: Rule: an operand, an integer in [0, MAX_OPERAND].
_OPERAND = integer_in_range(0, MAX_OPERAND)


def _text(text, name: str) -> str:
    """Rule: a string."""
    if not isinstance(text, str):
        raise ValueError(f"{name} must be a string, got {type(text).__name__}")
    return text


def _sequence(ids, name: str) -> np.ndarray:
    """Rule: a 1-D sequence (of token ids)."""
    if np.ndim(ids) != 1:
        raise ValueError(f"{name} must be a 1-D sequence of integers, got shape {np.shape(ids)}")
    return np.asarray(ids)


def _token_batch(ids, name: str) -> np.ndarray:
    """Rule: a 2-D batch (N, T) of token ids in [0, len(VOCAB) - 1]."""
    arr = np.asarray(ids)
    if arr.ndim != 2 or (arr.size and not np.issubdtype(arr.dtype, np.integer)):
        raise ValueError(f"{name} must be a 1-D sequence (or a 2-D batch) of integers, got shape {arr.shape} "
                         f"dtype {arr.dtype}")
    if arr.size and (arr.min() < 0 or arr.max() >= len(VOCAB)):
        raise ValueError(f"{name} must be token ids in [0, {len(VOCAB) - 1}], got {arr.tolist()}")
    return arr


def _operand_pairs(pairs, name: str) -> np.ndarray:
    """Rule: operand pairs, an integer array shaped (N, 2) with entries in [0, MAX_OPERAND]."""
    arr = np.asarray(pairs)
    if arr.ndim != 2 or arr.shape[1] != 2 or (arr.size and not np.issubdtype(arr.dtype, np.integer)):
        raise ValueError(f"{name} must be an integer array shaped (N, 2), got shape {arr.shape}")
    if arr.size and (arr.min() < 0 or arr.max() > MAX_OPERAND):
        raise ValueError(f"{name} must hold operands in [0, {MAX_OPERAND}]")
    return arr


def _one_completion_per_pair(args):
    """Relation: ``completion_ids`` are integer token ids (N, T), one row per pair."""
    ids, n = np.asarray(args["completion_ids"]), len(args["pairs"])
    if ids.ndim != 2 or ids.shape[0] != n or (ids.size and not np.issubdtype(ids.dtype, np.integer)):
        raise ValueError(f"completion_ids must be integer token ids shaped (N, T) with N = {n} rows, got shape "
                         f"{ids.shape}")


class CharTokenizer:
    """One token per character: the ten digits, ``+``, ``=``, then EOS and PAD (chapter 15).

    ``encode`` maps text to token ids, reading the markers ``"<eos>"`` and ``"<pad>"`` as one
    token each; ``decode`` is its inverse, so ``decode(encode(s)) == s``.
    """

    def __init__(self):
        self.vocab: tuple[str, ...] = VOCAB
        self.eos_id = self.vocab.index(EOS_MARKER)
        self.pad_id = self.vocab.index(PAD_MARKER)
        self._ids = {tok: i for i, tok in enumerate(self.vocab)}

    def __len__(self) -> int:
        return len(self.vocab)

    @checked(text=_text)
    def encode(self, text: str) -> list[int]:
        """Token ids of ``text``; ``ValueError`` on a character outside the vocabulary."""
        ids, i = [], 0
        while i < len(text):
            for marker in (EOS_MARKER, PAD_MARKER):
                if text.startswith(marker, i):
                    ids.append(self._ids[marker])
                    i += len(marker)
                    break
            else:
                if text[i] not in self._ids:
                    raise ValueError(f"text must use only the characters '0123456789+=' and the markers "
                                     f"{EOS_MARKER!r}, {PAD_MARKER!r}; got {text[i]!r} at position {i}")
                ids.append(self._ids[text[i]])
                i += 1
        return ids

    @checked(ids=_sequence)
    def decode(self, ids) -> str:
        """The text of a sequence of token ids (EOS becomes ``EOS_MARKER``, PAD ``PAD_MARKER``)."""
        return self.decode_batch(ids[None, :])[0]

    @checked(ids=_token_batch)
    def decode_batch(self, ids) -> list[str]:
        """``decode`` of every row of a (N, T) array of token ids."""
        vocab = self.vocab
        return ["".join([vocab[i] for i in row]) for row in ids.tolist()]


@checked(a=_OPERAND, b=_OPERAND)
def addition_prompt(a: int, b: int) -> str:
    """The fixed-width prompt for a + b: ``addition_prompt(7, 45) == "07+45="``."""
    return _format_prompt(a, b)


def _format_prompt(a: int, b: int) -> str:
    return f"{a:0{OPERAND_WIDTH}d}+{b:0{OPERAND_WIDTH}d}="


class AdditionTask:
    """All pairs (a, b), a, b in 0..99, split by unordered pair into train and held out (chapter 15).

    The 5,050 unordered pairs {a, b} are shuffled by ``seed`` and taken in that order into the
    held-out split, both orders of each, until it holds exactly ``n_eval`` ordered pairs (an odd
    ``n_eval`` takes one pair a + a; the others a + a are passed over); the rest, shuffled, are for
    training. So (a, b) is held out exactly when (b, a) is. ``n_eval`` is at most half the pairs.

    ``train_pairs`` and ``eval_pairs`` are int arrays shaped (N, 2). ``prompt_ids(pairs)`` gives
    the (N, PROMPT_LEN) token ids of their prompts (precomputed for both splits as
    ``train_prompt_ids`` and ``eval_prompt_ids``), ``target_ids(pairs)`` the (N, MAX_COMPLETION_LEN)
    ids of the correct completions (sum, EOS, then PAD), and ``rewards(pairs, completion_ids)`` the
    verifier's 0/1 score of each sampled completion.
    """

    @checked(seed=at_least(0), n_eval=integer_in_range(1, (MAX_OPERAND + 1) ** 2 // 2))   # at most half the pairs
    def __init__(self, seed: int = 0, n_eval: int = 500):
        self.seed, self.n_eval = seed, n_eval
        self.tokenizer = CharTokenizer()
        rng = np.random.default_rng(self.seed)
        self.eval_pairs, self.train_pairs = _split_by_unordered_pair(self.n_eval, rng)
        self.eval_prompt_ids = self.prompt_ids(self.eval_pairs)
        self.train_prompt_ids = self.prompt_ids(self.train_pairs)

    @checked(pairs=_operand_pairs)
    def prompts(self, pairs) -> list[str]:
        """The prompt strings of ``pairs``."""
        return [_format_prompt(a, b) for a, b in pairs.tolist()]

    def prompt_ids(self, pairs) -> np.ndarray:
        """Token ids of the prompts, shaped (N, PROMPT_LEN)."""
        return np.array([self.tokenizer.encode(p) for p in self.prompts(pairs)], dtype=np.int64)

    @checked(pairs=_operand_pairs)
    def target_ids(self, pairs) -> np.ndarray:
        """Token ids of the correct completions (digits of a + b, EOS, PAD...), shaped (N, MAX_COMPLETION_LEN)."""
        tok = self.tokenizer
        rows = [tok.encode(str(a + b) + EOS_MARKER) for a, b in pairs.tolist()]
        return np.array([r + [tok.pad_id] * (MAX_COMPLETION_LEN - len(r)) for r in rows], dtype=np.int64)

    @checked(_one_completion_per_pair, pairs=_operand_pairs)
    def rewards(self, pairs, completion_ids) -> np.ndarray:
        """r_i = addition_reward(prompt_i, decode(completion_i)), shaped (N,) (chapter 15), computed on the
        token ids by :func:`rl4llm.toy.verifier.addition_rewards_of_ids`."""
        return addition_rewards_of_ids(pairs.sum(axis=1), completion_ids, DIGIT_VALUES, self.tokenizer.eos_id)


def _split_by_unordered_pair(n_eval: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(held-out, train) ordered pairs, shaped (n_eval, 2) and (10000 - n_eval, 2), no sum shared."""
    a, b = np.triu_indices(MAX_OPERAND + 1)            # the unordered pairs, a <= b
    held_out, remaining = [], n_eval
    for i in rng.permutation(len(a)).tolist():
        if remaining == 0:
            break
        if a[i] != b[i] and remaining >= 2:
            held_out += [(a[i], b[i]), (b[i], a[i])]
            remaining -= 2
        elif a[i] == b[i] and remaining % 2 == 1:    # at most one a + a: it makes an odd n_eval
            held_out.append((a[i], b[i]))
            remaining -= 1
    held = np.array(held_out, dtype=np.int64)
    grid = np.arange(MAX_OPERAND + 1)
    pairs = np.stack(np.meshgrid(grid, grid, indexing="ij"), axis=-1).reshape(-1, 2)
    is_held = np.zeros((MAX_OPERAND + 1, MAX_OPERAND + 1), dtype=bool)
    is_held[held[:, 0], held[:, 1]] = True
    train = pairs[~is_held[pairs[:, 0], pairs[:, 1]]]
    return held, train[rng.permutation(len(train))]
