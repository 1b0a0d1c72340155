"""The Stable-Baselines3 front-end, where users import it from (needs ``pip install "drlhp[sb3]"``).

Everything is defined in ``drlhp.frontends.sb3``, ``drlhp.frontends.sb3_relabel`` and ``drlhp.frontends.sb3_novelty``.
"""
from drlhp.frontends.sb3 import (
    HumanPreferencesLogger,
    HumanPreferencesVecEnvWrapper,
)
from drlhp.frontends.sb3_novelty import NoveltyReplayBuffer
from drlhp.frontends.sb3_relabel import RelabelReplayBuffer

__all__ = [
    "HumanPreferencesLogger", "HumanPreferencesVecEnvWrapper", "NoveltyReplayBuffer", "RelabelReplayBuffer",
]
