"""Checked exercises of Part I (chapters 1-5): from softmax to SFT."""
from __future__ import annotations

import numpy as np

from ..distributions import softmax
from ..gradients import sft_gradient
from ..toy import LOGITS
from ._core import FunctionExercise, NumericExercise, toy_and_random


def _logits_token(rng):
    if rng is None:
        return LOGITS, 2
    K = int(rng.integers(3, 7))
    return rng.normal(size=K), int(rng.integers(K))


SPECS: dict[str, FunctionExercise | NumericExercise] = {
    "sft_gradient": FunctionExercise(4, sft_gradient, toy_and_random(_logits_token), (
        ("the sign is flipped: that is onehot(target) - pi, the direction that lowers the loss fastest "
         "(the score, chapter 7), not the gradient of the loss", lambda z, t: -sft_gradient(z, t)),
        ("the onehot(target) term is missing: the gradient of -ln pi(target) is pi - onehot(target)",
         lambda z, t: softmax(z)),
    )),
}
