"""Labellers' old import path, kept so old imports (``drlhp.labellers.Labeller``) still work.

Everything is defined in ``drlhp.labelling.labellers``.
"""
from drlhp.labelling.labellers import (
    Labeller,
    SyntheticLabeller,
    SyntheticTeacher,
)

__all__ = [
    "Labeller", "SyntheticLabeller", "SyntheticTeacher",
]
