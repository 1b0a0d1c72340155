"""A run's learning curve (``<log_dir>/learning_curve.csv``, a row per finished episode): where to import it from.

The examples write it (``LearningCurveWriter``) and ``drlhp plot`` draws it; ``read_learning_curve`` reads it as
arrays. Defined in ``drlhp.storage.curve_csv``, with the file's columns.
"""
from drlhp.storage.curve_csv import (
    COLUMNS,
    LearningCurveWriter,
    current_rows,
    curve_from_rows,
    learning_curve_path,
    next_session,
    read_learning_curve,
    read_rows,
)

__all__ = [
    "COLUMNS", "LearningCurveWriter", "current_rows", "curve_from_rows", "learning_curve_path", "next_session",
    "read_learning_curve", "read_rows",
]
