"""Who answers "which of these two segments is better?".

A labeller returns the probability that segment ``a`` is preferred: 1.0 (a is
better), 0.0 (b is better), 0.5 (equally good), or ``None`` when the pair is
incomparable (nothing is recorded). The preference interface treats every
labeller the same way; a human labeller plugs in here.
"""
from __future__ import annotations

from typing import Optional, Protocol

from drlhp.segments import Segment


class Labeller(Protocol):
    #: How many pairs to ask about per newly arrived segment; ``None`` asks as
    #: fast as the labeller answers (a person is slower than segments arrive).
    pairs_per_segment: Optional[float]

    def label(self, a: Segment, b: Segment) -> Optional[float]: ...

    def close(self) -> None: ...


class SyntheticLabeller:
    """Prefers the segment with the larger true (environment) return; equal returns are a tie."""

    def __init__(self, pairs_per_segment: float = 1.0) -> None:
        if pairs_per_segment <= 0:
            raise ValueError(f"pairs_per_segment must be > 0, got {pairs_per_segment}")
        self.pairs_per_segment: Optional[float] = pairs_per_segment

    def label(self, a: Segment, b: Segment) -> Optional[float]:
        ra, rb = a.true_return, b.true_return
        return 1.0 if ra > rb else 0.0 if ra < rb else 0.5

    def close(self) -> None:
        pass
