"""The book's GRPO knobs as TRL 1.16 ``GRPOConfig`` fields (chapter 16).

:func:`trl_config_kwargs` maps an :class:`rl4llm.llm.trainer.GRPOConfig` and the strategies of chapters
17-20 (``kl``, ``ratio``, ``sampler``: :mod:`rl4llm.llm.kl_placement`, :mod:`rl4llm.llm.ratios`,
:mod:`rl4llm.llm.samplers`) to keyword arguments of ``trl.GRPOConfig``; :func:`knob_table` lays the
mapping out beside TRL's own defaults;
:func:`old_logps_recomputed` states when TRL's ``GRPOTrainer`` computes the old log-probs, so that its ratio can
leave 1 (chapters 17 and 21); :func:`adam_step_with_trl_advantages` measures what TRL's smaller advantages do to
the book's AdamW steps (next to nothing: Adam divides a constant gradient scale out). ``trl`` is imported inside the
functions that need it, so ``import rl4llm`` does not import it.

Differences by design, which the mapping cannot remove (chapter 16 shows each):

- advantages: TRL divides by the group's sample std (``ddof=1``) plus ``1e-4``; the book by the
  population std (``ddof=0``) plus ``1e-8``. ``group_advantages(r, ddof=1, eps=1e-4)`` is TRL's.
- the book's warmup multiplies the learning rate by ``(u + 1) / W`` at update ``u``, TRL's by
  ``u / W``; with ``anneal_lr`` the book multiplies warmup and decay, TRL decays from the end of the
  warmup. The schedules agree after the warmup when ``anneal_lr`` is off.
- ``drop_zero_variance`` (DAPO's dynamic sampling, reduced to dropping flat groups) and ``refill_batches``
  (its refill, chapter 18) have no TRL field: TRL 1.16 keeps every group in the loss batch (a flat group's
  advantages are 0) and only logs their share, ``frac_reward_zero_std``.
"""
from __future__ import annotations

import math
import tempfile
from dataclasses import replace

import torch

from .._checks import at_least, checked, flag, instance_of, integer_at_least, optional, positive_real
from ..llm.entropy import EntropyControl
from ..llm.kl_placement import KLInLoss, KLInReward
from ..llm.objectives import EPS_MAX, SOFT_KNOBS
from ..math.credit import group_advantages
from .adapters import quiet
from ..llm.model import GPT
from ..llm.ratios import ImportanceRatio
from ..llm.samplers import PolicySampler, RolloutEngineSampler, Sampler
from ..llm.tasks import AdditionTask
from ..llm.trainer import STRATEGY_RULES, GRPOConfig, GRPOTrainer, chapter15_config, strategies_agree

#: Book knob -> (TRL ``GRPOConfig`` field, or None when TRL has none; the chapter that explains it). A knob is
#: a field of :class:`~rl4llm.llm.trainer.GRPOConfig` or ``Strategy.field`` of a later chapter's strategy
#: (``KLInReward``: that strategy itself).
KNOBS = {
    "group_size": ("num_generations", 13),
    "prompts_per_step": ("per_device_train_batch_size", 15),
    "inner_steps": ("num_iterations", 13),
    "eps_low": ("epsilon", 11),
    "eps_high": ("epsilon_high", 14),
    "beta": ("beta", 14),
    "loss_type": ("loss_type", 14),
    **{name: (name, 17) for name in SOFT_KNOBS},
    "ImportanceRatio.level": ("importance_sampling_level", 18),
    "ImportanceRatio.delta": ("delta", 16),
    "KLInLoss.use_bias_correction_kl": ("use_bias_correction_kl", 17),
    "EntropyControl.coef": ("entropy_coef", 18),
    "EntropyControl.adaptive": ("use_adaptive_entropy", 18),
    "EntropyControl.target": ("entropy_target", 18),
    "EntropyControl.delta": ("entropy_coef_delta", 18),
    "EntropyControl.coef_min": ("entropy_coef_min", 18),
    "EntropyControl.coef_max": ("entropy_coef_max", 18),
    "EntropyControl.top_quantile": ("top_entropy_quantile", 18),
    "EntropyControl.cov": (None, 18),
    "EntropyControl.cov_ratio": (None, 18),
    "EntropyControl.clip_cov_lb": (None, 18),
    "EntropyControl.clip_cov_ub": (None, 18),
    "EntropyControl.kl_coef": (None, 18),
    "EntropyControl.seed": (None, 18),
    "KLInLoss.estimator": (None, 17),
    "KLInReward": (None, 17),
    "RolloutEngineSampler.precision": (None, 20),
    "RolloutEngineSampler.staleness": (None, 20),
    "RolloutEngineSampler.correction": ("vllm_importance_sampling_correction", 20),
    "RolloutEngineSampler.mode": ("vllm_importance_sampling_mode", 20),
    "RolloutEngineSampler.clip_max": ("vllm_importance_sampling_clip_max", 20),
    "RolloutEngineSampler.clip_min": ("vllm_importance_sampling_clip_min", 20),
    "Sampler.off_policy_mask_threshold": ("off_policy_mask_threshold", 20),
    "scale_rewards": ("scale_rewards", 14),
    "temperature": ("temperature", 2),
    "max_new_tokens": ("max_completion_length", 15),
    "lr": ("learning_rate", 15),
    "warmup_steps": ("warmup_steps", 15),
    "anneal_lr": ("lr_scheduler_type", 15),
    "weight_decay": ("weight_decay", 15),
    "grad_clip": ("max_grad_norm", 15),
    "steps": ("max_steps", 15),
    "seed": ("seed", 15),
    "device": ("use_cpu", 15),
    "drop_zero_variance": (None, 15),
    "refill_batches": (None, 18),
    "eval_every": (None, 15),
    "log_kl": (None, 15),
    "num_threads": (None, 15),
}

#: TRL fields the book has no knob for, set to what the book's trainer does (chapter 16 says why).
FIXED = {
    "bf16": False,                       # TRL resolves None to True: bf16 autocast, even on CPU
    "activation_checkpointing": False,   # TRL default True (as gradient_checkpointing, renamed in transformers 5)
    "gradient_accumulation_steps": 1,    # the book takes one gradient step on the whole batch
    "steps_per_generation": 1,
    "optim": "adamw_torch",              # torch's AdamW in its foreach (unfused) kernels; TRL's default is
                                         # adamw_torch_fused, the fused kernel the book's trainer runs (fused=True):
                                         # the same update, rounded differently
}


@checked(eps_max=positive_real)
def cispo_trl_kwargs(eps_max: float = EPS_MAX) -> dict:
    """The ``trl.GRPOConfig`` fields of CISPO with the cap ``eps_max`` (chapter 18; ``rl4llm.llm.objectives``):
    ``loss_type="cispo"`` and ``epsilon_high=eps_max``, the cap itself, since TRL 1.16 computes the
    weight as ``clamp(coef_1, max=epsilon_high)`` (a clip-higher width such as DAPO's 0.28 would cap
    every weight at 0.28). TRL's ``epsilon`` (the lower width) plays no part in CISPO's loss."""
    return {"loss_type": "cispo", "epsilon_high": eps_max}


@checked(gradient_accumulation_steps=at_least(1), steps_per_generation=optional(at_least(1)),
         num_iterations=at_least(1), vllm_correction=flag)
def old_logps_recomputed(gradient_accumulation_steps: int, steps_per_generation: int | None = None,
                         num_iterations: int = 1, vllm_correction: bool = False) -> bool:
    """Whether TRL 1.16's ``GRPOTrainer`` computes the old policy's log-probs for a generated batch (chapters 17
    and 21): only then can the ratio leave 1 and the clip act.

    The rule, with ``K = num_iterations`` and ``S = steps_per_generation``::

        recomputed = gradient_accumulation_steps % (S * K) != 0  or  vllm_correction

    read from ``GRPOTrainer._generate_and_score_completions``: ``generate_every = self.args.steps_per_generation *
    self.num_iterations``, then the old log-probs are computed ``if self.args.gradient_accumulation_steps %
    generate_every != 0 or (self.use_vllm and self.vllm_importance_sampling_correction)``. Otherwise they are None
    and ``_compute_loss`` takes the current log-probs, detached, as the ratio's denominator: the ratio is exactly 1.
    A generated batch feeds ``S * K`` micro-batches and an optimizer step comes every ``gradient_accumulation_steps``
    of them; when ``gradient_accumulation_steps`` is not a multiple of ``S * K``, an optimizer step falls inside some
    batch's turn, and the micro-batches after it are trained on by a policy ahead of the one that sampled.
    ``vllm_correction`` is ``use_vllm and vllm_importance_sampling_correction`` (the correction's weight needs the
    old log-probs; where the first condition fails they come from the same weights, and the ratio is 1 up to
    rounding, and dropout if the model has any). ``steps_per_generation=None`` is TRL's default, which
    ``GRPOConfig.__post_init__`` sets to ``gradient_accumulation_steps`` (when ``generation_batch_size`` is unset
    too). Chapter 17 explains the rule (section 5's deep dive: when the policy is
    ahead in TRL); chapter 21 uses it (the table of when the ratio leaves 1, and its exercise ex-ch21-ahead).
    """
    S = gradient_accumulation_steps if steps_per_generation is None else steps_per_generation
    return gradient_accumulation_steps % (S * num_iterations) != 0 or vllm_correction


def trl_can_run(args):
    """Relation: ``num_processes`` divides a step's completions, and TRL runs the settings, unless
    ``allow_unsupported`` (see :func:`trl_config_kwargs`)."""
    config, kl, sampler, num_processes = args["config"], args["kl"], args["sampler"], args["num_processes"]
    entropy = args["entropy"]
    if (config.prompts_per_step * config.group_size) % num_processes:
        raise ValueError(f"num_processes must divide prompts_per_step x group_size = "
                         f"{config.prompts_per_step * config.group_size}, got {num_processes}")
    if args["allow_unsupported"]:
        return
    if config.refill_batches:
        raise ValueError(f"refill_batches={config.refill_batches} (DAPO's dynamic sampling: drop flat groups and "
                         f"refill the batch) has no TRL 1.16 GRPOConfig field (verl: algorithm.filter_groups); pass "
                         f"allow_unsupported=True to map the rest, one round a step with flat groups kept")
    if config.drop_zero_variance:
        raise ValueError("drop_zero_variance=True (DAPO's dynamic sampling) has no TRL GRPOConfig field; pass "
                         "allow_unsupported=True to map the rest and keep flat groups in the batch")
    if isinstance(sampler, RolloutEngineSampler):
        raise ValueError(f"sampler={sampler!r} (chapter 20's rollout engine: precision, staleness) has no TRL "
                         f"GRPOConfig field; pass allow_unsupported=True to map the rest, sampled by the policy itself")
    if config.beta > 0 and not (isinstance(kl, KLInLoss) and kl.estimator == "k3"):
        raise ValueError(f"kl={kl!r}: TRL 1.16 has k3 in the loss only; pass allow_unsupported=True to map the "
                         f"rest with TRL's k3")
    if entropy.cov is not None:
        raise ValueError(f"entropy: cov={entropy.cov!r} (Clip-Cov or KL-Cov, chapter 18) has no TRL 1.16 GRPOConfig "
                         f"field (verl has them); pass allow_unsupported=True to map the rest without it")


@checked(strategies_agree, trl_can_run, **STRATEGY_RULES, config=instance_of(GRPOConfig),
         entropy=instance_of(EntropyControl), num_processes=at_least(1))
def trl_config_kwargs(config: GRPOConfig, *, kl: KLInLoss | KLInReward = KLInLoss(),
                      ratio: ImportanceRatio = ImportanceRatio(), sampler: Sampler = PolicySampler(),
                      entropy: EntropyControl = EntropyControl(), allow_unsupported: bool = False,
                      num_processes: int = 1) -> dict:
    """Keyword arguments for ``trl.GRPOConfig`` that run the book's GRPO step (chapter 16).

    TRL counts completions where the book counts prompts, and optimizer steps where the book counts
    outer steps, so per_device_train_batch_size = prompts_per_step x G / num_processes,
    max_steps = steps x K and warmup_steps = warmup_steps x K (the book's scheduler steps once per
    outer step). With ``num_processes`` data-parallel processes (``accelerate launch`` or
    ``torchrun``) each process holds its share of the completions, so the step still sees
    prompts_per_step x G of them; that product must divide evenly by ``num_processes``. The std of
    ``scale_rewards=True`` becomes ``"group"``, ``False`` becomes ``"none"``; ``eps_high=None``
    becomes TRL's ``epsilon_high`` explicitly, as the loss type's objective fills it (``eps_low`` for the
    clip, the cap 5 for CISPO, where TRL's own default of ``epsilon`` would cap every weight at 0.2); SAPO's
    and VESPO's knobs go to TRL's fields of the same names; :data:`FIXED` is added. ``device="cpu"`` sets
    ``use_cpu=True``. The strategies' fields go to TRL's fields of :data:`KNOBS`: ``ratio``'s level and
    delta, ``kl``'s ``use_bias_correction_kl``, ``sampler``'s ``off_policy_mask_threshold`` and a
    :class:`~rl4llm.llm.samplers.RolloutEngineSampler`'s correction as TRL's ``vllm_importance_sampling_*``,
    ``entropy``'s knobs as TRL's ``entropy_coef``, ``use_adaptive_entropy`` (with its target, step and bounds)
    and ``top_entropy_quantile``
    (TRL applies these only with ``use_vllm``, as the book only with a rollout engine; with the policy
    sampling they are the engine's defaults, TRL's own); ``eval_every``,
    ``log_kl`` and ``num_threads`` are the book trainer's own bookkeeping and have no TRL counterpart.

    Settings TRL cannot run raise ValueError unless ``allow_unsupported=True``:
    ``drop_zero_variance=True``, since TRL cannot leave flat groups out of the loss batch (mapped, the
    knob is dropped and flat groups stay in the batch with zero advantages: they still count in the
    token normalisers and the KL term), and ``refill_batches`` > 0, since TRL draws one batch a step (mapped,
    likewise); a rollout engine (``sampler=RolloutEngineSampler(...)``;
    mapped, TRL samples with the policy itself); and, with ``beta > 0``, a KL other than TRL's k3 in the
    loss (``KLInLoss(estimator=...)`` other than ``"k3"`` or ``KLInReward()``; mapped, TRL puts k3 in the loss);
    and Clip-Cov or KL-Cov (``EntropyControl(cov=...)``; mapped, the rest of the entropy knobs without it).
    """
    engine = isinstance(sampler, RolloutEngineSampler)
    correction = sampler if engine else RolloutEngineSampler()
    K = config.inner_steps
    kwargs = {
        "num_generations": config.group_size,
        "per_device_train_batch_size": config.prompts_per_step * config.group_size // num_processes,
        "num_iterations": K,
        "epsilon": config.eps_low,
        "epsilon_high": config.clip()[1],
        "beta": config.beta,
        "loss_type": config.loss_type,
        **{name: getattr(config, name) for name in SOFT_KNOBS},
        "importance_sampling_level": ratio.level,
        "delta": ratio.delta,
        "use_bias_correction_kl": isinstance(kl, KLInLoss) and kl.use_bias_correction_kl,
        **{f"vllm_importance_sampling_{name}": getattr(correction, name)
           for name in ("correction", "mode", "clip_max", "clip_min")},
        "off_policy_mask_threshold": sampler.off_policy_mask_threshold,
        **{field: getattr(entropy, knob.partition(".")[2]) for knob, (field, _) in KNOBS.items()
           if knob.startswith("EntropyControl.") and field},
        "scale_rewards": "group" if config.scale_rewards else "none",
        "temperature": config.temperature,
        "max_completion_length": config.max_new_tokens,
        "learning_rate": config.lr,
        "warmup_steps": config.warmup_steps * K,
        "lr_scheduler_type": "linear" if config.anneal_lr else "constant_with_warmup",
        "weight_decay": config.weight_decay,
        "max_grad_norm": config.grad_clip,
        "max_steps": config.steps * K,
        "seed": config.seed,
        **FIXED,
    }
    if config.device == "cpu":
        kwargs["use_cpu"] = True
    return kwargs


def trl_defaults(fields) -> dict:
    """TRL 1.16's value of each of ``fields`` in a ``trl.GRPOConfig`` built with no arguments.

    Read after TRL's own ``__post_init__`` (so ``bf16`` shows what ``None`` becomes). ``use_cpu=True``
    is the only argument passed, because a CPU-only machine refuses bf16 without it; ``use_cpu``
    itself is reported as its declared default.
    """
    from dataclasses import fields as dataclass_fields

    from trl import GRPOConfig as TRLConfig

    with quiet(), tempfile.TemporaryDirectory() as tmp:
        defaults = TRLConfig(output_dir=tmp, use_cpu=True)
    out = {}
    for name in fields:
        if not hasattr(defaults, name):
            raise ValueError(f"fields must name trl.GRPOConfig fields; {name!r} is not one")
        value = getattr(defaults, name) if name != "use_cpu" else \
            next(f.default for f in dataclass_fields(TRLConfig) if f.name == "use_cpu")
        out[name] = getattr(value, "value", value)    # enums (optim, lr_scheduler_type) as their strings
    return out


def knob_table(config: GRPOConfig | None = None, *, kl: KLInLoss | KLInReward = KLInLoss(),
               ratio: ImportanceRatio = ImportanceRatio(), sampler: Sampler = PolicySampler(),
               entropy: EntropyControl = EntropyControl()) -> list[dict]:
    """One row per book knob and per :data:`FIXED` field: the mapping next to TRL's default (chapter 16).

    Each row: ``knob`` (the book's name, "" for a fixed field), ``book`` (its value in ``config`` or in
    the strategy of that class among ``kl``, ``ratio``, ``sampler``, ``entropy``; None for a strategy not in use;
    for ``KLInReward``, whether it is in use),
    ``trl_field``, ``trl_value`` (what :func:`trl_config_kwargs` sets; None when it leaves the field
    at TRL's default), ``trl_default`` and ``chapter`` (None for fixed fields). A knob with no TRL
    field has ``None`` in the TRL columns.
    ``drop_zero_variance`` is mapped with ``allow_unsupported=True`` so the table always builds.
    The default ``config`` is chapter 15's run, :func:`rl4llm.llm.trainer.chapter15_config`.
    """
    config = chapter15_config() if config is None else config
    kwargs = trl_config_kwargs(config, kl=kl, ratio=ratio, sampler=sampler, entropy=entropy, allow_unsupported=True)
    fields = [field for field, _ in KNOBS.values() if field] + list(FIXED)
    defaults = trl_defaults(fields)
    rows = [{"knob": knob, "book": _book_value(knob, config, (kl, ratio, sampler, entropy)), "trl_field": field,
             "trl_value": kwargs.get(field) if field else None,
             "trl_default": defaults[field] if field else None, "chapter": chapter}
            for knob, (field, chapter) in KNOBS.items()]
    rows += [{"knob": "", "book": None, "trl_field": field, "trl_value": value, "trl_default": defaults[field],
              "chapter": None} for field, value in FIXED.items()]
    return rows


def _book_value(knob: str, config: GRPOConfig, strategies: tuple):
    """The value of a :data:`KNOBS` key in this run: a config field, or ``Strategy.field`` of the strategy of
    that class in use (None when none is; a bare strategy name: whether it is in use)."""
    if not knob[:1].isupper():
        return getattr(config, knob)
    kind, _, field = knob.partition(".")
    in_use = [s for s in strategies if kind in {c.__name__ for c in type(s).__mro__}]
    if not field:
        return bool(in_use)
    return getattr(in_use[0], field) if in_use else None


# ---- TRL's advantages under the book's AdamW ----------------------------------------------------
class TRLAdvantageTrainer(GRPOTrainer):
    """The book's trainer with TRL's advantages, (r - mean) / (sample std + 1e-4); all else the same."""

    def rollout(self):
        batch = super().rollout()
        advantages = group_advantages(batch.rewards, scale=self.config.scale_rewards, ddof=1, eps=1e-4)
        return replace(batch, advantages=advantages.view(-1)[batch.keep])


def adam_step_with_trl_advantages(model: GPT, task: AdditionTask, config: GRPOConfig,
                                  steps: int = 20) -> dict:
    """How far ``steps`` outer steps move the weights with TRL's advantages, against the book's (ch. 16).

    Two runs of the book's trainer from ``model`` with ``config`` (same seed, same prompts, same
    sampling stream): one with the book's advantages, one with TRL's (sample std plus 1e-4, smaller
    by sqrt((G - 1) / G) in every mixed group of 0/1 rewards). Returns ``book`` and ``trl``, the
    Euclidean norm of each run's weight change, their ``ratio`` (TRL / book) and
    ``advantage_ratio``, sqrt((G - 1) / G). AdamW divides each gradient entry by the root of its
    running mean square, so a constant factor on the whole gradient cancels (up to AdamW's eps of
    1e-8 and the gradient clip): with ``beta = 0`` the ratio is close to 1, not to the advantage ratio.
    """
    steps = integer_at_least(steps, "steps", 1)
    moved = {}
    for name, cls in (("book", GRPOTrainer), ("trl", TRLAdvantageTrainer)):
        trainer = cls(model, task, config).train(steps, progress=False)
        start = {k: v.to(trainer.device) for k, v in model.state_dict().items()}
        moved[name] = float(torch.sqrt(sum(((p.detach() - start[k]) ** 2).sum()
                                           for k, p in trainer.policy.named_parameters())))
    G = config.group_size
    return {**moved, "ratio": moved["trl"] / moved["book"], "advantage_ratio": math.sqrt((G - 1) / G)}


# ---- chapter 20: the sampler's knobs beside TRL's two trainers ---------------------------------------
#: Chapter 20's knobs -> (``trl.GRPOConfig`` field, ``trl.experimental.async_grpo.AsyncGRPOConfig`` field),
#: None where that trainer has none. ``GRPOTrainer`` rescores the engine's tokens and weights them;
#: ``AsyncGRPOTrainer`` drops samples over ``max_staleness`` versions old and clips the ratio to the engine's.
SAMPLER_KNOBS = {
    "RolloutEngineSampler.precision": (None, None),
    "RolloutEngineSampler.staleness": (None, "max_staleness"),
    "RolloutEngineSampler.correction": ("vllm_importance_sampling_correction", None),
    "RolloutEngineSampler.mode": ("vllm_importance_sampling_mode", None),
    "RolloutEngineSampler.clip_max": ("vllm_importance_sampling_clip_max", None),
    "RolloutEngineSampler.clip_min": ("vllm_importance_sampling_clip_min", None),
    "Sampler.off_policy_mask_threshold": ("off_policy_mask_threshold", None),
    "eps_low": ("epsilon", "epsilon"),
    "eps_high": ("epsilon_high", "epsilon_high"),
}


@checked(sampler=instance_of(Sampler))
def sampler_knob_table(sampler: Sampler = RolloutEngineSampler()) -> list[dict]:
    """Chapter 20's knobs beside TRL 1.16's ``GRPOTrainer`` and ``AsyncGRPOTrainer`` (:data:`SAMPLER_KNOBS`).

    One row per knob: ``knob``, ``book`` (its value in ``sampler`` or in a default
    :class:`~rl4llm.llm.trainer.GRPOConfig`), ``trl_field`` and ``trl_default`` (``trl.GRPOConfig``'s, by
    :func:`trl_defaults`), ``async_field`` and ``async_default`` (``AsyncGRPOConfig``'s declared default;
    that class is only read, not built, so no vLLM server is needed). None where a trainer has no field.
    """
    from dataclasses import fields as dataclass_fields

    with quiet():                            # TRL warns on every import from trl.experimental
        from trl.experimental.async_grpo import AsyncGRPOConfig

    async_defaults = {f.name: f.default for f in dataclass_fields(AsyncGRPOConfig)}
    defaults = trl_defaults([field for field, _ in SAMPLER_KNOBS.values() if field])
    strategies = (KLInLoss(), ImportanceRatio(), sampler)
    return [{"knob": knob, "book": _book_value(knob, GRPOConfig(), strategies), "trl_field": field,
             "trl_default": defaults[field] if field else None, "async_field": async_field,
             "async_default": async_defaults[async_field] if async_field else None}
            for knob, (field, async_field) in SAMPLER_KNOBS.items()]
