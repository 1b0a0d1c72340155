"""Which pair to ask about: the one whose clips lie farthest from the clips asked about before.

Why: a label teaches about what its two clips show. When the agent seldom does something (a hopper that seldom
stands), random pairs seldom show it, and the reward model never learns what it is worth. B-Pref (Lee et al. 2021)
picks pairs by k-center coverage for this. Here a clip is described by its observations' per-dimension mean and std
over its steps (images pooled to a coarse grid first); of ``n_candidate_pairs`` random pairs, the one asked is the
one whose two clips are farthest, in those features scaled by their spread over the clips on offer, from the nearest
clip asked about so far. No reward model is needed, so it works from the first label. A resumed run starts with
nothing covered: the clips asked about in earlier sessions are kept by the trainer, not by the interface.
"""
from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence

import numpy as np

from drlhp.clips.clip import Clip

#: Cells per axis that an image's axes are averaged down to (8 x 8 x channels for Atari's 84 x 84 x 4).
GRID = 8
#: Clips asked about that are remembered; the oldest are forgotten past it (bounds memory and the time of a pick).
MAX_COVERED = 4096


def clip_features(frames: np.ndarray) -> np.ndarray:
    """A clip's ``(length, *frame_shape)`` frames as one vector: the mean and std over time of each (pooled) dim."""
    x: np.ndarray = frames.astype(np.float32)
    if x.ndim >= 3:  # images: average each axis longer than GRID down to GRID cells
        for axis in range(1, x.ndim):
            if x.shape[axis] > GRID:
                edges = np.linspace(0, x.shape[axis], GRID + 1).astype(int)
                x = np.add.reduceat(x, edges[:-1], axis=axis) / np.diff(edges).astype(np.float32).reshape(
                    [-1 if a == axis else 1 for a in range(x.ndim)])
    x = x.reshape(len(x), -1)
    return np.concatenate([x.mean(axis=0), x.std(axis=0)])


class CoverageScorer:
    """Features of the clips on offer and of those asked about, and the candidate pair that covers the most."""

    def __init__(self) -> None:
        self._features: dict[int, np.ndarray] = {}  # clips on offer
        # clips asked about (some may have left the buffer) -> (features, pairs asked with it)
        self._covered: OrderedDict[int, tuple[np.ndarray, int]] = OrderedDict()

    def add(self, clip: Clip) -> None:
        self._features[clip.clip_id] = clip_features(clip.frames)

    def forget(self, clip_id: int) -> None:
        """The clip left the buffer (its features stay among the covered ones if it was asked about)."""
        self._features.pop(clip_id, None)

    def asked(self, a: Clip, b: Clip) -> None:
        for clip in (a, b):
            features, n = self._covered.pop(clip.clip_id, (None, 0))  # re-inserted: the newest is forgotten last
            if features is None:  # a pair asked again after its answer was taken back may have left the buffer
                features = self._features.get(clip.clip_id, None)
                features = clip_features(clip.frames) if features is None else features
            self._covered[clip.clip_id] = (features, n + 1)
        while len(self._covered) > MAX_COVERED:
            self._covered.popitem(last=False)

    def unasked(self, a: Clip, b: Clip) -> None:
        """The pair's answer was taken back: its clips count as covered only through other pairs asked."""
        for clip in (a, b):
            features, n = self._covered.get(clip.clip_id, (None, 0))
            if features is None:
                continue
            if n > 1:
                self._covered[clip.clip_id] = (features, n - 1)
            else:
                del self._covered[clip.clip_id]

    def farthest(self, candidates: Sequence[tuple[Clip, Clip]]) -> tuple[Clip, Clip] | None:
        """The candidate whose clips' distances to their nearest covered clip sum highest; None before the first
        pair is asked (nothing is covered yet: any pair covers as much)."""
        if not self._covered or not candidates:
            return None
        ids = sorted({c.clip_id for pair in candidates for c in pair})
        x = np.stack([self._features[i] for i in ids])  # candidates are clips on offer
        # Scaled by the spread over the clips on offer: a dimension that barely varies must not dominate.
        scale = np.stack(list(self._features.values())).std(axis=0) + 1e-6
        x = x / scale
        covered = np.stack([f for f, _ in self._covered.values()]) / scale
        # Squared distances by |x|^2 + |c|^2 - 2 x.c: no (candidates x covered x dims) array.
        d2 = (x * x).sum(1)[:, None] + (covered * covered).sum(1)[None, :] - 2 * x @ covered.T
        nearest = dict(zip(ids, np.sqrt(np.maximum(d2.min(axis=1), 0.0)), strict=True))
        return max(candidates, key=lambda p: nearest[p[0].clip_id] + nearest[p[1].clip_id])
