"""RLlib (new API stack) learning from a cluster's preference service.

``with_preferences(config, make_env, service)`` sets an ``AlgorithmConfig`` up so
that each env runner's envs step as one ``ClusterPreferenceVectorWrapper``: the
runners relabel rewards with the reward network, one batch per step of a runner,
and send capped clips to the service. The algorithm then learns from predicted rewards
without a change. Its callbacks log the true episode return
(``env_runners/drlhp_true_episode_return``) and, after every training iteration in
the driver, check the service (a failure there raises from ``algo.train()``) and put
its counters in ``result["drlhp"]``. An off-policy algorithm's replay buffer (SAC, DQN)
is relabelled there too, when the service has a newer reward predictor
(``drlhp.cluster.relabel``).

Why relabel in the runners rather than on the learner: see docs/ray.md ("The design").
"""
from __future__ import annotations

import logging
import time
from typing import Callable

import gymnasium

from drlhp.cluster.relabel import ReplayBufferRelabeller
from drlhp.cluster.runner_env import ClusterPreferenceVectorWrapper, ClusterPreferenceWrapper
from drlhp.cluster.runner_pipeline import RunnerPipeline
from drlhp.cluster.service import PreferenceService, import_ray
from drlhp.frontends.base import TRUE_REWARD_KEY
from drlhp.reward.relabel_bound import DEFAULT_MAX_TIME_SHARE, check_max_time_share

log = logging.getLogger("drlhp")


def with_preferences(config, make_env: Callable[[dict], gymnasium.Env], service: PreferenceService, *,
                     relabel: bool = True, max_time_share: float = DEFAULT_MAX_TIME_SHARE, **link_options):
    """``config`` (an RLlib ``AlgorithmConfig``) training on ``make_env``'s envs with rewards from ``service``.

    ``make_env(env_config)`` builds one env as the agent sees it (the service's
    ``obs_transform_func`` maps its observations to frames). Each env runner steps its
    ``num_envs_per_env_runner`` envs as one ``ClusterPreferenceVectorWrapper``. Call this
    after ``env_runners(num_env_runners=..., num_envs_per_env_runner=...)``: they set
    each runner's share of the service's clip rate. ``link_options``: ``flush_interval``
    (seconds between a runner's clip batches, 0.5) and ``weights_poll_interval`` (1.0).

    ``relabel``: for an algorithm with a replay buffer (SAC, DQN on the new API stack), after each
    training iteration in which the service has a newer reward predictor, rewrite every stored reward
    with it (``ReplayBufferRelabeller``), at most ``max_time_share`` of the run's wall time; its counters
    join ``result["drlhp"]``. An algorithm without one (PPO) is unaffected. A buffer drlhp cannot
    relabel is refused when the algorithm is built; ``relabel=False`` keeps the runners' rewards.
    """
    check_max_time_share(max_time_share)  # now, not when the algorithm is built
    import_ray()
    from ray.tune.registry import register_env

    env_name = f"{service.name}-env"
    register_env(env_name, _EnvCreator(make_env, service.name, 1.0 / max(1, config.num_env_runners), link_options))
    return (config.environment(env=env_name)
            .env_runners(gym_env_vectorize_mode="vector_entry_point")
            .callbacks(_callbacks_for(service.name, relabel, max_time_share)))


class _EnvCreator:
    """Builds a runner's envs (a class, not a closure: what it holds is plain to pickle)."""

    def __init__(self, make_env: Callable[[dict], gymnasium.Env], service_name: str, runner_share: float,
                 link_options: dict) -> None:
        self.make_env, self.service_name, self.runner_share = make_env, service_name, runner_share
        self.link_options = link_options

    def __call__(self, env_config: dict):
        env_config = dict(env_config)
        n_envs = env_config.pop("num_envs", None)
        if n_envs is None:  # RLlib asked for one env, not a runner's vector env
            env = self.make_env(env_config)
            return ClusterPreferenceWrapper(env, self.service_name, self.runner_share, **self.link_options)
        envs = gymnasium.vector.SyncVectorEnv([lambda: self.make_env(env_config)] * n_envs)
        return ClusterPreferenceVectorWrapper(envs, self.service_name, self.runner_share, **self.link_options)


def _callbacks_for(service_name: str, relabel: bool = True, max_time_share: float = DEFAULT_MAX_TIME_SHARE):
    from ray.rllib.callbacks.callbacks import RLlibCallback

    class PreferenceCallbacks(RLlibCallback):
        def on_episode_end(self, *, episode, prev_episode_chunks=None, metrics_logger=None, **kwargs) -> None:
            chunks = [*(prev_episode_chunks or []), episode]
            # A chunk's first info is of the observation it starts from: its step is in the chunk before.
            true_return = sum(info.get(TRUE_REWARD_KEY, 0.0) for c in chunks for info in c.get_infos()[1:])
            if metrics_logger is not None:
                metrics_logger.log_value("drlhp_true_episode_return", true_return, reduce="mean", window=100)

        def on_algorithm_init(self, *, algorithm, **kwargs) -> None:
            # Here, not at the first result: a buffer drlhp cannot relabel is refused by build_algo().
            algorithm._drlhp_relabeller = _relabeller_for(algorithm) if relabel else None

        def on_train_result(self, *, algorithm, result: dict, **kwargs) -> None:
            result["drlhp"] = _service(algorithm).stats()  # raises if the service or its processes failed
            relabeller = getattr(algorithm, "_drlhp_relabeller", None)
            if relabeller is not None:
                relabeller.maybe_relabel()
                result["drlhp"].update(relabeller.stats())

    def _relabeller_for(algorithm) -> ReplayBufferRelabeller | None:
        buffer = getattr(algorithm, "local_replay_buffer", None)
        if buffer is None:
            return None  # on-policy (PPO): every update uses fresh rewards
        if getattr(algorithm.config, "_env_to_module_connector", None) is not None:
            log.warning("drlhp relabels the replay buffer from the observations its episodes hold: an env-to-module "
                        "connector of yours that writes observations into episodes (MeanStdFilter, "
                        "FlattenObservations, an ObservationPreprocessor) makes them differ from those the runners "
                        "rewarded. Transform observations in make_env's env instead, or pass relabel=False.")
        return ReplayBufferRelabeller(buffer, _service(algorithm), max_time_share)

    def _service(algorithm) -> PreferenceService:
        handle = getattr(algorithm, "_drlhp_service", None)
        if handle is None:
            handle = algorithm._drlhp_service = PreferenceService.attach(service_name)
        return handle

    return PreferenceCallbacks


def _runner_pipeline(env_runner) -> RunnerPipeline:
    """The link to the service of one env runner's envs."""
    env = env_runner.env
    while not isinstance(env, ClusterPreferenceVectorWrapper):
        env = env.env
    assert isinstance(env.pipeline, RunnerPipeline)  # the cluster's wrappers are made with one
    return env.pipeline


def sample_until_reward_predictor_ready(algo, service: PreferenceService, timeout: float | None = None,
                                        steps_per_round: int = 100) -> int:
    """The paper's pre-training: the env runners play (the untrained policy, not learning) until the
    service has its first ``n_initial_prefs`` labels; then, without stepping, this waits until the
    reward predictor is ready, and every runner loads it. Returns the env steps taken."""
    group = algo.env_runner_group
    local = group.num_remote_env_runners() == 0
    deadline = None if timeout is None else time.monotonic() + timeout
    steps = 0
    while service.stats()["run_labels"] < service.config.n_initial_prefs:
        if deadline is not None and time.monotonic() > deadline:
            raise TimeoutError(f"fewer than n_initial_prefs={service.config.n_initial_prefs} labels within "
                               f"{timeout} s")
        sizes = group.foreach_env_runner(lambda r: sum(len(e) for e in r.sample(num_timesteps=steps_per_round)),
                                         local_env_runner=local)
        steps += sum(sizes)
    service.wait_for_reward_predictor(None if deadline is None else max(1.0, deadline - time.monotonic()))
    group.foreach_env_runner(lambda r: _runner_pipeline(r).sync_weights(), local_env_runner=local)
    return steps
