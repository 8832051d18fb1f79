"""Held-out evaluation of the tiny GPT on the addition task (chapter 14).

Greedy decoding (temperature 0) of every held-out prompt, scored by the same verifier as training.
The trainer, the warm start, the benchmark and chapter 14 all measure accuracy with this one function.
"""
from __future__ import annotations

import numpy as np
import torch

from .model import GPT, sample
from .tasks import MAX_COMPLETION_LEN, AdditionTask


@torch.no_grad()
def greedy_accuracy(model: GPT, task: AdditionTask, pairs=None, *, return_completions: bool = False):
    """Share of ``pairs`` (default: the held-out split) whose greedy completion the verifier accepts.

    With ``return_completions=True`` also returns the decoded completions (chapter 14's samples).
    """
    device = next(model.parameters()).device
    if pairs is None:
        pairs, prompts = task.eval_pairs, torch.as_tensor(task.eval_prompt_ids, device=device)
    else:
        pairs = np.asarray(pairs)
        prompts = torch.as_tensor(task.prompt_ids(pairs), device=device)
    rollout = sample(model, prompts, max_new_tokens=MAX_COMPLETION_LEN, eos_id=task.tokenizer.eos_id,
                     pad_id=task.tokenizer.pad_id, temperature=0.0)
    completions = rollout.completions.cpu().numpy()
    accuracy = float(task.rewards(pairs, completions).mean())
    if return_completions:
        return accuracy, [task.tokenizer.decode(c) for c in completions]
    return accuracy
