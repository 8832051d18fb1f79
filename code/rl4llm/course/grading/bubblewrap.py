"""The operating system's sandbox for every line a submission contributes: Debian's bubblewrap.

:func:`command` wraps a Python command line in ``bwrap`` (https://github.com/containers/bubblewrap):

- new PID, network, IPC, UTS and cgroup namespaces: no network at all, and the sandbox's processes
  die with it (``--die-with-parent``: killing the ``bwrap`` process kills its PID namespace, a
  ``setsid`` daemon included);
- a filesystem of its own, built from nothing: the system (``/usr``) and the Python interpreter's
  installation read-only (its own site-packages hidden), the distributions the job may import (numpy and torch for an exercise,
  the Jupyter kernel's for a notebook; never the library ``rl4llm``) mounted read-only one by one
  into ``SITE``, an empty ``/tmp``, and one writable folder, the job's own. The repository, the
  course (its ``source/``, the other students' ``submitted/`` and ``autograded/`` folders,
  ``gradebook.db``) and the grader's virtual environment are not there to read;
- an unprivileged uid: where the grader runs as root, ``setpriv`` drops to ``nobody`` (65534) with
  no capabilities and ``no_new_privs`` before Python starts; elsewhere bubblewrap's user namespace
  maps the sandbox to the grader's own unprivileged uid;
- resource limits (:class:`Limits`): address space, processes, CPU seconds and file size.

Where ``bwrap`` is missing or cannot create its namespaces, :func:`require` raises
:class:`SandboxUnavailable`: grading refuses to run rather than run submitted code unsandboxed.
"""
from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

#: The uid and gid graded code runs as when the grader is root (``nobody``).
NOBODY = 65534
#: Where the job's allowed distributions appear inside the sandbox (on ``sys.path`` via ``site``).
SITE = "/sandbox/site"
#: The distributions an exercise's process may import: numpy, torch, and what they need.
EXERCISE_DISTRIBUTIONS = ("numpy", "torch")
#: The distributions nbgrader's sandboxed kernel may import: the exercise's, and the kernel's own.
KERNEL_DISTRIBUTIONS = EXERCISE_DISTRIBUTIONS + ("ipykernel", "matplotlib")


class SandboxUnavailable(RuntimeError):
    """Raised where bubblewrap cannot run here; grading then refuses to run submitted code at all."""


@dataclass(frozen=True)
class Limits:
    """``setrlimit`` limits of one sandboxed job: bytes of address space (``RLIMIT_AS``), processes
    and threads of its uid (``RLIMIT_NPROC``), CPU seconds of each process (``RLIMIT_CPU``), and bytes
    of any file it writes (``RLIMIT_FSIZE``)."""
    memory: int = 3 * 2 ** 30
    processes: int = 256
    cpu_seconds: int = 120
    file_bytes: int = 8 * 2 ** 20

    def prlimit(self) -> list[str]:
        """util-linux's ``prlimit`` command line that sets these limits (soft and hard) and execs the rest."""
        return [shutil.which("prlimit") or "/usr/bin/prlimit", f"--as={self.memory}", f"--nproc={self.processes}",
                f"--cpu={self.cpu_seconds}", f"--fsize={self.file_bytes}", "--"]


def _requirements(dist: metadata.Distribution) -> list[str]:
    """The names of the distributions ``dist`` needs on this platform (no extras)."""
    from packaging.requirements import Requirement

    names = []
    for text in dist.requires or []:
        req = Requirement(text)
        if req.marker is None or req.marker.evaluate({"extra": ""}):
            names.append(req.name)
    return names


@functools.cache
def site_entries(roots: tuple[str, ...]) -> tuple[Path, ...]:
    """The files and folders on ``sys.path`` that the distributions ``roots`` and everything they
    need (their installed closure) consist of: ``numpy/``, ``numpy.libs/``, ``numpy-2.4.6.dist-info/``...
    A distribution that is not installed is skipped (an optional dependency)."""
    seen, todo, entries = set(), list(roots), {}
    while todo:
        name = re.sub(r"[-_.]+", "-", todo.pop()).lower()
        if name in seen:
            continue
        seen.add(name)
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        base = Path(dist.locate_file(""))
        for file in dist.files or []:
            top = file.parts[0]
            if top not in ("..", "__pycache__") and not top.endswith(".pth") and (base / top).exists():
                entries[top] = base / top
        todo += _requirements(dist)
    return tuple(entries[k] for k in sorted(entries))


def _interpreter() -> tuple[Path, Path, Path]:
    """The real interpreter behind ``sys.executable`` (not a virtual environment's link), its
    installation prefix, and that installation's own site-packages (hidden in the sandbox)."""
    executable = Path(os.path.realpath(sys.executable))
    prefix = Path(os.path.realpath(sys.base_prefix))
    site = Path(sysconfig.get_path("purelib", vars={"base": sys.base_prefix, "platbase": sys.base_prefix}))
    return executable, prefix, site


def _system_mounts() -> list[str]:
    """Read-only ``/usr`` and the links or folders that point into it; the few files of ``/etc``
    the dynamic loader and the C library read."""
    args = ["--ro-bind", "/usr", "/usr"]
    for name in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        path = Path("/") / name
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), str(path)]
        elif path.is_dir():
            args += ["--ro-bind", str(path), str(path)]
    for name in ("ld.so.cache", "ld.so.conf", "localtime", "nsswitch.conf"):
        args += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    return args


def _folders(path: Path) -> list[str]:
    """Arguments that create ``path``'s parent folders in the sandbox, each readable by all (bubblewrap
    otherwise makes them 0700, which the unprivileged uid cannot cross)."""
    return [arg for parent in reversed(Path(path).parents[:-1]) for arg in ("--perms", "0755", "--dir", str(parent))]


def command(python_args: list[str], folder: Path, limits: Limits, distributions: tuple[str, ...] = EXERCISE_DISTRIBUTIONS,
            env: dict[str, str] | None = None, packages: dict[str, Path] | None = None) -> list[str]:
    """The command line that runs ``python -I -S <python_args>`` in a bubblewrap sandbox (see the
    module's docstring) under ``limits``, whose only writable folder is ``folder`` (also its working
    directory and home), with ``distributions`` (and their closure) importable, plus ``packages`` (a
    name inside ``SITE`` -> a folder or file of the grader's to show there read-only). ``folder`` must
    already be writable by the sandbox's uid (:func:`prepare`)."""
    bwrap = require()
    executable, prefix, own_site = _interpreter()
    folder = str(folder)
    environment = {"PATH": "/usr/bin:/bin", "HOME": folder, "TMPDIR": "/tmp", "LANG": "C.UTF-8",
                   "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
                   "MPLCONFIGDIR": folder, "PYTHONDONTWRITEBYTECODE": "1", **(env or {})}
    args = [bwrap, "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
            "--die-with-parent", "--new-session", "--clearenv"]
    if os.geteuid() != 0:
        args += ["--unshare-user", "--uid", str(NOBODY), "--gid", str(NOBODY)]
    for name, value in environment.items():
        args += ["--setenv", name, value]
    args += _system_mounts()
    args += ["--proc", "/proc", "--dev", "/dev", "--perms", "1777", "--tmpfs", "/tmp", *_folders(prefix), "--ro-bind", str(prefix), str(prefix)]
    if own_site.is_dir() and own_site.is_relative_to(prefix):
        args += ["--tmpfs", str(own_site)]
    args += _folders(Path(SITE) / "x")
    shown = {entry.name: entry for entry in site_entries(tuple(distributions))}
    shown.update(packages or {})
    for name, path in sorted(shown.items()):
        args += ["--ro-bind", str(path), f"{SITE}/{name}"]
    args += ["--remount-ro", "/", *_folders(Path(folder)), "--bind", folder, folder, "--chdir", folder, "--"]
    if os.geteuid() == 0:
        args += [shutil.which("setpriv") or "/usr/bin/setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}",
                 "--clear-groups", "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs"]
    args += limits.prlimit()                    # set by the unprivileged uid, which cannot raise them again
    boot = f"import site; site.addsitedir({SITE!r}); import sys; sys.argv[:] = sys.argv[1:]; "
    return args + [str(executable), "-I", "-S", "-c", boot + python_args[0], *python_args[1:]]


def script(path: str, *argv: str) -> list[str]:
    """``python_args`` for :func:`command` that run the script at ``path`` (inside the sandbox) with
    ``argv``, as ``python path argv...`` would."""
    return ["import runpy; runpy.run_path(sys.argv[0], run_name='__main__')", path, *argv]


def module(name: str, *argv: str) -> list[str]:
    """``python_args`` for :func:`command` that run ``python -m name argv...``."""
    return [f"import runpy; runpy.run_module({name!r}, run_name='__main__', alter_sys=True)", name, *argv]


def prepare(folder: Path) -> None:
    """Make ``folder`` (and what is in it) the sandbox's to read and write: owned by ``nobody`` where
    the grader is root (elsewhere it is the grader's own already)."""
    if os.geteuid() == 0:
        for path in [folder, *Path(folder).rglob("*")]:
            os.chown(path, NOBODY, NOBODY, follow_symlinks=False)


@functools.cache
def require() -> str:
    """The path of ``bwrap`` once a trial sandbox has run here; else :class:`SandboxUnavailable`
    saying why (grading never falls back to running submitted code unsandboxed)."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        raise SandboxUnavailable(
            "grading runs submitted code only inside bubblewrap, and `bwrap` is not installed: "
            "install Debian's bubblewrap (apt-get install bubblewrap) and grade again")
    trial = [bwrap, "--unshare-pid", "--unshare-net", "--die-with-parent",
             *(["--unshare-user"] if os.geteuid() != 0 else []), *_system_mounts(), "--proc", "/proc", "--", "/usr/bin/true"]
    result = subprocess.run(trial, capture_output=True, text=True, timeout=60)
    if result.returncode != 0:
        raise SandboxUnavailable(
            "grading runs submitted code only inside bubblewrap, and bwrap cannot create its namespaces "
            f"here ({result.stderr.strip()[-300:] or f'exit code {result.returncode}'}): allow user and PID "
            "namespaces (in a container: run it with --privileged or a seccomp profile that permits "
            "unshare/clone with namespace flags), then grade again")
    return bwrap
