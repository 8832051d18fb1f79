"""How long the one command takes to grade a class: N submissions of an assignment, on this machine.

    python benchmarks/grade_class.py [--students 40] [--part part1]

Generates the assignment in a copy of ``course/``, writes N submissions (every third one with its
first coding and by-hand answers wrong, every fifth with the last ones left as released, the rest
right: the mix of tests/grading_course.py), runs ``python -m rl4llm.course.grading autograde`` on them and
prints the wall time, the time per student, the machine and its load. Issue 32's budget: 40
submissions of part1 in under 10 minutes on 2 cores.
"""
from __future__ import annotations

import argparse
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from grading_course import scores_in, submission, write  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=40)
    parser.add_argument("--part", default="part1")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        course = Path(tmp) / "course"
        shutil.copytree(ROOT / "course", course)
        subprocess.run(["nbgrader", "generate_assignment", args.part, "--force"], cwd=course, check=True,
                       capture_output=True)
        names = [f"student{i:02d}" for i in range(args.students)]
        for i, name in enumerate(names):
            write(course, name, args.part, submission(course, args.part, wrong=i % 3 == 1, blank=i % 5 == 4))
        print(f"machine: {platform.machine()}, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}")
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "rl4llm.course.grading", "autograde", str(course), args.part], check=True)
        seconds = time.perf_counter() - start
        scores = scores_in(course, args.part, names)
    print(f"{args.students} submissions of {args.part} graded in {seconds:.0f} s ({seconds / 60:.1f} min, "
          f"{seconds / args.students:.1f} s a student); scores from {min(s for s, _ in scores.values()):g} "
          f"to {max(s for s, _ in scores.values()):g} of {next(iter(scores.values()))[1]:g}")


if __name__ == "__main__":
    main()
