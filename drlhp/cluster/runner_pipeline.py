"""A runner's end of a cluster's preference pipeline: clips out to the service, reward weights in.

It keeps the front-ends' contract (``drlhp.runtime.contract.Pipeline``), as the local pipeline does, so
drlhp's own front-ends drive it unchanged (``drlhp.cluster.runner_env``). Nothing on the step path waits on the network:

- clips are cut per env as on one machine, kept at this runner's share of the
  cluster's clip rate (``RateCap``), compressed, and sent every ``flush_interval``
  seconds in one fire-and-forget actor call; with ``MAX_BATCHES_IN_FLIGHT`` calls
  unanswered (the service is behind) a batch is dropped and counted, never queued;
- new reward weights are asked for every ``weights_poll_interval`` seconds and loaded
  once they have arrived (``ray.wait`` with a zero timeout);
- the frames of a step go through the reward network in one batch.

A runner that RLlib restarts builds a new one, which finds the service by name and
carries on: the labels live in the service, not here.
"""
from __future__ import annotations

import secrets
import time
from collections.abc import Sequence

import numpy as np

from drlhp.clips.cutting import EpisodeClips
from drlhp.cluster.clip_stream import PackedClip, RateCap
from drlhp.cluster.service import import_ray, service_actor
from drlhp.errors import UsageError
from drlhp.reward.predictor import RewardPredictor
from drlhp.reward.torch_setup import set_up_torch
from drlhp.runtime.contract import Pipeline
from drlhp.runtime.stats import PipelineStats

#: Unanswered clip batches a runner allows before it drops new ones (the service is behind).
MAX_BATCHES_IN_FLIGHT = 4


class RunnerPipeline(Pipeline):
    """``n_envs`` envs of one runner, linked to the preference service ``service_name``.

    ``step()`` returns the predicted, normalised rewards once the service has a ready
    reward predictor, and zeros before that: the agent never sees the env's reward.

    Args:
        service_name: the ``PreferenceService``'s name.
        n_envs: envs stepping together in this runner.
        clip_share: this runner's share of the service's clips/s (its envs / all envs in the cluster).
    """

    episode_clips: EpisodeClips  # a runner always cuts clips

    def __init__(self, service_name: str, n_envs: int = 1, clip_share: float = 1.0,
                 flush_interval: float = 0.5, weights_poll_interval: float = 1.0) -> None:
        self._ray = import_ray()
        self._service = service_actor(service_name)
        settings = self._ray.get(self._service.runner_settings.remote(), timeout=120)
        self.config, self.frame_spec, self.n_envs = settings["config"], settings["frame_spec"], n_envs
        set_up_torch(self.config.torch_threads)
        self.labelling_url = None  # the page is the service's: PreferenceService.labelling_url
        self.labelling_owner_url = None
        self.episode_clips = EpisodeClips(self.frame_spec, self.config.segment_length, n_envs)
        self.display_spec = None  # a person labels at the preference service, from the clips it receives
        rate = settings["clips_per_second"] * clip_share
        self._cap = RateCap(rate, burst=max(1.0, rate * flush_interval))
        # A new source per env and per restart: the episodes of a restarted runner stay apart.
        self.sources = [secrets.randbits(31) for _ in range(n_envs)]
        self._outbox: list = []
        self._unreported_steps = 0
        self._in_flight: list = []
        self._flush_interval, self._weights_poll_interval = flush_interval, weights_poll_interval
        self._next_flush = self._next_weights_poll = 0.0
        self._weights_call = self._weights_fetch = None
        self._weights_version = 0
        self._predictor: RewardPredictor | None = None
        self._true_reward = False  # switch_to_true_reward(): step() returns None, the env's own reward
        self._closed = False
        self.counts = {"clips_cut": 0, "clips_sent": 0, "clips_over_share": 0, "clips_dropped_backlog": 0}

    # -- the per-step path (the front-ends' contract) ------------------------------------
    def step(self, frames: np.ndarray, true_rewards: Sequence[float], recorded: Sequence[bool] | None = None,
             episode_ends: Sequence[bool] | None = None, display: np.ndarray | None = None) -> np.ndarray | None:
        """Take one step of every env; returns their normalised predicted rewards (zeros before the first
        weights), or None after ``switch_to_true_reward()``. ``display`` is never given: ``display_spec`` is None."""
        self._unreported_steps += self.n_envs if recorded is None else sum(recorded)
        for clip in self.episode_clips.add(frames, true_rewards, recorded, episode_ends):
            self._keep(clip.env_index, clip.episode, clip.frames, clip.rewards)
        now = time.monotonic()
        if now >= self._next_flush:
            self._next_flush = now + self._flush_interval
            self.flush()
        if now >= self._next_weights_poll:
            self._next_weights_poll = now + self._weights_poll_interval
            self._poll_weights()
        if self._true_reward:
            return None
        if self._predictor is None:
            return np.zeros(self.n_envs)
        return self._predictor.rewards(frames)

    def count_env_steps(self, n: int) -> None:
        """Steps taken elsewhere: the service's label schedule counts them with this runner's next clips."""
        self._unreported_steps += n

    def _keep(self, env_index: int, episode: int, frames: np.ndarray, rewards: np.ndarray) -> None:
        self.counts["clips_cut"] += 1
        if self._cap.take():
            source = self.sources[env_index]
            # Episode ids are unique within this runner; with the env's source, across the cluster.
            self._outbox.append(PackedClip.pack(frames, rewards, source, (source << 24) + episode))
        else:
            self.counts["clips_over_share"] += 1

    @property
    def predictor(self) -> RewardPredictor | None:
        """The reward predictor of the service's weights last synced (None before the first)."""
        return self._predictor

    @property
    def using_reward_from_predictor(self) -> bool:
        """True once the runner has the service's reward weights (and ``switch_to_true_reward()`` was not called)."""
        return self._predictor is not None and not self._true_reward

    def switch_to_true_reward(self) -> None:
        """Return the env's own reward from now on (e.g. to evaluate the agent)."""
        self._true_reward = True

    def switch_to_predicted_reward(self) -> None:
        """Return the predicted reward again; needs the service's weights (fetched now if need be)."""
        if self._predictor is None and not self.sync_weights():
            raise UsageError("No reward predictor yet: the preference service has no ready weights (its "
                             "PreferenceService.wait_for_reward_predictor() waits for them)")
        self._true_reward = False

    def wait_for_reward_predictor(self, timeout: float | None = None) -> None:
        """Block until the service's reward predictor is ready, then fetch its weights."""
        self._ray.get(self._service.wait_for_reward_predictor.remote(timeout), timeout=None)
        self.sync_weights()

    def save_prefs(self, timeout: float = 120.0) -> list[str]:
        """The labels are the service's: write them in its log_dir; returns their paths there."""
        return self._ray.get(self._service.save_prefs.remote(), timeout=timeout)

    def check_workers(self) -> None:
        """Nothing to check here: the driver's ``PreferenceService.check()`` reports the service's failures."""

    def stats(self) -> PipelineStats:
        """This runner's counters: clips cut, sent, over its share, dropped; its weights' version and step.

        The labels and training steps are the service's (``PreferenceService.stats()``): None here."""
        c = self.counts
        return PipelineStats(
            n_envs=self.n_envs, clips_sent=c["clips_sent"],
            clips_dropped=c["clips_over_share"] + c["clips_dropped_backlog"],
            tail_frames_dropped=self.episode_clips.n_tail_frames_dropped,
            predictor_training_step=self._predictor.training_step if self._predictor else None,
            clips_cut=c["clips_cut"], clips_over_share=c["clips_over_share"],
            clips_dropped_backlog=c["clips_dropped_backlog"], weights_version=self._weights_version)

    def close(self) -> None:
        """Send what is kept (once; not after Ray has shut down)."""
        if not self._closed and self._ray.is_initialized():
            self.flush()
        self._closed = True

    # -- to and from the service --------------------------------------------------------
    def flush(self) -> None:
        """Send the clips kept since the last flush, and the steps taken (never waits for the service)."""
        if self._in_flight:
            _, self._in_flight = self._ray.wait(self._in_flight, num_returns=len(self._in_flight), timeout=0)
        if not self._outbox and not self._unreported_steps:
            return
        if len(self._in_flight) >= MAX_BATCHES_IN_FLIGHT:
            self.counts["clips_dropped_backlog"] += len(self._outbox)
            self._outbox = []
            return  # the steps stay unreported until the service keeps up
        self._in_flight.append(self._service.add_clips.remote(self._outbox, self._unreported_steps))
        self.counts["clips_sent"] += len(self._outbox)
        self._outbox, self._unreported_steps = [], 0

    def _poll_weights(self) -> None:
        """One step of: ask for newer weights -> their reference arrives -> their bytes arrive -> load."""
        ray = self._ray
        if self._weights_fetch is not None:
            if ray.wait([self._weights_fetch[1]], timeout=0)[0]:
                version, ref = self._weights_fetch
                self._weights_fetch = None
                self._load(version, ref)
            return
        if self._weights_call is None:
            self._weights_call = self._service.weights_after.remote(self._weights_version)
            return
        if not ray.wait([self._weights_call], timeout=0)[0]:
            return
        call, self._weights_call = self._weights_call, None
        try:
            reply = ray.get(call)
        except ray.exceptions.RayError:
            return  # the service failed: the driver's check() reports it; this runner goes on as it is
        if reply is not None:
            self._weights_fetch = (reply[0], reply[1][0])

    def _load(self, version: int, ref) -> None:
        try:
            data = self._ray.get(ref)
        except self._ray.exceptions.RayError:
            return
        self._predictor = RewardPredictor.from_bytes(data)
        self._weights_version = version

    def sync_weights(self, timeout: float = 60.0) -> bool:
        """Block until this runner has the service's newest ready weights; False if there are none yet."""
        reply = self._ray.get(self._service.weights_after.remote(self._weights_version), timeout=timeout)
        if reply is not None:
            self._load(reply[0], reply[1][0])
        return self._predictor is not None
