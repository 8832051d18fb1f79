"""Retrain chapter 15's warm start and rewrite the checkpoint shipped with the library.

    python scripts/write_warm_start.py

Prints the SFT steps, the held-out accuracy and the CPU capability it ran with, and writes the new
SHA-256 beside the checkpoint (``warmstart.pt.sha256``, which the library checks on every load: it
refuses a shipped file whose hash differs). Do this only when the task, the model or the SFT
procedure changes: every chapter-14 number starts from this file.
"""
from rl4llm.llm.warmstart import write_shipped_checkpoint

if __name__ == "__main__":
    write_shipped_checkpoint()
