"""The chapters' kernels, for every test run (strict nbval collects book/, the tests tests/).

Every chapter's kernel (strict nbval) starts as on another CPU, with an empty warm-start cache: in a
run that sets no ``ATEN_CPU_CAPABILITY``, torch in the kernel is forced onto the kernels of another
instruction set (``rl4llm.llm.portability.other_capability``: AVX2 on an AVX-512 machine, none on an AVX2
one), while the library's own tests use this CPU's. So every run checks the stored outputs, written on
one machine, on a CPU that did not write them, and a change that makes an output depend on the CPU
fails on the contributor's machine. A run that sets the capability itself (README: the whole suite as
another CPU would run it) keeps it everywhere. After a chapter, its cache must still be empty: no
chapter may rest on a warm start it trained and cached.

The longest test files run first (``LONGEST_FIRST``), so that pytest-xdist's two workers end together.
"""
import functools
import os
import pathlib
import shutil
import tempfile

import pytest


@functools.cache
def chapter_capability() -> str | None:
    """The ``ATEN_CPU_CAPABILITY`` the chapters' kernels start with: None where the run sets one."""
    from rl4llm.llm.portability import other_capability

    return None if "ATEN_CPU_CAPABILITY" in os.environ else other_capability()


@functools.cache
def chapter_cache(notebook: pathlib.Path) -> pathlib.Path:
    """The warm-start cache a chapter's kernel gets: a folder of its own, empty at the start."""
    return pathlib.Path(tempfile.mkdtemp(prefix=f"rl4llm-cache-{notebook.stem}-"))


#: The longest test files, longest first, in worker-seconds of the whole suite on 2 cores (``--durations=0``,
#: summed by file, 2026-12-03): the browser visits of every page with the book's build 373, chapter 20 225,
#: chapter 15 157, the charts in the browser 144, chapter 18 126, the charts' data 90, the grading tests 68 and
#: 61, chapter 16 61, chapter 19 49, the launches 44. They are handed out first and every other file after
#: them, in collection order (pytest.ini turns off xdist's own order, by the number of tests in a file, which
#: put chapter 20's cells near the end). Chapters 20 and 15 come before the browser's charts: the second worker
#: trains while the first builds the book that both browser files wait for.
LONGEST_FIRST = ["tests/test_browser.py", "book/20_sampler_trainer.ipynb", "book/15_tiny_transformer.ipynb",
                 "tests/test_browser_charts.py", "book/18_sequence_ratios.ipynb", "tests/test_charts.py",
                 "tests/test_grading.py", "tests/test_grading_sandbox.py", "book/16_to_trl.ipynb",
                 "book/19_real_runs.ipynb", "tests/test_grpo_trl_script.py"]


def pytest_collection_modifyitems(config, items):
    """``LONGEST_FIRST`` first, each file's tests in their order, then the rest as collected."""
    rank = {path: i for i, path in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(pathlib.Path(os.path.relpath(item.path, config.rootpath)).as_posix(), len(rank)))


def _is_chapter(item) -> bool:
    return item.path.suffix == ".ipynb"


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item):
    """A chapter's kernel starts (at its first cell's setup) with the capability and the cache of the
    module docstring; the test process's own environment is put back at once."""
    if not _is_chapter(item):
        return (yield)
    saved = {name: os.environ.get(name) for name in ("ATEN_CPU_CAPABILITY", "RL4LLM_CACHE")}
    if chapter_capability():
        os.environ["ATEN_CPU_CAPABILITY"] = chapter_capability()
    item.user_properties.append(("ATEN_CPU_CAPABILITY", os.environ.get("ATEN_CPU_CAPABILITY", "native")))
    os.environ["RL4LLM_CACHE"] = str(chapter_cache(item.path))
    try:
        return (yield)
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item, nextitem):
    """After a chapter's last cell: its warm-start cache is still empty."""
    result = yield
    if _is_chapter(item) and (nextitem is None or nextitem.path != item.path):
        cache = chapter_cache(item.path)
        left = sorted(p.name for p in cache.iterdir())
        shutil.rmtree(cache, ignore_errors=True)
        assert not left, f"{item.path.name} trained and cached a warm start ({left}): ship it or do not cache it"
    return result
