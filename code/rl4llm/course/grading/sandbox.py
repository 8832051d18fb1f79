"""Grade one exercise out of process: the student's cell runs in a bubblewrap sandbox that the grader
controls (:mod:`.bubblewrap`: no network, no repository, no course, no library, an unprivileged uid,
limits on memory, processes, CPU and file size), and the verdict is computed here, from numbers only
(and, for a by-hand exercise, the student's answer, read back as a number or as text).

:func:`grade` writes the calls of the exercise (from ``rl4llm.exercises.SPECS``, computed in this
process, as are the reference's values and every mistake's) into a temporary folder, the sandbox's
only writable one, with the runner and the library's files the exercise may call (its allowed
helpers, copied in explicitly: ``grpo_loss`` for Exercise 16.6); starts ``runner.py`` there in the
sandbox with a time limit, its output going to a size-capped file; and reads back ``result.json``
(bounded JSON) and ``out<i>.npy`` (``allow_pickle=False``). A timeout, a crash, an import error in the
cell or a use of the library is a verdict of its own; otherwise :meth:`FunctionExercise.judge` gives
the same message as the chapter's check cell. A by-hand exercise (:class:`NumericExercise`) has no
calls: its cell runs alone, and the value it leaves in the answer's name gets ``check``'s verdict
(its tolerance, its common wrong numbers), computed here from the library's answer, which the
sandbox never holds.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..._checks import checked
from ...exercises import FUNCTIONS, SPECS, Verdict, label_of
from ...exercises._core import NOT_YET, FunctionExercise, NumericExercise
from . import bubblewrap
from .runner import encode

#: Seconds one exercise's process may run (the student's cell and every call).
TIMEOUT = 60.0
#: Characters of ``print`` output kept (the rest is counted and dropped).
KEPT_OUTPUT = 4000
#: Bytes the process may write to its standard streams directly (beyond ``print``) before it is stopped.
MAX_STREAM_BYTES = 8 * 2 ** 20
_RESULT_BYTES = 2 ** 20
#: Held while :func:`grade` works in this process (the calls, the reference's values, the mistakes'):
#: their lazy imports, torch's among them, fail when two threads run them at once ("partially
#: initialized module 'torch'"), so graders that grade several exercises at a time run only the
#: sandboxed part side by side.
_IN_PROCESS = threading.Lock()
_RUNNER = Path(__file__).with_name("runner.py")
_LIBRARY = Path(__file__).resolve().parents[2]
#: The package name under which the allowed library modules are copied into the sandbox.
ALLOWED_PACKAGE = "_allowed"


@dataclass(frozen=True)
class Grade:
    """The grader's verdict on one exercise: ``correct`` decides the point; ``message`` says why;
    ``seconds`` is how long the exercise's process ran."""
    exercise_id: str
    correct: bool
    message: str
    seconds: float


def toy_constants() -> dict:
    """The toy's constants an exercise may import from ``rl4llm`` (a building block of the sandbox)."""
    from ... import toy
    from ...toy.verifier import EOS_MARKER
    return {"LOGITS": toy.LOGITS, "REWARDS": toy.REWARDS, "CORRECT": toy.CORRECT, "VOCAB": list(toy.VOCAB),
            "EOS_MARKER": EOS_MARKER}


def allowed_helpers(exercise_id: str) -> list[str]:
    """The building blocks the exercise's code may import from ``rl4llm``: the spec's helpers, less
    the function being checked (``softmax`` may not be imported to write ``softmax``), whether the
    exercise is named by its label or by its function id. A by-hand answer may import none."""
    if isinstance(SPECS[exercise_id], NumericExercise):
        return []
    function = FUNCTIONS[label_of(exercise_id)]
    return [h for h in SPECS[exercise_id].helpers if h.split(".")[-1] != function]


def _write_job(folder: Path, exercise_id: str, source: str, function: str) -> list:
    spec = SPECS[exercise_id]
    by_hand = isinstance(spec, NumericExercise)
    calls = [] if by_hand else spec.calls()
    allowed = allowed_helpers(exercise_id)
    constants = {k: v for k, v in toy_constants().items() if k in allowed}
    job = {"source": source, "function": function, "answer": by_hand, "output": None if by_hand else spec.output,
           "allowed": allowed, "max_output": KEPT_OUTPUT,
           "constants": {name: encode(value, folder, f"const_{name}") for name, value in constants.items()},
           "calls": [{"args": [encode(a, folder, f"c{i}_a{j}") for j, a in enumerate(call.args)],
                      "kwargs": {k: encode(v, folder, f"c{i}_k_{k}") for k, v in call.kwargs.items()}}
                     for i, call in enumerate(calls)]}
    (folder / "job.json").write_text(json.dumps(job))
    shutil.copy(_RUNNER, folder / "runner.py")
    copy_modules(allowed, folder / ALLOWED_PACKAGE)
    return calls


_RELATIVE = re.compile(r"^\s*from (\.+)([\w.]+) import", re.M)


def library_modules(name: str) -> list[str]:
    """The library's module ``name`` (dotted, from the package root: ``"llm.grpo"``) and every module of
    the library it imports (relatively), by dotted name: what is copied into the sandbox when an exercise
    may call a function of ``name``."""
    found, todo = [], [name]
    while todo:
        module = todo.pop()
        if module not in found:
            found.append(module)
            package = module.split(".")[:-1]
            for dots, target in _RELATIVE.findall((_LIBRARY / f"{module.replace('.', '/')}.py").read_text()):
                todo.append(".".join(package[:len(package) - len(dots) + 1] + [target]))
    return found


def copy_modules(helpers, package: Path) -> None:
    """Copy the modules that the dotted ``helpers`` (``"llm.grpo.grpo_loss"``) live in, and the library
    modules they import, into ``package``, folders and all (an empty ``__init__.py`` in each folder)."""
    for module in sorted({m for h in helpers if "." in h for m in library_modules(h.rsplit(".", 1)[0])}):
        target = package / f"{module.replace('.', '/')}.py"
        for folder in [package, *list(target.parents)[:len(module.split(".")) - 1]]:
            folder.mkdir(exist_ok=True)
            if not (folder / "__init__.py").exists():
                (folder / "__init__.py").write_text("")
        shutil.copy(_LIBRARY / f"{module.replace('.', '/')}.py", target)


def _limits(timeout: float) -> bubblewrap.Limits:
    """The sandbox's limits for one exercise: its CPU seconds just above the wall-clock timeout, and
    ``MAX_STREAM_BYTES`` for any file (its standard streams' file included)."""
    return bubblewrap.Limits(cpu_seconds=int(timeout) + 5, file_bytes=MAX_STREAM_BYTES)


def _run(folder: Path, timeout: float) -> tuple[str | None, str]:
    """Run the job in the sandbox; (None, stderr tail) when it finished, else (what stopped it, stderr
    tail)."""
    bubblewrap.prepare(folder)
    command = bubblewrap.command(bubblewrap.script("runner.py", str(folder)), folder, _limits(timeout))
    with open(folder / "streams.txt", "wb") as streams:
        child = subprocess.Popen(command, cwd=folder, stdin=subprocess.DEVNULL, stdout=streams, stderr=streams,
                                 start_new_session=True, env={})
        try:
            code = child.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()
            return f"did not finish within {timeout:g} s (an endless loop, or a very slow one?)", ""
        finally:
            try:
                os.killpg(child.pid, signal.SIGKILL)        # anything the cell started is stopped too
            except ProcessLookupError:
                pass                                        # (and --die-with-parent ends its PID namespace)
    tail = (folder / "streams.txt").read_bytes()[-600:].decode("utf-8", "replace")
    if code == -signal.SIGXFSZ or (folder / "streams.txt").stat().st_size >= MAX_STREAM_BYTES:
        return f"wrote more than {MAX_STREAM_BYTES // 2 ** 20} MB of output, and was stopped", ""
    if code in (-signal.SIGXCPU, 128 + signal.SIGXCPU, -signal.SIGKILL, 128 + signal.SIGKILL) and \
            not (folder / "result.json").is_file():
        return f"was stopped by the sandbox's limits (CPU time or processes; exit code {code})", tail
    if code != 0 or not (folder / "result.json").is_file():
        if "MemoryError" in tail or "Cannot allocate memory" in tail or "DefaultCPUAllocator" in tail:
            return f"ran out of the sandbox's {_limits(timeout).memory // 2 ** 30} GB of memory", tail
        return f"stopped with exit code {code}", tail
    return None, tail


def _read_result(folder: Path, calls) -> dict | None:
    path = folder / "result.json"
    if path.stat().st_size > _RESULT_BYTES:
        return None
    try:
        record = json.loads(path.read_text())
        results = []
        for entry in record["calls"][:len(calls)]:
            result = {"mutated": [str(m) for m in entry.get("mutated", [])][:10]}
            if "raised" in entry:
                result["raised"] = tuple(str(x)[:300] for x in entry["raised"][:2])
            elif "status" in entry:
                result["output"] = str(entry["status"])[:100]
            else:
                name = Path(str(entry["output"])).name
                result["output"] = np.array(np.load(folder / name, allow_pickle=False), dtype=float)
            results.append(result)
        record["results"] = results
        if "answer" in record:
            answer = record["answer"]
            record["answer"] = ({"number": float(answer["number"])} if "number" in answer else
                                {"text": str(answer["text"])[:200]} if "text" in answer else
                                {"status": str(answer["status"])[:100]})
        return record
    except (ValueError, KeyError, TypeError, OSError, IndexError, AttributeError):
        return None


def _checked_exercise(exercise_id, name: str = "exercise_id") -> str:
    """Rule: the id of an exercise that rl4llm.exercises checks."""
    if not isinstance(SPECS.get(exercise_id) if isinstance(exercise_id, str) else None,
                      (FunctionExercise, NumericExercise)):
        raise ValueError(f"{name} must be one of the checked exercises {sorted(SPECS)}, got {exercise_id!r}")
    return exercise_id


def _cell_and_name(args):
    """Relation: ``source`` is text and ``function`` a Python name."""
    source, function = args["source"], args["function"]
    if not isinstance(source, str) or not isinstance(function, str) or not function.isidentifier():
        raise ValueError(f"source must be text and function a name, got {type(source).__name__}, {function!r}")


@checked(_cell_and_name, exercise_id=_checked_exercise)
def grade(exercise_id: str, source: str, function: str, timeout: float = TIMEOUT) -> Grade:
    """The verdict on the cell ``source`` for the exercise ``exercise_id``, computed out of process
    (see the module's docstring): on the function it defines as ``function`` (a coding exercise), or
    on the answer it leaves in that name (a by-hand one). Never raises on the student's code; an
    unknown ``exercise_id`` raises ``ValueError``."""
    spec = SPECS[exercise_id]
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="rl4llm-grade-") as tmp:
        folder = Path(tmp)
        with _IN_PROCESS:
            calls = _write_job(folder, exercise_id, source, function)
        stopped, tail = _run(folder, timeout)
        with _IN_PROCESS:
            record = None if stopped else _read_result(folder, calls)
            message = _message(spec, calls, function, stopped, tail, record, allowed_helpers(exercise_id))
    return Grade(exercise_id, Verdict(message).correct, message, time.perf_counter() - start)


def _message(spec, calls, function, stopped, tail, record, allowed) -> str:
    if stopped:
        detail = f" Its last output: {tail.strip()[-300:]!r}." if tail.strip() else ""
        return f"{NOT_YET} your code {stopped}; this exercise scores 0.{detail}"
    if record is None:
        return f"{NOT_YET} your code's results could not be read back (were files in its folder overwritten?)."
    by_hand = isinstance(spec, NumericExercise)
    if record.get("library") and by_hand:
        return (f"{NOT_YET} your cell uses the library ({record['library']}), which a by-hand answer may not: "
                "write the number you derived; this exercise scores 0.")
    if record.get("library"):
        return (f"{NOT_YET} your code uses the library's own function ({record['library']}), which graded "
                "code may not: write the function from its formula (of rl4llm, it may import only "
                f"{', '.join(allowed)}); this exercise scores 0.")
    if record.get("cell_raised"):
        kind, said, line = (list(record["cell_raised"]) + [None, None, None])[:3]
        if by_hand and kind == "NotImplementedError":
            return (f"{NOT_YET} no answer yet: the cell still holds the stub; write {function} = your number in its "
                    "place.")
        where = f" on line {line}" if isinstance(line, int) else ""
        return f"{NOT_YET} your cell raised {kind}{where} before defining {function}: {said}"
    if record.get("undefined") and by_hand:
        return f"{NOT_YET} your cell does not set {function}: write {function} = your number."
    if record.get("undefined"):
        return f"{NOT_YET} your cell does not define a function named {function}."
    if by_hand:
        return _answer_verdict(spec, function, record["answer"])
    if len(record["results"]) < len(calls):
        return f"{NOT_YET} your code stopped before every case was run."
    message = spec.judge(calls, record["results"])
    printed = record.get("printed")
    if isinstance(printed, int) and printed > KEPT_OUTPUT:
        message += f" (Your code printed {printed:,} characters; the grader kept the first {KEPT_OUTPUT:,}.)"
    return message


def _answer_verdict(spec: NumericExercise, name: str, answer: dict) -> str:
    """``check``'s verdict on a by-hand answer read back from the sandbox (see ``runner.as_answer``)."""
    status = answer.get("status")
    if status == "none":
        return f"{NOT_YET} {name} is None: write your number in its place ({name} = 0.5, or as text, \"1/2\")."
    if status:
        return f"{NOT_YET} {name} holds a {status.split(': ')[-1]}, not one number."
    return spec.verdict(answer.get("number", answer.get("text")))
