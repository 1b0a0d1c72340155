"""``HumanPreferencesVectorWrapper``: drlhp for a gymnasium vector env (CleanRL style).

One pipeline for all sub-envs: clips come from every sub-env, the N frames of a
step go through the reward network in one batch. Each sub-env's episodes are
followed apart, in any of gymnasium's autoreset modes:

- ``NEXT_STEP`` (gymnasium's default): the step after an episode ends only resets
  that sub-env; it is not a transition, enters no clip, and its reward stays 0.
- ``SAME_STEP``: the step that ends an episode returns the next episode's first
  observation; the clip (and the predicted reward) use the episode's last
  observation, ``info["final_obs"]``.
- ``DISABLED``: you reset sub-envs with ``reset(options={"reset_mask": mask})``.
"""
from __future__ import annotations

import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv, VectorWrapper

from drlhp.config import PreferenceConfig
from drlhp.frontends.base import PREDICTED_REWARD_KEY, TRUE_REWARD_KEY, PipelineFrontEnd
from drlhp.runtime.contract import PipelineFactory


class HumanPreferencesVectorWrapper(PipelineFrontEnd, VectorWrapper):
    """Returns rewards learned from preferences over clips of all sub-envs of ``env``.

    Args:
        env: a gymnasium ``VectorEnv`` (``SyncVectorEnv``, ``AsyncVectorEnv``, ...) whose
            sub-envs' observations are images or become images / flat vectors through
            ``obs_transform_func`` (called on each sub-env's observation).
        config: a ``drlhp.PreferenceConfig`` to start from (optional).
        pipeline_factory: a pipeline other than the local one (``HumanPreferencesEnvWrapper``'s argument).
        **kwargs: the settings, by name: the fields of ``drlhp.PreferenceConfig``.

    ``info`` gets ``drlhp_true_reward`` (and, while it is returned,
    ``drlhp_predicted_reward``) as ``(num_envs,)`` arrays, with gymnasium's
    ``_``-prefixed masks.
    """

    def __init__(self, env: VectorEnv, config: PreferenceConfig | None = None, *,
                 pipeline_factory: PipelineFactory | None = None, **kwargs) -> None:
        VectorWrapper.__init__(self, env)
        self._autoreset_mode = AutoresetMode(env.metadata.get("autoreset_mode", AutoresetMode.NEXT_STEP))
        # NEXT_STEP mode: which sub-envs' next step is an autoreset rather than a transition.
        self._resetting_next = np.zeros(env.num_envs, dtype=bool)
        self._all = np.ones(env.num_envs, dtype=bool)
        # A vector env's render() gives each sub-env's image (SyncVectorEnv, AsyncVectorEnv).
        render = env.render if env.render_mode == "rgb_array" else None
        self._start_pipeline(env.single_observation_space.sample(), env.num_envs, config, kwargs, pipeline_factory,
                             render)  # type: ignore[arg-type]

    def reset(self, *, seed: int | list[int] | None = None, options: dict | None = None):
        """Reset the sub-envs (those of options["reset_mask"], else all); their unfinished clips are dropped."""
        self.pipeline.check_workers()
        mask = (options or {}).get("reset_mask")
        for i in range(self.num_envs):
            if mask is None or mask[i]:
                self.pipeline.end_episode(i)
                self._resetting_next[i] = False
        # VectorEnv.reset is declared with seed: int | None, yet VectorWrapper.reset passes it a list of seeds,
        # and SyncVectorEnv and AsyncVectorEnv take one: gymnasium's declaration is too narrow.
        return self.env.reset(seed=seed, options=options)  # type: ignore[arg-type]

    def step(self, actions):
        """Step the sub-envs; the rewards are the predicted ones once they are returned, the envs' own in infos."""
        obs, rewards, terminations, truncations, infos = self.env.step(actions)
        ends = np.logical_or(terminations, truncations)
        recorded = None
        if self._autoreset_mode == AutoresetMode.NEXT_STEP:
            recorded = ~self._resetting_next
            self._resetting_next = ends
        last_obs = {}
        if self._autoreset_mode == AutoresetMode.SAME_STEP and "_final_obs" in infos:
            last_obs = {i: infos["final_obs"][i] for i in np.flatnonzero(infos["_final_obs"])}
        predicted = self.pipeline.step(self._frames(obs, last_obs), rewards, recorded, ends, self._display())
        infos = dict(infos)
        infos[TRUE_REWARD_KEY], infos["_" + TRUE_REWARD_KEY] = rewards, self._all
        if predicted is not None:
            if recorded is not None:
                predicted[~recorded] = 0.0  # an autoreset step earns nothing, as in the env
            rewards = infos[PREDICTED_REWARD_KEY] = predicted
            infos["_" + PREDICTED_REWARD_KEY] = self._all
        return obs, rewards, terminations, truncations, infos

    def close(self, **kwargs) -> None:
        """Stop the processes (letting the trainer save unsaved labels), then close the envs. Idempotent."""
        self._close_all(lambda: VectorWrapper.close(self, **kwargs))
