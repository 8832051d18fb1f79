"""``python -m rl4llm.course.grading autograde <course dir> <assignment>``: grade every submission of an
nbgrader assignment in the bubblewrap sandbox and write the scores into its gradebook (see
:mod:`rl4llm.course.grading.gradebook`)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .bubblewrap import SandboxUnavailable
from .gradebook import autograde
from .sandbox import TIMEOUT


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m rl4llm.course.grading", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("autograde", help="grade an assignment's submissions (nbgrader's pass included)")
    run.add_argument("course", type=Path, help="the nbgrader course folder (holding source/ and gradebook.db)")
    run.add_argument("assignment", help="the assignment's name, such as part1")
    run.add_argument("--student", action="append", help="grade only this student (repeatable)")
    run.add_argument("--timeout", type=float, default=TIMEOUT, help="seconds per exercise and per cell (default %(default)s)")
    args = parser.parse_args(argv)
    if not args.timeout > 0:
        parser.error(f"--timeout must be > 0, got {args.timeout}")
    try:
        autograde(args.course, args.assignment, args.student, args.timeout, say=lambda line: print(line, flush=True))
    except ValueError as err:
        parser.error(str(err))
    except SandboxUnavailable as err:
        print(f"python -m rl4llm.course.grading: refusing to grade: {err}", file=sys.stderr)
        sys.exit(3)


if __name__ == "__main__":
    main()
