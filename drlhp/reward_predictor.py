"""The seed's import path of the reward predictor (``reward_predictor.py`` in the original drlhp's guide), kept
for its users: ``from drlhp.reward_predictor import RewardPredictor``. Defined in ``drlhp.reward.predictor``; our
own code and docs import it from ``drlhp``.
"""
from drlhp.reward.predictor import RewardPredictor

__all__ = ["RewardPredictor"]
