"""Atari Pong from synthetic preferences: SB3 PPO on the predicted reward.

The usual preprocessing (no-op starts, frame skip 4, 84x84 grayscale, 4-frame
stack: observations (4, 84, 84) uint8), then drlhp, then PPO with the standard
Atari settings. The agent never sees Pong's score: a random policy first plays
until the reward predictor is ready, then PPO learns from the predicted reward.
Real Pong training takes hours on a CPU (~300 agent steps/s here); watch the
true return (-21 for a random player) in the printed progress.

    pip install -e ".[examples]"
    python examples/pong_ppo.py --total-timesteps 2000000
"""
from __future__ import annotations

from dataclasses import dataclass, field

import ale_py
import gymnasium
import numpy as np
from gymnasium.wrappers import AtariPreprocessing, FrameStackObservation
from stable_baselines3 import PPO

from common import TrueReturnLogger, parse_args, warm_up_reward_predictor
from drlhp import HumanPreferencesEnvWrapper


@dataclass
class Args:
    total_timesteps: int = field(default=2_000_000, metadata={"help": "agent steps in total"})
    log_dir: str = field(default="drlhp_logs/pong", metadata={"help": "checkpoints, preferences, metrics"})
    seed: int = field(default=0, metadata={"help": "seed of the env, PPO and drlhp"})
    segment_length: int = field(default=25, metadata={"help": "frames per clip compared (25 = 100 emulator frames)"})
    n_initial_prefs: int = field(default=500, metadata={"help": "labels before reward training starts"})
    n_initial_training_steps: int = field(default=200, metadata={"help": "reward-training steps before PPO gets the predicted reward"})
    log_every: int = field(default=10_000, metadata={"help": "print progress every this many agent steps"})


def make_pong() -> gymnasium.Env:
    gymnasium.register_envs(ale_py)
    env = gymnasium.make("ALE/Pong-v5", frameskip=1, repeat_action_probability=0.0)
    env = AtariPreprocessing(env, noop_max=30, frame_skip=4, screen_size=84, grayscale_obs=True)
    return FrameStackObservation(env, 4)


def main() -> None:
    args = parse_args(Args, __doc__)
    env = HumanPreferencesEnvWrapper(
        make_pong(),
        segment_length=args.segment_length,
        synthetic_preferences=True,
        n_initial_prefs=args.n_initial_prefs,
        n_initial_training_steps=args.n_initial_training_steps,
        log_dir=args.log_dir,
        seed=args.seed,
    )
    with env:
        random_return = warm_up_reward_predictor(env, args.seed)
        print(f"reward predictor ready; random policy's true return: {random_return:.1f}", flush=True)
        model = PPO("CnnPolicy", env, n_steps=128, batch_size=32, n_epochs=4, learning_rate=2.5e-4,
                    clip_range=0.1, ent_coef=0.01, vf_coef=0.5, seed=args.seed, verbose=0)
        logger = TrueReturnLogger(env, args.log_every)
        model.learn(args.total_timesteps, callback=logger)
        print(f"done: mean true return of the last {len(logger.returns)} episodes {np.mean(logger.returns):.1f}")


if __name__ == "__main__":
    main()
