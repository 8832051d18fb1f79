"""What holds on every machine, and how to try another one (chapter 15).

Long torch training runs do not give the same digits on every CPU: the kernels torch picks for the
instruction set (AVX-512, AVX2, none), and those the libraries under it pick for the CPU model, sum
in different orders, sampled tokens start to differ, and the trajectories part. Forcing one
instruction set does not make two CPUs agree: two machines with the same AVX-512 kernels can part. Chapter 15 therefore prints its training digits for the reader (nbval does
not compare that cell) and, in the next cell, statements about them that hold on every machine,
which nbval checks strictly: a line ``claim: True`` that prints ``False`` elsewhere fails the test.
Torch's ``ATEN_CPU_CAPABILITY`` variable forces the kernels of a lesser instruction set, which is
how the tests and ``benchmarks/ch15_machine_spread.py`` emulate other CPUs on one machine: a test
run that sets no capability starts every chapter's kernel under :func:`other_capability`.
"""
from __future__ import annotations

import functools
import os
import platform
import subprocess
import sys

from .._checks import checked


def cpu_model() -> str:
    """This machine's CPU model, for a timing's record (Linux: ``/proc/cpuinfo``; elsewhere what
    ``platform`` reports)."""
    try:
        with open("/proc/cpuinfo") as f:
            return next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        return platform.processor() or platform.machine()


def _claims(claims, name: str = "claims") -> dict:
    """Rule: a dict whose keys (the claims) are non-empty strings."""
    bad = [claim for claim in claims if not isinstance(claim, str) or not claim]
    if bad:
        raise ValueError(f"{name} must map non-empty strings to booleans, got key {bad[0]!r}")
    return claims


@checked(claims=_claims)
def print_claims(claims: dict[str, bool]) -> None:
    """Print each claim and whether it holds, one line each: ``"<claim>: True"``."""
    for claim, holds in claims.items():
        print(f"{claim}: {bool(holds)}")


@functools.cache
def capability_under(aten_cpu_capability: str | None) -> str:
    """The CPU capability torch dispatches to in a fresh process with ``ATEN_CPU_CAPABILITY`` set to
    the given value (``None``: unset, the CPU's native one), e.g. ``"AVX2"``; torch falls back to a
    lesser one when the CPU lacks the instructions asked for. Asked once a value per process (each
    answer is a child process importing torch, seconds)."""
    env = {k: v for k, v in os.environ.items() if k != "ATEN_CPU_CAPABILITY"}
    if aten_cpu_capability is not None:
        env["ATEN_CPU_CAPABILITY"] = aten_cpu_capability
    return subprocess.run([sys.executable, "-c", "import torch; print(torch.backends.cpu.get_cpu_capability())"],
                          env=env, capture_output=True, text=True, check=True).stdout.strip()


def other_capability() -> str:
    """A value of ``ATEN_CPU_CAPABILITY`` whose kernels differ from the ones torch picks on this CPU:
    ``"avx2"`` on an AVX-512 machine, ``"default"`` (no vector instructions) on an AVX2 one."""
    if "ATEN_CPU_CAPABILITY" in os.environ:
        native = capability_under(None)
    else:                                     # this process runs the native kernels: ask it
        import torch

        native = torch.backends.cpu.get_cpu_capability()
    for candidate in ("avx2", "default"):
        if capability_under(candidate) != native:
            return candidate
    raise RuntimeError(f"torch dispatches to {native} under every ATEN_CPU_CAPABILITY: no other kernels to try")
