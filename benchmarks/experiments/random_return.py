"""A uniformly random policy's true return on a gymnasium task: the 0 of the results' normalised scale where no
published figure fits the task as the examples run it (Hopper without early termination).

Episodes are reset with seeds 0 .. N-1 and the actions drawn from the action space seeded 0, so a run prints
the same figures again.

    python -m benchmarks.experiments.random_return Hopper-v5 --episodes 100 --env-kwarg terminate_when_unhealthy=False
"""
from __future__ import annotations

import argparse
import ast

import gymnasium
import numpy as np


def random_returns(env_id: str, episodes: int, **env_kwargs: object) -> np.ndarray:
    env = gymnasium.make(env_id, **env_kwargs)
    env.action_space.seed(0)
    returns = np.zeros(episodes)
    for episode in range(episodes):
        env.reset(seed=episode)
        done = False
        while not done:
            _, reward, terminated, truncated, _ = env.step(env.action_space.sample())
            returns[episode] += float(reward)
            done = terminated or truncated
    env.close()
    return returns


def parse_kwarg(text: str) -> tuple[str, object]:
    name, sep, value = text.partition("=")
    if not sep:
        raise argparse.ArgumentTypeError(f"--env-kwarg {text!r}: write NAME=VALUE, e.g. terminate_when_unhealthy=False")
    return name, ast.literal_eval(value)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("env_id")
    parser.add_argument("--episodes", type=int, default=100)
    parser.add_argument("--env-kwarg", type=parse_kwarg, action="append", default=[], metavar="NAME=VALUE")
    args = parser.parse_args()
    returns = random_returns(args.env_id, args.episodes, **dict(args.env_kwarg))
    print(f"{args.env_id} {dict(args.env_kwarg)}: a random policy's true return over {args.episodes} episodes: "
          f"mean {returns.mean():.1f} (standard error {returns.std(ddof=1) / np.sqrt(len(returns)):.1f}), "
          f"median {np.median(returns):.1f}, from {returns.min():.1f} to {returns.max():.1f}")


if __name__ == "__main__":
    main()
