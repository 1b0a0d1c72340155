"""The learning curve's old import path, kept so old imports still work.

Everything is defined in ``drlhp.cli.learning_curve``.
"""
from drlhp.cli.learning_curve import (
    COLUMNS,
    RUNS,
    LearningCurveWriter,
    current_rows,
    learning_curve_path,
    next_session,
    read_learning_curve,
    read_rows,
    smooth,
)
from drlhp.storage.layout import LEARNING_CURVE_FILENAME as FILENAME

__all__ = [
    "COLUMNS", "FILENAME", "RUNS", "LearningCurveWriter", "current_rows", "learning_curve_path", "next_session",
    "read_learning_curve", "read_rows", "smooth",
]
