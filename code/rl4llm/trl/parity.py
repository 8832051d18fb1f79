"""The same GRPO loss on the same batch, ours and TRL 1.16's (chapter 16).

:func:`loss_batch` builds one hand-made batch; :func:`rl4llm_loss` computes its loss with
:func:`rl4llm.llm.grpo.grpo_loss`, :func:`trl_loss` with ``GRPOTrainer._compute_loss`` of a real TRL
trainer (:func:`trl_loss_trainer`, fed :func:`trl_loss_inputs`), and :func:`compare_losses` compares
values and gradients for every loss type (``scripts/grpo_trl.py`` runs the same check on several
processes).
"""
from __future__ import annotations

import math
import tempfile
from dataclasses import dataclass

import torch

from .._checks import at_least, checked, nonnegative_real
from ..llm.grpo import grpo_loss
from ..llm.kl_placement import KLInLoss
from ..math.credit import group_advantages
from .adapters import char_tokenizer_for_transformers, quiet, trl_policy, vocab_matches
from ..math.loss_types import loss_type_names, loss_types_with
from ..llm.model import GPT, completion_logprobs, is_conv1d
from ..llm.ratios import ImportanceRatio
from ..llm.tasks import MAX_COMPLETION_LEN, CharTokenizer, addition_prompt
from ..llm.trainer import CLIP_METRICS, GRPOConfig, loss_metrics
from .knobs import trl_config_kwargs


@dataclass
class LossBatch:
    """A hand-made GRPO batch (chapter 16): N prompts x G completions, everything a loss needs.

    ``tokens`` (B, P + T): prompt then completion, EOS then PAD after it; ``mask`` (B, T): 1 up to
    and including EOS; ``advantages`` (B,); ``old_logp`` and ``ref_logp`` (B, T): log pi_old and
    log pi_ref of each completion token (0 where masked).
    """
    tokens: torch.Tensor
    prompt_len: int
    mask: torch.Tensor
    advantages: torch.Tensor
    old_logp: torch.Tensor
    ref_logp: torch.Tensor

    @property
    def prompts(self) -> torch.Tensor:
        return self.tokens[:, :self.prompt_len]

    @property
    def completions(self) -> torch.Tensor:
        return self.tokens[:, self.prompt_len:]


@checked(vocab_matches(None), seed=at_least(0), perturbation=nonnegative_real)
def loss_batch(model: GPT, config: GRPOConfig, *, seed: int = 0, perturbation: float = 0.3) -> LossBatch:
    """A batch of ``config.prompts_per_step`` addition prompts x ``config.group_size`` completions.

    Completions are random digits of random length 1..4 ending in EOS, padded with PAD; rewards are
    random 0/1 per completion and advantages come from :func:`rl4llm.llm.grpo.group_advantages` (with
    ``config.scale_rewards``). The old and reference log-probs are the model's own at
    ``config.temperature`` plus independent N(0, ``perturbation``^2) noise per token, so the ratio is
    not 1 and the clip binds on some tokens. Seeded by ``seed`` alone.
    """
    tok = CharTokenizer()
    gen = torch.Generator().manual_seed(seed)
    N, G, T = config.prompts_per_step, config.group_size, MAX_COMPLETION_LEN
    operands = torch.randint(0, 100, (N, 2), generator=gen).tolist()
    prompts = torch.tensor([tok.encode(addition_prompt(a, b)) for a, b in operands]).repeat_interleave(G, dim=0)
    lengths = torch.randint(1, T + 1, (N * G, 1), generator=gen)
    position = torch.arange(T)[None, :]
    completions = torch.randint(0, 10, (N * G, T), generator=gen)
    completions = torch.where(position == lengths - 1, tok.eos_id, completions)
    completions = torch.where(position >= lengths, tok.pad_id, completions)
    mask = (position < lengths).float()
    rewards = torch.randint(0, 2, (N, G), generator=gen).float()
    advantages = group_advantages(rewards, scale=config.scale_rewards).view(-1)
    tokens = torch.cat([prompts, completions], dim=1)
    with torch.no_grad():
        logp, _ = completion_logprobs(model, tokens, prompts.shape[1], config.temperature)
    old_logp, ref_logp = ((logp + perturbation * torch.randn(N * G, T, generator=gen)) * mask for _ in range(2))
    return LossBatch(tokens, prompts.shape[1], mask, advantages, old_logp, ref_logp)


def rl4llm_loss(model: GPT, batch: LossBatch, config: GRPOConfig, *, kl: KLInLoss = KLInLoss(),
                ratio: ImportanceRatio = ImportanceRatio()) -> tuple[float, dict, dict]:
    """The book's loss on ``batch``: :func:`rl4llm.llm.grpo.grpo_loss` on :func:`completion_logprobs`.

    Settings from ``config`` and the strategies ``kl`` and ``ratio`` (their
    :meth:`~rl4llm.llm.trainer.GRPOConfig.loss_options`: eps_low, eps_high, beta, loss_type, max_new_tokens
    as dr_grpo's constant, the ratio's level and delta, the KL estimator and its bias correction; and
    temperature). Returns ``(loss, grads, stats)``: the loss as
    a float, the gradient of each parameter by name (``model``'s grads are left as they were), and
    ``grpo_loss``'s diagnostics with the trainer's TRL-named metrics (:func:`rl4llm.llm.trainer.loss_metrics`).
    """
    params = dict(model.named_parameters())
    logp, entropy = completion_logprobs(model, batch.tokens, batch.prompt_len, config.temperature)
    loss, stats = grpo_loss(logp, batch.old_logp, batch.advantages, batch.mask, ref_logp=batch.ref_logp,
                            **config.loss_options(kl, ratio))
    grads = torch.autograd.grad(loss, list(params.values()))
    return float(loss.detach()), dict(zip(params, grads)), (stats | loss_metrics(stats, entropy, batch.mask, True)
                                                            | trl_named_metrics(stats, config.loss_type, True))


def trl_loss_trainer(model: GPT, batch: LossBatch, config: GRPOConfig, directory: str, *,
                     num_processes: int = 1, **strategies):
    """A real ``trl.GRPOTrainer`` ready to compute the loss of ``batch`` (chapter 16).

    Built from :func:`trl_config_kwargs` (``num_processes`` and the ``strategies`` ``kl``, ``ratio``,
    ``sampler`` as there) on the CPU, its outputs and
    the policy (from which TRL loads its reference model) saved under ``directory``; no download.
    The model is in training mode and gradient accumulation is 1, as in the book's step.
    """
    from datasets import Dataset
    from trl import GRPOConfig as TRLConfig
    from trl import GRPOTrainer as TRLTrainer

    tok = CharTokenizer()
    hf = trl_policy(model, tok, directory=f"{directory}/policy")
    kwargs = {**trl_config_kwargs(config, num_processes=num_processes, **strategies), "use_cpu": True}
    args = TRLConfig(**kwargs, output_dir=str(directory), report_to="none", save_strategy="no",
                     disable_tqdm=True)
    prompts = tok.decode_batch(batch.prompts.tolist())
    trainer = TRLTrainer(model=hf, reward_funcs=lambda completions, **kw: [0.0] * len(completions),
                         args=args, train_dataset=Dataset.from_dict({"prompt": prompts}),
                         processing_class=char_tokenizer_for_transformers(tok))
    trainer.current_gradient_accumulation_steps = args.gradient_accumulation_steps
    trainer.model.train()
    return trainer


def trl_loss_inputs(batch: LossBatch, rows: slice = slice(None),
                    num_items_in_batch=None) -> dict:
    """What TRL's sampling step would give ``_compute_loss``, for ``batch[rows]``.

    Prompt and completion ids and masks, advantages, ``old_per_token_logps``,
    ``ref_per_token_logps``, and ``num_items_in_batch``: the masked token count of the
    whole generation batch (over every process), which the ``dapo`` normaliser divides
    by. It defaults to the count of ``batch[rows]``, right for one process.
    """
    mask = batch.mask[rows]
    if num_items_in_batch is None:
        num_items_in_batch = mask.sum()
    return {"prompt_ids": batch.prompts[rows],
            "prompt_mask": torch.ones_like(batch.prompts[rows]),
            "completion_ids": batch.completions[rows], "completion_mask": mask.long(),
            "advantages": batch.advantages[rows],
            "old_per_token_logps": batch.old_logp[rows],
            "ref_per_token_logps": batch.ref_logp[rows],
            "num_items_in_batch": num_items_in_batch}


def book_layout(model: GPT, hf_tensors: dict) -> dict:
    """GPT-2-named tensors (``transformer.h.0.attn.c_attn.weight``, ...) renamed and reshaped as
    ``model``'s parameters (GPT-2's Conv1D weights are stored transposed; chapter 16)."""
    names = [name for name, _ in model.named_parameters()]
    return {name: hf_tensors["transformer." + name].t() if is_conv1d(name)
            else hf_tensors["transformer." + name] for name in names}


def trl_loss(model: GPT, batch: LossBatch, config: GRPOConfig, **strategies) -> tuple[float, dict, dict]:
    """TRL 1.16's loss on ``batch``: ``GRPOTrainer._compute_loss`` on ``to_gpt2`` (``strategies`` as
    :func:`trl_loss_trainer`'s).

    A real trainer (:func:`trl_loss_trainer`) is handed the inputs its own sampling step
    would build (:func:`trl_loss_inputs`); its loss is differentiated with autograd.
    Returns ``(loss, grads, metrics)``: grads named and shaped as ``model``'s parameters, and what
    ``_compute_loss`` logged (entropy, the clip ratios, and kl when beta > 0), by TRL's names.
    """
    with quiet(), tempfile.TemporaryDirectory() as tmp:
        trainer = trl_loss_trainer(model, batch, config, tmp, **strategies)
        loss = trainer._compute_loss(trainer.model, trl_loss_inputs(batch))
    params = dict(trainer.model.named_parameters())
    grads = torch.autograd.grad(loss, list(params.values()))
    metrics = {name: values[-1] for name, values in trainer._metrics["train"].items()}
    return float(loss.detach()), book_layout(model, dict(zip(params, grads))), metrics


#: The registered loss types TRL 1.16's ``GRPOTrainer`` also computes (its ``loss_type`` values, every one it
#: accepts): the ones a parity check can compare (a loss type the book adds and TRL lacks has no TRL side).
TRL_LOSS_TYPES = ("grpo", "bnpo", "dapo", "dr_grpo", "cispo", "sapo", "luspo", "vespo")

#: TRL 1.16's logged name -> ``grpo_loss``'s stat, for the loss types whose objective logs other metrics than
#: the clip's :data:`~rl4llm.llm.trainer.CLIP_METRICS` (SAPO logs none of its own).
OBJECTIVE_METRICS = {"cispo": {"cispo_clip_ratio": "clip_fraction"}, "sapo": {},
                     "vespo": {"vespo/phi_seq_mean": "phi_seq_mean"}}


def trl_named_metrics(stats: dict, loss_type: str, kl_measured: bool) -> dict:
    """``grpo_loss``'s ``stats`` under the names TRL 1.16's ``_compute_loss`` logs for ``loss_type``: the
    clip ratios (:data:`~rl4llm.llm.trainer.CLIP_METRICS`) or the objective's own
    (:data:`OBJECTIVE_METRICS`), and ``kl`` when the reference was measured (entropy is the model's, not
    the loss's)."""
    names = OBJECTIVE_METRICS.get(loss_type, CLIP_METRICS)
    return {name: stats[key] for name, key in names.items()} | ({"kl": stats["mean_kl"]} if kl_measured else {})


def compare_losses(model: GPT, config: GRPOConfig,
                   loss_types=tuple(t for t in loss_types_with("clip") if t in TRL_LOSS_TYPES), *, seed: int = 0,
                   perturbation: float = 0.3, kl: KLInLoss = KLInLoss(),
                   ratio: ImportanceRatio = ImportanceRatio()) -> list[dict]:
    """The same loss on the same batch, ours and TRL's, for each of ``loss_types`` (chapter 16).

    One :func:`loss_batch` (``seed``, ``perturbation``) for all; ``config`` with its ``loss_type``
    replaced by each in turn, with the strategies ``kl`` and ``ratio`` (chapters 17-18). Each row: ``loss_type``, ``rl4llm`` and ``trl`` (the two loss values),
    ``difference`` (trl - rl4llm), ``max_grad_difference`` (largest absolute difference over every
    parameter's gradient), ``metrics`` (the names TRL logged), ``max_metric_difference`` (largest
    absolute difference between TRL's logged value and the trainer's metric of that name),
    ``grad_norm`` (of ours, for scale) and ``clip_fraction`` (of ours).
    """
    from dataclasses import replace

    loss_types = loss_type_names(loss_types)
    batch = loss_batch(model, config, seed=seed, perturbation=perturbation)
    rows = []
    for loss_type in loss_types:
        cfg = replace(config, loss_type=loss_type)
        ours, our_grads, stats = rl4llm_loss(model, batch, cfg, kl=kl, ratio=ratio)
        theirs, their_grads, logged = trl_loss(model, batch, cfg, kl=kl, ratio=ratio)
        rows.append({"loss_type": loss_type, "rl4llm": ours, "trl": theirs, "difference": theirs - ours,
                     "max_grad_difference": max(float((their_grads[n] - g).abs().max()) for n, g in our_grads.items()),
                     "metrics": sorted(logged),
                     "max_metric_difference": max(abs(value - stats[name]) for name, value in logged.items()),
                     "grad_norm": math.sqrt(sum(float(g.pow(2).sum()) for g in our_grads.values())),
                     "clip_fraction": stats["clip_fraction"]})
    return rows
