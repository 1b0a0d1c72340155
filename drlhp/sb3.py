"""Stable-Baselines3 front-end: ``HumanPreferencesVecEnvWrapper``, an SB3 ``VecEnvWrapper``.

::

    venv = HumanPreferencesVecEnvWrapper(VecFrameStack(make_atari_env("PongNoFrameskip-v4", n_envs=8), 4),
                                         segment_length=25, synthetic_preferences=True)
    PPO("CnnPolicy", venv).learn(1_000_000)

SB3 resets a sub-env in the step that ends its episode: the returned observation
is already the next episode's first, and the last one is in
``info["terminal_observation"]``. Clips and the predicted reward of that step use
the last one, so every clip holds the observations after ``segment_length``
consecutive steps of one episode.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

try:
    from stable_baselines3.common.vec_env import VecEnv, VecEnvWrapper
except ImportError as e:  # an optional dependency: say how to get it
    raise ImportError('drlhp.sb3 needs Stable-Baselines3: pip install "drlhp[sb3]"') from e

from drlhp.config import PreferenceConfig
from drlhp.frontend import PREDICTED_REWARD_KEY, TRUE_REWARD_KEY, PipelineFrontEnd


class HumanPreferencesVecEnvWrapper(PipelineFrontEnd, VecEnvWrapper):
    """Returns rewards learned from preferences over clips of all sub-envs of ``venv``.

    Args:
        venv: an SB3 ``VecEnv`` (``DummyVecEnv``, ``SubprocVecEnv``, ``VecFrameStack(...)``, ...).
        config: a ``drlhp.PreferenceConfig`` to start from (optional).
        **kwargs: the settings, by name: the fields of ``drlhp.PreferenceConfig``
            (``obs_transform_func`` is called on each sub-env's observation).

    Each sub-env's ``info`` gets ``drlhp_true_reward`` and, while it is returned,
    ``drlhp_predicted_reward``.
    """

    def __init__(self, venv: VecEnv, config: Optional[PreferenceConfig] = None, **kwargs) -> None:
        VecEnvWrapper.__init__(self, venv)
        self._start_pipeline(venv.observation_space.sample(), venv.num_envs, config, kwargs)

    def reset(self):
        self.pipeline.check_workers()
        self.pipeline.end_all_episodes()
        return self.venv.reset()

    def step_wait(self):
        obs, rewards, dones, infos = self.venv.step_wait()
        last_obs = {i: infos[i]["terminal_observation"] for i in np.flatnonzero(dones)}
        predicted = self.pipeline.step(self._frames(obs, last_obs), rewards, None, dones)
        for i, info in enumerate(infos):
            info[TRUE_REWARD_KEY] = float(rewards[i])
            if predicted is not None:
                info[PREDICTED_REWARD_KEY] = float(predicted[i])
        if predicted is not None:
            rewards = predicted.astype(np.float32)
        return obs, rewards, dones, infos

    def close(self) -> None:
        """Stop the processes (letting the trainer save unsaved labels), then close the envs. Idempotent."""
        self._close_all(self.venv.close)
