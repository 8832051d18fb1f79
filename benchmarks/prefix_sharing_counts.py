"""How much identical prefixes save at the speed recipe: the rows each pass runs, counted, not timed.

    python benchmarks/prefix_sharing_counts.py [--steps 60]

The fast trainer (:class:`rl4llm.llm.fast_trainer.FastGRPOTrainer`) at ``grpo_vs_trl.py``'s speed recipe (32
prompts x G = 8, dapo), from the warm start, as the speed pairs run it. Over ``--steps`` steps it counts, per step,
the rows each decoding pass of the sampler runs (the plain sampler runs all 256 rows at every pass; sharing
prefixes, one row per distinct (prompt, tokens so far) among the rows still sampling) and the positions of the
loss's pass (the informative answers' own positions, a prompt per group and every answer's tokens but its last,
against the prefix tree's, and the filler that lays the trees out one per row: :mod:`rl4llm.llm.prefix_tree`). The
counts do not depend on the machine. The LAST line printed is the summary as one JSON object.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
import grpo_vs_trl as bench  # noqa: E402
from rl4llm.llm import prefix_tree as tree_module  # noqa: E402
from rl4llm.llm.fast_trainer import FastGRPOTrainer  # noqa: E402
from rl4llm.llm.tasks import AdditionTask  # noqa: E402
from rl4llm.llm.trainer import torch_threads  # noqa: E402
from rl4llm.llm.warmstart import warm_start  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=60)
    args = parser.parse_args()
    trainer = FastGRPOTrainer(warm_start().model, AdditionTask(seed=0), bench.recipe(**bench.SPEED_RECIPE, seed=0))
    decoding, trees = [], []
    hook = trainer.policy.register_forward_hook(
        lambda module, inputs, output: decoding[-1].append(inputs[0].shape[0]) if inputs[0].shape[1] == 1 and
        len(inputs) > 1 and inputs[1] is not None else None)
    original = tree_module.prefix_tree

    def counted(prompts, prompt_of, completions, mask, vocab_size):
        tree = original(prompts, prompt_of, completions, mask, vocab_size)
        answers, P = len(completions), prompts.shape[1]
        trees.append({"answers": answers, "answer_positions": answers * (completions.shape[1] - 1),
                      "tree_answer_positions": int((tree.positions >= P).sum()), "prompt_positions": prompts.numel(),
                      "tree_filler_positions": int((tree.positions[:, P:] == 0).sum())})
        return tree
    tree_module.prefix_tree = counted
    try:
        with torch_threads(1):
            for _ in range(args.steps):
                decoding.append([])
                trainer.step()
    finally:
        hook.remove()
        tree_module.prefix_tree = original
    passes = max(len(d) for d in decoding)
    summary = {"steps": args.steps, "rows_per_step": 256,
               "decoding_rows_mean": [statistics.mean(d[i] if i < len(d) else 0 for d in decoding) for i in range(passes)],
               **{key: statistics.mean(t[key] for t in trees) for key in trees[0]}}
    print(f"decoding passes, rows (plain sampler: 256 each): {[round(x, 1) for x in summary['decoding_rows_mean']]}")
    print(f"loss pass, answer positions: {summary['tree_answer_positions']:.1f} in the prefix tree against "
          f"{summary['answer_positions']:.1f} in a pass per answer ({summary['answers']:.1f} informative answers; "
          f"{summary['prompt_positions']:.1f} prompt positions either way); the trees laid out one per row add "
          f"{summary['tree_filler_positions']:.1f} filler positions (each row as long as the largest tree)")
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
