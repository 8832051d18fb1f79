"""Checked exercises of Part IV (chapters 14-16): GRPO on a real model, TRL, the summary."""
from __future__ import annotations

from ._core import FunctionExercise, NumericExercise

SPECS: dict[str, FunctionExercise | NumericExercise] = {}
