"""The chapters run as on another CPU, and the helpers that say so.

Every chapter's kernel starts with torch forced onto another instruction set's kernels
(the repository's ``conftest.py``, through ``rl4llm.llm.portability.other_capability``) and an empty warm-start cache,
so the main run's strict nbval already checks the stored outputs on a CPU that did not write them. These
tests check the pieces: which capability that is, and that a kernel started the way the chapters' are
really dispatches to it.
"""
import os

import pytest
import torch
from rl4llm.llm.portability import capability_under, cpu_model, other_capability, print_claims


def test_capability_under_reports_what_torch_dispatches_to():
    current = torch.backends.cpu.get_cpu_capability()
    assert capability_under("default") == "DEFAULT"
    assert capability_under(current.lower()) == current
    assert capability_under(None) in {"DEFAULT", "AVX2", "AVX512", current}


def test_other_capability_dispatches_to_other_kernels():
    other = other_capability()
    assert other in {"avx2", "default"}
    assert capability_under(other) != capability_under(None)


def test_the_chapters_kernels_run_another_cpus_kernels():
    """A child started with the chapters' capability (as their kernels are, in a run that sets none)
    dispatches to kernels other than this process's."""
    if "ATEN_CPU_CAPABILITY" in os.environ:
        pytest.skip("this run sets ATEN_CPU_CAPABILITY for everything, the chapters included")
    assert capability_under(other_capability()) != torch.backends.cpu.get_cpu_capability()


def test_print_claims(capsys):
    print_claims({"one is one": 1 == 1, "two is three": 2 == 3})
    assert capsys.readouterr().out == "one is one: True\ntwo is three: False\n"
    with pytest.raises(ValueError, match="claims"):
        print_claims({"": True})


def test_cpu_model_names_this_machines_cpu():
    """Where Linux lists the CPU, cpu_model gives its first "model name" line, as lscpu would name it."""
    import platform
    from pathlib import Path

    listed = [line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
              if line.startswith("model name")] if Path("/proc/cpuinfo").exists() else []
    assert cpu_model() == (listed[0] if listed else platform.processor() or platform.machine()) and cpu_model()
