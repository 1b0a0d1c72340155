"""The user's view: SB3 PPO agent steps/s on the wrapped env vs on the raw env, same run.

Wrapped: predicted reward on from the first step, clips collected and labelled,
the reward trainer training all the while (default thread settings: one torch
thread for this process, one for the trainer). Aim: wrapped >= 0.85x raw.

    python benchmarks/sb3_throughput.py [--steps 4096] [--envs moving_dot pong]
"""
from __future__ import annotations

import tempfile
import time

from stable_baselines3 import PPO

from common import make_env, one_thread, run_per_env, untrained_checkpoint
from drlhp import HumanPreferencesEnvWrapper


def ppo_sps(env, n_steps: int) -> float:
    model = PPO("CnnPolicy", env, n_steps=128, batch_size=64, n_epochs=4, seed=0, verbose=0)
    model.learn(256)  # warm-up
    start = time.perf_counter()
    model.learn(n_steps, reset_num_timesteps=False)
    return n_steps / (time.perf_counter() - start)


def measure(name: str, n_steps: int) -> None:
    one_thread()
    raw = ppo_sps(make_env(name), n_steps)
    with tempfile.TemporaryDirectory() as tmp:
        env = HumanPreferencesEnvWrapper(make_env(name), pretrained_reward_predictor_dir=untrained_checkpoint(make_env(name), tmp),
                                         collect_prefs=True, train_reward=True, n_initial_prefs=16,
                                         log_dir=tmp + "/log", log_level=30, autosave_prefs=False)
        with env:
            wrapped = ppo_sps(env, n_steps)
            stats = env.stats()
    print(f"{name:10s} PPO raw {raw:6.0f} steps/s | wrapped {wrapped:6.0f} steps/s | ratio {wrapped / raw:.2f} (aim >= 0.85)"
          f" | during the wrapped run: {stats['prefs_received']} labels, {stats['training_steps']} reward-training steps")


if __name__ == "__main__":
    run_per_env(__doc__, measure, "--steps", 4096)
