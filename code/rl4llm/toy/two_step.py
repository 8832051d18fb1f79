"""The "5" vs "05" toy, defined once: chapter 3's extension of the five-token toy to answers of two tokens.

Three contexts choose their next token, each with a softmax over its own logits:

    context ""  (the prompt)  chooses among (0, 4, 5, 6, 15):  pi = softmax(z), (0.1, 0.4, 0.2, 0.2, 0.1)
    context "5"               chooses among (EOS, 0):          P(EOS | 5) = 0.8
    context "0"               chooses among (5, EOS):          P(5 | 0)   = 0.2

Every other context stops surely (after "05", "50", "4", "6" or "15" comes EOS, with probability 1).
So there are seven answers, "0", "4", "5", "6", "15", "05", "50"; the verifier accepts "5" and "05".
``ANSWERS`` writes each as the choices that make it, ``TOKENS`` as its tokens (the EOS that ends it
included, chosen or not), and ``two_step_logits`` gives the toy's logits per choosing context.
The formulas on this tree are in :mod:`rl4llm.math.two_step`; chapters 13, 17 and 18 study it.
"""
from __future__ import annotations

import numpy as np

from .five_token import EOS, LOGITS, P_5_AFTER_0, P_EOS_AFTER_5, VOCAB

#: The contexts that choose their next token, and the tokens each chooses among (its logits' order).
CHOICES = {"": VOCAB, "5": (EOS, "0"), "0": ("5", EOS)}

#: Every answer, as the (context, token) choices that write it. A context that is not in ``CHOICES``
#: stops surely, so its EOS is not a choice.
ANSWERS = {
    "0": (("", "0"), ("0", EOS)),
    "4": (("", "4"),),
    "5": (("", "5"), ("5", EOS)),
    "6": (("", "6"),),
    "15": (("", "15"),),
    "05": (("", "0"), ("0", "5")),
    "50": (("", "5"), ("5", "0")),
}

#: Every answer as its tokens, the final EOS included: "5" is 2 tokens ("5", EOS), "05" is 3.
TOKENS = {answer: tuple(t for _, t in path) + (() if path[-1][1] == EOS else (EOS,))
          for answer, path in ANSWERS.items()}

#: The longest answer, in tokens (EOS included).
MAX_TOKENS = max(len(tokens) for tokens in TOKENS.values())


def two_step_logits() -> dict[str, np.ndarray]:
    """The toy's logits per choosing context (a fresh copy): the five-token toy's at the prompt, then
    ln(0.8, 0.2) after "5" (P(EOS | 5) = 0.8) and ln(0.2, 0.8) after "0" (P(5 | 0) = 0.2). So
    P("5") = 0.2 x 0.8 = 0.16 and P("05") = 0.1 x 0.2 = 0.02."""
    return {"": LOGITS.copy(),
            "5": np.log([P_EOS_AFTER_5, 1.0 - P_EOS_AFTER_5]),
            "0": np.log([P_5_AFTER_0, 1.0 - P_5_AFTER_0])}
