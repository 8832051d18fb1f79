"""Part III through nbgrader and the out-of-process re-grade (tests/grading_course.py: one part a file,
so that pytest-xdist grades the parts side by side)."""
from grading_course import generated_course, graded  # noqa: F401 (fixtures)
from grading_course import test_nbgrader_scores_right_wrong_and_blank_answers  # noqa: F401

PART = "part3"
