"""Each chapter's coursework, one module per chapter named for its notebook (``book/NN_<stem>.ipynb`` ->
``<stem>.py``), declared once where a new chapter adds its own: its place and plan in the syllabus (number, part
and lecture, objective, minutes, each exercise's objective, the kinds its titles do not name), which
``rl4llm.course.syllabus`` gathers, and the checks of its exercises (``SPECS``, as a part module registers them),
which ``rl4llm.exercises`` gathers. The chapters written before this folder keep their checks in ``part1``..
``part5``."""
