"""The small messages the processes exchange (see ``drlhp.processes`` for who sends what)."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np


class SegmentData(NamedTuple):
    """Interface -> trainer: a segment's content, sent once, before the first label that uses it."""

    seg_id: int
    frames: np.ndarray
    rewards: np.ndarray


class ForgetSegment(NamedTuple):
    """Interface -> trainer: the interface will not label this segment again."""

    seg_id: int


class Preference(NamedTuple):
    """Interface -> trainer: ``label`` is the probability that segment a is preferred to b.

    1.0: a is better ("L"), 0.0: b is better ("R"), 0.5: equally good ("E").
    """

    seg_id_a: int
    seg_id_b: int
    label: float


class SavePrefs(NamedTuple):
    """Main -> trainer: write train.pkl.gz and val.pkl.gz into ``directory``, then reply."""

    directory: str


# A ``None`` on a queue means "no more messages from this sender".
