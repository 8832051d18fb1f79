"""The toys, each defined once: the five-token toy and the "5"/"05" toy (``two_step``), and the verifier (numpy only).

``rl4llm.toy`` is the five-token toy's public home (api.md): its constants are re-exported here."""
from .five_token import CORRECT, EOS, LOGITS, P_5_AFTER_0, P_EOS_AFTER_05, P_EOS_AFTER_5, PROMPT, REWARDS, VOCAB
