"""MovingDot: steer a dot onto a target square, seen only through pixels.

A small, fast pixel task on which drlhp learns in minutes on a CPU. The dot
(bright) starts in a random cell of a ``grid`` x ``grid`` board; the target (dim
outline) sits in the centre cell, or in a random cell with ``random_target=True``
(a harder task: the reward then depends on where two objects are relative to
each other). Actions are no-op, up, down, left, right. The reward of a step
depends only on the frame after it: ``1 - distance / max_distance`` (Manhattan,
in cells), so 1.0 on the target. That makes it learnable by a per-frame reward
network. Episodes last exactly ``episode_length`` steps (then ``truncated``).
"""
from __future__ import annotations

import gymnasium
import numpy as np
from gymnasium import spaces

from drlhp.errors import ConfigError

MOVES = np.array([(0, 0), (-1, 0), (1, 0), (0, -1), (0, 1)])


class MovingDotEnv(gymnasium.Env):
    """A dot to steer onto a target square on a ``grid`` x ``grid`` board of ``size`` x ``size`` RGB pixels."""
    metadata = {"render_modes": ["rgb_array"], "render_fps": 15}

    def __init__(self, size: int = 64, grid: int = 8, episode_length: int = 50,
                 random_target: bool = False, render_mode: str | None = None) -> None:
        if size % grid:
            raise ConfigError(f"size ({size}) must be a multiple of grid ({grid}): "
                              f"e.g. size={grid * max(1, size // grid)}")
        self.size, self.grid, self.episode_length = size, grid, episode_length
        self.cell = size // grid
        self.random_target = random_target
        self.render_mode = render_mode
        self.observation_space = spaces.Box(0, 255, (size, size, 1), np.uint8)
        self.action_space = spaces.Discrete(len(MOVES))
        self._dot = np.zeros(2, dtype=np.int64)
        self._target = np.zeros(2, dtype=np.int64)
        self._t = 0

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """A new episode: the dot (and, with ``random_target``, the target) in a random cell."""
        super().reset(seed=seed)
        self._dot = self.np_random.integers(0, self.grid, 2)
        self._target = self.np_random.integers(0, self.grid, 2) if self.random_target else np.full(2, self.grid // 2)
        self._t = 0
        return self._render_obs(), {}

    def step(self, action):
        """Move one cell (0 no-op, 1 up, 2 down, 3 left, 4 right); the reward is ``1 - distance / max_distance``."""
        self._dot = np.clip(self._dot + MOVES[int(action)], 0, self.grid - 1)
        self._t += 1
        distance = int(np.abs(self._dot - self._target).sum())
        reward = 1.0 - distance / (2 * (self.grid - 1))
        return self._render_obs(), reward, False, self._t >= self.episode_length, {"distance": distance}

    def _render_obs(self) -> np.ndarray:
        c = self.cell
        frame = np.zeros((self.size, self.size, 1), dtype=np.uint8)
        ty, tx = self._target * c
        frame[ty:ty + c, tx:tx + c] = 100
        frame[ty + 1:ty + c - 1, tx + 1:tx + c - 1] = 0
        dy, dx = self._dot * c
        frame[dy + 1:dy + c - 1, dx + 1:dx + c - 1] = 255
        return frame

    def render(self):
        """The current frame, ``(size, size, 3)`` uint8 (``render_mode="rgb_array"``)."""
        if self.render_mode == "rgb_array":
            return np.repeat(self._render_obs(), 3, axis=2)
        return None
