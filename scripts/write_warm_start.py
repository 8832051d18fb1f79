"""Retrain chapter 15's warm start and rewrite the checkpoint shipped with the library.

    python scripts/write_warm_start.py

Prints the SFT steps, the held-out accuracy, the CPU capability it ran with and the new SHA-256,
which must then be pasted into ``SHIPPED_SHA256`` in ``code/rl4llm/llm/warmstart.py`` (the library
refuses a shipped file whose hash differs). Do this only when the task, the model or the SFT
procedure changes: every chapter-14 number starts from this file.
"""
from rl4llm.llm.warmstart import write_shipped_checkpoint

if __name__ == "__main__":
    write_shipped_checkpoint()
