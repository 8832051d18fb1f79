"""How much chapter 14's trained numbers move with the CPU's instruction set.

    python benchmarks/ch14_machine_spread.py [--store]

Executes ``book/14_tiny_transformer.ipynb`` once per torch CPU capability this machine can run
(``ATEN_CPU_CAPABILITY`` = avx512, avx2, default), each in a fresh kernel with an empty warm-start
cache, and reads the chapter's ``digits`` dict (this machine's digits of every CPU-dependent
number) after each run. Writes them to ``book/data/14_machine_spread.json``, which the chapter's
last section tabulates, and prints the table. With ``--store``, the run under the native capability
is also written back as the chapter's stored outputs (instead of ``jupyter execute --inplace``).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from rl4llm.portability import capability_under

ROOT = Path(__file__).resolve().parents[1]
CHAPTER = ROOT / "book" / "14_tiny_transformer.ipynb"
OUT = ROOT / "book" / "data" / "14_machine_spread.json"
CAPABILITIES = ("avx512", "avx2", "default")


def run_chapter(capability: str) -> tuple[dict, nbformat.NotebookNode]:
    """Execute the chapter under ``capability`` with an empty cache; its ``digits`` and the notebook."""
    notebook = nbformat.read(CHAPTER, as_version=4)
    notebook.cells.append(nbformat.v4.new_code_cell("print(json.dumps(digits))"))
    with tempfile.TemporaryDirectory() as cache:
        os.environ.update(ATEN_CPU_CAPABILITY=capability, RL4LLM_CACHE=cache)
        NotebookClient(notebook, timeout=1200, kernel_name="python3",
                       resources={"metadata": {"path": str(CHAPTER.parent)}}).execute()
    digits = json.loads(notebook.cells.pop().outputs[0]["text"])
    return digits, notebook


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", action="store_true", help="store the native run's outputs in the chapter")
    args = parser.parse_args()
    native = capability_under(None)
    runs = {}
    for capability in CAPABILITIES:
        name = capability_under(capability)
        if name in runs:          # not available on this CPU: torch fell back to one already run
            continue
        digits, notebook = run_chapter(capability)
        runs[name] = digits
        print(f"{name}: {digits}", flush=True)
        if args.store and name == native:
            nbformat.write(notebook, CHAPTER)
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor()) if Path("/proc/cpuinfo").exists() \
        else platform.processor()
    import torch
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_text(json.dumps({"command": "python benchmarks/ch14_machine_spread.py", "machine":
                               f"{cpu} ({os.cpu_count()} cores, native {native})", "torch": str(torch.__version__),
                               "runs": runs}, indent=1) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
