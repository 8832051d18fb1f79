"""Reading a run (chapter 19): a healthy GRPO run and two broken ones, read from what the trainer logs.

The trainer logs most of what TRL 1.16 logs, under TRL's names where TRL has the quantity
(:data:`rl4llm.llm.trainer.METRICS`; chapter 19 compares the two lists). Three runs
of the tiny transformer from the warm start show what those numbers look like when training works
and when it does not:

- ``"healthy"``: :data:`READING_CONFIG`, a small learning rate with a KL leash (beta = 0.04);
- ``"learning rate too high"``: the same with ``lr = 1e-2``;
- ``"every group flat"``: the same run with TRL's default beta = 0, scored by :class:`TaggedAnswerTask`,
  a verifier that wants the answer inside ``<answer>`` tags, which this model's vocabulary cannot
  write: every reward is 0, every group is flat, ``frac_reward_zero_std`` is 1, and the loss and its
  gradient are exactly 0, so the weights never move: the signature of the log in TRL issue #3857 (loss 0.0,
  grad_norm 0.0, reward_std 0.0, frac_reward_zero_std 1.0), where each group's rewards were equal within the
  group (mean reward 3.0), though not all 0.

:func:`first_step` is the other question users ask (TRL issues #2703 and #3452): why the loss is about 0 at
the first step while the policy moves. With one inner step the ratio is exactly 1 and the advantages of a
group sum to 0, so the policy term's value is -sum_i A_i / G = 0 (for one-token answers, and for any
lengths under ``"grpo"``), while its gradient, -(1/G) sum_i A_i grad log pi(y_i), is not.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import torch

from .._checks import checked, logits_vector, reward_vector, seed_list
from ..math.credit import group_advantages
from .grpo import grpo_loss
from .model import GPT
from .tasks import AdditionTask
from ..toy.verifier import addition_reward
from ..toy.five_token import LOGITS
from .trainer import GRPOConfig, GRPOTrainer, runs_bar

#: The healthy run of chapter 19: 60 outer steps of 16 prompts x G = 8, one inner step, lr 3e-4 after a
#: 10-step warmup, and TRL's former default beta = 0.04 (so the logged loss is beta times a KL).
READING_CONFIG = GRPOConfig(steps=60, prompts_per_step=16, group_size=8, lr=3e-4, warmup_steps=10, beta=0.04,
                            eval_every=30)
#: The broken learning rate: 33 times the healthy one.
HIGH_LR = 1e-2
#: The three runs: name -> (overrides of READING_CONFIG, whether the task is :class:`TaggedAnswerTask`).
RUNS = {"healthy": ({}, False), "learning rate too high": ({"lr": HIGH_LR}, False),
        "every group flat": ({"beta": 0.0}, True)}


class TaggedAnswerTask(AdditionTask):
    """The addition task scored by a format-gated verifier (chapter 19's flat run): a completion earns
    ``addition_reward`` of what stands between ``<answer>`` and ``</answer>``, and 0 without the tags.
    The tiny GPT's 14 tokens cannot write a tag, so every reward is 0."""

    OPEN, CLOSE = "<answer>", "</answer>"

    def rewards(self, pairs, completion_ids) -> np.ndarray:
        """r_i = addition_reward(prompt_i, inside of the tags), 0 where the tags are missing."""
        super().rewards(pairs, completion_ids)                    # the same checks of the inputs
        texts = self.tokenizer.decode_batch(np.asarray(completion_ids))
        return np.array([addition_reward(p, t[len(self.OPEN):t.index(self.CLOSE)])
                         if t.startswith(self.OPEN) and self.CLOSE in t else 0.0
                         for p, t in zip(self.prompts(pairs), texts)], dtype=np.float64)


@checked(seeds=seed_list())
def train_runs(policy: GPT, task: AdditionTask, seeds, runs: dict = RUNS, base: GRPOConfig = READING_CONFIG, *,
               progress: bool = True) -> dict:
    """Each of ``runs`` from ``policy``, once per seed of ``seeds`` (chapter 19): ``{name: [trainer, ...]}``.

    A run is ``base`` with its overrides and the seed; a run marked for it is scored by a
    :class:`TaggedAnswerTask` on ``task``'s split, the others by ``task``. ``progress`` shows one bar over
    the runs.
    """
    tagged = TaggedAnswerTask(seed=task.seed, n_eval=task.n_eval)
    out = {name: [] for name in runs}
    with runs_bar(len(runs) * len(seeds), progress) as bar:
        for name, (overrides, flat) in runs.items():
            for seed in seeds:
                trainer = GRPOTrainer(policy, tagged if flat else task, replace(base, **overrides, seed=seed))
                out[name].append(trainer.train(progress=False))
                bar.update()
    return out


def _group_of_answers(args):
    """Relation: ``answers`` are at least 2 answer indices of ``logits`` (a 1-D array), ``rewards`` one reward
    per answer."""
    ys, size = np.asarray(args["answers"]), args["logits"].size
    if ys.ndim != 1 or ys.size < 2 or not np.issubdtype(ys.dtype, np.integer) or ys.min() < 0 or ys.max() >= size:
        raise ValueError(f"answers must be a 1-D array of at least 2 answer indices in [0, {size - 1}]")
    args["answers"], args["rewards"] = ys, reward_vector(args["rewards"], ys.size)


@checked(_group_of_answers, logits=logits_vector)
def first_step(answers, rewards, logits=LOGITS, loss_type: str = "grpo") -> tuple[float, np.ndarray]:
    """The GRPO loss at the first inner step on the one-step toy, and its gradient in the logits (ch. 19).

    One group of one-token ``answers`` (indices into the vocabulary) with their ``rewards``, sampled
    from pi = softmax(``logits``); the ratio is pi / sg(pi) = 1 and the advantages are
    ``group_advantages(rewards)``. Returns ``(loss, gradient)``: the loss is -sum_i A_i / G, which is
    0 because the advantages sum to 0, and the gradient is -(1/G) sum_i A_i (onehot(y_i) - pi)
    = -(1/G) sum_i A_i onehot(y_i), which is not.
    """
    z = torch.tensor(logits, requires_grad=True)
    logp = torch.log_softmax(z, dim=0)[torch.from_numpy(answers)][:, None]     # (G, 1)
    advantages = group_advantages(torch.from_numpy(rewards))
    loss, _ = grpo_loss(logp, logp.detach(), advantages, torch.ones_like(logp), loss_type=loss_type,
                        max_completion_length=1)
    loss.backward()
    return float(loss.detach()), z.grad.numpy().copy()
