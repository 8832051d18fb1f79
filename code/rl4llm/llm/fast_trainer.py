"""Chapter 15's trainer at its fastest on a CPU (the speed record of issue 36): the same GRPO step, with two
changes that only speed needs. The update is the plain trainer's, to float rounding.

**The backward pass skips the flat groups.** A flat group (its G rewards all equal) has advantage 0 on every
row. Every loss type's per-token term is then 0 whatever the ratio (``-min(rho A, clip(rho) A)``, CISPO's and
VESPO's ``-sg(w) A log pi``, SAPO's gate times A), so with no KL in the loss (beta = 0, or the KL in the
reward) and no entropy knob those rows add exactly 0 to the gradient. Chapter 15's trainer at K = 1
differentiates the sampling pass itself, whose graph holds every row. This one samples without a graph
(caches written in place), then runs one forward and backward pass over the informative groups only
(:func:`rl4llm.llm.model.completion_logprobs`). The flat rows still enter the loss, with their sampled
log-probs, detached: the loss, its normalisers (``dapo``'s token count, ``grpo``'s answer count) and every
logged metric are the plain step's. The fewer informative groups, the more it saves: late in a run, when most
groups are all right, a step costs about the sampling alone.

**Identical prefixes are computed once** (``share_prefixes``, on by default). The sampler runs the model once per
distinct (prompt, tokens so far) and each row draws from its prefix's distribution, with the plain sampler's
generator and order, so the draws are the same, to float rounding of the logits
(:mod:`rl4llm.llm.prefix_sharing`); the loss's pass runs each informative prompt's prefix tree as one sequence,
the prompt then its answers' distinct prefixes, each position masked to see only its own path, and reads the
log-probs back for every answer, so autograd adds up the gradient of the answers that share a position
(:mod:`rl4llm.llm.prefix_tree`). Most answers of a group share their first digits: at the benchmark's speed
recipe, from the warm start (60 steps), the three decoding passes run 65, 143 and 96 rows on average instead of
256 each, and the loss's pass 160 answer positions instead of 413 (138 informative answers, three positions each),
beside the same 103 prompt positions
(``benchmarks/prefix_sharing_counts.py`` counts them; ``benchmarks/step_options.py`` times the change).

Chapter 15 shows and runs the plain loop; ``benchmarks/step_options.py`` measures this change against it, and
``benchmarks/grpo_vs_trl.py`` and ``benchmarks/budget_recipe.py`` race this trainer.
"""
from __future__ import annotations

import torch

from .._checks import checked, flag
from .entropy import EntropyControl
from .kl_placement import KLInLoss
from .model import completion_logprobs
from .prefix_tree import tree_completion_logprobs
from .ratios import ImportanceRatio
from .samplers import PolicySampler
from .trainer import Batch, GRPOConfig, GRPOTrainer


def flat_rows_get_no_gradient(args):
    """Relation: in this run a flat group's rows add nothing to the gradient, and one pass serves the loss. So
    ``config.inner_steps`` is 1 (at K > 1 a flat row's ratio moves, which the logged mean ratio counts), no KL
    in the loss (``config.beta`` 0, or ``kl=KLInReward()``), the policy samples (``PolicySampler()``: a rollout
    engine's batch is rescored by the trainer anyway) and ``entropy`` has no bonus and no per-token method
    (they reach flat rows' tokens)."""
    cfg = args["config"] if args["config"] is not None else GRPOConfig()
    entropy = args["entropy"]
    refusals = {"config.inner_steps": (cfg.inner_steps != 1, "1", cfg.inner_steps),
                "config.beta": (cfg.beta > 0 and isinstance(args["kl"], KLInLoss), "0 with the KL in the loss",
                                cfg.beta),
                "sampler": (not isinstance(args["sampler"], PolicySampler), "PolicySampler()", args["sampler"]),
                "entropy": (entropy.bonus or entropy.per_token, "EntropyControl() without a bonus or a per-token "
                            "method", entropy)}
    for name, (refused, needs, got) in refusals.items():
        if refused:
            raise ValueError(f"{name} must be {needs} for FastGRPOTrainer (a flat group's rows must get no gradient), "
                             f"got {got!r}")


class FastGRPOTrainer(GRPOTrainer):
    """:class:`~rl4llm.llm.trainer.GRPOTrainer` with its loss pass over the informative groups only, and (with
    ``share_prefixes``, the default) identical prefixes computed once (this module's two changes). It takes the same
    arguments and refuses, with ValueError, a run in which a flat group's rows have a gradient or the loss needs a
    second pass anyway (:func:`flat_rows_get_no_gradient`)."""

    @checked(flat_rows_get_no_gradient, share_prefixes=flag)
    def __init__(self, policy, task, config: GRPOConfig | None = None, *, kl=KLInLoss(), ratio=ImportanceRatio(),
                 sampler=PolicySampler(), entropy=EntropyControl(), share_prefixes: bool = True):
        super().__init__(policy, task, config, kl=kl, ratio=ratio, sampler=sampler, entropy=entropy)
        self.shares_prefixes = share_prefixes

    def state_dict(self) -> dict:
        return super().state_dict() | {"share_prefixes": self.shares_prefixes}

    @classmethod
    def load(cls, path: str, device: str | None = None) -> "FastGRPOTrainer":
        """:meth:`GRPOTrainer.load`, on the path the run was saved with (``share_prefixes``), so that continuing
        it reproduces the uninterrupted run."""
        trainer = super().load(path, device)
        trainer.shares_prefixes = torch.load(path, map_location="cpu", weights_only=True)["share_prefixes"]
        return trainer

    @property
    def reuses_sampling_pass(self) -> bool:
        """Never: the sampler runs without a graph and :meth:`rollout` runs the loss's pass."""
        return False

    def rollout(self, refill: int = 0) -> Batch:
        """The plain rollout, then the loss's forward pass over the informative groups: ``rollout.loss_logp``
        holds their log-probs with the graph and every other row's sampled log-probs, detached; the plain
        step's :meth:`inner_step` takes it as it takes the sampling pass's. A step with no informative group
        still takes AdamW's step on a zero gradient, as the plain trainer does: one flat group then makes
        the pass."""
        batch = super().rollout(refill)
        if self.config.drop_zero_variance:          # the plain trainer's own second pass over the kept rows
            return batch
        r, G = batch.rollout, self.config.group_size
        rows = batch.informative.nonzero()[:, 0]
        if not len(rows):
            rows = torch.arange(G, device=r.tokens.device)
        if self.shares_prefixes:                  # rows holds whole groups: each prompt once, then the tree
            logp = tree_completion_logprobs(self.policy, r.tokens[rows[::G], :r.prompt_len],
                                            torch.arange(len(rows), device=rows.device) // G, r.completions[rows],
                                            r.mask[rows], self.config.temperature)
        else:
            logp, _ = completion_logprobs(self.policy, r.tokens[rows], r.prompt_len, self.config.temperature, G)
        r.loss_logp = r.logp.index_put((rows,), logp)
        return batch
