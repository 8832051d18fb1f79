"""How much chapter 15's trained numbers move with the CPU's instruction set.

    python benchmarks/ch15_machine_spread.py [--store]

Executes ``book/15_tiny_transformer.ipynb`` once per torch CPU capability this machine can run
(``ATEN_CPU_CAPABILITY`` = avx512, avx2, default), each in a fresh kernel with an empty warm-start
cache, and reads the chapter's ``digits`` dict (this machine's digits of every CPU-dependent
number) after each run. Writes them to ``book/data/15_machine_spread.json``, which the chapter's
last section tabulates. With ``--store``, the chapter is then executed once more under the native
capability (so that its table shows the file just written) and stored, instead of
``jupyter execute --inplace``.
"""
from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from rl4llm.llm.portability import capability_under, cpu_model

ROOT = Path(__file__).resolve().parents[1]
CHAPTER = ROOT / "book" / "15_tiny_transformer.ipynb"
OUT = ROOT / "book" / "data" / "15_machine_spread.json"
CAPABILITIES = ("avx512", "avx2", "default")


def run_chapter(capability: str | None) -> tuple[dict, nbformat.NotebookNode]:
    """Execute the chapter under ``capability`` with an empty cache; its ``digits`` and the notebook."""
    notebook = nbformat.read(CHAPTER, as_version=4)
    notebook.cells.append(nbformat.v4.new_code_cell("print(json.dumps(digits))"))
    with tempfile.TemporaryDirectory() as cache:
        os.environ["RL4LLM_CACHE"] = cache
        if capability is not None:
            os.environ["ATEN_CPU_CAPABILITY"] = capability
        NotebookClient(notebook, timeout=1200, kernel_name="python3",
                       resources={"metadata": {"path": str(CHAPTER.parent)}}).execute()
    digits = json.loads(notebook.cells.pop().outputs[0]["text"])
    return digits, notebook


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", action="store_true", help="re-execute the chapter natively and store it")
    args = parser.parse_args()
    native = capability_under(None)
    runs = {}
    for capability in CAPABILITIES:
        name = capability_under(capability)
        if name in runs:          # not available on this CPU: torch fell back to one already run
            continue
        runs[name], _ = run_chapter(capability)
        print(f"{name}: {runs[name]}", flush=True)
    cpu = cpu_model()
    import torch
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_text(json.dumps({"command": "python benchmarks/ch15_machine_spread.py", "machine":
                               f"{cpu} ({os.cpu_count()} cores, native {native})", "torch": str(torch.__version__),
                               "runs": runs}, indent=1) + "\n")
    print(f"wrote {OUT}")
    if args.store:
        os.environ.pop("ATEN_CPU_CAPABILITY")
        nbformat.write(run_chapter(None)[1], CHAPTER)
        print(f"stored {CHAPTER} (native {native})")


if __name__ == "__main__":
    main()
