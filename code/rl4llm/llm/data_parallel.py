"""What data parallelism does to the GRPO loss: the all-reduce, simulated in one process (chapter 16).

Under data parallelism (DDP, which ``accelerate launch`` and ``torchrun`` set up) each of P
processes holds B/P rows of the batch, computes its own loss L_p on them and backpropagates; the
all-reduce then AVERAGES the gradients over processes, so the update follows

    grad (1/P) sum_p L_p,

not the gradient of the loss of the whole batch. Whether the two agree depends on the loss's
normaliser. TRL 1.16's per-process losses (``GRPOTrainer._compute_loss``), with S_p the masked sum of
the per-token losses on process p's rows, n_p its token count, N = sum_p n_p, R_p the rows and L
the ``max_completion_length``:

- ``grpo``:    mean over R_p of each row's token mean  -> (1/P) sum_p L_p is the mean over all rows
- ``bnpo``:    S_p / n_p                               -> (1/P) sum_p S_p / n_p, not S / N
- ``dr_grpo``: S_p / (|R_p| L)                         -> S / (B L)
- ``dapo``:    S_p / (N / P), N gathered from every process before the loss -> S / N

So ``grpo``, ``dr_grpo`` and ``dapo`` give the one-process loss and gradient on any split, and
``bnpo`` gives the mean of per-process token means, which equals the one-process token mean only
when every process holds the same number of tokens. Rows are split as TRL splits them: process p
holds the p-th contiguous block of B/P rows.
"""
from __future__ import annotations

import torch

from .._checks import at_least, checked, one_of
from .grpo import grpo_loss
from ..math.loss_types import LOSS_TYPES, loss_type_names, loss_types_with


def _divides_batch(args):
    if args["batch_size"] % args["num_processes"]:
        raise ValueError(f"num_processes must divide the batch size {args['batch_size']}, got {args['num_processes']}")


@checked(_divides_batch, batch_size=at_least(1), num_processes=at_least(1))
def shard_slices(batch_size: int, num_processes: int) -> list[slice]:
    """The rows each process holds: the p-th contiguous block of ``batch_size / num_processes``
    rows, as TRL 1.16 splits a batch (chapter 16)."""
    rows = batch_size // num_processes
    return [slice(p * rows, (p + 1) * rows) for p in range(num_processes)]


def _batch_mask(mask, name):
    if not isinstance(mask, torch.Tensor) or mask.dim() != 2:
        raise ValueError(f"{name} must be a (B, T) torch.Tensor, got {getattr(mask, 'shape', type(mask).__name__)}")
    return mask


@checked(loss_type=one_of(LOSS_TYPES), mask=_batch_mask)
def data_parallel_loss(logp: torch.Tensor, old_logp: torch.Tensor,
                       advantages: torch.Tensor, mask: torch.Tensor, *,
                       num_processes: int, loss_type: str = "grpo",
                       eps_low: float = 0.2, eps_high: float | None = None,
                       beta: float = 0.0, ref_logp: torch.Tensor | None = None,
                       max_completion_length: int | None = None):
    """(1/P) sum_p L_p, whose gradient is the all-reduced gradient of P processes.

    L_p is TRL 1.16's loss on process p's rows (:func:`shard_slices`):
    :func:`rl4llm.llm.grpo.grpo_loss` on those rows for ``grpo``, ``bnpo`` and ``dr_grpo``;
    for a loss type whose token count is gathered over processes (``dapo``,
    :mod:`rl4llm.math.loss_types`) the rows' masked token sum divided by N / P, N the token count
    of the whole batch. Returns ``(loss, per_process_losses)``; the other arguments mean what
    they mean in ``grpo_loss``. ``num_processes=1`` gives ``grpo_loss`` (chapter 16).
    """
    shards = shard_slices(mask.shape[0], num_processes)
    gathered = LOSS_TYPES[loss_type].gathered_tokens
    P = len(shards)
    n_total = mask.to(logp.dtype).sum().clamp(min=1)
    losses = []
    for rows in shards:
        ref = None if ref_logp is None else ref_logp[rows]
        local, _ = grpo_loss(logp[rows], old_logp[rows], advantages[rows], mask[rows],
                             eps_low=eps_low, eps_high=eps_high, beta=beta,
                             ref_logp=ref, loss_type=loss_type,
                             max_completion_length=max_completion_length)
        if gathered:                # S_p / (N / P) = (S_p / n_p) * n_p * P / N
            n_local = mask[rows].to(logp.dtype).sum().clamp(min=1)
            local = local * n_local * P / n_total
        losses.append(local)
    return torch.stack(losses).mean(), losses


@checked(loss_types=loss_type_names)
def normalisation_table(model, tokens: torch.Tensor, prompt_len: int, old_logp: torch.Tensor,
                        advantages: torch.Tensor, mask: torch.Tensor, *, num_processes: int = 2,
                        loss_types=loss_types_with("clip"), temperature: float = 1.0, **loss_kwargs) -> list[dict]:
    """One row per loss type: the one-process loss and gradient against the P-process ones (chapter 16).

    The log-probabilities are ``completion_logprobs(model, tokens, prompt_len, temperature)``, in
    ``model``'s dtype (float64 for the chapter's table); the gradient is over every parameter of
    ``model``. Each row: ``loss_type``, ``single`` and ``data_parallel`` (the two loss values),
    ``ratio`` (data_parallel / single), ``max_grad_difference`` (largest absolute difference between
    the two gradients over all parameters), ``grad_norm`` (of the one-process gradient) and
    ``tokens_per_process`` (n_p). ``loss_kwargs`` go to ``grpo_loss`` (``eps_low``, ``beta``, ...).
    """
    from .model import completion_logprobs

    shards = shard_slices(mask.shape[0], num_processes)
    params = list(model.parameters())
    dtype = params[0].dtype
    old_logp, mask = old_logp.to(dtype), mask.to(dtype)
    advantages = advantages.to(dtype)
    if loss_kwargs.get("ref_logp") is not None:
        loss_kwargs = {**loss_kwargs, "ref_logp": loss_kwargs["ref_logp"].to(dtype)}
    rows = []
    for loss_type in loss_types:
        logp, _ = completion_logprobs(model, tokens, prompt_len, temperature)
        single, _ = grpo_loss(logp, old_logp, advantages, mask, loss_type=loss_type, **loss_kwargs)
        split, _ = data_parallel_loss(logp, old_logp, advantages, mask, num_processes=num_processes,
                                      loss_type=loss_type, **loss_kwargs)
        g_single = torch.autograd.grad(single, params, retain_graph=True)
        g_split = torch.autograd.grad(split, params)
        single, split = single.detach(), split.detach()
        rows.append({"loss_type": loss_type, "single": float(single), "data_parallel": float(split),
                     "ratio": float(split / single),
                     "max_grad_difference": max(float((a - b).abs().max()) for a, b in zip(g_single, g_split)),
                     "grad_norm": float(torch.sqrt(sum((g ** 2).sum() for g in g_single))),
                     "tokens_per_process": [int(mask[s].sum()) for s in shards]})
    return rows
