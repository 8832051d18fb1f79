"""The same TRL job on several processes (chapter 16): scripts/grpo_trl.py under `accelerate launch`.

One launch of two CPU processes (gloo) with the repository's accelerate configuration, a few steps:
both finish, hold the same weights after every update, the main one logs TRL's metrics, and the
all-reduced gradient of one fixed batch (TRL's own loss, DDP's real all-reduce) equals the
in-process simulation ``rl4llm.llm.data_parallel.data_parallel_loss`` for every loss type.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = ROOT / "configs" / "accelerate"
SCRIPT = ROOT / "scripts" / "grpo_trl.py"
STEPS = 3

pytest.importorskip("trl")
accelerate = pytest.importorskip("accelerate")


def env():
    path = os.pathsep.join([str(ROOT / "code"), os.environ.get("PYTHONPATH", "")])
    return {**os.environ, "PYTHONPATH": path, "OMP_NUM_THREADS": "1"}


def launch(args, cwd, timeout=300):
    """``accelerate launch ARGS`` with this Python (the module is the ``accelerate launch`` command)."""
    return subprocess.run([sys.executable, "-m", "accelerate.commands.launch", *args], cwd=cwd, env=env(),
                          capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def launched(tmp_path_factory):
    out = tmp_path_factory.mktemp("grpo_trl")
    result = launch(["--config_file", str(CONFIGS / "cpu_2proc.yaml"), str(SCRIPT), "--device", "cpu",
                     "--steps", str(STEPS), "--prompts-per-step", "4", "--group-size", "4", "--warmup-steps", "0",
                     "--eval-every", "100", "--out", str(out), "--check-normalisation"], out)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-6000:]
    return out, result


def test_two_processes_on_gloo_finish_and_log(launched):
    out, result = launched
    metrics = json.loads((out / "metrics.json").read_text())
    launch_info = metrics["launch"]
    assert launch_info["num_processes"] == 2 and launch_info["backend"] == "gloo"
    assert launch_info["distributed_type"].endswith("MULTI_CPU")
    assert launch_info["per_device_train_batch_size"] == 8 and launch_info["completions_per_step"] == 16
    steps = [row for row in metrics["log_history"] if "reward" in row]
    assert [row["step"] for row in steps] == list(range(1, STEPS + 1))           # a log line per step
    for row in steps:
        for key in ("loss", "reward", "reward_std", "frac_reward_zero_std", "entropy", "grad_norm",
                    "clip_ratio/region_mean", "completions/mean_length", "learning_rate"):
            assert key in row, key
    assert metrics["evals"]["step"] == [0, STEPS] and len(metrics["evals"]["accuracy"]) == 2
    assert "2 process(es)" in result.stdout


def test_every_process_holds_the_same_weights_after_every_update(launched):
    out, _ = launched
    ranks = [json.loads((out / f"weights_rank{r}.json").read_text()) for r in (0, 1)]
    assert ranks[0] == ranks[1]
    assert [step for step, _ in ranks[0]] == list(range(STEPS + 1))
    digests = [digest for _, digest in ranks[0]]
    assert len(set(digests)) == STEPS + 1          # and every update changed them


def test_launched_all_reduce_equals_the_in_process_simulation(launched):
    """TRL's _compute_loss on each process's half, DDP's all-reduce over gloo, against data_parallel_loss."""
    from rl4llm.llm.data_parallel import data_parallel_loss
    from rl4llm.math.loss_types import LOSS_TYPES
    from rl4llm.llm.grpo import grpo_loss
    from rl4llm.llm.model import completion_logprobs
    from rl4llm.llm.trainer import GRPOConfig
    from rl4llm.trl.parity import TRL_LOSS_TYPES, loss_batch
    from rl4llm.llm.warmstart import warm_start

    out, _ = launched
    saved = torch.load(out / "normalisation.pt")
    assert saved["num_processes"] == 2
    model = warm_start().model
    config = GRPOConfig(prompts_per_step=2, group_size=4, eps_low=0.2, eps_high=0.28, beta=0.04, temperature=0.7)
    batch = loss_batch(model, config, seed=0)
    params = dict(model.named_parameters())
    kw = dict(eps_low=0.2, eps_high=0.28, beta=0.04, ref_logp=batch.ref_logp, max_completion_length=4)
    for loss_type in (t for t in LOSS_TYPES if t in TRL_LOSS_TYPES):
        logp, _ = completion_logprobs(model, batch.tokens, batch.prompt_len, 0.7)
        split, per_process = data_parallel_loss(logp, batch.old_logp, batch.advantages, batch.mask, num_processes=2,
                                                loss_type=loss_type, **kw)
        single, _ = grpo_loss(logp, batch.old_logp, batch.advantages, batch.mask, loss_type=loss_type, **kw)
        g_split = torch.autograd.grad(split, list(params.values()), retain_graph=True)
        g_single = torch.autograd.grad(single, list(params.values()))
        theirs = saved["grads"][loss_type]
        assert torch.allclose(torch.tensor(saved["losses"][loss_type]), torch.stack(per_process).detach(), atol=1e-6)
        assert max(float((g - theirs[n]).abs().max()) for n, g in zip(params, g_split)) < 1e-6, loss_type
        off = max(float((g - theirs[n]).abs().max()) for n, g in zip(params, g_single))
        assert (off > 1e-2) if loss_type == "bnpo" else (off < 1e-6), (loss_type, off)


def test_accelerate_configurations_parse():
    from accelerate.commands.config.config_args import load_config_from_file
    from accelerate.utils import DistributedType

    for name in ("cpu_2proc.yaml", "multi_gpu.yaml"):
        config = load_config_from_file(str(CONFIGS / name))
        assert config.distributed_type == DistributedType.MULTI_GPU       # accelerate's torchrun launcher
        assert config.num_processes == 2 and config.num_machines == 1
        assert config.mixed_precision == "no" and config.use_cpu is False


PROBE = ("import os; from accelerate import PartialState; s = PartialState(cpu=True); "   # one write per line,
         "os.write(1, f'rank {s.process_index} of {s.num_processes} {s.backend}\\n'.encode())")  # not interleaved


def test_which_launch_starts_two_cpu_processes(tmp_path):
    """The chapter's statement: `--cpu --num_processes 2` and a MULTI_CPU config start one process,
    the repository's MULTI_GPU (torchrun) config two, on gloo."""
    probe = tmp_path / "probe.py"
    probe.write_text(PROBE + "\n")
    multi_cpu = tmp_path / "multi_cpu.yaml"
    multi_cpu.write_text((CONFIGS / "cpu_2proc.yaml").read_text().replace("distributed_type: MULTI_GPU",
                                                                          "distributed_type: MULTI_CPU"))
    one = launch(["--cpu", "--num_processes", "2", str(probe)], tmp_path, timeout=120)
    also_one = launch(["--config_file", str(multi_cpu), str(probe)], tmp_path, timeout=120)
    two = launch(["--config_file", str(CONFIGS / "cpu_2proc.yaml"), str(probe)], tmp_path, timeout=120)
    for result in (one, also_one, two):
        assert result.returncode == 0, result.stderr[-2000:]
    for result in (one, also_one):
        assert [line for line in result.stdout.splitlines() if line.startswith("rank")] == ["rank 0 of 1 None"]
    assert sorted(line for line in two.stdout.splitlines() if line.startswith("rank")) == \
        ["rank 0 of 2 gloo", "rank 1 of 2 gloo"]


@pytest.mark.skipif(torch.cuda.is_available(), reason="with GPUs the processes join an NCCL group")
def test_without_device_cpu_the_processes_would_train_alone_and_the_script_stops(tmp_path):
    """The chapter's pitfall: no GPU and no CPU request, so each process is a world of one."""
    result = launch(["--config_file", str(CONFIGS / "cpu_2proc.yaml"), str(SCRIPT), "--out", str(tmp_path)],
                    tmp_path, timeout=120)
    assert result.returncode != 0
    assert "did not join one group" in result.stderr and "--device cpu" in result.stderr
    assert not (tmp_path / "metrics.json").exists()
