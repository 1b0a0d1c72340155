"""Helpers shared by the examples: command-line arguments from a dataclass, a warm-up, a progress printer."""
from __future__ import annotations

import argparse
import dataclasses
import time
from collections import deque

import numpy as np
from stable_baselines3.common.callbacks import BaseCallback

from drlhp import TRUE_REWARD_KEY, HumanPreferencesEnvWrapper


def parse_args(args_class, description: str):
    """Fill ``args_class`` (a dataclass whose fields carry ``metadata["help"]``) from the command line."""
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    for f in dataclasses.fields(args_class):
        parser.add_argument("--" + f.name.replace("_", "-"), type=type(f.default), default=f.default,
                            help=f"{f.metadata['help']} (default: {f.default})")
    return args_class(**vars(parser.parse_args()))


class TrueReturnLogger(BaseCallback):
    """Prints the env's true episode return (from ``info``), whatever reward PPO is trained on."""

    def __init__(self, env: HumanPreferencesEnvWrapper, log_every: int) -> None:
        super().__init__()
        self.env, self.log_every = env, log_every
        self.returns: deque[float] = deque(maxlen=20)
        self.current = 0.0
        self.start = time.monotonic()

    def _on_step(self) -> bool:
        info, done = self.locals["infos"][0], self.locals["dones"][0]
        self.current += info[TRUE_REWARD_KEY]
        if done:
            self.returns.append(self.current)
            self.current = 0.0
        if self.num_timesteps % self.log_every == 0:
            stats = self.env.stats()
            mean = f"{np.mean(self.returns):5.1f}" if self.returns else "  n/a"
            print(f"step {self.num_timesteps:7d} | {self.num_timesteps / (time.monotonic() - self.start):4.0f} SPS | "
                  f"true return (last {len(self.returns)} episodes) {mean} | reward: "
                  f"{'predicted' if self.env.using_reward_from_predictor else 'true     '} | "
                  f"labels {stats['prefs_received']:5d} | reward-training steps {stats['training_steps']:4d}",
                  flush=True)
        return True


def warm_up_reward_predictor(env: HumanPreferencesEnvWrapper, seed: int) -> float:
    """Act randomly until the wrapper returns predicted rewards; returns the mean true episode return."""
    print("labelling clips of a random policy until the reward predictor is ready ...", flush=True)
    env.action_space.seed(seed)
    env.reset(seed=seed)
    returns, current = [], 0.0
    while not env.using_reward_from_predictor:
        _, _, terminated, truncated, info = env.step(env.action_space.sample())
        current += info[TRUE_REWARD_KEY]
        if terminated or truncated:
            returns.append(current)
            current = 0.0
            env.reset()
    return float(np.mean(returns))
