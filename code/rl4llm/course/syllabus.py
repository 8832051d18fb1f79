"""The course as data, for an instructor: every exercise's kind, objective and points, the rubrics
of the work graded by hand, the 5-week syllabus (lectures, reading, what is due; a four-week module
stops after Part IV) and the end-of-module project. The instructor guide (book/instructor_guide.ipynb) prints its tables from here;
``tests/test_coursework.py`` and ``tests/test_syllabus.py`` hold every exercise of the book to it.

Kinds. A chapter names an exercise's kind at the end of its title, "(by hand)", "(coding)" or
"(experiment)" (``rl4llm.course.assignments.exercises`` reads it). The exercises written before that
convention name none, so an assignment plan that reads titles skipped them; :data:`UNTITLED_KINDS`
gives theirs: most are *written* work (derive, prove or explain, and check it with the library: a
short write-up graded by hand with ``RUBRICS["written"]``), the others experiments.

Times are estimates (minutes a student is expected to spend), not measurements.
"""
from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass

from ..exercises import chapters as _chapters

KINDS = ("by hand", "coding", "written", "experiment")

#: How each kind is handed in and graded.
GRADED_BY = {
    "by hand": "one number: practised in the answer box or a check cell; handed in as its nbgrader answer cell, "
               "graded out of process within its tolerance",
    "coding": "one function, checked automatically (nbgrader or the pytest route)",
    "written": "a short write-up (a derivation or an argument, with its numerical check), graded by hand",
    "experiment": "a prediction, the runs and an explanation, graded by hand (where the book's answer box checks "
                  "the experiment's result, that result is handed in as a number and graded as a by-hand answer)",
}

#: Points of an exercise of each kind; a kind graded by hand has a rubric that adds up to them.
POINTS = {"by hand": 1, "coding": 2, "written": 3, "experiment": 5}


@dataclass(frozen=True)
class Criterion:
    points: int
    earns: str          # what earns the points


#: Rubrics of the work graded by hand. An experiment's rubric reads with its objective: the
#: explanation earns its points when it reaches the objective (the solution says what to look for).
RUBRICS = {
    "written": (
        Criterion(1, "the result asked for (a value, a formula or a yes/no), correct"),
        Criterion(2, "the derivation or argument: each step follows from the chapter's formulas; where the "
                     "exercise asks for a numerical check, the code and its output agree with the result"),
    ),
    "experiment": (
        Criterion(1, "a prediction written before the run, with a reason from the chapter's formulas"),
        Criterion(2, "the runs or slider positions asked for, stated so that they can be repeated (settings, "
                     "seeds), with the numbers or plot that answer the question"),
        Criterion(2, "an explanation of what was seen that reaches the exercise's objective; a wrong prediction, "
                     "explained, earns these points in full"),
    ),
}

#: An experiment whose result the book's answer box checks: the point for "the numbers that answer the question" is
#: that result, graded out of process like a by-hand answer, and the rest of the rubric is graded by hand (so the
#: experiment is worth the same as any other).
CHECKED_RESULT = Criterion(1, "the result the book's answer box checks, handed in as a number and graded "
                              "automatically within the answer box's tolerance")
CHECKED_EXPERIMENT_RUBRIC = (
    RUBRICS["experiment"][0],
    Criterion(RUBRICS["experiment"][1].points - CHECKED_RESULT.points,
              "the runs or slider positions asked for, stated so that they can be repeated (settings, seeds), with "
              "the numbers or plot that answer the question beyond the checked result"),
    RUBRICS["experiment"][2],
)


@dataclass(frozen=True)
class Lecture:
    title: str
    chapters: tuple[int, ...]


@dataclass(frozen=True)
class Week:
    title: str
    lectures: tuple[Lecture, ...]

    @property
    def chapters(self) -> tuple[int, ...]:
        return tuple(c for lecture in self.lectures for c in lecture.chapters)


#: Every chapter's place and plan, declared in the chapter's own module (``exercises/chapters/<stem>.py`` for
#: ``book/NN_<stem>.ipynb``: its number, part and lecture, objective, minutes, its exercises' objectives and
#: the kinds its titles do not name), in the book's order.
CHAPTERS = tuple(sorted((importlib.import_module(f"{_chapters.__name__}.{module.name}")
                         for module in pkgutil.iter_modules(_chapters.__path__)), key=lambda c: c.NUMBER))
#: The kind of each exercise whose title names none.
UNTITLED_KINDS = {label: k for c in CHAPTERS for label, k in c.UNTITLED_KINDS.items()}
#: What a student can do after each exercise (by label).
OBJECTIVES = {label: objective for c in CHAPTERS for label, objective in c.EXERCISE_OBJECTIVES.items()}
#: What a student can do after each chapter.
CHAPTER_OBJECTIVES = {c.NUMBER: c.OBJECTIVE for c in CHAPTERS}
#: Estimated minutes per chapter: (reading its text and code, doing its exercises).
MINUTES = {c.NUMBER: c.MINUTES for c in CHAPTERS}

#: The parts of the book, one a week (Part V and the summary share the last; a four-week module stops after
#: Part IV), and the title of each of a part's two lectures; a chapter names its part and lecture.
PART_TITLES = ("Part I: from softmax to SFT", "Part II: the RL core", "Part III: reusing samples, trust regions, GRPO",
               "Part IV: GRPO on a real model", "Part V: after GRPO, and the summary")
LECTURE_TITLES = {
    (1, 1): "Distributions, decoding and strings", (1, 2): "Cross-entropy, SFT and the two KLs",
    (2, 1): "Estimating reward; the score function", (2, 2): "Baselines and the on-policy loop",
    (3, 1): "Importance sampling and PPO's clip", (3, 2): "Credit assignment and GRPO; GRPO's choices",
    (4, 1): "GRPO on a tiny transformer", (4, 2): "From the book to TRL",
    (5, 1): "Every estimator against the exact gradient; where the KL goes; sequence ratios, dynamic sampling, pass@k",
    (5, 2): "The arithmetic of a real run; when the sampler is not the trainer; every method side by side",
}
#: Five weeks, two lectures each: each lecture's chapters are those that name it.
WEEKS = tuple(Week(title, tuple(Lecture(LECTURE_TITLES[part, lecture],
                                        tuple(c.NUMBER for c in CHAPTERS if (c.PART, c.LECTURE) == (part, lecture)))
                                for (p, lecture) in LECTURE_TITLES if p == part))
              for part, title in enumerate(PART_TITLES, 1))


@dataclass(frozen=True)
class Project:
    title: str
    week_released: int
    week_due: int
    points: int
    brief: str
    deliverables: tuple[str, ...]
    rubric: tuple[Criterion, ...]


#: The end-of-module project, on chapter 15's trainer.
PROJECT = Project(
    title="One knob of GRPO, measured",
    week_released=3, week_due=4, points=20,
    brief=("Choose one field of `rl4llm.llm.trainer.GRPOConfig` (not `seed`, `device` or `num_threads`) and a second "
           "value for it. Predict, from the book's formulas, how moving it changes the tiny transformer's final "
           "held-out accuracy and one diagnostic of `GRPOTrainer.metrics` (clip fraction, KL, zero-signal "
           "groups...). Starting from chapter 15's warm start with `chapter15_config()` (shortened if the "
           "budget needs it, the same for both settings), run `GRPOTrainer` at both values over enough seeds "
           "to call the difference you predicted (size it with `rl4llm.math.statistics.seeds_needed` and the spread "
           "chapter 15 prints), and report whether the difference clears the noise floor "
           "(`rl4llm.math.statistics.verdict`)."),
    deliverables=("a notebook that runs top to bottom and reproduces every number it states",
                  "a one-page report: prediction, design, results with their noise floor, explanation"),
    rubric=(
        Criterion(3, "a prediction stated before the runs, for the accuracy and the diagnostic, with the "
                     "formula or mechanism it comes from"),
        Criterion(4, "a design that can answer it: one field changed, everything else fixed and stated, the "
                     "number of seeds sized with seeds_needed from a stated spread and difference"),
        Criterion(4, "the runs reproduce: configurations and seeds in the notebook, which runs top to bottom "
                     "and prints every number the report uses"),
        Criterion(5, "results read correctly: means and spread over seeds, the noise floor, and a verdict "
                     "that does not claim more than the floor allows; the diagnostic plotted over steps"),
        Criterion(4, "an explanation that connects what was seen (or not seen) to the book's formulas for "
                     "that field, including why the prediction held or failed"),
    ),
)


def kind(exercise) -> str:
    """The kind of ``exercise`` (an :class:`~rl4llm.course.assignments.Exercise`, which builds on this module
    and so is not imported here): its title's, or :data:`UNTITLED_KINDS`'s."""
    return exercise.kind or UNTITLED_KINDS[exercise.label]


def points(exercise) -> int:
    return POINTS[kind(exercise)]


def total(rubric) -> int:
    return sum(criterion.points for criterion in rubric)


def assigned(chapter_exercises: list) -> list:
    """What the syllabus assigns from one chapter: every by-hand and coding exercise (checked
    automatically), its first written exercise and its first experiment (graded by hand)."""
    chosen = [e for e in chapter_exercises if kind(e) in ("by hand", "coding")]
    for graded_by_hand in ("written", "experiment"):
        chosen += [e for e in chapter_exercises if kind(e) == graded_by_hand][:1]
    return sorted(chosen, key=lambda e: int(e.number.split(".")[1]))
