"""Train SB3 PPO on the bundled MovingDot env from synthetic preferences only.

The agent never sees the env's reward. First a random policy plays until the
reward predictor has trained on preferences over its clips (the paper's
pre-training phase); then PPO learns from the predicted reward only, while new
clips keep being labelled and the predictor keeps training. It prints the
*true* episode return as it learns (random policy: about 35; best: about 49).

    python examples/moving_dot_ppo.py --total-timesteps 30000
"""
from __future__ import annotations

from dataclasses import dataclass, field

import gymnasium
import numpy as np
from stable_baselines3 import PPO

import drlhp  # noqa: F401  (registers drlhp/MovingDot-v0)
from common import TrueReturnLogger, parse_args, warm_up_reward_predictor
from drlhp import HumanPreferencesEnvWrapper


@dataclass
class Args:
    total_timesteps: int = field(default=30_000, metadata={"help": "agent steps in total"})
    log_dir: str = field(default="drlhp_logs/moving_dot", metadata={"help": "checkpoints, preferences, metrics"})
    seed: int = field(default=0, metadata={"help": "seed of the env, PPO and drlhp"})
    segment_length: int = field(default=25, metadata={"help": "frames per clip compared"})
    n_initial_prefs: int = field(default=40, metadata={"help": "labels before reward training starts"})
    n_initial_training_steps: int = field(default=50, metadata={"help": "reward-training steps before PPO gets the predicted reward"})
    log_every: int = field(default=2_000, metadata={"help": "print progress every this many agent steps"})


def main() -> None:
    args = parse_args(Args, __doc__)
    env = HumanPreferencesEnvWrapper(
        gymnasium.make("drlhp/MovingDot-v0"),
        segment_length=args.segment_length,
        synthetic_preferences=True,
        n_initial_prefs=args.n_initial_prefs,
        n_initial_training_steps=args.n_initial_training_steps,
        log_dir=args.log_dir,
        seed=args.seed,
    )
    with env:
        random_return = warm_up_reward_predictor(env, args.seed)
        print(f"reward predictor ready after {env.stats()['training_steps']} training steps on "
              f"{env.stats()['prefs_received']} labels; random policy's true return: {random_return:.1f}", flush=True)
        # Small rollouts, a short horizon and a high learning rate: MovingDot rewards come every step.
        model = PPO("CnnPolicy", env, n_steps=128, batch_size=64, n_epochs=4, learning_rate=1e-3, gamma=0.9,
                    ent_coef=0.0, seed=args.seed, verbose=0)
        logger = TrueReturnLogger(env, args.log_every)
        model.learn(args.total_timesteps, callback=logger)
        print(f"done: mean true return of the last {len(logger.returns)} episodes "
              f"{np.mean(logger.returns):.1f} (random policy: {random_return:.1f}, best: about 49); logs in {args.log_dir}")


if __name__ == "__main__":
    main()
