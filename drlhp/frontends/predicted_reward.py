"""``PredictedRewardWrapper``: a trained reward model on any env, without drlhp's pipeline or processes."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium
import numpy as np

from drlhp.clips.frames import infer_frame_spec
from drlhp.frontends.base import PREDICTED_REWARD_KEY, TRUE_REWARD_KEY
from drlhp.reward.predictor import RewardPredictor, reward_model_for


class PredictedRewardWrapper(gymnasium.Wrapper):
    """Returns a trained reward model's reward for each step, in this process: no labels, no trainer.

    Args:
        env: the gymnasium env to reward; its observations (through ``obs_transform_func``) must be the frames
            the model was trained on (``ObservationError`` otherwise, naming both).
        reward_model: a reward-predictor checkpoint (``reward_predictor.ckpt``), the folder holding it (a run's
            ``reward_predictor_checkpoints``), or a loaded ``RewardPredictor``. Loading runs no code from the file.
        obs_transform_func: the observation -> frame map the model's run used, if any.

    Each step is rewarded as drlhp's wrapper rewards it: the predicted, normalised reward of the observation the
    step ends in; the env's own reward goes into ``info`` under ``TRUE_REWARD_KEY``. ``reward_model`` tells what
    the model was trained on (``reward_model.provenance``).
    """

    def __init__(self, env: gymnasium.Env, reward_model: str | RewardPredictor,
                 obs_transform_func: Callable[[Any], np.ndarray] | None = None) -> None:
        super().__init__(env)
        self._transform = obs_transform_func
        frame = self._frame(env.observation_space.sample())
        self.reward_model = reward_model_for(reward_model, infer_frame_spec(frame))

    def _frame(self, obs: Any) -> np.ndarray:
        return self._transform(obs) if self._transform is not None else obs

    def step(self, action):
        """Step the env; the reward is the model's, the env's own is in ``info``."""
        obs, reward, terminated, truncated, info = self.env.step(action)
        predicted = self.reward_model.reward(np.asarray(self._frame(obs)))
        info = {**info, TRUE_REWARD_KEY: reward, PREDICTED_REWARD_KEY: predicted}
        return obs, predicted, terminated, truncated, info
