"""Train SB3 PPO on the bundled MovingDot env from synthetic preferences only.

The agent never sees the env's reward. First a random policy plays until the
reward predictor has trained on preferences over its clips (the paper's
pre-training phase); then PPO learns from the predicted reward only, while new
clips keep being labelled and the predictor keeps training. It prints the
*true* episode return as it learns (random policy: about 35; best: about 49).

    python examples/moving_dot_ppo.py --total-timesteps 30000
    python examples/moving_dot_ppo.py --human --n-initial-prefs 20   # you label the clips
"""
import gymnasium
from stable_baselines3 import PPO

import drlhp  # noqa: F401  (registers drlhp/MovingDot-v0)
from common import parse_args, train_from_preferences


def make_agent(env: gymnasium.Env, seed: int) -> PPO:
    # Small rollouts, a short horizon and a high learning rate: MovingDot rewards come every step.
    return PPO("CnnPolicy", env, n_steps=128, batch_size=64, n_epochs=4, learning_rate=1e-3, gamma=0.9,
               ent_coef=0.0, seed=seed, verbose=0)


if __name__ == "__main__":
    args = parse_args(__doc__, log_dir="drlhp_logs/moving_dot")
    train_from_preferences(gymnasium.make("drlhp/MovingDot-v0"), args, make_agent)
