"""The Stable-Baselines3 front-end, where users import it from (needs ``pip install "drlhp[sb3]"``).

Everything is defined in ``drlhp.frontends.sb3``.
"""
from drlhp.frontends.sb3 import (
    HumanPreferencesLogger,
    HumanPreferencesVecEnvWrapper,
)

__all__ = [
    "HumanPreferencesLogger", "HumanPreferencesVecEnvWrapper",
]
