"""The Stable-Baselines3 front-end, where users import it from (needs ``pip install "drlhp[sb3]"``).

Everything is defined in ``drlhp.frontends.sb3``, ``drlhp.frontends.sb3_relabel``, ``drlhp.frontends.sb3_novelty`` and
``drlhp.frontends.sb3_reward_history``.
"""
from drlhp.frontends.sb3 import (
    HumanPreferencesLogger,
    HumanPreferencesVecEnvWrapper,
)
from drlhp.frontends.sb3_novelty import NoveltyReplayBuffer
from drlhp.frontends.sb3_relabel import RelabelReplayBuffer
from drlhp.frontends.sb3_reward_history import KeepRewardModels, reward_history

__all__ = [
    "HumanPreferencesLogger", "HumanPreferencesVecEnvWrapper", "KeepRewardModels", "NoveltyReplayBuffer",
    "RelabelReplayBuffer", "reward_history",
]
