"""nbgrader's own pass, sandboxed: the kernel that executes a submission, and the scores it records.

``course/nbgrader_config.py`` puts these into ``nbgrader autograde`` (and so into formgrader's
button and into ``python -m rl4llm.course.grading autograde``), so that no nbgrader route runs a submitted
line outside the sandbox or scores a test cell that the submission's kernel could patch:

- :class:`SubmittedCells` (nbgrader's sanitising step, in place of its ``DeduplicateIds``) takes
  nbgrader's marks off a submitted cell whose grade id the assignment does not have (a renamed cell)
  and off all but the last copy of a pasted cell, saying so in the log, so that nbgrader grades the
  rest of that submission instead of stopping on it;
- :class:`SandboxedKernelManager` starts the notebook's kernel (``ipykernel``) inside bubblewrap
  (:mod:`.bubblewrap`: no network, no course, no repository, an unprivileged uid, limits), talking to
  nbgrader over Unix sockets in the kernel's own folder (``transport = "ipc"``); in place of the
  library the kernel finds a stand-in ``rl4llm`` holding only the exercises' building blocks and a
  ``rl4llm.exercises`` whose checks say that grading happens out of process;
- :class:`SandboxedExecute` is nbgrader's ``Execute`` with that kernel and a cap on the outputs it
  stores (``MAX_OUTPUT_BYTES`` a notebook);
- :class:`OutOfProcessGrades` then replaces each autograded test cell's outputs by the verdict of
  :func:`rl4llm.course.grading.sandbox.grade` on the student's solution cell, an error output when it is
  wrong, so nbgrader's ``SaveAutoGrades`` records the out-of-process score: the same on every re-run.
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
from jupyter_client.kernelspec import KernelSpec
from jupyter_client.manager import AsyncKernelManager
from nbgrader.preprocessors import Execute, NbGraderPreprocessor
from traitlets import Integer

from . import bubblewrap
from .notebooks import ASSERT
from .sandbox import TIMEOUT, Grade, copy_modules, grade, toy_constants

#: Bytes of outputs nbgrader's pass stores for one notebook; the rest is dropped with a note.
MAX_OUTPUT_BYTES = 2 * 2 ** 20
#: The limits of the kernel's sandbox: its CPU seconds cover a whole notebook.
KERNEL_LIMITS = bubblewrap.Limits(cpu_seconds=1800, file_bytes=64 * 2 ** 20)
_RUNNER = Path(__file__).with_name("runner.py")

_EXERCISES_STUB = '''"""Stand-in: in the grader's sandbox the checks do not run here; each exercise is graded out of
process, and the test cell shows that verdict in your feedback."""


def assert_correct(exercise_id, answer):
    print("Graded out of process: the verdict replaces this cell's output.")


check = assert_correct
'''


def stand_in(folder: Path) -> Path:
    """Write the kernel's stand-in ``rl4llm`` package into ``folder`` and return its path: every
    exercise's building blocks (``softmax``, ``log_softmax``, the toy's constants, ``llm.grpo.grpo_loss``
    with the modules it imports), a ``rl4llm.exercises`` whose checks only say where grading happens,
    and nothing else of the library."""
    from ...exercises import SPECS

    package = Path(folder) / "rl4llm"
    package.mkdir()
    helpers = sorted({h for spec in SPECS.values() for h in getattr(spec, "helpers", ())})
    constants = {k: (v.tolist() if hasattr(v, "tolist") else v) for k, v in toy_constants().items() if k in helpers}
    lines = ['"""Stand-in for the library in the grader\'s sandbox: only the exercises\' building blocks."""',
             "import numpy as np", "", "from ._blocks import _log_softmax as log_softmax, _softmax as softmax", ""]
    lines += [f"{name} = {'np.array(' + repr(value) + ')' if isinstance(value, list) else repr(value)}"
              for name, value in sorted(constants.items())]
    lines += ["", "", "def __getattr__(name):",
              "    raise AttributeError(f'rl4llm.{name} is not available to graded code')", ""]
    (package / "__init__.py").write_text("\n".join(lines))
    shutil.copy(_RUNNER, package / "_blocks.py")
    (package / "exercises.py").write_text(_EXERCISES_STUB)
    copy_modules(helpers, package)
    return package


class SubmittedCells(NbGraderPreprocessor):
    """Keep nbgrader's metadata only on submitted cells it can grade (see the module's docstring): a
    cell whose grade id is not the assignment's, or an earlier copy of a cell whose grade id comes
    again (nbgrader grades the last copy), becomes a plain cell."""

    def preprocess(self, nb, resources):
        from nbgrader.api import Gradebook

        meta = resources["nbgrader"]
        with Gradebook(meta["db_url"]) as gradebook:
            source = gradebook.find_notebook(meta["notebook"], meta["assignment"])
            known = {c.name for c in [*source.source_cells, *source.grade_cells, *source.solution_cells]}
        seen = set()
        for index in reversed(range(len(nb.cells))):
            grade_id = nb.cells[index].metadata.get("nbgrader", {}).get("grade_id")
            if "nbgrader" not in nb.cells[index].metadata:
                continue
            if grade_id not in known or grade_id in seen:
                del nb.cells[index].metadata["nbgrader"]
                self.log.warning("Cell %d (grade id %r) is %s; graded as an ordinary cell", index + 1, grade_id,
                                 "a copy: the last copy is graded" if grade_id in seen else "not one of the assignment's")
            seen.add(grade_id)
        return nb, resources


class SandboxedKernelManager(AsyncKernelManager):
    """A kernel manager whose kernel runs in bubblewrap (see the module's docstring). Each kernel gets
    a fresh folder, owned by the sandbox's uid, holding its connection file, its sockets and its
    working directory, removed when the kernel is cleaned up."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.transport = "ipc"
        self.folder = Path(tempfile.mkdtemp(prefix="rl4llm-kernel-"))
        self.site = Path(tempfile.mkdtemp(prefix="rl4llm-kernel-site-"))
        self.connection_file = str(self.folder / "kernel.json")
        self.ip = str(self.folder / "kernel-ipc")

    @property
    def kernel_spec(self) -> KernelSpec:
        return KernelSpec(argv=["python"], display_name="Python 3 (rl4llm grader's sandbox)", language="python",
                          interrupt_mode="message")

    def format_kernel_cmd(self, extra_arguments: list[str] | None = None) -> list[str]:
        package = self.site / "rl4llm" if (self.site / "rl4llm").is_dir() else stand_in(self.site)
        bubblewrap.prepare(self.folder)
        return bubblewrap.command(bubblewrap.module("ipykernel_launcher", "-f", self.connection_file), self.folder,
                                  KERNEL_LIMITS, bubblewrap.KERNEL_DISTRIBUTIONS, packages={"rl4llm": package})

    async def _async_launch_kernel(self, kernel_cmd: list[str], **kw) -> None:
        kw.update(stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        await super()._async_launch_kernel(kernel_cmd, **kw)

    async def _async_cleanup_resources(self, restart: bool = False) -> None:
        await super()._async_cleanup_resources(restart)
        if not restart:
            shutil.rmtree(self.folder, ignore_errors=True)
            shutil.rmtree(self.site, ignore_errors=True)

    cleanup_resources = _async_cleanup_resources


class SandboxedExecute(Execute):
    """nbgrader's ``Execute``, its kernel in the sandbox (:class:`SandboxedKernelManager`), storing at
    most ``max_output_bytes`` of outputs for the notebook."""

    max_output_bytes = Integer(MAX_OUTPUT_BYTES, help="bytes of outputs stored for a notebook").tag(config=True)

    def __init__(self, *args, **kwargs):
        kwargs["kernel_manager_class"] = SandboxedKernelManager
        super().__init__(*args, **kwargs)
        self._stored = 0

    def preprocess(self, nb, resources=None, km=None):
        self._stored = 0
        return super().preprocess(nb, resources, km)

    def output(self, outs, msg, display_id, cell_index):
        size = len(json.dumps(msg.get("content", {})))
        if self._stored >= self.max_output_bytes:
            return None
        self._stored += size
        if self._stored >= self.max_output_bytes:
            outs.append(nbformat.v4.new_output("stream", name="stdout", text=(
                f"\n[The grader stored the first {self.max_output_bytes // 2 ** 20} MB of this notebook's output "
                "and dropped the rest.]\n")))
            return None
        return super().output(outs, msg, display_id, cell_index)


def _meta(cell) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {})


class OutOfProcessGrades(NbGraderPreprocessor):
    """Each autograded test cell (``<grade id>-check`` calling ``assert_correct("<check>", <name>)``)
    gets the out-of-process verdict on the student's solution cell ``<grade id>`` as its only output:
    printed when it is right, an error output (which nbgrader scores 0) when it is not. The test cells
    are the instructor's (nbgrader's ``OverwriteCells`` restored them), the solution cells the
    student's. ``workers`` exercises are graded at a time."""

    timeout = Integer(int(TIMEOUT), help="seconds each exercise's code may run").tag(config=True)
    workers = Integer(2, help="exercises graded at a time").tag(config=True)

    def preprocess(self, nb, resources):
        solutions = {_meta(c)["grade_id"]: "".join(c.source) for c in nb.cells
                     if c.cell_type == "code" and _meta(c).get("solution") and _meta(c).get("grade_id")}
        jobs = []
        for cell in nb.cells:
            meta, match = _meta(cell), ASSERT.search("".join(cell.source))
            if cell.cell_type == "code" and meta.get("grade") and match and meta.get("grade_id", "").endswith("-check"):
                jobs.append((cell, meta["grade_id"].removesuffix("-check"), *match.groups()))
        with ThreadPoolExecutor(max(1, self.workers)) as pool:
            verdicts = list(pool.map(lambda job: self._grade(*job[1:], solutions), jobs))
        for (cell, grade_id, *_), verdict in zip(jobs, verdicts):
            text = f"Graded out of process: {verdict.message}"
            cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=text + "\n")] if verdict.correct else \
                [nbformat.v4.new_output("error", ename="NotYet", evalue=verdict.message, traceback=[text])]
            self.log.info("%s: %s", grade_id, "correct" if verdict.correct else verdict.message)
        return nb, resources

    def _grade(self, grade_id: str, check_id: str, name: str, solutions: dict[str, str]) -> Grade:
        if grade_id not in solutions:
            return Grade(check_id, False, f"Not yet: the solution cell {grade_id} is missing from the notebook "
                                          "(deleted, or its grade id changed); this exercise scores 0.", 0.0)
        try:
            return grade(check_id, solutions[grade_id], name, timeout=self.timeout)
        except ValueError as err:                    # a test cell naming no known check: the instructor's
            return Grade(check_id, False, f"Not yet: the grader cannot grade this cell ({err}).", 0.0)


def verdicts(notebook: Path) -> dict[str, str]:
    """What :class:`OutOfProcessGrades` wrote into the autograded notebook at ``notebook``: each
    graded test cell's verdict, by grade id."""
    nb = json.loads(Path(notebook).read_text())
    found = {}
    for cell in nb["cells"]:
        meta = _meta(cell)
        if cell.get("cell_type") == "code" and meta.get("grade") and meta.get("grade_id", "").endswith("-check"):
            for output in cell.get("outputs", []):
                text = output.get("text", "") or output.get("evalue", "")
                text = "".join(text) if isinstance(text, list) else text
                if output.get("output_type") == "error" or text.startswith("Graded out of process:"):
                    found[meta["grade_id"].removesuffix("-check")] = re.sub(
                        r"^Graded out of process: ", "", text).strip()
                    break
    return found
