"""Cutting the observation stream into fixed-length segments of one episode each."""
from __future__ import annotations

import logging
import zlib
from dataclasses import dataclass

import numpy as np

from drlhp.clips.frames import FrameSpec

log = logging.getLogger("drlhp")


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


def pack_frames(frames: np.ndarray) -> bytes:
    """``frames`` zlib-compressed at level 1 (nearly all the gain, fastest); ``unpack_frames`` undoes it."""
    # The ignore: numpy's stubs declare ndarray.__buffer__ for Python >= 3.12 only, but an ndarray is a
    # buffer on every version.
    return zlib.compress(memoryview(np.ascontiguousarray(frames)).cast("B"), 1)  # type: ignore[arg-type]


def unpack_frames(data: bytes, shape: tuple[int, ...], dtype: np.dtype | str) -> np.ndarray:
    """The frames ``pack_frames`` compressed into ``data`` (a new read-only array)."""
    return np.frombuffer(zlib.decompress(data), np.dtype(dtype)).reshape(shape)


class PackedSegment:
    """A ``Segment`` whose frames are kept zlib-compressed in memory; ``frames`` decompresses them.

    Why: the trainer holds thousands of clips, and pixel clips compress well
    (a 25-frame Pong clip with a 4-frame stack: 0.7 MB -> ~9 kB, 80x; 0.9 ms to pack,
    0.7 ms to unpack). A training step unpacks only its minibatch.
    """

    __slots__ = ("seg_id", "rewards", "episode", "env_index", "_data", "_shape", "_dtype")

    def __init__(self, seg: Segment) -> None:
        self.seg_id, self.rewards, self.episode, self.env_index = seg.seg_id, seg.rewards, seg.episode, seg.env_index
        self._shape, self._dtype = seg.frames.shape, seg.frames.dtype
        self._data = pack_frames(seg.frames)

    @classmethod
    def from_packed(cls, seg_id: int, data: bytes, shape: tuple, dtype: np.dtype, rewards: np.ndarray,
                    episode: int = -1, env_index: int = 0) -> PackedSegment:
        """A segment from already packed frames (as ``packed_frames`` gave them, e.g. read from a file)."""
        seg = cls.__new__(cls)
        seg.seg_id, seg.rewards, seg.episode, seg.env_index = seg_id, rewards, episode, env_index
        seg._data, seg._shape, seg._dtype = data, tuple(shape), np.dtype(dtype)
        return seg

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


def pack(seg) -> PackedSegment:
    """``seg`` with its frames compressed (``seg`` itself if it already is)."""
    return seg if isinstance(seg, PackedSegment) else PackedSegment(seg)


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

    def add(self, frame: np.ndarray, reward: float) -> tuple[np.ndarray, np.ndarray] | None:
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


class EpisodeClips:
    """Cuts the frames of ``n_envs`` envs stepping together into clips, following each env's episodes.

    One ``SegmentBuilder`` per env, so a clip never spans two episodes of one env; each
    episode gets an id unique across the envs.
    """

    def __init__(self, spec: FrameSpec, length: int, n_envs: int) -> None:
        self.builders = [SegmentBuilder(spec, length) for _ in range(n_envs)]
        self._episode_ids = list(range(n_envs))
        self._next_episode_id = n_envs
        self._episode_steps = [0] * n_envs
        self._made_a_clip = self._warned_short = False

    def add(self, frames: np.ndarray, rewards, recorded=None,
            episode_ends=None) -> list[tuple[int, int, np.ndarray, np.ndarray]]:
        """One step of every env; returns ``(env_index, episode_id, frames, rewards)`` of each clip it completed.

        ``recorded``: which envs made a real transition (None: all); ``episode_ends``: whose
        episodes ended with this step (None: none). A clip's arrays are its builder's own
        buffers: use them before the next ``add``.
        """
        clips = []
        for i, builder in enumerate(self.builders):
            if recorded is None or recorded[i]:
                self._episode_steps[i] += 1
                clip = builder.add(frames[i], float(rewards[i]))
                if clip is not None:
                    clips.append((i, self._episode_ids[i], *clip))
                    self._made_a_clip = True
            if episode_ends is not None and episode_ends[i]:
                self.end_episode(i)
        return clips

    def end_episode(self, env_index: int) -> None:
        """Env ``env_index``'s episode ended (or it was reset): its unfinished clip is dropped."""
        # Called at the end of an episode and again by the reset() that follows: count it once.
        if self._episode_steps[env_index]:
            self._warn_if_too_short(self._episode_steps[env_index])
            self.builders[env_index].end_episode()
            self._episode_ids[env_index] = self._next_episode_id
            self._next_episode_id += 1
            self._episode_steps[env_index] = 0

    def _warn_if_too_short(self, episode_steps: int) -> None:
        """Say so (once) when episodes end before a first clip: labelling would otherwise wait in silence."""
        length = self.builders[0].length
        if episode_steps < length and not self._made_a_clip and not self._warned_short:
            self._warned_short = True
            log.warning("an episode ended after %d steps, before a clip of segment_length=%d steps was complete: "
                        "no clip is made from episodes this short, so there is nothing to label. Use a "
                        "segment_length shorter than the env's episodes.", episode_steps, length)

    @property
    def n_tail_frames_dropped(self) -> int:
        return sum(b.n_tail_frames_dropped for b in self.builders)
