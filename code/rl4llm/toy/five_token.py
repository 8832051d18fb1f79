"""The five-token toy that runs through the whole book (chapter 1 introduces it).

Prompt ``2+3=``; vocabulary (0, 4, 5, 6, 15); the correct answer is 5. The logits are
(0, 2, 1, 1, 0) x ln 2, so ``e^z = (1, 4, 2, 2, 1)`` and pi = (0.1, 0.4, 0.2, 0.2, 0.1) exactly.

Chapter 3 extends it to two-token answers: after "5" the model stops with P(EOS | 5) = 0.8; after
"0" it continues into "5" with P(5 | 0) = 0.2, and after "05" it always stops.
"""
from __future__ import annotations

import math

import numpy as np

PROMPT = "2+3="
VOCAB = ("0", "4", "5", "6", "15")
LOGITS = np.array([0, 2, 1, 1, 0], dtype=np.float64) * math.log(2)
CORRECT = VOCAB.index("5")
REWARDS = np.array([0, 0, 1, 0, 0], dtype=np.float64)

#: End-of-sequence marker used by the two-token extension (chapter 3).
EOS = "<eos>"
#: P(EOS | "5"): after emitting 5 the model usually stops.
P_EOS_AFTER_5 = 0.8
#: P("5" | "0"): after emitting 0 the model sometimes continues into 5.
P_5_AFTER_0 = 0.2
#: P(EOS | "05"): after "05" the model always stops.
P_EOS_AFTER_05 = 1.0

