"""Labellers' old import path, kept so old imports (``drlhp.labellers.Labeller``) still work.

Everything is defined in ``drlhp.labelling.labellers``.
"""
from drlhp.labelling.labellers import (
    ConcurrentLabeller,
    Labeller,
    ServesPage,
    ShowsEpisodes,
    SyntheticLabeller,
    SyntheticTeacher,
    TimesAnswers,
)

__all__ = [
    "Labeller", "ShowsEpisodes", "TimesAnswers", "ConcurrentLabeller", "ServesPage", "SyntheticLabeller",
    "SyntheticTeacher",
]
