"""The preference service: one Ray actor that every env runner of a cluster sends clips to.

Inside, it is drlhp's single-machine ``PreferencePipeline`` with its two processes
(preference interface, reward trainer) on the service's node: the label database,
the journal and the checkpoints live in that node's ``log_dir``, the labeller
(synthetic, terminal + window, or the web page) runs there, and the trainer reads
the database without it ever crossing the network. Clips arrive from runners;
weights leave through Ray's object store, each new checkpoint put there once.

``PreferenceService`` is the driver's handle: it starts the actor (by default on
the driver's own node, where a person and the log_dir are) and turns the actor's
failures into clear errors.
"""
from __future__ import annotations

import dataclasses
import functools
import logging
import os
import secrets
import sys
from typing import TYPE_CHECKING, Any

from drlhp.clips.frames import FrameSpec, infer_frame_spec
from drlhp.cluster.clip_stream import PackedClip, RateCap
from drlhp.config import PreferenceConfig
from drlhp.errors import ConfigError, MissingExtraError, PreferenceServiceDied, UsageError, WorkerError, WriteError
from drlhp.labelling.terminal import CONTROLLING_TERMINAL
from drlhp.reward.torch_setup import set_up_torch
from drlhp.runtime.pipeline import PreferencePipeline

if TYPE_CHECKING:
    from drlhp.reward.predictor import RewardPredictor

log = logging.getLogger("drlhp")

#: A worker's failures, as the pipeline raises them: remembered and raised to every later caller.
WORKER_FAILURES = (WorkerError, WriteError)

NAMESPACE = "drlhp"
"""Ray namespace of drlhp's named actors, so runners of any job find the service by name."""


def import_ray():
    try:
        import ray
    except ImportError as e:
        raise MissingExtraError('drlhp on a Ray cluster needs Ray: pip install "drlhp[ray]"') from e
    return ray


def _reporting_failures(method):
    """A worker's failure, once seen by any call (a runner's, say), is raised to every later caller
    (the driver's): the pipeline reports each failure only once."""
    @functools.wraps(method)
    def reporting(self: ServiceActor, *args):
        if self.failure is not None:
            raise self.failure
        try:
            self.pipeline.check_workers()
            return method(self, *args)
        except WORKER_FAILURES as e:
            self.failure = e
            raise

    return reporting


class ServiceActor:
    """Runs in the actor's process."""

    def __init__(self, config: PreferenceConfig, frame_spec: FrameSpec, clips_per_second: float) -> None:
        set_up_torch(config.torch_threads)
        self.config, self.frame_spec = config, frame_spec
        self.clips_per_second = clips_per_second
        self.pipeline = PreferencePipeline(config, frame_spec, n_envs=1)
        # A second of clips at once at most: runners flush twice a second.
        self._cap = RateCap(clips_per_second, burst=clips_per_second)
        self.counts = {"runner_clips_received": 0, "clips_over_cap": 0, "clips_dropped_busy": 0, "clips_rejected": 0,
                       "clip_bytes_received": 0, "runner_env_steps": 0, "weights_version": 0}
        self._weights: Any | None = None  # ObjectRef of the newest predictor's bytes
        self._published: RewardPredictor | None = None  # the predictor those bytes are of
        self.failure: WorkerError | WriteError | None = None

    def ready(self) -> dict:
        import ray

        return {"labelling_url": self.pipeline.labelling_url,
                "labelling_owner_url": self.pipeline.labelling_owner_url, "node_ip": ray.util.get_node_ip_address(),
                "log_dir": os.path.abspath(self.config.log_dir)}

    def get_config(self) -> PreferenceConfig:
        return self.config

    def runner_settings(self) -> dict:
        """What an env runner needs to cut clips the way this service stores them."""
        return {"config": self.config, "frame_spec": self.frame_spec, "clips_per_second": self.clips_per_second}

    @_reporting_failures
    def add_clips(self, clips: list[PackedClip], env_steps: int) -> None:
        """A runner's clips since its last call, and the steps its envs took meanwhile."""
        self.pipeline.count_env_steps(env_steps)
        self.counts["runner_env_steps"] += env_steps
        expected = (self.config.segment_length, *self.frame_spec.shape)
        for clip in clips:
            self.counts["runner_clips_received"] += 1
            self.counts["clip_bytes_received"] += clip.nbytes
            if clip.shape != expected or clip.dtype != self.frame_spec.dtype:
                self.counts["clips_rejected"] += 1  # a runner's obs_transform_func changed its frames' shape
                log.warning("rejected a clip of shape %s, dtype %s: this service stores %s, %s", clip.shape,
                            clip.dtype, expected, self.frame_spec.dtype)
            elif not self._cap.take():  # the runners' own caps keep to it; this holds it for the cluster
                self.counts["clips_over_cap"] += 1
            elif not self.pipeline.add_clip(clip.unpack(), clip.rewards, clip.episode, clip.source):
                self.counts["clips_dropped_busy"] += 1

    @_reporting_failures
    def weights_after(self, version: int) -> tuple[int, list] | None:
        """``(version, [ref])`` of the newest ready predictor if newer than ``version``, else None.

        The ref is in a list so that Ray hands the caller the reference, not the bytes: the
        caller fetches them when it chooses, without blocking this actor.
        """
        self._publish_weights()
        if self.counts["weights_version"] > version:
            return self.counts["weights_version"], [self._weights]
        return None

    def _publish_weights(self) -> None:
        import ray

        self.pipeline.poll_predictor()
        predictor = self.pipeline.predictor
        if predictor is not self._published and self.pipeline.using_reward_from_predictor:
            assert predictor is not None  # using_reward_from_predictor: there is one
            self._weights, self._published = ray.put(predictor.to_bytes()), predictor
            self.counts["weights_version"] += 1

    @_reporting_failures
    def wait_for_reward_predictor(self, timeout: float | None) -> None:
        self.pipeline.wait_for_reward_predictor(timeout)
        self._publish_weights()

    @_reporting_failures
    def stats(self) -> dict:
        self._publish_weights()
        return {**self.pipeline.stats().to_dict(), **self.counts}

    def processes(self) -> dict:
        """Process ids: this actor's and its two workers'."""
        return {"service": os.getpid(), **{name: p.pid for name, p in self.pipeline.processes.items()}}

    @_reporting_failures
    def save_prefs(self) -> list:
        return self.pipeline.save_prefs()

    def close(self) -> WorkerError | WriteError | None:
        """Stop the pipeline; returns the failure of a worker, if one failed (None otherwise)."""
        try:
            self.pipeline.close()
        except WORKER_FAILURES as e:
            self.failure = e
        return self.failure


class PreferenceService:
    """The driver's handle on a cluster's preference service (a named Ray actor).

    Args:
        observation_space: the env's observation space (what ``obs_transform_func``, if
            set, turns into the frame the reward network sees).
        config: drlhp's settings (or pass them as keyword arguments): the same as the
            single-machine wrappers', ``log_dir`` being on the service's node.
        clips_per_second: the cap on clips entering the service from all runners
            together (each runner keeps its share; the service drops any excess).
        name: the actor's name (default: a new random one).
        actor_options: Ray options for the actor, e.g. ``{"resources": {"labeller": 1}}``
            to place it elsewhere. Default: on the driver's node, using no CPU slot (its
            two processes mostly wait on labels and clips).

    Call ``check()`` often (``drlhp.cluster.rllib`` does after every training iteration):
    it raises ``WorkerError`` if the interface or the trainer failed and
    ``PreferenceServiceDied`` if the actor is gone. ``close()`` stops everything,
    the trainer saving its labels first.
    """

    def __init__(self, observation_space, config: PreferenceConfig | None = None, *,
                 clips_per_second: float = 10.0, name: str | None = None,
                 actor_options: dict | None = None, **kwargs) -> None:
        ray = import_ray()
        if not ray.is_initialized():
            raise UsageError("Start or join a Ray cluster first: ray.init() (local) or ray.init(address=...)")
        config = PreferenceConfig.from_kwargs(config, kwargs)
        if actor_options is None:  # the service runs on this node
            config = _for_this_node(config)
        if not config.collect_prefs:
            raise ConfigError("A preference service collects preferences: collect_prefs must be True. To use a "
                             "trained reward predictor on runners without labelling, load it in each runner.")
        if config.human_labelling and config.human_terminal == CONTROLLING_TERMINAL:
            # Ray runs the service in a process group of its own: the driver's terminal would
            # answer its reads with an I/O error, however the program was started.
            raise ConfigError(
                "On a Ray cluster, a person labelling in a terminal needs one of their own: open a second "
                "terminal on the service's node, run `tty; sleep infinity` there and pass "
                "human_terminal='/dev/pts/N' as it printed (the clips play in a window on that node's "
                "DISPLAY); or label in a browser with labelling='web'.")
        if clips_per_second <= 0:
            raise ConfigError(f"clips_per_second must be > 0, got {clips_per_second}")
        sample = observation_space.sample()
        frame_spec = infer_frame_spec(config.obs_transform_func(sample) if config.obs_transform_func else sample)
        self.name = name or f"drlhp-service-{secrets.token_hex(4)}"
        self.config, self._closed, self._owner, self._failure_reported = config, False, True, False
        options = {"name": self.name, "namespace": NAMESPACE, "num_cpus": 0, "max_restarts": 0}
        if actor_options is None:
            from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

            here = ray.get_runtime_context().get_node_id()
            options["scheduling_strategy"] = NodeAffinitySchedulingStrategy(here, soft=False)
        else:
            options.update(actor_options)
        self._actor = ray.remote(ServiceActor).options(**options).remote(config, frame_spec, clips_per_second)
        try:
            info = self._get(self._actor.ready.remote(), timeout=180.0)
        except PreferenceServiceDied as e:
            self._closed = True
            raise WorkerError(
                f"drlhp's preference service could not start: {_last_line(e.__cause__)}. What the settings "
                "name (obs_transform_func, a labeller) is unpickled where the service runs: define it in a "
                "module installed on the cluster's nodes (or shipped with ray.init(runtime_env=...)).") from e
        except BaseException:
            ray.kill(self._actor)
            self._closed = True
            raise
        self.node_ip, self.log_dir = info["node_ip"], info["log_dir"]
        self.labelling_url: str | None = info["labelling_url"]
        self.labelling_owner_url: str | None = info["labelling_owner_url"]
        if self.labelling_url:
            print(f"drlhp: label at {self.labelling_url}\ndrlhp: the run owner's page at {self.labelling_owner_url}",
                  file=sys.stderr, flush=True)

    @classmethod
    def attach(cls, name: str) -> PreferenceService:
        """A handle on the running service ``name`` (e.g. in a callback); its ``close()`` leaves the service be."""
        self = cls.__new__(cls)
        self.name, self._actor, self._closed, self._owner = name, service_actor(name), False, False
        self._failure_reported = False
        info = self._get(self._actor.ready.remote())
        self.node_ip, self.log_dir, self.labelling_url = info["node_ip"], info["log_dir"], info["labelling_url"]
        self.labelling_owner_url = info["labelling_owner_url"]
        self.config = self._get(self._actor.get_config.remote())
        return self

    def _get(self, ref, timeout: float | None = 60.0) -> Any:
        """``ray.get`` with the actor's failures as drlhp's errors."""
        import ray

        try:
            return ray.get(ref, timeout=timeout)
        except ray.exceptions.RayTaskError as e:
            cause = e.cause
            if isinstance(cause, (*WORKER_FAILURES, ValueError, RuntimeError, TimeoutError)) and not isinstance(
                    cause, ray.exceptions.RayError):
                self._failure_reported |= isinstance(cause, WORKER_FAILURES)
                raise type(cause)(f"{cause} (in drlhp's preference service {self.name} on {self._where()})") from e
            raise
        except ray.exceptions.RayActorError as e:
            raise PreferenceServiceDied(
                f"drlhp's preference service {self.name} died ({type(e).__name__}: {str(e).splitlines()[0]}). "
                f"The labels it acknowledged are in the label journal of {self._log_dir()} on {self._where()}: "
                "start a new run with resume=True and that log_dir to go on from them.") from e

    def _where(self) -> str:
        return getattr(self, "node_ip", None) or "its node"

    def _log_dir(self) -> str:
        return getattr(self, "log_dir", None) or self.config.log_dir

    @property
    def actor(self):
        """The Ray actor (for runners' ``ray.get_actor(name, namespace=NAMESPACE)`` it is found by name)."""
        return self._actor

    def check(self) -> None:
        """Raise ``WorkerError`` (``WriteError``: a write the OS refused) or ``PreferenceServiceDied`` if the service or
        one of its processes failed."""
        self.stats()

    def stats(self) -> dict:
        """The pipeline's counters (labels, clips, training steps) and the service's own (clips by fate,
        bytes received, runner env steps, weights version)."""
        return self._get(self._actor.stats.remote())

    def wait_for_reward_predictor(self, timeout: float | None = None) -> None:
        """Block until the service's reward predictor is ready (see ``PreferencePipeline``'s method of that name)."""
        self._get(self._actor.wait_for_reward_predictor.remote(timeout), timeout=None)

    def weights_after(self, version: int, timeout: float = 60.0) -> tuple[int, bytes] | None:
        """``(version, bytes)`` of the newest ready reward predictor (``RewardPredictor.to_bytes()``) if its
        version is newer than ``version``, else None (what the driver relabels a replay buffer with)."""
        reply = self._get(self._actor.weights_after.remote(version), timeout=timeout)
        if reply is None:
            return None
        return reply[0], self._get(reply[1][0], timeout=timeout)

    def processes(self) -> dict:
        """Process ids of the service actor and its two worker processes."""
        return self._get(self._actor.processes.remote())

    def save_prefs(self, timeout: float = 120.0) -> list:
        """Write ``train.pkl.gz`` and ``val.pkl.gz`` into the service's ``log_dir``; returns their paths there."""
        return self._get(self._actor.save_prefs.remote(), timeout=timeout)

    def close(self) -> None:
        """Stop the service and its processes (the trainer saves unsaved labels first). Idempotent."""
        import ray

        if self._closed:
            return
        self._closed = True
        if not self._owner:
            return
        try:
            failure = self._get(self._actor.close.remote(), timeout=self.config.close_timeout + 30.0)
        except PreferenceServiceDied:
            return  # already gone: nothing left to stop
        finally:
            ray.kill(self._actor)
        if failure is not None and not self._failure_reported:
            raise type(failure)(f"{failure} (in drlhp's preference service {self.name} on {self._where()})")

    def __enter__(self) -> PreferenceService:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _last_line(error: BaseException | None) -> str:
    """The final line of a remote error's text: the exception that ended it."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return lines[-1] if lines else type(error).__name__


def _for_this_node(config: PreferenceConfig) -> PreferenceConfig:
    """The settings for a service on the driver's node: its log_dir as the driver names it."""
    import ray

    changes: dict[str, Any] = {}
    if not ray.util.client.ray.is_connected():  # with Ray Client, the driver's paths are not the cluster's
        changes["log_dir"] = os.path.abspath(config.log_dir)
    return dataclasses.replace(config, **changes)


def service_actor(name: str):
    """The actor handle of the service called ``name``, from any process of the cluster."""
    ray = import_ray()
    try:
        return ray.get_actor(name, namespace=NAMESPACE)
    except ValueError as e:
        raise UsageError(f"No drlhp preference service called {name!r} on this Ray cluster: start one with "
                           "drlhp.cluster.PreferenceService in the driver before the env runners") from e

