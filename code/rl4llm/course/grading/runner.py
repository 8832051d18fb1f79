"""Run a student's function on a set of calls, on copies, and record what came back.

Two users share this module:

- ``rl4llm.exercises`` (practice, in the student's own kernel) imports :func:`call_on_copy` and
  :func:`as_output`;
- the grader (``rl4llm.course.grading.sandbox``) runs this file as a script, ``runner.py JOB``, in a
  bubblewrap sandbox whose only writable folder, and working directory, is the job's temporary
  folder; the library is not installed there. The script reads ``job.json`` (the cell's source, the
  function's name, the calls as JSON and ``.npy`` files), puts the building blocks the exercise allows
  into a stand-in ``rl4llm`` module (any other name of it, any import of ``rl4llm.*`` beyond them, is
  recorded as a use of the library and fails; a library function the exercise may call, such as
  ``grpo_loss``, was copied into the folder's ``_allowed`` package), runs the cell, calls the function on each call's arguments, and writes ``result.json`` and
  one ``out<i>.npy`` per call (numbers only: nothing the grader reads back is ever unpickled). For a
  by-hand exercise (``"answer": true`` in the job) there are no calls: the script writes what the
  cell left in the answer's name (:func:`as_answer`). ``print`` output is counted and all but its
  first characters dropped.

As a script it imports only the standard library, numpy, and torch when a call holds a tensor.
"""
from __future__ import annotations

import copy
import io
import json
import numbers
import sys
import traceback
from pathlib import Path

import numpy as np


class LibraryUse(ImportError):
    """Raised where graded code reaches for the library (``rl4llm``), which it may not use."""


# ----------------------------------------------------------------------------- calling on copies
def as_output(out, kind: str = "first"):
    """What a function returned, as a float array for comparison, or a status string:
    ``"none"`` (it returned None) or ``"not-numeric: <type>"``. ``kind="first"`` keeps the first
    element of a returned tuple (``grpo_loss`` returns ``(loss, stats)``); ``"pair"`` stacks a
    returned pair of arrays into two rows (``jhat_distribution`` returns ``(values, probs)``)."""
    if out is None:
        return "none"
    if kind == "pair" and isinstance(out, (tuple, list)) and len(out) == 2:
        parts = [_numbers(part) for part in out]
        if any(isinstance(p, str) for p in parts):
            return next(p for p in parts if isinstance(p, str))
        if parts[0].shape == parts[1].shape:
            return np.stack(parts)
        return np.concatenate([np.ravel(p) for p in parts])
    if kind == "first" and isinstance(out, tuple) and out:
        out = out[0]
        if out is None:
            return "none"
    return _numbers(out)


def as_answer(value) -> dict:
    """A by-hand answer as JSON: ``{"number": x}`` for a real number (numpy's scalars and 0-d arrays
    included, a bool not), ``{"text": ...}`` for text (its first 200 characters), else ``{"status":
    "none"}`` or ``{"status": "not-numeric: <type>"}``. The grader parses it as ``check`` does."""
    if value is None:
        return {"status": "none"}
    if isinstance(value, str):
        return {"text": value[:200]}
    if isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind in "iuf":
        value = value.item()
    if isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_)):
        return {"number": float(value)}
    return {"status": f"not-numeric: {type(value).__name__}"}


def _numbers(out):
    if hasattr(out, "detach"):
        out = out.detach().cpu().numpy()
    try:
        return np.array(out, dtype=float)
    except (TypeError, ValueError):
        return f"not-numeric: {type(out).__name__}"


def _same(a, b) -> bool:
    """Whether an argument is unchanged after a call (arrays, tensors, lists, scalars)."""
    if hasattr(a, "detach"):
        a, b = a.detach().cpu().numpy(), b.detach().cpu().numpy()
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.shape == b.shape and bool(np.array_equal(a, b, equal_nan=True))
    try:
        return bool(a == b)
    except Exception:                     # an argument that cannot compare counts as unchanged
        return True


def call_on_copy(function, args: tuple, kwargs: dict, kind: str = "first") -> dict:
    """Call ``function`` on deep copies of ``args`` and ``kwargs``; never raises. Returns
    ``{"output": array or status}``, or ``{"raised": (type name, message)}``, plus ``"mutated"``
    (the names of the arguments it changed in place, "argument 1" for the first positional one)."""
    given_args, given_kwargs = copy.deepcopy(args), copy.deepcopy(kwargs)
    try:
        out = function(*given_args, **given_kwargs)
        record = {"output": as_output(out, kind)}
    except LibraryUse:
        raise
    except BaseException as err:                      # noqa: BLE001 (a student's crash is reported)
        if isinstance(err, KeyboardInterrupt):
            raise
        record = {"raised": (type(err).__name__, _short(str(err)))}
    changed = [f"argument {i + 1}" for i, (a, b) in enumerate(zip(args, given_args)) if not _same(a, b)]
    changed += [name for name in kwargs if not _same(kwargs[name], given_kwargs[name])]
    record["mutated"] = changed
    return record


def _short(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[:limit - 3] + "..."


# ----------------------------------------------------------------------------- values to and from files
def encode(value, folder: Path, stem: str):
    """``value`` as JSON, arrays and tensors written to ``folder/<stem>.npy`` (no pickles)."""
    if hasattr(value, "detach"):
        np.save(folder / f"{stem}.npy", value.detach().cpu().numpy(), allow_pickle=False)
        return {"torch": f"{stem}.npy"}
    if isinstance(value, np.ndarray):
        np.save(folder / f"{stem}.npy", value, allow_pickle=False)
        return {"npy": f"{stem}.npy"}
    if isinstance(value, (np.floating, np.integer, np.bool_)):
        value = value.item()
    if isinstance(value, (list, tuple)):
        return {"list": [encode(v, folder, f"{stem}_{i}") for i, v in enumerate(value)],
                "tuple": isinstance(value, tuple)}
    if value is None or isinstance(value, (bool, int, float, str)):
        return {"value": value}
    raise ValueError(f"value must be an array, a tensor, a list or a JSON scalar, got {type(value).__name__}")


def decode(encoded: dict, folder: Path):
    """The value :func:`encode` wrote (a fresh copy on every call)."""
    if "npy" in encoded:
        return np.load(folder / encoded["npy"], allow_pickle=False)
    if "torch" in encoded:
        import torch
        return torch.from_numpy(np.load(folder / encoded["torch"], allow_pickle=False))
    if "list" in encoded:
        items = [decode(v, folder) for v in encoded["list"]]
        return tuple(items) if encoded.get("tuple") else items
    return encoded["value"]


# ----------------------------------------------------------------------------- the library, blocked
def _log_softmax(logits, temperature=1.0):
    """ln softmax(z / T) over the last axis, stably (the stand-in module's building block). Written
    with numpy's log-sum-exp rather than as the library's ``log_softmax`` is, so that the reference's
    lines stay its own (the student edition's leak test looks for them)."""
    z = np.asarray(logits, dtype=float) / temperature
    return z - np.logaddexp.reduce(z, axis=-1, keepdims=True)


def _softmax(logits, temperature=1.0):
    """softmax(z / T) over the last axis (the stand-in module's building block)."""
    return np.exp(_log_softmax(logits, temperature))


class _Blocker:
    """A meta-path finder that refuses ``rl4llm.*`` and records the attempt."""

    def __init__(self, record: dict):
        self.record = record

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("rl4llm", "_allowed"):
            if name not in sys.modules:
                self.record.setdefault("library", name)
                raise LibraryUse(f"graded code may not import the library ({name})")
        return None


def _stand_in(allowed: list[str], constants: dict, record: dict):
    """Modules ``rl4llm`` (and ``rl4llm.llm.grpo`` if ``llm.grpo.grpo_loss`` is allowed) holding only the
    allowed building blocks; any other name is recorded as a use of the library and fails."""
    import types

    def refuse(module_name):
        def getattr_(name):
            if name.startswith("__"):
                raise AttributeError(name)
            record.setdefault("library", f"{module_name}.{name}")
            raise LibraryUse(f"graded code may not use the library's own {module_name}.{name}")
        return getattr_
    root = types.ModuleType("rl4llm", "The library is not available to graded code.")
    root.__path__ = []
    root.__getattr__ = refuse("rl4llm")
    blocks = {"softmax": _softmax, "log_softmax": _log_softmax, **constants}
    for name in allowed:
        if name in blocks:
            setattr(root, name, blocks[name])
    modules = {"rl4llm": root}
    if "llm.grpo.grpo_loss" in allowed:
        from _allowed.llm.grpo import grpo_loss     # copied into the job's folder by the grader
        llm = types.ModuleType("rl4llm.llm")
        llm.__path__ = []
        llm.__getattr__ = refuse("rl4llm.llm")
        grpo = types.ModuleType("rl4llm.llm.grpo")
        grpo.__getattr__ = refuse("rl4llm.llm.grpo")
        grpo.grpo_loss = grpo_loss
        root.llm, llm.grpo = llm, grpo
        modules.update({"rl4llm.llm": llm, "rl4llm.llm.grpo": grpo})
    for name in [n for n in sys.modules if n.split(".")[0] in ("rl4llm", "_allowed")]:
        del sys.modules[name]
    sys.modules.update(modules)


class _CappedText(io.TextIOBase):
    """A text stream that counts what is written and keeps only its first ``limit`` characters."""

    def __init__(self, limit: int):
        self.limit, self.count, self.kept = limit, 0, []

    def writable(self) -> bool:
        return True

    def write(self, text) -> int:
        text = str(text)
        room = self.limit - sum(len(k) for k in self.kept) if self.count < self.limit else 0
        if room > 0:
            self.kept.append(text[:room])
        self.count += len(text)
        return len(text)


def _source_without_magics(source: str) -> str:
    """The cell's Python: IPython's ``%`` and ``!`` lines commented out."""
    return "\n".join(f"# {line}" if line.lstrip().startswith(("%", "!")) else line for line in source.split("\n"))


def main(folder: Path) -> None:
    """Run the job in ``folder`` and write ``result.json`` there (see the module's docstring)."""
    job = json.loads((folder / "job.json").read_text())
    record: dict = {"calls": []}
    constants = {name: decode(value, folder) for name, value in job.get("constants", {}).items()}
    if any("torch" in json.dumps(call) for call in job["calls"]) or "llm.grpo.grpo_loss" in job["allowed"]:
        import torch  # noqa: F401 (loaded before the clock of the student's code matters)
    sys.path.insert(0, str(folder))                      # for _allowed, before the student's code runs
    _stand_in(job["allowed"], constants, record)
    sys.path.remove(str(folder))
    sys.meta_path.insert(0, _Blocker(record))
    out = _CappedText(job.get("max_output", 4000))
    real_stdout, real_stderr = sys.stdout, sys.stderr
    sys.stdout = sys.stderr = out
    namespace = {"__name__": "__main__"}
    try:
        try:
            exec(compile(_source_without_magics(job["source"]), "<your cell>", "exec"), namespace)
        except BaseException as err:                              # noqa: BLE001 (reported, not raised)
            record["cell_raised"] = [type(err).__name__, _short(str(err)), _line(err)]
        function = namespace.get(job["function"])
        if "cell_raised" in record:
            pass
        elif job.get("answer"):                  # a by-hand exercise: what the cell left in the name
            record.update({"answer": as_answer(function)} if job["function"] in namespace else {"undefined": True})
        elif not callable(function):
            record["undefined"] = True
        elif "library" not in record:
            for i, call in enumerate(job["calls"]):
                args = tuple(decode(a, folder) for a in call["args"])
                kwargs = {k: decode(v, folder) for k, v in call["kwargs"].items()}
                try:
                    result = call_on_copy(function, args, kwargs, job["output"])
                except LibraryUse:
                    break
                output = result.pop("output", None)
                if isinstance(output, np.ndarray):
                    np.save(folder / f"out{i}.npy", output, allow_pickle=False)
                    result["output"] = f"out{i}.npy"
                elif output is not None:
                    result["status"] = output
                record["calls"].append(result)
    finally:
        sys.stdout, sys.stderr = real_stdout, real_stderr
    loaded = sorted(n for n, m in list(sys.modules.items()) if (n == "rl4llm" or n.startswith("rl4llm."))
                    and m is not None and getattr(m, "__file__", None))    # the real library, got round the block
    if loaded:
        record.setdefault("library", loaded[0])
    record["printed"] = out.count
    record["printed_head"] = "".join(out.kept)
    (folder / "result.json").write_text(json.dumps(record))


def _line(err: BaseException) -> int | None:
    """The line of the student's cell where ``err`` was raised, if it was raised there."""
    if isinstance(err, SyntaxError):
        return err.lineno
    lines = [frame.lineno for frame in traceback.extract_tb(err.__traceback__) if frame.filename == "<your cell>"]
    return lines[-1] if lines else None


if __name__ == "__main__":
    main(Path(sys.argv[1]))
