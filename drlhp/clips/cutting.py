"""Cutting the observation stream into fixed-length clips (segments) of one episode each."""
from __future__ import annotations

import logging
from typing import NamedTuple

import numpy as np

from drlhp.clips.frames import FrameSpec

log = logging.getLogger("drlhp")


class ClipBuilder:
    """Accumulates frames and rewards; hands back a full clip every ``length`` steps.

    A clip never spans two episodes: ``end_episode()`` discards the frames of
    an unfinished clip (the "short tail"), so every clip has exactly
    ``length`` frames and every pair compares clips of equal duration.
    """

    def __init__(self, spec: FrameSpec, length: int, display_spec: FrameSpec | None = None) -> None:
        self.length = length
        self._frames = np.empty((length, *spec.shape), dtype=np.dtype(spec.dtype))
        self._rewards = np.empty(length, dtype=np.float64)
        self._display = None if display_spec is None else np.empty((length, *display_spec.shape), np.uint8)
        self._n = 0
        self.n_tail_frames_dropped = 0

    def add(self, frame: np.ndarray, reward: float,
            display: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray | None] | None:
        """Add one step (with what a person is shown of it, if the builder keeps that). Returns
        ``(frames, rewards, display)`` when a clip is complete (``display`` None unless kept).

        The returned arrays are the builder's own buffers: copy them before the
        next ``add()``.
        """
        self._frames[self._n] = frame
        self._rewards[self._n] = reward
        if self._display is not None:
            assert display is not None, "a builder made with display_spec is given what is shown of every step"
            self._display[self._n] = display
        self._n += 1
        if self._n < self.length:
            return None
        self._n = 0
        return self._frames, self._rewards, self._display

    def end_episode(self) -> None:
        self.n_tail_frames_dropped += self._n
        self._n = 0


class CutClip(NamedTuple):
    """A clip ``EpisodeClips`` completed; its arrays are a builder's own buffers."""

    env_index: int
    episode: int
    frames: np.ndarray
    rewards: np.ndarray
    display: np.ndarray | None  # what a person is shown of those steps (None: the frames)


class EpisodeClips:
    """Cuts the frames of ``n_envs`` envs stepping together into clips, following each env's episodes.

    One ``ClipBuilder`` per env, so a clip never spans two episodes of one env; each
    episode gets an id unique across the envs. With ``display_spec``, each step also
    brings what a person is shown of it (an RGB image per env), cut alongside.
    """

    def __init__(self, spec: FrameSpec, length: int, n_envs: int, display_spec: FrameSpec | None = None) -> None:
        self.builders = [ClipBuilder(spec, length, display_spec) for _ in range(n_envs)]
        self._episode_ids = list(range(n_envs))
        self._next_episode_id = n_envs
        self._episode_steps = [0] * n_envs
        self._made_a_clip = self._warned_short = False

    def add(self, frames: np.ndarray, rewards, recorded=None, episode_ends=None,
            display: np.ndarray | None = None) -> list[CutClip]:
        """One step of every env; returns each clip it completed.

        ``recorded``: which envs made a real transition (None: all); ``episode_ends``: whose
        episodes ended with this step (None: none); ``display``: what a person is shown of each env's
        step (with ``display_spec``). A clip's arrays are its builder's own buffers: use them before the
        next ``add``.
        """
        clips = []
        for i, builder in enumerate(self.builders):
            if recorded is None or recorded[i]:
                self._episode_steps[i] += 1
                clip = builder.add(frames[i], float(rewards[i]), None if display is None else display[i])
                if clip is not None:
                    clips.append(CutClip(i, self._episode_ids[i], *clip))
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
