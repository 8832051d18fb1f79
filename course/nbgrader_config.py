# nbgrader's configuration for the course: run every nbgrader command from this folder (course/).
# The source assignments in source/ are written from the chapters by `python scripts/make_course.py`.
c = get_config()  # noqa: F821 (nbgrader provides it)

c.CourseDirectory.course_id = "rl4llm-softmax-to-grpo"
c.CourseDirectory.root = "."
# The stub a student sees where the reference body was (the student edition writes the same one).
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
# A check runs the student's function on a handful of small cases: seconds, even with torch. The
# score itself comes from `python -m rl4llm.grading autograde . <assignment>`, run after
# `nbgrader autograde`: it re-grades each exercise out of process (60 s each) and writes the gradebook.
c.ExecutePreprocessor.timeout = 60
