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

import numpy as np

import drlhp.frontends.quiet_gym  # noqa: F401  (before SB3, which imports gym)
from drlhp.errors import MissingExtraError  # before the optional import, to name the extra it needs

try:
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.vec_env import VecEnv, VecEnvWrapper
except ImportError as e:  # an optional dependency: say how to get it
    raise MissingExtraError('drlhp.frontends.sb3 needs Stable-Baselines3: pip install "drlhp[sb3]"') from e

from drlhp.config import PreferenceConfig
from drlhp.frontends.base import PREDICTED_REWARD_KEY, TRUE_REWARD_KEY, PipelineFrontEnd
from drlhp.runtime.contract import PipelineFactory
from drlhp.runtime.stats import PipelineStats


def clip_ends(dones, infos: list[dict]) -> np.ndarray:
    """With ``clips_span_lives``: the sub-envs whose game ended, not only a life (SB3's ``Monitor``, inside the
    wrapper that ends a life, puts ``info["episode"]`` at the game's end)."""
    return np.array([bool(done) and "episode" in info for done, info in zip(dones, infos)])


class HumanPreferencesVecEnvWrapper(PipelineFrontEnd, VecEnvWrapper):
    """Returns rewards learned from preferences over clips of all sub-envs of ``venv``.

    Args:
        venv: an SB3 ``VecEnv`` (``DummyVecEnv``, ``SubprocVecEnv``, ``VecFrameStack(...)``, ...).
        config: a ``drlhp.PreferenceConfig`` to start from (optional).
        pipeline_factory: a pipeline other than the local one (``drlhp.HumanPreferencesEnvWrapper``'s argument).
        **kwargs: the settings, by name: the fields of ``drlhp.PreferenceConfig``
            (``obs_transform_func`` is called on each sub-env's observation).

    Each sub-env's ``info`` gets ``drlhp_true_reward`` and, while it is returned,
    ``drlhp_predicted_reward``.
    """

    spans_lives = True

    def __init__(self, venv: VecEnv, config: PreferenceConfig | None = None, *,
                 pipeline_factory: PipelineFactory | None = None, **kwargs) -> None:
        VecEnvWrapper.__init__(self, venv)
        self._start_pipeline(venv.observation_space.sample(), venv.num_envs, config, kwargs, pipeline_factory,
                             venv.get_images if venv.render_mode == "rgb_array" else None)
        self._clips_span_lives = self.pipeline.config.clips_span_lives  # read once, not at every step

    def reset(self):
        """Reset all sub-envs; their unfinished clips are dropped."""
        self.pipeline.check_workers()
        self.pipeline.end_all_episodes()
        return self.venv.reset()

    def step_wait(self):
        """The sub-envs' step; the rewards are the predicted ones once they are returned, the envs' own in each info."""
        obs, rewards, dones, infos = self.venv.step_wait()
        last_obs = {i: infos[i]["terminal_observation"] for i in np.flatnonzero(dones)}
        # A sub-env whose episode ended has reset already: its render is of the next episode's first state, its clip
        # ends with one such frame.
        ends = clip_ends(dones, infos) if self._clips_span_lives and dones.any() else dones
        predicted = self.pipeline.step(self._frames(obs, last_obs), rewards, None, ends, self._display())
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


def wrapper_in(env: VecEnv, user: str) -> HumanPreferencesVecEnvWrapper:
    """The ``HumanPreferencesVecEnvWrapper`` in a model's env stack; ``user`` (a callback's name) says who needs it."""
    while not isinstance(env, HumanPreferencesVecEnvWrapper):
        if not isinstance(env, VecEnvWrapper):
            raise TypeError(f"{user} needs a drlhp.sb3.HumanPreferencesVecEnvWrapper in the model's env (wrap your "
                            "VecEnv with it)")
        env = env.venv
    return env


class HumanPreferencesLogger(BaseCallback):
    """Adds drlhp's figures to SB3's logger at the end of each rollout: TensorBoard, CSV, stdout alike.

    ``model.learn(..., callback=HumanPreferencesLogger())`` with a ``HumanPreferencesVecEnvWrapper``
    anywhere in the model's env stack records, under ``drlhp/``: the run's labels (those asked, and
    the budget's remaining), reward-training steps, clips dropped, the database's MiB in memory,
    whether the predicted reward is in use, and ``reward_correlation``: Pearson's r between the
    predicted and the true reward of the rollout's steps (how well the agent's reward follows the
    env's, where the env has one).
    """

    def __init__(self, verbose: int = 0) -> None:
        super().__init__(verbose)
        self._predicted: list[float] = []
        self._true: list[float] = []

    def _wrapper(self) -> HumanPreferencesVecEnvWrapper:
        return wrapper_in(self.training_env, "HumanPreferencesLogger")

    def record_stats(self, stats: PipelineStats, using_predicted_reward: bool) -> None:
        """Record a pipeline's counters; those it does not count (None: a Ray runner's labels are its
        service's) are left out rather than logged as 0."""
        counts = {"labels": stats.run_labels, "pairs_asked": stats.pairs_asked,
                  "labels_remaining": stats.labels_remaining, "reward_training_steps": stats.training_steps,
                  "clips_dropped": stats.clips_dropped,
                  "db_mib": None if stats.db_bytes is None else stats.db_bytes / 2 ** 20}
        for name, value in counts.items():
            if value is not None:
                self.logger.record(f"drlhp/{name}", value)
        self.logger.record("drlhp/using_predicted_reward", float(using_predicted_reward))

    def _on_training_start(self) -> None:
        self._wrapper()  # fail at once, not at the end of the first rollout

    def _on_step(self) -> bool:
        for info in self.locals["infos"]:
            if PREDICTED_REWARD_KEY in info:
                self._predicted.append(info[PREDICTED_REWARD_KEY])
                self._true.append(info[TRUE_REWARD_KEY])
        return True

    def _on_rollout_end(self) -> None:
        wrapper = self._wrapper()
        self.record_stats(wrapper.stats(), wrapper.using_reward_from_predictor)
        if len(self._predicted) > 1 and np.std(self._predicted) > 0 and np.std(self._true) > 0:
            self.logger.record("drlhp/reward_correlation", float(np.corrcoef(self._predicted, self._true)[0, 1]))
        self._predicted.clear()
        self._true.clear()
