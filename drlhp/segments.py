"""Cutting the observation stream into fixed-length segments of one episode each."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from drlhp.frames import FrameSpec


@dataclass
class Segment:
    """``length`` consecutive frames of one episode and the true rewards of those steps.

    ``frames`` has shape ``(length, *frame_shape)``; ``rewards`` has shape
    ``(length,)`` (float64). ``seg_id`` is unique within one wrapper's run;
    ``episode`` identifies the episode, unique across the envs of one run (-1 where
    unknown, e.g. loaded from a file); ``env_index`` is the sub-env of a vector env
    it came from (0 for a single env).
    """

    seg_id: int
    frames: np.ndarray
    rewards: np.ndarray
    episode: int = -1
    env_index: int = 0

    @property
    def true_return(self) -> float:
        return float(self.rewards.sum())


class SegmentBuilder:
    """Accumulates frames and rewards; hands back a full segment every ``length`` steps.

    A segment never spans two episodes: ``end_episode()`` discards the frames of
    an unfinished segment (the "short tail"), so every segment has exactly
    ``length`` frames and every pair compares clips of equal duration.
    """

    def __init__(self, spec: FrameSpec, length: int) -> None:
        self.length = length
        self._frames = np.empty((length, *spec.shape), dtype=np.dtype(spec.dtype))
        self._rewards = np.empty(length, dtype=np.float64)
        self._n = 0
        self.n_tail_frames_dropped = 0

    def add(self, frame: np.ndarray, reward: float) -> Optional[tuple[np.ndarray, np.ndarray]]:
        """Add one step. Returns ``(frames, rewards)`` when a segment is complete.

        The returned arrays are the builder's own buffers: copy them before the
        next ``add()``.
        """
        self._frames[self._n] = frame
        self._rewards[self._n] = reward
        self._n += 1
        if self._n < self.length:
            return None
        self._n = 0
        return self._frames, self._rewards

    def end_episode(self) -> None:
        self.n_tail_frames_dropped += self._n
        self._n = 0
