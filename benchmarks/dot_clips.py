"""Clips of MovingDot for the label-efficiency benchmarks: from a random policy, or from a
policy that is learning (greedy towards the target with probability 1 - epsilon, epsilon
falling from 1 to 0.1 over the stream of clips, as an agent's behaviour improves)."""
from __future__ import annotations

import numpy as np

from drlhp.clips.clip import Clip
from drlhp.envs.moving_dot import MOVES, MovingDotEnv

LENGTH = 25


def greedy_action(env: MovingDotEnv, rng: np.random.Generator) -> int:
    """A move that brings the dot closer to the target (a random one of them), no-op when on it."""
    gap = env._target - env._dot
    better = [a for a, move in enumerate(MOVES) if a and np.abs(gap - move).sum() < np.abs(gap).sum()]
    return int(rng.choice(better)) if better else 0


def clip_stream(n_clips: int, policy: str, random_target: bool, seed: int) -> list[Clip]:
    """``n_clips`` clips of 25 frames in the order a run would see them.

    ``policy``: ``"random"``, or ``"learning"`` (epsilon-greedy, epsilon 1 -> 0.1 linearly
    over the stream).
    """
    rng = np.random.default_rng(seed)
    env = MovingDotEnv(random_target=random_target)
    env.reset(seed=seed)
    clips: list[Clip] = []
    frames, rewards = [], []
    while len(clips) < n_clips:
        epsilon = 1.0 if policy == "random" else 1.0 - 0.9 * len(clips) / n_clips
        action = int(rng.integers(len(MOVES))) if rng.random() < epsilon else greedy_action(env, rng)
        obs, reward, _, truncated, _ = env.step(action)
        frames.append(obs)
        rewards.append(reward)
        if len(frames) == LENGTH:
            clips.append(Clip(len(clips), np.stack(frames), np.array(rewards)))
            frames, rewards = [], []
        if truncated:  # a clip never spans two episodes
            env.reset(seed=int(rng.integers(2 ** 31)))
            frames, rewards = [], []
    return clips


def random_pairs(n_clips: int, n_pairs: int, rng: np.random.Generator) -> np.ndarray:
    """``(n_pairs, 2)`` indices of distinct clips."""
    a = rng.integers(0, n_clips, n_pairs)
    b = (a + rng.integers(1, n_clips, n_pairs)) % n_clips
    return np.stack([a, b], axis=1)
