"""``HumanPreferencesEnvWrapper``: Deep RL from Human Preferences as a gymnasium wrapper."""
from __future__ import annotations

import gymnasium

from drlhp.config import PreferenceConfig
from drlhp.frontends.base import PREDICTED_REWARD_KEY, TRUE_REWARD_KEY, PipelineFrontEnd
from drlhp.runtime.contract import PipelineFactory


class HumanPreferencesEnvWrapper(PipelineFrontEnd, gymnasium.Wrapper, gymnasium.utils.RecordConstructorArgs):
    """Returns a reward learned from preferences over pairs of clips of the agent's behaviour.

    Args:
        env: any gymnasium env whose observations are images (HxW, HxWxC, CxHxW,
            or a stack SxHxWxC), or become images or flat vectors through
            ``obs_transform_func``.
        config: a ``drlhp.PreferenceConfig`` to start from (optional).
        pipeline_factory: a pipeline other than the local one, made as ``pipeline_factory(n_envs)`` with its own
            settings (how ``drlhp.cluster``'s wrappers link an env runner to a preference service); None: the
            local pipeline, with the settings given.
        **kwargs: the settings, by name: the fields of ``drlhp.PreferenceConfig``
            (``segment_length=25``, ``synthetic_preferences=True``, ``log_dir=...``, ...).

    Each clip holds the observations *after* ``segment_length`` consecutive steps of
    one episode, with those steps' rewards; at an episode's end the unfinished
    clip is dropped. For many envs stepping together, use
    ``HumanPreferencesVectorWrapper`` or ``drlhp.sb3.HumanPreferencesVecEnvWrapper``:
    one pipeline then serves them all.
    """

    def __init__(self, env: gymnasium.Env, config: PreferenceConfig | None = None, *,
                 pipeline_factory: PipelineFactory | None = None, **kwargs) -> None:
        # Recorded for env.spec as given, not deep-copied: a labeller may hold what cannot be copied (a process's
        # Event, a model, a connection), and the settings are the user's objects either way.
        gymnasium.utils.RecordConstructorArgs.__init__(self, _disable_deepcopy=True, config=config, **kwargs)
        gymnasium.Wrapper.__init__(self, env)
        renders = env.render_mode == "rgb_array"
        self._start_pipeline(env.observation_space.sample(), 1, config, kwargs, pipeline_factory,
                             (lambda: (env.render(),)) if renders else None)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        """Reset the env; the unfinished clip of the episode that ends here is dropped."""
        self.pipeline.check_workers()
        self.pipeline.end_episode(0)
        return self.env.reset(seed=seed, options=options)

    def step(self, action):
        """Step the env; the reward is the predicted one once it is returned, the env's own is in info."""
        obs, reward, terminated, truncated, info = self.env.step(action)
        frame = self._frame(obs)
        predicted = self.pipeline.step(frame[None], (reward,), episode_ends=(terminated or truncated,),
                                       display=self._display())
        info = dict(info)
        info[TRUE_REWARD_KEY] = reward
        if predicted is not None:
            reward = info[PREDICTED_REWARD_KEY] = float(predicted[0])
        return obs, reward, terminated, truncated, info

    def close(self) -> None:
        """Stop the processes (letting the trainer save unsaved labels), then close the env. Idempotent."""
        self._close_all(super().close)
