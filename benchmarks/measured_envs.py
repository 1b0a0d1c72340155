"""The envs the benchmarks measure (MovingDot and Pong), and what measuring them shares: a checkpoint to predict
rewards with, random-action stepping, one thread, the per-env command line."""
from __future__ import annotations

import os

import gymnasium
import numpy as np
import torch

import drlhp  # noqa: F401  (registers drlhp/MovingDot-v0)
from drlhp.clips.frames import infer_frame_spec
from drlhp.reward.predictor import DEFAULT_ENSEMBLE_SIZE, NetConfig, RewardPredictor


def make_env(name: str) -> gymnasium.Env:
    """``"moving_dot"`` (64x64x1) or ``"pong"`` (84x84 grayscale, frame skip 4, 4-frame stack)."""
    if name == "moving_dot":
        return gymnasium.make("drlhp/MovingDot-v0")
    import ale_py
    from gymnasium.wrappers import AtariPreprocessing, FrameStackObservation

    gymnasium.register_envs(ale_py)
    env = gymnasium.make("ALE/Pong-v5", frameskip=1, repeat_action_probability=0.0)
    return FrameStackObservation(AtariPreprocessing(env, frame_skip=4, screen_size=84), 4)


def make_vec_env(name: str, n_envs: int):
    """An SB3 VecEnv of ``n_envs``: MovingDot, or Pong by SB3's Atari recipe (``make_atari_env`` + 4-frame stack)."""
    from stable_baselines3.common.env_util import make_atari_env
    from stable_baselines3.common.env_util import make_vec_env as sb3_make_vec_env
    from stable_baselines3.common.vec_env import VecFrameStack

    if name == "moving_dot":
        return sb3_make_vec_env("drlhp/MovingDot-v0", n_envs=n_envs, seed=0)
    import ale_py

    gymnasium.register_envs(ale_py)
    # NoFrameskip: SB3's AtariWrapper skips 4 frames itself (ALE/Pong-v5 would skip 4 x 4).
    return VecFrameStack(make_atari_env("PongNoFrameskip-v4", n_envs=n_envs, seed=0), 4)


def untrained_checkpoint(env, directory: str) -> str:
    """Write a checkpoint of an untrained network for ``env`` (one env, an SB3 VecEnv or a gymnasium
    vector env); its forward cost is what we measure."""
    spec = infer_frame_spec(getattr(env, "single_observation_space", env.observation_space).sample())
    path = os.path.join(directory, "reward_predictor.ckpt")
    RewardPredictor(NetConfig(spec, n_members=DEFAULT_ENSEMBLE_SIZE)).save(path)
    return directory


def steps_per_second(env: gymnasium.Env, n_steps: int, seed: int = 0) -> float:
    """Random-action steps per second (actions drawn beforehand, so only stepping is timed)."""
    import time

    rng = np.random.default_rng(seed)
    actions = rng.integers(0, env.action_space.n, n_steps)
    env.reset(seed=seed)
    start = time.perf_counter()
    for a in actions:
        _, _, terminated, truncated, _ = env.step(int(a))
        if terminated or truncated:
            env.reset()
    return n_steps / (time.perf_counter() - start)


def one_thread() -> None:
    torch.set_num_threads(1)


def run_per_env(doc: str, measure, count_flag: str, count_default, *extra_args) -> None:
    """Command line shared by the per-env benchmarks: ``measure(env_name, count, *extras)`` for each env.

    ``extra_args``: (flag, type, default, help) for further options, passed on in order.
    """
    import argparse

    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(count_flag, type=type(count_default), default=count_default)
    parser.add_argument("--envs", nargs="+", default=["moving_dot", "pong"])
    for flag, kind, default, help_text in extra_args:
        parser.add_argument(flag, type=kind, default=default, help=help_text)
    values = list(vars(parser.parse_args()).values())
    for name in values[1]:
        measure(name, values[0], *values[2:])
