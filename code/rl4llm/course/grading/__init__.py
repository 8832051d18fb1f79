"""Grading that a submission cannot reach: every submitted line runs in a bubblewrap sandbox.

- :mod:`.bubblewrap` builds the sandbox (namespaces, a filesystem without the course, the repository
  or the library, an unprivileged uid, resource limits) and refuses to grade where it cannot run;
- :mod:`.runner` runs a function on copies of the calls (in the student's kernel for practice, or
  as a script in the sandbox), with only the exercise's building blocks of the library;
- :mod:`.sandbox` starts that process for one exercise and turns what it wrote into a verdict;
- :mod:`.notebooks` finds a submitted notebook's graded exercises and their source cells;
- :mod:`.nbgrader_sandbox` puts nbgrader's kernel in the sandbox and its test cells' scores in the
  out-of-process grader's hands (``course/nbgrader_config.py``);
- :mod:`.gradebook` grades a class with one command
  (``python -m rl4llm.course.grading autograde <course dir> <assignment>``).

Nothing here is imported by ``import rl4llm``.
"""
