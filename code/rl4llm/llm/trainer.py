"""The GRPO trainer of chapter 15: the text's loop, for real, on the tiny GPT.

One outer step (:meth:`GRPOTrainer.step`) is the text's loop body in two halves, each a method the
chapter shows beside the pseudocode:

:meth:`GRPOTrainer.rollout` -> :class:`Batch`
    1. pick ``prompts_per_step`` training prompts;
    2. freeze pi_old and sample G completions of each (:func:`rl4llm.llm.model.sample`, no gradient):
       the sampler records log pi_old of every drawn token, which is all GRPO needs of pi_old;
    3. score them with the verifier (:meth:`rl4llm.llm.tasks.AdditionTask.rewards`);
    4. group advantages A_i = (r_i - mean) / (std + eps) (:func:`rl4llm.llm.grpo.group_advantages`),
       and optionally drop the flat groups (all rewards equal: zero advantage, nothing to learn).
    With ``refill_batches`` (DAPO's dynamic sampling, chapter 18) :meth:`GRPOTrainer.dynamic_rollout` repeats
    steps 1-4 on new prompts until ``prompts_per_step`` informative groups are in hand.
:meth:`GRPOTrainer.update` -> stats
    5. K inner steps of AdamW on :func:`rl4llm.llm.grpo.grpo_loss` (clipped ratio, optional beta k3 KL
       to the frozen warm start), each with gradient clipping.

Hyperparameters live in :class:`GRPOConfig`, CleanRL-style. Later chapters plug their machinery in as
strategy objects the loop calls: where the KL sits (``kl=``, :mod:`rl4llm.llm.kl_placement`, chapter 17),
the ratio's options (``ratio=``, :mod:`rl4llm.llm.ratios`, chapter 18), the entropy knobs (``entropy=``,
:mod:`rl4llm.llm.entropy`, chapter 18) and who samples (``sampler=``,
:mod:`rl4llm.llm.samplers`, chapter 20). The trainer is seeded and
deterministic on a given CPU, logs the diagnostics practitioners watch, and saves checkpoints from
which a resumed run reproduces the uninterrupted one exactly. Held-out evaluation lives in
:mod:`rl4llm.llm.evaluation`.
"""
from __future__ import annotations

import copy
import functools
import importlib
import math
import os
import time
import warnings
from contextlib import contextmanager
from dataclasses import asdict, dataclass

import numpy as np
import torch

from .._checks import (at_least, check_fields, checked, in_range, instance_of, optional, seed_list,
                      one_of, positive_real)
from ..math.credit import group_advantages
from .grpo import grpo_loss
from .objectives import SOFT_KNOB_RULES, SOFT_KNOBS, eps_for_loss_type
from ..math.loss_types import LOSS_TYPES
from .entropy import EntropyControl
from .evaluation import greedy_accuracy
from .kl_placement import KLInLoss, KLInReward
from .model import GPT, GPTConfig, Rollout, completion_logprobs, sample
from .ratios import ImportanceRatio
from .samplers import SAMPLING_METRICS, PolicySampler, Sampler
from .tasks import MAX_COMPLETION_LEN, AdditionTask


@dataclass
class GRPOConfig:
    """Every knob of a GRPO run (chapter 15). Defaults: the chapter's CPU run."""
    seed: int = 0
    steps: int = 200                # outer steps: sample, score, K inner updates
    prompts_per_step: int = 64      # prompts per outer step
    group_size: int = 8             # G, completions per prompt
    inner_steps: int = 1            # K, gradient steps on each sampled batch
    lr: float = 1e-3
    warmup_steps: int = 20          # linear warmup: the lr factor is min(1, (u + 1) / warmup_steps) at outer
                                    # step u (from 0; the K updates of one outer step share its lr)
    anneal_lr: bool = False         # multiply that factor by the linear decay 1 - u / steps, from u = 0 (not
                                    # after warmup): the peak is below 1, e.g. 0.937 at u = 19 of 300
    weight_decay: float = 0.0
    grad_clip: float = 1.0          # max global gradient norm
    eps_low: float = 0.2            # clip range [1 - eps_low, 1 + eps_high]
    eps_high: float | None = None   # None: eps_low
    beta: float = 0.0               # weight of the k3 KL to the frozen warm start
    loss_type: str = "grpo"         # aggregation, see rl4llm.llm.grpo.grpo_loss
    sapo_temperature_pos: float = SOFT_KNOBS["sapo_temperature_pos"]   # SAPO's gate where A > 0 (chapter 17)
    sapo_temperature_neg: float = SOFT_KNOBS["sapo_temperature_neg"]   # and where A <= 0; TRL's names, defaults
    vespo_k_pos: float = SOFT_KNOBS["vespo_k_pos"]                     # VESPO's gamma weight (chapter 17): its
    vespo_lambda_pos: float = SOFT_KNOBS["vespo_lambda_pos"]           # power k and decay lambda where A >= 0,
    vespo_k_neg: float = SOFT_KNOBS["vespo_k_neg"]                     # and where A < 0; TRL's names and
    vespo_lambda_neg: float = SOFT_KNOBS["vespo_lambda_neg"]           # defaults
    scale_rewards: bool = True      # divide by the group std (False: Dr. GRPO's r - mean)
    drop_zero_variance: bool = False  # leave groups with equal rewards out of the loss batch
    refill_batches: int = 0         # DAPO's dynamic sampling (chapter 18; needs drop_zero_variance): draw up to
                                    # this many more rounds of prompts_per_step new prompts until the step holds
                                    # prompts_per_step informative groups (verl's max_num_gen_batches - 1); 0: none
    temperature: float = 1.0
    max_new_tokens: int = MAX_COMPLETION_LEN
    eval_every: int = 25            # held-out greedy accuracy every n outer steps (and at the ends)
    log_kl: bool = True             # measure the KL to the warm start every step (costs a forward pass)
    device: str = "auto"            # "auto": CUDA when available, else CPU
    num_threads: int = 1            # CPU threads while training (results are reproducible at a fixed count)

    def __post_init__(self):
        check_fields(self, CONFIG_RULES, eps_for_loss_type, refill_drops_flat_groups)

    def clip(self) -> tuple[float, float]:
        """(eps_low, eps_high) as the loss type's objective reads them, ``eps_high`` filled in: ``eps_low`` for
        the clip (a symmetric range), the cap :data:`rl4llm.llm.objectives.EPS_MAX` for CISPO (chapter 18)."""
        eps = {"loss_type": self.loss_type, "eps_low": self.eps_low, "eps_high": self.eps_high}
        eps_for_loss_type(eps)
        return eps["eps_low"], eps["eps_high"]

    def loss_options(self, kl: KLInLoss | KLInReward = KLInLoss(), ratio: ImportanceRatio = ImportanceRatio()) -> dict:
        """The keywords of :func:`rl4llm.llm.grpo.grpo_loss` this run trains with (eps_high filled in), the
        KL's and the ratio's from the strategies ``kl`` and ``ratio`` (chapter 15's by default)."""
        eps_low, eps_high = self.clip()
        return {"eps_low": eps_low, "eps_high": eps_high, "loss_type": self.loss_type,
                "max_completion_length": self.max_new_tokens, **{name: getattr(self, name) for name in SOFT_KNOBS},
                **kl.loss_options(self.beta), **ratio.loss_options()}


def _group_size(G, name):
    if isinstance(G, bool) or not isinstance(G, int) or G < 2:
        raise ValueError(f"{name} (G) must be an integer >= 2 (a group of one has no spread to learn from), "
                         f"got {G!r}")
    return G


def _max_new_tokens(n, name):
    if isinstance(n, bool) or not isinstance(n, int) or n < MAX_COMPLETION_LEN:
        raise ValueError(f"{name} must be an integer >= {MAX_COMPLETION_LEN} (the longest answer, "
                         f"'198' and EOS), got {n!r}")
    return n


def _device(device, name):
    if device not in ("auto", "cpu", "cuda") and not str(device).startswith("cuda:"):
        raise ValueError(f"{name} must be 'auto', 'cpu' or 'cuda[:i]', got {device!r}")
    return device


#: Each knob of :class:`GRPOConfig` and its valid range, checked when a config is made.
CONFIG_RULES = {
    "seed": at_least(0), "steps": at_least(0), "prompts_per_step": at_least(1), "group_size": _group_size,
    "inner_steps": at_least(1), "lr": positive_real, "warmup_steps": at_least(0),
    "weight_decay": in_range(0.0, math.inf, high_open=True), "grad_clip": positive_real,
    "beta": in_range(0.0, math.inf, high_open=True), "loss_type": one_of(LOSS_TYPES),
    "temperature": in_range(0.0, math.inf, low_open=True, high_open=True), "max_new_tokens": _max_new_tokens,
    "eval_every": at_least(1), "num_threads": at_least(1), "device": _device, "refill_batches": at_least(0),
    **SOFT_KNOB_RULES,
}


def refill_drops_flat_groups(fields):
    """Relation: ``refill_batches`` > 0 needs ``drop_zero_variance=True``: dynamic sampling refills the batch
    with informative groups in place of the flat ones it leaves out, so it must leave them out. Required, not
    implied, so that a config says what it runs."""
    if fields["refill_batches"] and not fields["drop_zero_variance"]:
        raise ValueError(f"refill_batches must be 0 unless drop_zero_variance=True (dynamic sampling replaces the "
                         f"flat groups it drops), got refill_batches={fields['refill_batches']} with "
                         f"drop_zero_variance=False")


#: The strategies of later chapters the trainer takes, each a rule (its fields were checked when it was made),
#: and their relation: the sampler refuses the KL placement or ratio it cannot serve (chapter 20).
STRATEGY_RULES = {"kl": instance_of(KLInLoss, KLInReward), "ratio": instance_of(ImportanceRatio),
                  "sampler": instance_of(Sampler)}
#: Every strategy the trainer takes, by keyword: those and chapter 18's entropy knobs.
STRATEGIES = (*STRATEGY_RULES, "entropy")


def strategies_agree(args):
    """Relation: the ``sampler`` serves the ``kl`` placement and the ``ratio`` (:meth:`Sampler.check_with`)."""
    args["sampler"].check_with(args["kl"], args["ratio"])


def entropy_fits(args):
    """Relation: an ``entropy`` strategy that makes the advantages per token has a ratio per token."""
    if args["entropy"].per_token and args["ratio"].level != "token":
        raise ValueError("entropy: top_quantile < 1 and the covariance methods act on single tokens, so they need "
                         f"ratio=ImportanceRatio(level='token'), got level={args['ratio'].level!r}")


def weights_reach_the_loss(args):
    """Relation: with VESPO (chapter 17) the ``sampler`` does not correct its gap. The trainer multiplies a
    rollout engine's importance weights into the advantages (chapter 20); TRL 1.16 instead adds their logs
    to VESPO's sequence log-ratio inside phi, which a weight on the advantage cannot reproduce."""
    sampler = args["sampler"]
    if args["config"].loss_type == "vespo" and getattr(sampler, "correction", False):
        raise ValueError("sampler: loss_type='vespo' needs RolloutEngineSampler(correction=False) here: TRL 1.16 "
                         "folds the engine's importance weights into VESPO's phi, which this trainer's weighted "
                         "advantages cannot express")


def refill_samples_with_the_policy(args):
    """Relation: dynamic sampling (``refill_batches`` > 0) needs the policy to sample. The trainer syncs a
    rollout engine (chapter 20) once per round drawn, so a stale engine would age by a sync at every refill
    round, where verl samples every round of a step with the same weights."""
    if args["config"].refill_batches and not isinstance(args["sampler"], PolicySampler):
        raise ValueError(f"sampler: refill_batches > 0 (dynamic sampling) needs sampler=PolicySampler(): the "
                         f"trainer syncs a rollout engine once per round drawn, got {args['sampler']!r}")


def levels_as_trl_asks(args):
    """Relation, a warning as TRL 1.16's ``GRPOTrainer`` gives: a loss type meant for one ratio level
    (:attr:`rl4llm.math.loss_types.LossType.importance_sampling_level`: LUSPO GSPO's ``"sequence"``, VESPO
    ``"token"``) runs at the other, but not as its paper set it up (TRL warns and runs it too)."""
    loss_type, level = args["config"].loss_type, args["ratio"].level
    meant = LOSS_TYPES[loss_type].importance_sampling_level
    if meant is not None and level != meant:
        warnings.warn(f"loss_type={loss_type!r} is meant for ImportanceRatio(level={meant!r}) (TRL 1.16 warns: "
                      f"importance_sampling_level should be {meant!r}, {LEVEL_REASONS[loss_type]}), got "
                      f"level={level!r}; it runs, as in TRL", stacklevel=3)


#: Why TRL 1.16 asks for its level, for each loss type meant for one (its warning's words).
LEVEL_REASONS = {"luspo": "to mirror the paper's setup",
                 "vespo": "since VESPO computes sequence-level importance weights internally"}


def config_fits(args):
    """Relation: the ``config`` (``GRPOConfig()`` where None, filled in) fits the ``policy`` and the ``task``:
    a prompt plus ``max_new_tokens`` fits the model's block_size, and a step's prompts are at most the task's
    training prompts (a step draws each at most once)."""
    cfg = args["config"] = args["config"] if args["config"] is not None else GRPOConfig()
    n_prompts, prompt_len = args["task"].train_prompt_ids.shape
    block_size = args["policy"].config.block_size
    if prompt_len + cfg.max_new_tokens > block_size:
        raise ValueError(f"max_new_tokens must be at most {block_size - prompt_len} for this model: a "
                         f"{prompt_len}-token prompt plus max_new_tokens must fit its block_size={block_size}, "
                         f"got max_new_tokens={cfg.max_new_tokens}")
    if cfg.prompts_per_step > n_prompts:
        raise ValueError(f"prompts_per_step must be at most the task's {n_prompts} training prompts (a step "
                         f"draws each at most once), got {cfg.prompts_per_step}")


def chapter15_config() -> GRPOConfig:
    """The configuration of chapter 15's run, defined once: chapter 15 trains with it and chapter 16's
    knob table shows it. It differs from the defaults of :class:`GRPOConfig` in three knobs: 300
    steps, the learning rate annealed linearly toward 0 (a decay from step 0 times the warmup's ramp: the
    lr peaks at 0.937 of ``lr``, at step 20, and ends at 1/300 of it), and flat groups left out of the loss batch."""
    return GRPOConfig(seed=0, steps=300, eval_every=25, anneal_lr=True, drop_zero_variance=True)


@contextmanager
def torch_threads(n: int):
    """Run a block with ``n`` intra-op CPU threads, then restore the previous count.

    The backward pass sums over the batch in an order that depends on the thread count, so a run
    is bitwise reproducible only at a fixed count: every training run fixes its own.
    """
    previous = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


def resolve_device(device: str) -> torch.device:
    """``"auto"`` is CUDA when available, else CPU."""
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


def prompt_indices(n_prompts: int, prompts_per_step: int, seed: int, step: int) -> np.ndarray:
    """The training prompts of outer step ``step`` (counted from 0): shuffled epochs (chapter 15). With
    dynamic sampling (chapter 18) ``step`` counts rounds drawn instead, refill rounds included, as verl's
    dataloader runs on.

    Epoch e is a permutation of the ``n_prompts`` prompts (numpy's generator seeded with (seed, e)),
    cut into n_prompts // prompts_per_step steps of ``prompts_per_step`` prompts, the incomplete last
    step dropped, as TRL's ``RepeatSampler`` takes its prompts; step s takes step s mod that count of
    epoch s // that count. So every prompt is drawn once per epoch (no prompt twice in a step), and
    the prompts of a step depend only on (seed, step): a resumed run draws what the whole one drew,
    and a TRL run given this order sees the same prompts at every step.
    """
    steps_per_epoch = n_prompts // prompts_per_step
    epoch, position = divmod(step, steps_per_epoch)
    return _epoch_order(n_prompts, seed, epoch)[position * prompts_per_step:(position + 1) * prompts_per_step].copy()


@functools.lru_cache(maxsize=4)
def _epoch_order(n_prompts: int, seed: int, epoch: int) -> np.ndarray:
    """Epoch ``epoch``'s permutation of the prompts, drawn once (every step of the epoch slices it)."""
    order = np.random.default_rng([seed, epoch]).permutation(n_prompts)
    order.flags.writeable = False                 # shared by the steps of the epoch
    return order


def lr_factor(update: int, warmup_steps: int, steps: int, anneal_lr: bool) -> float:
    """The learning rate's multiplier at scheduler update ``update`` (counted from 0; chapter 15):
    min(1, (u + 1) / W) for a warmup over W updates (1 when W = 0), times max(0, 1 - u / steps) with
    ``anneal_lr``, a linear decay to 0 at update ``steps``. The two multiply from update 0 on (the
    decay does not wait for the warmup to end), so with ``anneal_lr`` the factor peaks below 1, at
    u = W - 1: (1 - (W - 1) / steps), 0.937 for W = 20 and 300 steps. The trainer steps its scheduler
    once per outer step, flat-and-dropped batches included, so u is the outer step."""
    factor = min(1.0, (update + 1) / warmup_steps) if warmup_steps else 1.0
    if anneal_lr:
        factor *= max(0.0, 1.0 - update / max(steps, 1))
    return factor


@dataclass
class Batch:
    """What one rollout hands to the update (chapter 15): the sampled batch, scored, with advantages.

    ``rollout`` holds every sampled completion; ``rewards`` (N, G) their verifier scores. ``keep`` marks
    the rows the loss sees (all, or only the informative groups' when flat groups are dropped);
    ``advantages`` are those rows' advantages, and ``ref_logp`` their log-probs under the frozen
    reference (None when neither ``beta`` nor ``log_kl`` needs it). ``trainer_logp`` and
    ``importance_weights`` are what the sampler attaches (None when the policy sampled itself): when a
    rollout engine sampled (chapter 20), ``rollout.logp`` is the engine's, ``trainer_logp`` the
    trainer's rescoring of the kept rows (the loss's log pi_old, as in TRL) and ``importance_weights``
    TRL's weight of each kept sequence (or token), or None without the correction. ``gen_batches`` counts
    the rounds of ``prompts_per_step`` prompts sampled into it (more than 1 only with dynamic sampling).
    """
    rollout: Rollout
    rewards: torch.Tensor
    informative: torch.Tensor
    keep: torch.Tensor
    advantages: torch.Tensor
    ref_logp: torch.Tensor | None
    trainer_logp: torch.Tensor | None = None
    importance_weights: torch.Tensor | None = None
    gen_batches: int = 1

    @property
    def tokens(self) -> torch.Tensor:
        return self.rollout.tokens[self.keep]

    @property
    def old_logp(self) -> torch.Tensor:
        return self.sampler_logp if self.trainer_logp is None else self.trainer_logp

    @property
    def sampler_logp(self) -> torch.Tensor:
        return self.rollout.logp[self.keep]

    @property
    def mask(self) -> torch.Tensor:
        return self.rollout.mask[self.keep]


#: The clip's diagnostics under TRL 1.16's metric names, each from its key in ``grpo_loss``'s stats.
CLIP_METRICS = {"clip_ratio/low_mean": "clip_low_fraction", "clip_ratio/high_mean": "clip_high_fraction",
                "clip_ratio/region_mean": "clip_fraction", "clip_ratio/low_min": "clip_low_min",
                "clip_ratio/high_max": "clip_high_max"}
#: What :meth:`GRPOTrainer.update` reports, and every metric logged per outer step (TRL's names where TRL
#: logs the quantity; ``step``, ``ratio``, ``tokens`` and ``seconds`` are the book's own).
UPDATE_METRICS = ("loss", "grad_norm", *CLIP_METRICS, "ratio", "entropy", "kl", "learning_rate")
METRICS = ("step", "reward", "reward_std", "frac_reward_zero_std", "entropy", "kl", *CLIP_METRICS, "ratio",
           "completions/mean_length", "completions/min_length", "completions/max_length",
           "completions/clipped_ratio", *SAMPLING_METRICS, "loss", "grad_norm", "learning_rate", "num_gen_batches",
           "answers", "tokens", "seconds")
#: Chapter 15's names for three of them, kept as aliases: each is the same list as its TRL-named metric.
METRIC_ALIASES = {"clip_fraction": "clip_ratio/region_mean", "zero_variance_share": "frac_reward_zero_std",
                  "completion_length": "completions/mean_length"}


def loss_metrics(stats: dict, entropy: torch.Tensor, mask: torch.Tensor, kl_measured: bool) -> dict:
    """One inner step's diagnostics as TRL 1.16's ``_compute_loss`` logs them (chapter 19): the clip ratios
    from ``grpo_loss``'s ``stats``, ``entropy`` (the masked mean of the per-token ``entropy``) and ``kl``
    (``stats["mean_kl"]``, NaN when the reference was not measured)."""
    return {**{name: stats[key] for name, key in CLIP_METRICS.items()},
            "entropy": float((entropy * mask).sum() / mask.sum()),
            "kl": stats["mean_kl"] if kl_measured else math.nan}


def with_aliases(columns: dict) -> dict:
    """``columns`` and each alias of :data:`METRIC_ALIASES` whose metric it holds, bound to the same object."""
    return columns | {alias: columns[name] for alias, name in METRIC_ALIASES.items() if name in columns}


def metric_log(logged: dict | None = None) -> dict:
    """The trainer's ``metrics``: a list per :data:`METRICS` key (``logged``'s lists, or empty), aliases included."""
    return with_aliases({key: logged[key] if logged is not None else [] for key in METRICS})


class GRPOTrainer:
    """GRPO from a warm-started policy (chapter 15). ``train()`` runs ``config.steps`` outer steps.

    Later chapters' machinery comes in as strategies the loop calls, each checked where it arrives:
    ``kl`` (:class:`~rl4llm.llm.kl_placement.KLInLoss`, the default, or
    :class:`~rl4llm.llm.kl_placement.KLInReward`; chapter 17), ``ratio``
    (:class:`~rl4llm.llm.ratios.ImportanceRatio`; chapter 18) and ``sampler``
    (:class:`~rl4llm.llm.samplers.PolicySampler`, the default, or
    :class:`~rl4llm.llm.samplers.RolloutEngineSampler`; chapter 20), which refuses the combinations it
    cannot serve. The defaults are chapter 15's run.

    ``metrics`` holds one value per outer step for each of :data:`METRICS`, under TRL 1.16's names and
    with TRL's meaning (chapter 19 reads a run from them): ``reward`` and ``reward_std`` (mean and
    sample std of every sampled reward), ``frac_reward_zero_std`` (share of groups whose rewards are
    all equal: the rewards the advantages come from, shaped by the KL with ``kl=KLInReward()``),
    ``entropy`` (mean per-token entropy of the policy on the loss batch), ``kl`` (mean k3 KL to the
    warm start on the loss batch, times the ratio with ``KLInLoss(use_bias_correction_kl=True)``; NaN
    when not measured), the clip ratios (``clip_ratio/low_mean``, ``/high_mean``, ``/region_mean``,
    ``/low_min``, ``/high_max``: see :func:`rl4llm.llm.grpo.grpo_loss`), ``completions/mean_length``,
    ``/min_length``, ``/max_length`` (tokens, EOS included) and ``completions/clipped_ratio`` (share
    cut off at ``max_new_tokens`` without EOS), ``loss``, ``grad_norm`` (before clipping) and
    ``learning_rate``; verl's ``num_gen_batches`` (rounds of ``prompts_per_step`` prompts sampled: 1, or more
    with dynamic sampling); and the book's own ``step``, ``ratio`` (mean ratio), ``answers`` and ``tokens``
    (sampled answers and tokens, every round's) and ``seconds`` (wall time of the step). With dynamic
    sampling, ``reward``, ``reward_std``, ``frac_reward_zero_std`` and the lengths are over every answer
    sampled, every round's (verl logs them over the trained batch). TRL logs one row per inner step; an
    outer step's row here holds the mean over its K inner steps (loss, gradient norm, clip ratios,
    ratio), and the entropy and KL of the first (the sampling policy's); each step's K region clip
    ratios are in ``clip_fraction_per_inner_step``. :data:`METRIC_ALIASES` keeps chapter 15's names
    (``clip_fraction``, ``zero_variance_share``, ``completion_length``). ``evals`` holds ``step``,
    ``accuracy`` (held-out greedy) and ``train_seconds`` (training wall time so far, evaluation
    excluded), at step 0, every ``eval_every`` steps and at the end.
    """

    METRICS = METRICS

    @checked(strategies_agree, entropy_fits, config_fits, weights_reach_the_loss, refill_samples_with_the_policy,
             levels_as_trl_asks, **STRATEGY_RULES,
             entropy=instance_of(EntropyControl))
    def __init__(self, policy: GPT, task: AdditionTask, config: GRPOConfig | None = None, *,
                 kl: KLInLoss | KLInReward = KLInLoss(), ratio: ImportanceRatio = ImportanceRatio(),
                 sampler: Sampler = PolicySampler(), entropy: EntropyControl = EntropyControl()):
        self.config = cfg = config
        self.kl, self.ratio, self.sampler = kl, ratio, sampler         # chapters 17, 18 and 20's strategies
        self.entropy = copy.deepcopy(entropy)     # chapter 18's; it keeps state (adaptive control), so a copy
        self.prompt_len = task.train_prompt_ids.shape[1]
        self.task = task
        self.device = resolve_device(cfg.device)
        self.policy = copy.deepcopy(policy).to(self.device)       # trained; the caller's model is left as it was
        self.reference = copy.deepcopy(self.policy).requires_grad_(False)   # pi_ref: the frozen warm start
        self.engine = sampler.start(self.policy)      # the model that samples, when it is not the policy
        self.optimizer = torch.optim.AdamW(self.policy.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay,
                                           fused=True)     # one kernel for every tensor (CPU and CUDA alike)
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(self.optimizer, self._lr_factor)
        self.loss_options = cfg.loss_options(kl, ratio)
        self.sample_generator = torch.Generator(device=self.device).manual_seed(cfg.seed + 1)
        self.train_prompts = torch.as_tensor(task.train_prompt_ids, device=self.device)
        self.step_count = 0
        self.gen_batches = 0         # rounds of prompts drawn so far: step_count, unless dynamic sampling refilled
        self.train_seconds = 0.0
        self.metrics = metric_log()
        self.clip_fraction_per_inner_step: list[list[float]] = []     # one list of K values per outer step
        self.evals = {"step": [], "accuracy": [], "train_seconds": []}

    @property
    def reuses_sampling_pass(self) -> bool:
        """Whether the loss differentiates the sampler's own log-probs (``sample(keep_graph=True)``)
        instead of recomputing them in a second forward pass: with one inner step, when the policy
        samples itself (no rollout engine) and every sampled row enters the loss. The pass
        that sampled then ran the very weights the loss differentiates, on the very tokens; with
        flat groups dropped, a second pass over the kept rows costs less than a backward pass
        through every sampled row. An entropy bonus differentiates the entropy, which the sampler detaches."""
        cfg = self.config
        return cfg.inner_steps == 1 and self.engine is None and not cfg.drop_zero_variance and not self.entropy.bonus

    #: Whether the sampler runs the model once per distinct prefix (:mod:`rl4llm.llm.prefix_sharing`): never
    #: here, so that chapter 15's draws are one pass per row; an option of
    #: :class:`~rl4llm.llm.fast_trainer.FastGRPOTrainer`.
    shares_prefixes = False

    def _lr_factor(self, updates: int) -> float:
        """lr multiplier after ``updates`` scheduler steps: :func:`lr_factor` of this run's knobs."""
        cfg = self.config
        return lr_factor(updates, cfg.warmup_steps, cfg.steps, cfg.anneal_lr)

    def evaluate(self) -> float:
        accuracy = greedy_accuracy(self.policy, self.task)
        for key, value in (("step", self.step_count), ("accuracy", accuracy), ("train_seconds", self.train_seconds)):
            self.evals[key].append(value)
        return accuracy

    def rollout(self, refill: int = 0) -> Batch:
        """Steps 1-4 of the text's loop: prompts, G samples of each, rewards, advantages. (``refill`` r > 0: the
        r-th refill round of dynamic sampling, which draws the prompts after the step's first ones.)"""
        cfg, task, tok, G = self.config, self.task, self.task.tokenizer, self.config.group_size
        chosen = torch.as_tensor(prompt_indices(len(task.train_pairs), cfg.prompts_per_step, cfg.seed,
                                                self.gen_batches + refill))             # 1. the step's prompts
        prompts = self.train_prompts[chosen.to(self.device)]
        model = self.sampler.sync(self.engine, self.policy)        # 2. pi_old = freeze(pi_theta): no gradients;
        try:                                                       #    the sampler records log pi_old
            rollout = sample(model, prompts, group_size=G, max_new_tokens=cfg.max_new_tokens,
                             temperature=cfg.temperature, eos_id=tok.eos_id, pad_id=tok.pad_id,
                             generator=self.sample_generator, keep_graph=self.reuses_sampling_pass,
                             share_prefixes=self.shares_prefixes)
        except FloatingPointError as err:
            raise FloatingPointError(f"GRPO step {self.step_count + 1} (sampling): {err}; "
                                     f"training stopped") from err
        pairs = np.repeat(task.train_pairs[chosen.numpy()], G, axis=0)                 # 3. the verifier's scores
        scores = task.rewards(pairs, rollout.completions.cpu().numpy())
        rewards = torch.as_tensor(scores, dtype=torch.float32, device=self.device).view(-1, G)
        shaped, ref_logp = self.kl.shaped_rewards(model, self.reference, rollout, rewards, cfg.beta, cfg.temperature)
        # 4. group advantages; a group is flat when the reward its advantages come from is (as in TRL)
        informative = (shaped.amax(dim=1) > shaped.amin(dim=1)).repeat_interleave(G)
        keep = informative if cfg.drop_zero_variance else torch.ones_like(informative)
        ref_logp = self._reference_logp(rollout, keep) if ref_logp is None else ref_logp[keep]
        advantages = group_advantages(shaped, scale=cfg.scale_rewards).view(-1)
        trainer_logp, weights = self.sampler.rescore(self.policy, rollout, keep, cfg.temperature, G)
        return Batch(rollout, rewards, informative, keep, advantages[keep], ref_logp, trainer_logp, weights)

    def dynamic_rollout(self) -> Batch:
        """DAPO's dynamic sampling (chapter 18), verl's rule (``algorithm.filter_groups``): draw rounds of
        ``prompts_per_step`` prompts, the next ones of the shuffled epochs (:func:`prompt_indices`; a step whose
        rounds run into the next epoch can draw a prompt twice, as verl's can), each scored and its flat groups
        dropped, until the kept groups number at least ``prompts_per_step``; train on
        the first ``prompts_per_step`` of them in the order drawn (the rest are sampled, counted, and unused).
        A step that still lacks them after ``1 + refill_batches`` rounds stops training with RuntimeError, as
        verl's does once ``max_num_gen_batches`` rounds fell short."""
        cfg = self.config
        batches = [self.rollout()]
        while sum(int(b.informative.sum()) for b in batches) < cfg.prompts_per_step * cfg.group_size:
            if len(batches) > cfg.refill_batches:
                raise RuntimeError(f"GRPO step {self.step_count + 1}: {len(batches)} rounds of "
                                   f"{cfg.prompts_per_step} prompts held fewer than {cfg.prompts_per_step} informative "
                                   f"groups (refill_batches={cfg.refill_batches}); training stopped, as verl stops "
                                   f"at max_num_gen_batches: the prompts are too hard or too easy for the policy")
            batches.append(self.rollout(len(batches)))
        return first_groups(batches, cfg.prompts_per_step, cfg.group_size)

    def _reference_logp(self, rollout: Rollout, keep: torch.Tensor) -> torch.Tensor | None:
        """log pi_ref of the kept rows, when the loss's KL (beta > 0) or its log (``log_kl``) needs them."""
        cfg = self.config
        if not (cfg.beta > 0 or cfg.log_kl) or not bool(keep.any()):
            return None
        with torch.no_grad():
            ref_logp, _ = completion_logprobs(self.reference, rollout.tokens[keep], rollout.prompt_len,
                                              cfg.temperature, cfg.group_size)
        return ref_logp

    def update(self, batch: Batch) -> dict:
        """Step 5: K clipped inner steps on the same batch. Returns the diagnostics: the K steps' mean
        loss, gradient norm, clip fraction and ratio; entropy and KL before the first step."""
        learning_rate = self.optimizer.param_groups[0]["lr"]          # the rate these K steps take
        if not len(batch.tokens):     # every group was flat and dropped: nothing to learn from, but the
            self._step_scheduler()    # schedule still advances, so that update u is outer step u
            return with_aliases(dict.fromkeys(UPDATE_METRICS, math.nan) | {"learning_rate": learning_rate}) | {
                "clip_fraction_per_inner_step": []}
        inner = [self.inner_step(batch, k) for k in range(self.config.inner_steps)]
        self._step_scheduler()
        means = {key: float(np.mean([s[key] for s in inner]))
                 for key in ("loss", "grad_norm", *CLIP_METRICS, "ratio")}
        return with_aliases(means) | {"entropy": inner[0]["entropy"], "kl": inner[0]["kl"],
                                      "learning_rate": learning_rate,
                                      "clip_fraction_per_inner_step": [s["clip_ratio/region_mean"] for s in inner]}

    def _step_scheduler(self) -> None:
        """One scheduler step per outer step. When the first outer steps dropped every group, the optimizer
        has not stepped yet; torch then warns that the scheduler steps first, which is intended here."""
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Detected call of `lr_scheduler.step\\(\\)` before")
            self.scheduler.step()

    def inner_step(self, batch: Batch, k: int) -> dict:
        """Inner step k: AdamW on ``grpo_loss`` (options checked once, by the config and the strategies; the
        entropy strategy's knobs around it, none by default), gradient clipped."""
        cfg, mask = self.config, batch.mask
        if batch.rollout.loss_logp is not None:    # K = 1: the pass that sampled is the loss's forward pass
            logp, entropy = batch.rollout.loss_logp, batch.rollout.entropy
        else:
            logp, entropy = completion_logprobs(self.policy, batch.tokens, batch.rollout.prompt_len, cfg.temperature,
                                                cfg.group_size, entropy_grad=self.entropy.bonus)   # (N, T) each
        loss, stats = self.entropy.loss(logp, entropy, batch.old_logp, self.sampler.weighted_advantages(batch, logp),
                                        mask, batch.ref_logp, self.loss_options)     # grpo_loss, and chapter 18's knobs
        self._check_finite(loss, "loss", k)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(self.policy.parameters(), cfg.grad_clip)
        self._check_finite(grad_norm, "gradient norm", k)
        self.optimizer.step()
        return {"loss": float(loss.detach()), "grad_norm": float(grad_norm), "ratio": stats["mean_ratio"],
                **loss_metrics(stats, entropy.detach(), mask, batch.ref_logp is not None)}

    def step(self) -> dict:
        """One outer GRPO step: ``update(rollout())`` (``update(dynamic_rollout())`` with ``refill_batches``),
        timed and logged. Returns its metrics."""
        start = time.perf_counter()
        batch = self.dynamic_rollout() if self.config.refill_batches else self.rollout()
        stats = self.update(batch)
        self.step_count += 1
        self.gen_batches += batch.gen_batches
        elapsed = time.perf_counter() - start
        self.train_seconds += elapsed
        lengths, last = batch.rollout.mask.sum(dim=1), batch.rollout.completions[:, -1]
        tok = self.task.tokenizer
        measured = {"step": self.step_count, "reward": float(batch.rewards.mean()),
                    "reward_std": float(batch.rewards.std()),
                    "frac_reward_zero_std": float(1.0 - batch.informative.float().mean()),
                    "completions/mean_length": float(lengths.mean()), "completions/min_length": float(lengths.min()),
                    "completions/max_length": float(lengths.max()),
                    "completions/clipped_ratio": float(((last != tok.eos_id) & (last != tok.pad_id)).float().mean()),
                    "num_gen_batches": batch.gen_batches, "answers": len(batch.rollout.tokens),
                    "tokens": int(batch.rollout.mask.sum()), "seconds": elapsed} | self.sampler.metrics(batch)
        row = {key: measured[key] if key in measured else stats[key] for key in METRICS}
        for key, value in row.items():
            self.metrics[key].append(value)
        self.clip_fraction_per_inner_step.append(stats["clip_fraction_per_inner_step"])
        return with_aliases(row)

    def _check_finite(self, value: torch.Tensor, quantity: str, inner_step: int) -> None:
        if not bool(torch.isfinite(value)):
            raise FloatingPointError(f"GRPO step {self.step_count + 1} (inner step {inner_step + 1}): the "
                                     f"{quantity} is {float(value.detach())}; training stopped before the update")

    @checked(steps=optional(at_least(0)), checkpoint_every=optional(at_least(1)), max_seconds=optional(positive_real),
             max_answers=optional(at_least(1)))
    def train(self, steps: int | None = None, *, progress: bool = True, checkpoint_path: str | None = None,
              checkpoint_every: int | None = None, max_seconds: float | None = None,
              max_answers: int | None = None) -> "GRPOTrainer":
        """Run ``steps`` more outer steps (default: those left to ``config.steps``, so a resumed run ends
        where the uninterrupted one does), evaluating every ``eval_every``.

        ``max_seconds`` stops earlier, once ``train_seconds`` (training wall time, evaluation excluded)
        reaches it; the last step is then evaluated (the benchmark's "accuracy after 60 s"). ``max_answers``
        stops likewise once the answers sampled (every round's, ``metrics["answers"]``) reach it: a budget of
        answers, which dynamic sampling spends faster per step (chapter 18).

        With ``checkpoint_path`` a checkpoint is written every ``checkpoint_every`` steps and at the
        end; a step that produces a NaN or inf raises ``FloatingPointError`` before any checkpoint
        of that state is written.
        """
        from tqdm.auto import tqdm

        steps = max(self.config.steps - self.step_count, 0) if steps is None else steps
        with torch_threads(self.config.num_threads), \
                tqdm(total=steps, desc="GRPO", disable=not progress, leave=True) as bar:
            if not self.evals["step"]:
                self.evaluate()
            for i in range(steps):
                row = self.step()
                out_of_budget = (max_seconds is not None and self.train_seconds >= max_seconds) or \
                    (max_answers is not None and sum(self.metrics["answers"]) >= max_answers)
                if (self.step_count % self.config.eval_every == 0 or i == steps - 1 or out_of_budget) \
                        and self.evals["step"][-1] != self.step_count:
                    self.evaluate()
                bar.set_postfix(reward=f"{row['reward']:.3f}", acc=f"{self.evals['accuracy'][-1]:.3f}")
                bar.update()
                if checkpoint_path and (i == steps - 1 or out_of_budget
                                        or (checkpoint_every and self.step_count % checkpoint_every == 0)):
                    self.save(checkpoint_path)
                if out_of_budget:
                    break
        return self

    # ---- checkpoints -------------------------------------------------------------------------
    def state_dict(self) -> dict:
        return {"config": asdict(self.config), "model_config": asdict(self.policy.config),
                "strategies": {name: _strategy_state(getattr(self, name)) for name in STRATEGIES},
                "task": {"seed": self.task.seed, "n_eval": self.task.n_eval},
                "policy": self.policy.state_dict(), "reference": self.reference.state_dict(),
                "optimizer": self.optimizer.state_dict(), "scheduler": self.scheduler.state_dict(),
                "sample_generator": self.sample_generator.get_state(),
                "sample_generator_device": self.device.type,
                # the global generators: the trainer draws from its own two, but a caller's code may not
                "torch_rng_state": torch.get_rng_state(),
                "cuda_rng_states": torch.cuda.get_rng_state_all() if self.device.type == "cuda" else [],
                "step_count": self.step_count, "gen_batches": self.gen_batches, "train_seconds": self.train_seconds,
                "metrics": self.metrics, "evals": self.evals,
                "clip_fraction_per_inner_step": self.clip_fraction_per_inner_step} \
            | ({"engine": self.engine.state_dict()} if self.engine is not None else {})

    def save(self, path: str) -> None:
        """Write a checkpoint atomically; refuses (FloatingPointError) if any weight is NaN or inf."""
        for name, p in self.policy.named_parameters():
            if not bool(torch.isfinite(p).all()):
                raise FloatingPointError(f"refusing to save a checkpoint at step {self.step_count}: "
                                         f"parameter {name} is not finite")
        tmp = f"{path}.tmp"
        torch.save(self.state_dict(), tmp)
        os.replace(tmp, path)

    @classmethod
    def load(cls, path: str, device: str | None = None) -> "GRPOTrainer":
        """Rebuild a trainer from ``save`` on ``device`` (default: the saved config's), any device.

        Restored: weights, the frozen reference, AdamW's moments and step counts, the learning-rate
        schedule's position, the sampling generator and the rounds of prompts drawn (the prompts of a round
        follow from seed and round, :func:`prompt_indices`), the global torch
        generators (CPU, and CUDA on a CUDA device), the step count and every logged metric. On the
        device type it was saved from, continuing it therefore reproduces the uninterrupted run
        bitwise: on a CPU always (at the config's fixed thread count), on CUDA when torch runs its
        deterministic kernels (``torch.use_deterministic_algorithms(True)`` with
        ``CUBLAS_WORKSPACE_CONFIG=:4096:8``), since by default some CUDA kernels, such as the
        ``index_add`` behind the gradient of ``repeat_interleave``, add in a varying order and two
        uninterrupted CUDA runs can already differ in their last bits. CPU and CUDA random
        generators are different algorithms, so a run moved between them cannot continue the same
        sampling stream: its sampler is then reseeded from (seed, step) and the continuation is a
        valid run, not the same one.
        """
        state = torch.load(path, map_location="cpu", weights_only=True)
        config = GRPOConfig(**{**state["config"], **({"device": device} if device else {})})
        policy = GPT(GPTConfig(**state["model_config"]))
        policy.load_state_dict(state["policy"])
        strategies = {name: _restored_strategy(saved) for name, saved in state["strategies"].items()}
        trainer = cls(policy, AdditionTask(**state["task"]), config, **strategies)
        trainer.reference.load_state_dict(state["reference"])
        trainer.optimizer.load_state_dict(state["optimizer"])
        trainer.scheduler.load_state_dict(state["scheduler"])
        if state.get("sample_generator_device", "cpu") == trainer.device.type:
            trainer.sample_generator.set_state(state["sample_generator"])
        else:
            trainer.sample_generator.manual_seed(config.seed + 1 + 1_000_003 * state["step_count"])
        if "torch_rng_state" in state:       # checkpoints written before these were saved lack them
            torch.set_rng_state(state["torch_rng_state"])
            cuda_states = state["cuda_rng_states"]
            if trainer.device.type == "cuda" and len(cuda_states) == torch.cuda.device_count():
                torch.cuda.set_rng_state_all(cuda_states)
        trainer.step_count, trainer.train_seconds = state["step_count"], state["train_seconds"]
        trainer.gen_batches = state["gen_batches"]
        trainer.metrics, trainer.evals = metric_log(state["metrics"]), state["evals"]
        trainer.clip_fraction_per_inner_step = state["clip_fraction_per_inner_step"]
        if trainer.engine is not None:
            trainer.engine.load_state_dict(state["engine"])
        return trainer


def first_groups(batches: list[Batch], prompts_per_step: int, G: int) -> Batch:
    """One step's rounds of dynamic sampling as one :class:`Batch` (chapter 18): every answer sampled, and in
    the loss the first ``prompts_per_step`` informative groups in the order drawn (verl's ``batch[:traj_bsz]``)."""
    def rows(tensors):           # the kept rows of every round, then the ones that stay
        parts = [t for t in tensors if t is not None]     # a round with no kept row has none
        return torch.cat(parts)[stays] if parts else None

    informative = torch.cat([b.informative for b in batches])
    kept_groups = informative.view(-1, G)[:, 0]
    trained = (kept_groups & (kept_groups.cumsum(0) <= prompts_per_step)).repeat_interleave(G)
    stays = trained[informative]
    rollout = Rollout(*(torch.cat([getattr(b.rollout, name) for b in batches]) for name in ("tokens", "logp", "mask")),
                      batches[0].rollout.prompt_len)
    return Batch(rollout, torch.cat([b.rewards for b in batches]), informative, trained,
                 rows([b.advantages for b in batches]), rows([b.ref_logp for b in batches]),
                 rows([b.trainer_logp for b in batches]), rows([b.importance_weights for b in batches]), len(batches))


def _strategy_state(strategy) -> list:
    """A strategy as a checkpoint holds it: its class's module and name, and its fields."""
    return [type(strategy).__module__, type(strategy).__qualname__, asdict(strategy)]


def _restored_strategy(saved: list):
    """The strategy :func:`_strategy_state` saved."""
    module, name, fields = saved
    return getattr(importlib.import_module(module), name)(**fields)


# ---- "a single run proves nothing" ------------------------------------------------------------
def runs_bar(runs: int, progress: bool = True):
    """One progress bar over a study's ``runs`` training runs, advanced as each run ends (every run's own
    bar is off): the studies of chapters 15 and 18-20 train many short runs in one cell."""
    from tqdm.auto import tqdm

    return tqdm(total=runs, desc="runs", unit="run", disable=not progress, leave=True)


@checked(seeds=seed_list(2, " (a spread needs two runs)"))
def compare_over_seeds(policy: GPT, task: AdditionTask, base: GRPOConfig, settings: dict[str, dict],
                       seeds, *, progress: bool = True) -> dict[str, np.ndarray]:
    """Final held-out greedy accuracy of each setting over ``seeds`` (chapter 15).

    ``settings`` maps a name to overrides of ``base`` (e.g. ``{"std": {}, "no std": {"scale_rewards":
    False}}``), and under ``"kl"``, ``"ratio"``, ``"sampler"`` or ``"entropy"`` to the trainer's strategies of later
    chapters (e.g. ``{"sampler": RolloutEngineSampler(staleness=4)}``); every run starts from ``policy``
    and differs from the others only in its overrides and seed. Returns ``{name: array of final
    accuracies, one per seed}``. ``progress`` shows one bar over the runs.
    """
    results = {name: [] for name in settings}
    with runs_bar(len(settings) * len(seeds), progress) as bar:
        for name, overrides in settings.items():
            strategies = {key: overrides[key] for key in STRATEGIES if key in overrides}
            fields = {key: value for key, value in overrides.items() if key not in strategies}
            for seed in seeds:
                run = GRPOTrainer(policy, task, GRPOConfig(**{**asdict(base), **fields, "seed": seed}), **strategies)
                results[name].append(run.train(progress=False).evals["accuracy"][-1])
                bar.update()
    return {name: np.array(finals) for name, finals in results.items()}
