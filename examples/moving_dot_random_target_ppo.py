"""MovingDot with a random target, learned from 1,000 synthetic preferences: a relational reward.

Each episode puts the target in a random cell; the reward is how close the dot is to
it. A reward model must work out where two objects stand relative to each other, and
so must the policy. The keypoint reward network (``reward_net_arch="keypoints"``)
ends in a spatial softmax that gives the positions of what its channels detect; the
agent's policy here gets a features extractor of the same kind, because SB3's default
CNN (NatureCNN) does not learn this task in 300k steps even on the true reward.

As in ``moving_dot_ppo.py``, the agent never sees the env's reward: a random policy
plays until the first labels are in and the reward predictor has trained on them, then
PPO learns from the predicted reward while pairs keep being labelled (1,000 in all).

    python examples/moving_dot_random_target_ppo.py                  # drlhp, 300k agent steps
    python examples/moving_dot_random_target_ppo.py --true-reward    # baseline: PPO on the env's reward
"""
import torch
from common import parse_args, train_from_preferences
from gymnasium import spaces
from stable_baselines3 import PPO
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
from stable_baselines3.common.vec_env import VecEnv
from torch import nn

import drlhp  # noqa: F401  (registers drlhp/MovingDotRandomTarget-v0)
from drlhp.reward.layers import SpatialSoftmax

ENV_ID = "drlhp/MovingDotRandomTarget-v0"


class KeypointExtractor(BaseFeaturesExtractor):
    """The policy's view: convolutions, then each channel's keypoint (expected x, y) -- 2 x 8 features."""

    def __init__(self, observation_space: spaces.Box, n_keypoints: int = 8, channels: int = 16) -> None:
        super().__init__(observation_space, features_dim=2 * n_keypoints)
        n_in, height, width = observation_space.shape
        self.cnn = nn.Sequential(nn.Conv2d(n_in, channels, 4, stride=4), nn.ReLU(),
                                 nn.Conv2d(channels, channels, 3, padding=1), nn.ReLU(),
                                 nn.Conv2d(channels, n_keypoints, 1))
        with torch.no_grad():
            map_height, map_width = self.cnn(torch.zeros(1, n_in, height, width)).shape[2:]
        self.keypoints = SpatialSoftmax(1, map_height, map_width)

    def forward(self, observations: torch.Tensor) -> torch.Tensor:
        return self.keypoints(self.cnn(observations))


def make_agent(venv: VecEnv, seed: int) -> PPO:
    # moving_dot_ppo.py's settings (rollouts of 128 steps in all, gamma 0.9) with keypoint features: on the
    # true reward this reaches a return of 45 within 20-30k steps and 49.1 at 300k (seeds 0 and 1).
    # An entropy bonus keeps it exploring while the reward model is still rough.
    return PPO("CnnPolicy", venv, n_steps=max(1, 128 // venv.num_envs), batch_size=64, n_epochs=4,
               learning_rate=1e-3, gamma=0.9, ent_coef=0.01, seed=seed, verbose=0,
               policy_kwargs=dict(features_extractor_class=KeypointExtractor))


if __name__ == "__main__":
    # 200 labels and 500 training steps before the agent starts, so that it never learns from a reward model
    # near chance; the reward model is the default one (one keypoint network on random pairs).
    args = parse_args(__doc__, log_dir="drlhp_logs/moving_dot_random_target", total_timesteps=300_000,
                      label_budget=1000, n_initial_prefs=200, n_initial_training_steps=500, log_every=10_000,
                      save_every=50_000)
    train_from_preferences(make_vec_env(ENV_ID, n_envs=args.n_envs, seed=args.seed), args, make_agent, ENV_ID)
