"""Your own labeller: the protocols the preference interface asks of it, where to import them from.

``Labeller`` is what every labeller is (``label(a, b)``); the others are what one may also do. Defined in
``drlhp.labelling.protocols``; ``drlhp.SyntheticTeacher`` configures the synthetic labeller.
"""
from drlhp.labelling.protocols import (
    UNDO,
    ConcurrentLabeller,
    GivesSecondOpinions,
    Labeller,
    NamesAnswerers,
    ServesPage,
    ShowsEpisodes,
    TimesAnswers,
    Undo,
)

__all__ = [
    "Labeller", "ShowsEpisodes", "TimesAnswers", "NamesAnswerers", "GivesSecondOpinions", "ConcurrentLabeller",
    "ServesPage", "UNDO", "Undo",
]
