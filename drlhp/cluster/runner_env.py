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
from drlhp.frontends.env_wrapper import HumanPreferencesEnvWrapper
from drlhp.frontends.vector import HumanPreferencesVectorWrapper
from drlhp.runtime.contract import PipelineFactory


def linked_to_service(service_name: str, clip_share: float, link_options: dict) -> PipelineFactory:
    """The pipeline factory of a runner's front-end: its envs linked to the service ``service_name``."""
    return lambda n_envs: RunnerPipeline(service_name, n_envs, clip_share, **link_options)


class ClusterPreferenceWrapper(HumanPreferencesEnvWrapper):
    """One env, its clips sent to the preference service ``service_name``.

    Args:
        env: the env, as the agent sees it (``obs_transform_func``, a service setting,
            maps its observations to the frames the service stores).
        service_name: the ``PreferenceService``'s name.
        clip_share: this env's share of the service's clips/s.
        **link_options: ``flush_interval``, ``weights_poll_interval`` (seconds).
    """

    def __init__(self, env: gymnasium.Env, service_name: str, clip_share: float = 1.0, **link_options) -> None:
        super().__init__(env, pipeline_factory=linked_to_service(service_name, clip_share, link_options))


class ClusterPreferenceVectorWrapper(HumanPreferencesVectorWrapper):
    """A runner's vector env, its clips sent to the preference service ``service_name``;
    one batched reward forward per step. Arguments as ``ClusterPreferenceWrapper``'s,
    ``clip_share`` being the share of all of its envs together."""

    def __init__(self, env: VectorEnv, service_name: str, clip_share: float = 1.0, **link_options) -> None:
        super().__init__(env, pipeline_factory=linked_to_service(service_name, clip_share, link_options))
