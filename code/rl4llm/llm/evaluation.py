"""Held-out evaluation of the tiny GPT on the addition task (chapter 15).

Greedy decoding (temperature 0) of every held-out prompt, scored by the same verifier as training.
The trainer, the warm start, the benchmark and chapter 15 all measure accuracy with this one function.
:func:`k3_per_token` looks inside the trainer's KL diagnostic: its value at every sampled token.
"""
from __future__ import annotations

import numpy as np
import torch

from .._checks import at_least, checked
from .grpo import k3
from .model import GPT, completion_logprobs, sample
from .tasks import MAX_COMPLETION_LEN, AdditionTask


@torch.no_grad()
def greedy_accuracy(model: GPT, task: AdditionTask, pairs=None, *, return_completions: bool = False):
    """Share of ``pairs`` (default: the held-out split) whose greedy completion the verifier accepts.

    With ``return_completions=True`` also returns the decoded completions (chapter 15's samples).
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


@torch.no_grad()
@checked(n_prompts=at_least(1), group_size=at_least(1), seed=at_least(0))
def k3_per_token(policy: GPT, reference: GPT, task: AdditionTask, *, n_prompts: int = 256, group_size: int = 8,
                 seed: int = 0) -> np.ndarray:
    """The k3 estimate of KL(policy || reference) at every sampled completion token (chapter 15).

    ``group_size`` completions of each of ``n_prompts`` training prompts (drawn with ``seed``) are
    sampled from ``policy`` at temperature 1; at each token up to and including EOS, with
    x = log pi_ref(y_t) - log pi(y_t), k3 = e^x - x - 1 >= 0, the per-token term the trainer's ``kl``
    averages. Returns the 1-D array of those values, one per token.
    """
    device = next(policy.parameters()).device
    generator = torch.Generator(device=device).manual_seed(seed)
    chosen = torch.randint(len(task.train_pairs), (n_prompts,), generator=torch.Generator().manual_seed(seed))
    prompts = torch.as_tensor(task.train_prompt_ids, device=device)[chosen.to(device)]
    tok = task.tokenizer
    rollout = sample(policy, prompts, group_size=group_size, max_new_tokens=MAX_COMPLETION_LEN, eos_id=tok.eos_id,
                     pad_id=tok.pad_id, generator=generator)
    logp, _ = completion_logprobs(policy, rollout.tokens, rollout.prompt_len, 1.0, group_size)
    ref, _ = completion_logprobs(reference, rollout.tokens, rollout.prompt_len, 1.0, group_size)
    x = (ref - logp)[rollout.mask.bool()]
    return k3(x).cpu().numpy()
