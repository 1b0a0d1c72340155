"""Environments bundled with drlhp."""
from drlhp.envs.moving_dot import MovingDotEnv

__all__ = ["MovingDotEnv"]
