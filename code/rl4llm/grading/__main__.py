"""``python -m rl4llm.grading autograde <course dir> <assignment>``: re-grade an nbgrader assignment
out of process and write the scores into its gradebook (see :mod:`rl4llm.grading.gradebook`)."""
from __future__ import annotations

import argparse
from pathlib import Path

from .gradebook import autograde
from .sandbox import TIMEOUT


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m rl4llm.grading", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("autograde", help="re-grade an assignment after nbgrader autograde")
    run.add_argument("course", type=Path, help="the nbgrader course folder (holding source/ and gradebook.db)")
    run.add_argument("assignment", help="the assignment's name, such as part1")
    run.add_argument("--student", action="append", help="grade only this student (repeatable)")
    run.add_argument("--timeout", type=float, default=TIMEOUT, help="seconds per exercise (default %(default)s)")
    args = parser.parse_args(argv)
    if not args.timeout > 0:
        parser.error(f"--timeout must be > 0, got {args.timeout}")
    try:
        grades = autograde(args.course, args.assignment, args.student, args.timeout)
    except ValueError as err:
        parser.error(str(err))
    for (student, grade_id), grade in grades.items():
        print(f"{student}\t{grade_id}\t{int(grade.correct)}\t{grade.seconds:.1f}s\t{grade.message}")


if __name__ == "__main__":
    main()
