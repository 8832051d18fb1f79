"""Grading that a submission cannot influence: each exercise's function runs in a fresh process.

- :mod:`.runner` runs a function on copies of the calls (in the student's kernel for practice, or
  as a script in the sandbox), with the library blocked;
- :mod:`.sandbox` starts that process for one exercise and turns what it wrote into a verdict;
- :mod:`.notebooks` finds a submitted notebook's graded exercises and their source cells;
- :mod:`.gradebook` re-grades an nbgrader assignment and writes the scores into its gradebook
  (``python -m rl4llm.grading autograde <course dir> <assignment>``).

Nothing here is imported by ``import rl4llm``.
"""
