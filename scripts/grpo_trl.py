"""GRPO with TRL's GRPOTrainer on the book's addition task, on one process or several (chapter 16).

One process, on the CPU:

    python scripts/grpo_trl.py --device cpu

Two processes on one CPU, data parallel over gloo (either line; the second needs no accelerate):

    accelerate launch --config_file configs/accelerate/cpu_2proc.yaml scripts/grpo_trl.py --device cpu
    torchrun --nproc_per_node 2 scripts/grpo_trl.py --device cpu

One process per GPU, over NCCL (set --num_processes to the number of GPUs):

    accelerate launch --config_file configs/accelerate/multi_gpu.yaml --num_processes 4 scripts/grpo_trl.py

Which launch gives several CPU processes (tried with accelerate 1.15, TRL 1.16, torch 2.13):
``accelerate launch --cpu --num_processes 2`` and a config with ``distributed_type: MULTI_CPU``
start ONE process: accelerate hands multi-CPU runs to ``mpirun`` and, without an MPI hostfile, to
a plain ``python``. A config with ``distributed_type: MULTI_GPU`` (accelerate's torchrun launcher)
or ``torchrun`` itself start the processes; they join one gloo group only if the script asks for
the CPU (``--device cpu`` here, ``use_cpu=True`` in TRL), and on a machine without GPUs this
script stops when it finds processes that did not join.

The run: the shipped chapter-14 warm start, the book's recipe (``--steps``, ``--prompts-per-step``,
...) translated by ``rl4llm.trl.knobs.trl_config_kwargs`` with the batch divided between the
processes, held-out greedy accuracy every ``--eval-every`` steps (main process). Written to
``--out``: ``metrics.json`` (main process: TRL's log lines, the accuracy curve, the launch) and
``weights_rank<r>.json`` (every process: a SHA-256 of its weights after each update; data
parallelism is right only if they are all the same). ``--check-normalisation`` first computes TRL's
loss and the all-reduced gradient of one fixed batch split between the processes, for each loss
type, into ``normalisation.pt`` (the test suite compares it with ``rl4llm.llm.data_parallel``).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import tempfile
import time
from pathlib import Path

import torch

from rl4llm.math.loss_types import LOSS_TYPES


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--steps", type=int, default=150, help="outer steps (TRL: optimizer steps, K = 1)")
    p.add_argument("--prompts-per-step", type=int, default=32, help="prompts per step, all processes together")
    p.add_argument("--group-size", type=int, default=8, help="G, completions per prompt")
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--warmup-steps", type=int, default=20)
    p.add_argument("--anneal-lr", action=argparse.BooleanOptionalAction, default=True)
    p.add_argument("--loss-type", default="grpo", choices=list(LOSS_TYPES))
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--eval-every", type=int, default=25, help="held-out accuracy every n steps (main process)")
    p.add_argument("--threads", type=int, default=1, help="CPU threads per process")
    p.add_argument("--device", default="auto", choices=["auto", "cpu"],
                   help="cpu: every process on the CPU, gloo between them; auto: GPUs when present")
    p.add_argument("--out", default="grpo_trl_out", help="directory for the JSON outputs")
    p.add_argument("--check-normalisation", action="store_true",
                   help="first write TRL's loss and all-reduced gradient of one fixed batch per loss type")
    return p.parse_args(argv)


def weights_digest(model: torch.nn.Module) -> str:
    """SHA-256 of every parameter's bytes, in a fixed order: equal digests, equal weights."""
    h = hashlib.sha256()
    for name, p in sorted(model.named_parameters()):
        h.update(name.encode())
        h.update(p.detach().float().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()


def weight_log():
    """A TrainerCallback that records (step, digest of the weights) after every update."""
    from transformers import TrainerCallback

    class WeightLog(TrainerCallback):
        def __init__(self):
            self.rows = []

        def on_train_begin(self, args, state, control, model=None, **kwargs):
            self.rows.append([state.global_step, weights_digest(model)])

        def on_step_end(self, args, state, control, model=None, **kwargs):
            self.rows.append([state.global_step, weights_digest(model)])

    return WeightLog()


def check_normalisation(warm_model, state, path: Path) -> None:
    """TRL's loss and DDP's all-reduced gradient of one fixed batch split over the processes.

    The batch is ``rl4llm.trl.parity.loss_batch`` (2 prompts x G = 4, seed 0), the same on every
    process; process p takes the p-th block of rows, as TRL does, with ``num_items_in_batch``
    gathered from every process, as TRL's sampling step does. The model is wrapped by TRL's own
    accelerator (DistributedDataParallel when there are several processes), so ``backward`` runs
    the real all-reduce. The main process saves the gradients in the book's parameter layout.
    """
    from rl4llm.llm.data_parallel import shard_slices
    from rl4llm.llm.trainer import GRPOConfig
    from rl4llm.trl.adapters import quiet
    from rl4llm.trl.parity import TRL_LOSS_TYPES, book_layout, loss_batch, trl_loss_inputs, trl_loss_trainer

    config = GRPOConfig(prompts_per_step=2, group_size=4, eps_low=0.2, eps_high=0.28, beta=0.04,
                        temperature=0.7, device="cpu")
    batch = loss_batch(warm_model, config, seed=0)
    rows = shard_slices(batch.mask.shape[0], state.num_processes)[state.process_index]
    out = {"losses": {}, "grads": {}, "num_processes": state.num_processes}
    shared = path.parent / "normalisation_trainer"     # one directory for every process: rank 0 writes
    with quiet():
        trainer = trl_loss_trainer(warm_model, batch, config, shared, num_processes=state.num_processes)
        wrapped = trainer.accelerator.prepare(trainer.model)
        n_items = trainer.accelerator.gather(batch.mask[rows].sum()[None]).sum()
        for loss_type in (t for t in LOSS_TYPES if t in TRL_LOSS_TYPES):
            trainer.loss_type = loss_type
            loss = trainer._compute_loss(wrapped, trl_loss_inputs(batch, rows, n_items))
            trainer.accelerator.backward(loss)
            grads = {name: p.grad.detach().clone() for name, p in trainer.model.named_parameters()}
            trainer.model.zero_grad(set_to_none=True)
            out["losses"][loss_type] = trainer.accelerator.gather(loss.detach()[None]).tolist()
            out["grads"][loss_type] = book_layout(warm_model, grads)
    state.wait_for_everyone()
    if state.is_main_process:
        torch.save(out, path)
        shutil.rmtree(shared, ignore_errors=True)


def main(argv=None):
    args = parse_args(argv)
    from accelerate import PartialState

    state = PartialState(cpu=args.device == "cpu")
    launched = int(os.environ.get("WORLD_SIZE", "1"))
    if launched != state.num_processes:
        raise SystemExit(f"{launched} processes were launched but they did not join one group "
                         f"({state.distributed_type}); on a machine without GPUs pass --device cpu")
    torch.set_num_threads(args.threads)

    from rl4llm.llm.tasks import AdditionTask
    from rl4llm.llm.trainer import GRPOConfig
    from rl4llm.trl.adapters import quiet
    from rl4llm.trl.knobs import trl_config_kwargs
    from rl4llm.trl.run import AccuracyClock, trl_grpo_trainer
    from rl4llm.llm.warmstart import warm_start

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    task, warm = AdditionTask(seed=0), warm_start()
    if args.check_normalisation:
        check_normalisation(warm.model, state, out / "normalisation.pt")

    config = GRPOConfig(seed=args.seed, steps=args.steps, prompts_per_step=args.prompts_per_step,
                        group_size=args.group_size, lr=args.lr, warmup_steps=args.warmup_steps,
                        anneal_lr=args.anneal_lr, loss_type=args.loss_type, eval_every=args.eval_every,
                        num_threads=args.threads, device="cpu" if args.device == "cpu" else "auto")
    kwargs = trl_config_kwargs(config, num_processes=state.num_processes)
    if args.device == "cpu":
        kwargs["use_cpu"] = True
    clock, weights = AccuracyClock(task, args.eval_every), weight_log()
    start = time.perf_counter()
    with quiet(), tempfile.TemporaryDirectory() as workdir:
        trainer = trl_grpo_trainer(warm.model, task, kwargs, output_dir=workdir, callbacks=[clock, weights])
        trainer.train()
    wall = time.perf_counter() - start

    (out / f"weights_rank{state.process_index}.json").write_text(json.dumps(weights.rows))
    if state.is_main_process:
        launch = {"num_processes": state.num_processes, "distributed_type": str(state.distributed_type),
                  "backend": state.backend, "device": str(state.device), "threads_per_process": args.threads,
                  "per_device_train_batch_size": kwargs["per_device_train_batch_size"],
                  "completions_per_step": kwargs["per_device_train_batch_size"] * state.num_processes}
        metrics = {"launch": launch, "trl_kwargs": kwargs, "evals": clock.evals,
                   "train_seconds": clock.seconds, "wall_seconds": wall,
                   "log_history": trainer.state.log_history}
        (out / "metrics.json").write_text(json.dumps(metrics, indent=1, default=str))
        final = clock.evals["accuracy"][-1]
        print(f"{state.num_processes} process(es), {state.distributed_type} ({state.backend}): "
              f"{trainer.state.global_step} steps, {clock.seconds:.1f} s of training, "
              f"held-out accuracy {clock.evals['accuracy'][0]:.4f} -> {final:.4f}", flush=True)
    state.wait_for_everyone()


if __name__ == "__main__":
    main()
