"""``DatasetReplayEnv``: a recorded dataset's episodes played back as a gymnasium env.

Wrapped by ``HumanPreferencesEnvWrapper``, a dataset's clips go through the same labellers, label database,
journal and resume as a live run's: the replay is only another source of steps.
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

import gymnasium
import numpy as np

from drlhp.datasets.minari_source import Episode, open_dataset, read_episode
from drlhp.errors import ConfigError, DatasetFormatError, UsageError

if TYPE_CHECKING:
    from minari import MinariDataset

#: ``info`` keys of each step: which episode of the dataset (its id) and which of its observations (0: the first).
EPISODE_KEY, STEP_KEY = "dataset_episode", "dataset_step"
#: The size a re-rendering env is asked to render at (a person is shown renders fitted into 160 px).
RENDER_PX = 160


class DatasetReplayEnv(gymnasium.Env):
    """Plays a Minari dataset's episodes: ``reset()`` starts the next one, ``step()`` moves to its next observation
    with the dataset's reward, termination and truncation (the action is ignored). The last step of an episode
    that the dataset leaves open ends it as truncated.

    Args:
        dataset: a Minari dataset id, its folder, or an opened ``minari.MinariDataset``.
        render_mode: ``"rgb_array"``: ``render()`` shows a person the observation the replay is at (see
            ``render``); None: no renders.
        shuffle: each pass over the dataset plays its episodes in a new random order (seeded by ``reset(seed=)``),
            so clips from all of it meet in pairs; False: in the dataset's order.

    ``info`` of each step names the dataset episode and observation (``EPISODE_KEY``, ``STEP_KEY``).
    """

    metadata = {"render_modes": ["rgb_array"]}

    def __init__(self, dataset: str | MinariDataset, render_mode: str | None = None, shuffle: bool = True) -> None:
        if render_mode not in (None, "rgb_array"):
            raise ConfigError(f"render_mode must be None or 'rgb_array', got {render_mode!r}")
        self.name = dataset if isinstance(dataset, str) else dataset.spec.dataset_id
        self.dataset = open_dataset(dataset) if isinstance(dataset, str) else dataset
        self.observation_space = self.dataset.observation_space
        self.action_space = self.dataset.action_space
        self.render_mode, self.shuffle = render_mode, shuffle
        self.passes = 0  # passes over the dataset begun
        self._order: list[int] = []
        self._episode: Episode | None = None
        self._t = 0
        self._frames = FrameSource(self.dataset, self.name) if render_mode == "rgb_array" else None

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """Start the next episode of this pass (a seeded reset starts a new pass, in that seed's order)."""
        super().reset(seed=seed)
        if seed is not None:
            self._order = []
        if not self._order:
            self._order = [int(i) for i in self.dataset.episode_indices]
            if self.shuffle:
                self.np_random.shuffle(self._order)
            self.passes += 1
        self._episode, self._t = read_episode(self.dataset, self._order.pop(0), repr(self.name)), 0
        return self._episode.observations[0], self._info()

    def step(self, action: Any):
        """Move to the episode's next observation, with its recorded reward (``action`` is ignored)."""
        episode, t = self._episode, self._t
        if episode is None or t >= len(episode):
            raise UsageError("step() after the dataset episode ended: call reset() for the next one")
        self._t = t + 1
        terminated = bool(episode.terminations[t])
        truncated = bool(episode.truncations[t]) or (self._t == len(episode) and not terminated)
        return episode.observations[self._t], float(episode.rewards[t]), terminated, truncated, self._info()

    def _info(self) -> dict:
        assert self._episode is not None
        return {EPISODE_KEY: self._episode.id, STEP_KEY: self._t}

    def render(self) -> np.ndarray | None:  # type: ignore[override]  # gymnasium's RenderFrame is a TypeVar
        """What a person is shown of the observation the replay is at (``render_mode="rgb_array"``): the frame the
        dataset recorded (``infos["render"]``), else the scene re-rendered from the simulator state it recorded
        (``infos["qpos"]`` and ``infos["qvel"]``, MuJoCo), else the observation itself (an image, or a vector
        drawn as bars)."""
        if self._frames is None or self._episode is None:
            return None
        return self._frames.frame(self._episode, self._t)

    def close(self) -> None:
        """Close the env that re-renders recorded states, if one was opened."""
        if self._frames is not None:
            self._frames.close()


class FrameSource:
    """The frames a person is shown of a dataset's observations, by the best means the dataset allows."""

    def __init__(self, dataset: MinariDataset, name: str) -> None:
        self.dataset, self.name = dataset, name
        self._scene: gymnasium.Env | None = None
        low, high = dataset.observation_space.low, dataset.observation_space.high
        self._bar_range = (np.where(np.isfinite(low), low, -5.0), np.where(np.isfinite(high), high, 5.0))

    def frame(self, episode: Episode, t: int) -> np.ndarray:
        infos = episode.infos
        if "render" in infos:
            return np.asarray(infos["render"][t], np.uint8)
        if "qpos" in infos and "qvel" in infos:
            scene = self._scene or self._open_scene()
            scene.unwrapped.set_state(np.asarray(infos["qpos"][t]), np.asarray(infos["qvel"][t]))  # type: ignore[attr-defined]
            return scene.render()  # type: ignore[return-value]
        obs = episode.observations[t]
        return obs if obs.ndim == 3 and obs.dtype == np.uint8 else bars(obs, *self._bar_range)

    def _open_scene(self) -> gymnasium.Env:
        """The dataset's env, made from gymnasium's registry by the id the dataset names (never from an entry point
        the dataset names: that would run code the file chose), to render recorded states."""
        spec = self.dataset.spec.env_spec
        if spec is None or spec.id not in gymnasium.registry:
            raise DatasetFormatError(
                f"dataset {self.name!r} records simulator states (infos qpos, qvel) but names "
                f"{'no env' if spec is None else f'the env {spec.id!r}, which gymnasium does not know here'} to "
                "render them with: install the env's package, or record frames (infos['render']) in the dataset")
        if not os.environ.get("DISPLAY"):
            os.environ.setdefault("MUJOCO_GL", "egl")  # MuJoCo's default (glfw) needs a screen; EGL renders off one
        kwargs = dict(spec.kwargs or {})
        try:
            scene = gymnasium.make(spec.id, render_mode="rgb_array", width=RENDER_PX, height=RENDER_PX, **kwargs)
        except TypeError:  # an env without a render size
            scene = gymnasium.make(spec.id, render_mode="rgb_array", **kwargs)
        scene.reset(seed=0)
        self._scene = scene
        return scene

    def close(self) -> None:
        if self._scene is not None:
            self._scene.close()
            self._scene = None


def bars(values: np.ndarray, low: np.ndarray, high: np.ndarray, size: int = RENDER_PX) -> np.ndarray:
    """A state vector drawn as a person can compare two of: one vertical bar per value, from the middle up or
    down, scaled by the observation space's bounds (or +-5 where unbounded), on a grey background."""
    values = np.ravel(values).astype(np.float64)
    n = len(values)
    image = np.full((size, size, 3), 30, np.uint8)
    image[size // 2] = 90  # the zero line
    span = np.maximum(np.abs(np.ravel(low)), np.abs(np.ravel(high)))[:n]
    heights = np.clip(values / np.where(span > 0, span, 1.0), -1, 1) * (size // 2 - 2)
    width = max(1, size // max(n, 1))
    for i, h in enumerate(heights):
        top, bottom = sorted((size // 2, int(round(size // 2 - h))))
        image[top:bottom + 1, i * width:(i + 1) * width - (1 if width > 2 else 0)] = (80, 180, 255) if h >= 0 else (
            255, 140, 60)
    return image
