"""Which pair of clips to ask about next: the latest clips, the pairs asked before, and a pair given back.

A ring buffer of the latest ``max_segs`` clips. A pair is never asked twice; of ``n_candidate_pairs`` random pairs not
asked before, the one the reward ensemble disagrees on most (``drlhp.labelling.pair_selection``'s scorer, once it
has a checkpoint), or the one whose clips lie farthest from those asked about before (``drlhp.labelling.coverage``),
else a random one. A pair whose answer was taken back comes first (``ask_again``).
"""
from __future__ import annotations

import random
from collections import OrderedDict

from drlhp.clips.clip import Clip
from drlhp.errors import ConfigError
from drlhp.labelling.coverage import CoverageScorer
from drlhp.labelling.pair_selection import DEFAULT_N_CANDIDATES, DisagreementScorer


class PairChooser:
    """The clips that may be paired (``clips``, oldest first) and the choice among their pairs."""

    def __init__(self, max_segs: int, seed: int | None = None, n_candidate_pairs: int = DEFAULT_N_CANDIDATES,
                 scorer: DisagreementScorer | None = None, coverage: bool = False) -> None:
        if max_segs < 2:
            raise ConfigError(f"max_segs must be >= 2 to form pairs, got {max_segs}")
        self.max_segs, self.n_candidate_pairs, self.scorer = max_segs, n_candidate_pairs, scorer
        self.coverage = CoverageScorer() if coverage else None
        self.clips: OrderedDict[int, Clip] = OrderedDict()
        self._asked: set[tuple[int, int]] = set()
        self._again: list[tuple[Clip, Clip]] = []  # pairs to ask before any other, the next on top
        self._rng = random.Random(seed)

    def add(self, clip: Clip) -> list[int]:
        """Put a clip in the buffer; returns the ids of the oldest it evicted past ``max_segs``."""
        self.clips[clip.clip_id] = clip
        if self.coverage is not None:
            self.coverage.add(clip)
        evicted = []
        while len(self.clips) > self.max_segs:
            old_id, _ = self.clips.popitem(last=False)
            for scorer in (self.scorer, self.coverage):
                if scorer is not None:
                    scorer.forget(old_id)
            evicted.append(old_id)
        if len(self._asked) > 4 * self.max_segs:
            oldest = next(iter(self.clips))
            self._asked = {p for p in self._asked if p[0] >= oldest}
        return evicted

    def pick(self) -> tuple[Clip, Clip] | None:
        """The pair to ask about next (never one asked before), or None if there is none."""
        if self._again:
            return self._again.pop()
        judged = self.scorer is not None or self.coverage is not None
        candidates = self.candidate_pairs(self.n_candidate_pairs if judged else 1)
        if not candidates:
            return None
        if self.scorer is not None:
            self.scorer.poll()
            self.scorer.refresh(list(self.clips.values()), self.scorer.max_new_per_pick)
            return self.scorer.most_disagreed(candidates) or candidates[0]
        if self.coverage is not None:
            return self.coverage.farthest(candidates) or candidates[0]
        return candidates[0]

    def candidate_pairs(self, n: int) -> list[tuple[Clip, Clip]]:
        """Up to ``n`` distinct random pairs of distinct clips not asked about before."""
        ids = list(self.clips)
        if len(ids) < 2:
            return []
        keys: set[tuple[int, int]] = set()
        for _ in range(4 * n):
            key = _key(*self._rng.sample(ids, 2))
            if key not in self._asked:
                keys.add(key)
                if len(keys) == n:
                    break
        if not keys:  # nearly every pair was asked: look at them all
            unasked = [(a, b) for i, a in enumerate(ids) for b in ids[i + 1:] if _key(a, b) not in self._asked]
            keys = set(self._rng.sample(unasked, min(n, len(unasked))))
        return [(self.clips[a], self.clips[b]) for a, b in keys]

    def mark_asked(self, a: Clip, b: Clip) -> None:
        """Never pick the pair again."""
        self._asked.add(_key(a.clip_id, b.clip_id))
        if self.coverage is not None:
            self.coverage.asked(a, b)

    def unmark_asked(self, a: Clip, b: Clip) -> None:
        """The pair's answer was taken back: it may be picked again."""
        self._asked.discard(_key(a.clip_id, b.clip_id))
        if self.coverage is not None:
            self.coverage.unasked(a, b)

    def ask_again(self, a: Clip, b: Clip) -> None:
        """Pick the pair next, before any other (the last one given back first)."""
        self._again.append((a, b))

    def refresh_scores(self, limit: int) -> None:
        """Load a newer ensemble checkpoint if there is one; score up to ``limit`` clips with it (idle time's work)."""
        if self.scorer is not None:
            self.scorer.poll()
            self.scorer.refresh(list(self.clips.values()), limit)


def _key(a: int, b: int) -> tuple[int, int]:
    return (a, b) if a < b else (b, a)
