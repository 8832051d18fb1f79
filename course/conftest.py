"""The pytest route to grading: ``--submissions DIR`` names a folder of submitted notebooks."""


def pytest_addoption(parser):
    parser.addoption("--submissions", action="store", default=None,
                     help="folder of submitted notebooks (nbgrader assignments or student-edition chapters)")
    parser.addoption("--timeout-per-exercise", action="store", type=float, default=None,
                     help="seconds each exercise's code may run (default: rl4llm.course.grading.sandbox.TIMEOUT, 60)")
