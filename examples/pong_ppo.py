"""Atari Pong from synthetic preferences: SB3 PPO on the predicted reward.

The usual preprocessing (no-op starts, frame skip 4, 84x84 grayscale, 4-frame
stack: observations (4, 84, 84) uint8), then drlhp, then PPO with the standard
Atari settings. The agent never sees Pong's score: a random policy first plays
until the reward predictor is ready, then PPO learns from the predicted reward.
Real Pong training takes hours on a CPU (~150-300 agent steps/s here); watch the
true return (-21 for a random player) in the printed progress.

    pip install -e ".[examples]"
    python examples/pong_ppo.py --total-timesteps 2000000
"""
import ale_py
import gymnasium
from gymnasium.wrappers import AtariPreprocessing, FrameStackObservation
from stable_baselines3 import PPO

from common import parse_args, train_from_preferences


def make_pong() -> gymnasium.Env:
    gymnasium.register_envs(ale_py)
    env = gymnasium.make("ALE/Pong-v5", frameskip=1, repeat_action_probability=0.0)
    env = AtariPreprocessing(env, noop_max=30, frame_skip=4, screen_size=84, grayscale_obs=True)
    return FrameStackObservation(env, 4)


def make_agent(env: gymnasium.Env, seed: int) -> PPO:
    return PPO("CnnPolicy", env, n_steps=128, batch_size=32, n_epochs=4, learning_rate=2.5e-4,
               clip_range=0.1, ent_coef=0.01, vf_coef=0.5, seed=seed, verbose=0)


if __name__ == "__main__":
    args = parse_args(__doc__, log_dir="drlhp_logs/pong", total_timesteps=2_000_000, n_initial_prefs=500,
                      n_initial_training_steps=200, log_every=10_000)
    train_from_preferences(make_pong(), args, make_agent)
