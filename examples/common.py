"""What the examples share: their arguments, and the run itself -- a random policy plays
until the reward predictor is ready, then the agent learns from predicted rewards only."""
from __future__ import annotations

import argparse
import dataclasses
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Callable

import gymnasium
import numpy as np
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.callbacks import BaseCallback

from drlhp import TRUE_REWARD_KEY, HumanPreferencesEnvWrapper


@dataclass
class Args:
    total_timesteps: int = field(default=30_000, metadata={"help": "agent steps in total"})
    log_dir: str = field(default="drlhp_logs", metadata={"help": "checkpoints, preferences, metrics"})
    seed: int = field(default=0, metadata={"help": "seed of the env, the agent and drlhp"})
    segment_length: int = field(default=25, metadata={"help": "frames per clip compared"})
    n_initial_prefs: int = field(default=40, metadata={"help": "labels before reward training starts"})
    n_initial_training_steps: int = field(default=50, metadata={"help": "reward-training steps before the agent gets the predicted reward"})
    log_every: int = field(default=2_000, metadata={"help": "print progress every this many agent steps"})
    human: bool = field(default=False, metadata={"help": "label the clips yourself (window + terminal) instead of synthetically"})


def parse_args(description: str, **defaults) -> Args:
    """``Args`` from the command line; ``defaults`` override the generic defaults for one example."""
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    for f in dataclasses.fields(Args):
        default = defaults.get(f.name, f.default)
        if f.type in (bool, "bool"):
            parser.add_argument("--" + f.name.replace("_", "-"), action="store_true", help=f.metadata["help"])
        else:
            parser.add_argument("--" + f.name.replace("_", "-"), type=type(f.default), default=default,
                                help=f"{f.metadata['help']} (default: {default})")
    return Args(**vars(parser.parse_args()))


def train_from_preferences(env: gymnasium.Env, args: Args,
                           make_agent: Callable[[gymnasium.Env, int], BaseAlgorithm]) -> None:
    """Wrap ``env``, warm the reward predictor up on a random policy, then train ``make_agent(env, seed)``."""
    wrapped = HumanPreferencesEnvWrapper(
        env,
        segment_length=args.segment_length,
        synthetic_preferences=not args.human,
        n_initial_prefs=args.n_initial_prefs,
        n_initial_training_steps=args.n_initial_training_steps,
        log_dir=args.log_dir,
        seed=args.seed,
    )
    with wrapped:
        random_return = warm_up_reward_predictor(wrapped, args.seed)
        stats = wrapped.stats()
        print(f"reward predictor ready after {stats['training_steps']} training steps on {stats['prefs_received']} "
              f"labels; random policy's true return: {random_return:.1f}", flush=True)
        logger = TrueReturnLogger(wrapped, args.log_every)
        make_agent(wrapped, args.seed).learn(args.total_timesteps, callback=logger)
        result = f"{np.mean(logger.returns):.1f}" if logger.returns else "n/a (no episode finished)"
        print(f"done: mean true return of the last {len(logger.returns)} episodes {result} "
              f"(random policy: {random_return:.1f}); logs in {args.log_dir}")


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
    # (With --human, that takes n_initial_prefs of your answers, then n_initial_training_steps.)
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
