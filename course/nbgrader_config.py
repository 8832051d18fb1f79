# nbgrader's configuration for the course: run every nbgrader command from this folder (course/).
# The source assignments in source/ are written from the chapters by `python scripts/make_course.py`.
c = get_config()  # noqa: F821 (nbgrader provides it)

c.CourseDirectory.course_id = "rl4llm-softmax-to-grpo"
c.CourseDirectory.root = "."
# The stub a student sees where the reference body was (the student edition writes the same one).
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}

# Grading runs every submitted line in a bubblewrap sandbox (rl4llm.course.grading.bubblewrap), whichever
# route starts it: `python -m rl4llm.course.grading autograde . <assignment>` (the documented command),
# `nbgrader autograde <assignment>` run alone, or formgrader's button. nbgrader's kernel runs in the
# sandbox (SandboxedExecute), and each autograded test cell's output is then replaced by the
# out-of-process verdict on the student's solution cell (OutOfProcessGrades, 60 s an exercise), so the
# gradebook's scores are the sandboxed grader's on every run. Without a working `bwrap`, grading
# refuses to run.
c.Autograde.sanitize_preprocessors = [
    "nbgrader.preprocessors.ClearOutput",
    "rl4llm.course.grading.nbgrader_sandbox.SubmittedCells",      # a renamed or pasted cell affects its student alone
    "nbgrader.preprocessors.OverwriteKernelspec",
    "nbgrader.preprocessors.OverwriteCells",
    "nbgrader.preprocessors.CheckCellMetadata",
]
c.Autograde.autograde_preprocessors = [
    "rl4llm.course.grading.nbgrader_sandbox.SandboxedExecute",
    "rl4llm.course.grading.nbgrader_sandbox.OutOfProcessGrades",
    "nbgrader.preprocessors.IgnorePattern",
    "nbconvert.preprocessors.ClearMetadataPreprocessor",
    "nbgrader.preprocessors.LimitOutput",
    "nbgrader.preprocessors.SaveAutoGrades",
    "nbgrader.preprocessors.AssignLatePenalties",
    "nbgrader.preprocessors.CheckCellMetadata",
]
# A cell's time in nbgrader's kernel (its output is feedback; the score comes from the re-grade).
c.Execute.timeout = 60
# nbgrader's exchange (release, fetch and submit between accounts of one JupyterHub): its root is
# created writable by the instructor alone (nbgrader's own release makes it world-writable); the
# students write only to the course's inbound folder. Set c.Exchange.root for your hub.
c.ExchangeFactory.release_assignment = "rl4llm.course.grading.exchange.ReleaseAssignment"
