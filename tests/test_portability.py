"""The chapters that run torch pass strict nbval on another CPU: chapter 15 (training) and 16 (TRL).

The main test run checks every notebook with the kernels of this machine's CPU. This test runs the
two torch chapters again in a fresh pytest process with torch forced onto the kernels of another
instruction set (``ATEN_CPU_CAPABILITY``) and an empty warm-start cache, so a change that makes a
stored output depend on the CPU fails here, on any machine, not first on a contributor's laptop.
"""
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from rl4llm.portability import capability_under, print_claims

ROOT = Path(__file__).resolve().parents[1]
TORCH_CHAPTERS = ["book/15_tiny_transformer.ipynb", "book/16_to_trl.ipynb"]


def other_capability() -> str:
    """A value of ATEN_CPU_CAPABILITY whose kernels differ from the ones this run uses."""
    current = torch.backends.cpu.get_cpu_capability()
    for candidate in ("avx2", "default"):
        if capability_under(candidate) != current:
            return candidate
    pytest.fail(f"no torch CPU capability other than {current} to emulate on this machine")


def test_torch_chapters_pass_strict_nbval_under_another_cpu_capability(tmp_path):
    capability = other_capability()
    env = {**os.environ, "ATEN_CPU_CAPABILITY": capability, "RL4LLM_CACHE": str(tmp_path / "cache")}
    result = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *TORCH_CHAPTERS],
                            cwd=ROOT, env=env, capture_output=True, text=True)
    assert result.returncode == 0, f"under ATEN_CPU_CAPABILITY={capability}:\n{result.stdout[-6000:]}"
    assert not list((tmp_path / "cache").glob("*")), "the chapters should not need the warm-start cache"


def test_capability_under_reports_what_torch_dispatches_to():
    current = torch.backends.cpu.get_cpu_capability()
    assert capability_under("default") == "DEFAULT"
    assert capability_under(current.lower()) == current
    assert capability_under(None) in {"DEFAULT", "AVX2", "AVX512", current}


def test_print_claims(capsys):
    print_claims({"one is one": 1 == 1, "two is three": 2 == 3})
    assert capsys.readouterr().out == "one is one: True\ntwo is three: False\n"
    with pytest.raises(ValueError, match="claims"):
        print_claims({"": True})

