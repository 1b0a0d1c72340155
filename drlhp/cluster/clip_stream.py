"""What travels from env runners to the preference service: a capped, compressed stream of clips.

A Pong runner cuts clips far faster than anyone labels them, each large (docs/benchmarks.md); the
service needs a pool of a few hundred recent candidates and a person labels a pair every few seconds. So each
runner keeps only its share of a cluster-wide rate (``RateCap``) and sends the
clips it keeps zlib-compressed (``PackedClip``: Atari frames are mostly flat background).
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

import numpy as np

from drlhp.clips.clip import pack_frames, unpack_frames
from drlhp.errors import ConfigError


class RateCap:
    """A token bucket: ``take()`` is True at most ``rate`` times per second on average, ``burst`` at once.

    Clips are taken as they finish while tokens last, so the sample spreads over time
    the way the clips do.
    """

    def __init__(self, rate: float, burst: float = 1.0, clock: Callable[[], float] = time.monotonic) -> None:
        if rate <= 0:
            raise ConfigError(f"a clip rate must be > 0 clips/s, got {rate}")
        self.rate, self.burst, self._clock = rate, max(1.0, burst), clock
        self._tokens, self._last = self.burst, clock()

    def take(self) -> bool:
        """True if a clip may be kept now (a token is taken), False if the rate is used up."""
        now = self._clock()
        self._tokens = min(self.burst, self._tokens + (now - self._last) * self.rate)
        self._last = now
        if self._tokens < 1.0:
            return False
        self._tokens -= 1.0
        return True


@dataclass(frozen=True)
class PackedClip:
    """One clip as sent over the network: frames compressed, the env's true rewards, where it came from.

    ``source`` is unique per sub-env of a runner (and new after a restart); ``episode``
    counts that sub-env's episodes. Plain fields only: Ray serialises it without pickling code.
    """

    frames: bytes
    shape: tuple[int, ...]
    dtype: str
    rewards: np.ndarray
    source: int
    episode: int

    @classmethod
    def pack(cls, frames: np.ndarray, rewards: np.ndarray, source: int, episode: int) -> PackedClip:
        """A clip of frames (compressed) and their true rewards, from env source's episode."""
        return cls(pack_frames(frames), tuple(frames.shape), frames.dtype.str,
                   np.array(rewards, dtype=np.float64), source, episode)

    def unpack(self) -> np.ndarray:
        """The clip's frames, (length, *frame_shape)."""
        return unpack_frames(self.frames, self.shape, self.dtype)

    @property
    def nbytes(self) -> int:
        """Bytes on the wire (frames and rewards)."""
        return len(self.frames) + self.rewards.nbytes
