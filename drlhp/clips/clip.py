"""Clips (segments) of frames as every process holds them: plain, or with their frames compressed.

Cutting the observation stream into clips is ``drlhp.clips.cutting``'s job.
"""
from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np


@dataclass
class Clip:
    """``length`` consecutive frames of one episode and the true rewards of those steps.

    ``frames`` has shape ``(length, *frame_shape)``; ``rewards`` has shape
    ``(length,)`` (float64). ``clip_id`` is unique within one wrapper's run;
    ``episode`` identifies the episode, unique across the envs of one run (-1 where
    unknown, e.g. loaded from a file); ``env_index`` is the sub-env of a vector env
    it came from (0 for a single env). ``display``: what a person is shown of those
    steps instead of ``frames`` (the env's renders, ``(length, H, W, 3)`` uint8), or
    None: the frames themselves. Only the preference interface holds it: the trainer,
    the database and the journal keep ``frames``.
    """

    clip_id: int
    frames: np.ndarray
    rewards: np.ndarray
    episode: int = -1
    env_index: int = 0
    display: np.ndarray | None = None

    @property
    def true_return(self) -> float:
        return float(self.rewards.sum())

    @property
    def shown(self) -> np.ndarray:
        """The frames a person is shown: ``display`` where there is one, else ``frames``."""
        return self.frames if self.display is None else self.display


def pack_frames(frames: np.ndarray) -> bytes:
    """``frames`` zlib-compressed at level 1 (nearly all the gain, fastest); ``unpack_frames`` undoes it."""
    # The ignore: numpy's stubs declare ndarray.__buffer__ for Python >= 3.12 only, but an ndarray is a
    # buffer on every version.
    return zlib.compress(memoryview(np.ascontiguousarray(frames)).cast("B"), 1)  # type: ignore[arg-type]


def unpack_frames(data: bytes, shape: tuple[int, ...], dtype: np.dtype | str) -> np.ndarray:
    """The frames ``pack_frames`` compressed into ``data`` (a new read-only array)."""
    return np.frombuffer(zlib.decompress(data), np.dtype(dtype)).reshape(shape)


class PackedClip:
    """A ``Clip`` whose frames are kept zlib-compressed in memory; ``frames`` decompresses them.

    Why: the trainer holds thousands of clips, and pixel clips compress well and
    quickly (docs/benchmarks.md, "Memory" and "Figures behind the code"). A training
    step unpacks only its minibatch.
    """

    __slots__ = ("clip_id", "rewards", "episode", "env_index", "_data", "_shape", "_dtype")

    def __init__(self, clip: Clip) -> None:
        self.clip_id, self.rewards = clip.clip_id, clip.rewards
        self.episode, self.env_index = clip.episode, clip.env_index
        self._shape, self._dtype = clip.frames.shape, clip.frames.dtype
        self._data = pack_frames(clip.frames)

    @classmethod
    def from_packed(cls, clip_id: int, data: bytes, shape: tuple, dtype: np.dtype, rewards: np.ndarray,
                    episode: int = -1, env_index: int = 0) -> PackedClip:
        """A clip from already packed frames (as ``packed_frames`` gave them, e.g. read from a file)."""
        clip = cls.__new__(cls)
        clip.clip_id, clip.rewards, clip.episode, clip.env_index = clip_id, rewards, episode, env_index
        clip._data, clip._shape, clip._dtype = data, tuple(shape), np.dtype(dtype)
        return clip

    @property
    def packed_frames(self) -> tuple[bytes, tuple, np.dtype]:
        """The compressed frames with their shape and dtype: what files store, without recompressing."""
        return self._data, self._shape, self._dtype

    @property
    def frames(self) -> np.ndarray:
        """The frames, unpacked (a new read-only array on every access: keep it if you need it twice)."""
        return unpack_frames(self._data, self._shape, self._dtype)

    @property
    def true_return(self) -> float:
        return float(self.rewards.sum())

    @property
    def nbytes(self) -> int:
        """Bytes held: the packed frames and the rewards."""
        return len(self._data) + self.rewards.nbytes


def pack(clip) -> PackedClip:
    """``clip`` with its frames compressed (``clip`` itself if it already is)."""
    return clip if isinstance(clip, PackedClip) else PackedClip(clip)
