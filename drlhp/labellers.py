"""Labellers' old import path, kept so old imports (``drlhp.labellers.Labeller``) still work.

Everything is defined in ``drlhp.labelling.labellers``.
"""
from drlhp.labelling.labellers import (
    UNDO,
    ConcurrentLabeller,
    GivesSecondOpinions,
    Labeller,
    NamesAnswerers,
    ServesPage,
    ShowsEpisodes,
    SyntheticLabeller,
    SyntheticTeacher,
    TimesAnswers,
    Undo,
)

__all__ = [
    "Labeller", "ShowsEpisodes", "TimesAnswers", "NamesAnswerers", "GivesSecondOpinions", "ConcurrentLabeller",
    "ServesPage", "SyntheticLabeller", "SyntheticTeacher", "UNDO", "Undo",
]
