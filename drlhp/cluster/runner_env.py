"""drlhp's front-ends inside an env runner: the same wrappers, linked to a cluster's preference service.

``ClusterPreferenceVectorWrapper`` wraps a runner's vector env (what RLlib builds with
``gym_env_vectorize_mode="vector_entry_point"``, as ``drlhp.cluster.rllib`` sets it):
the frames of a runner's envs go through the reward network in one batch per step.
``ClusterPreferenceWrapper`` wraps one env. Both follow the single-machine wrappers'
conventions (autoreset modes, ``obs_transform_func``, ``info`` keys); the settings are
the service's. Until the service's reward predictor is ready the reward is 0.0: the
agent never sees the env's own reward, which is in ``info["drlhp_true_reward"]``.
"""
from __future__ import annotations

import gymnasium
from gymnasium.vector import VectorEnv

from drlhp.cluster.runner_pipeline import RunnerPipeline
from drlhp.frontends.base import PipelineFrontEnd
from drlhp.frontends.env_wrapper import HumanPreferencesEnvWrapper
from drlhp.frontends.vector import HumanPreferencesVectorWrapper


class _LinkedToService(PipelineFrontEnd):
    """Starts a ``RunnerPipeline`` where the single-machine front-ends start their processes.

    A mixin, listed before a front-end's class; its base (which that class has too, so the method
    resolution order is the same as without it) says what it builds on.
    """

    # A RunnerPipeline has the PreferencePipeline interface the front-ends drive (duck typing), not its class.
    pipeline: RunnerPipeline  # type: ignore[assignment]

    def _link(self, service_name: str, clip_share: float, link_options: dict) -> None:
        self._link_args = (service_name, clip_share, link_options)

    def _start_pipeline(self, single_obs, n_envs: int, config, kwargs) -> None:
        service_name, clip_share, link_options = self._link_args
        self.pipeline = RunnerPipeline(service_name, n_envs, clip_share, **link_options)
        self._transform = self.pipeline.config.obs_transform_func
        self._frame(single_obs)  # an observation the service cannot store fails here, not at the first clip


class ClusterPreferenceWrapper(_LinkedToService, HumanPreferencesEnvWrapper):
    """One env, its clips sent to the preference service ``service_name``.

    Args:
        env: the env, as the agent sees it (``obs_transform_func``, a service setting,
            maps its observations to the frames the service stores).
        service_name: the ``PreferenceService``'s name.
        clip_share: this env's share of the service's clips/s.
        **link_options: ``flush_interval``, ``weights_poll_interval`` (seconds).
    """

    def __init__(self, env: gymnasium.Env, service_name: str, clip_share: float = 1.0, **link_options) -> None:
        self._link(service_name, clip_share, link_options)
        super().__init__(env)


class ClusterPreferenceVectorWrapper(_LinkedToService, HumanPreferencesVectorWrapper):
    """A runner's vector env, its clips sent to the preference service ``service_name``;
    one batched reward forward per step. Arguments as ``ClusterPreferenceWrapper``'s,
    ``clip_share`` being the share of all of its envs together."""

    def __init__(self, env: VectorEnv, service_name: str, clip_share: float = 1.0, **link_options) -> None:
        self._link(service_name, clip_share, link_options)
        super().__init__(env)
