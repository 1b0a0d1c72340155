"""An RLlib off-policy algorithm's replay buffer kept on the service's current reward (new API stack).

SAC and DQN keep each step's reward as the env runner gave it, in an ``EpisodeReplayBuffer`` on the
driver (``algorithm.local_replay_buffer``) that they sample for hours; the service replaces its reward
network and refits its normaliser at every checkpoint. As ``drlhp.sb3.RelabelReplayBuffer`` does for SB3,
``ReplayBufferRelabeller`` rewrites every stored reward with the service's newest predictor, within a bound
on the share of the run's wall time it takes (``drlhp.cluster.rllib.with_preferences`` calls it after each
training iteration).

Why it works on RLlib's buffers: they store whole ``SingleAgentEpisode`` objects and build each training
sample from them when sampled (``EpisodeReplayBuffer._sample_episodes`` and
``PrioritizedEpisodeReplayBuffer.sample`` read ``episode.get_rewards(...)`` and sum the n-step return
then), so a reward rewritten in a stored episode is what every later sample sees. Reward ``t`` of an
episode is that of the step into observation ``t + 1``: the runner's wrapper rewarded that observation,
through the service's ``obs_transform_func``, and RLlib stores the env's observations as they came (its
default env-to-module connectors read episodes and never write them).
"""
from __future__ import annotations

import logging
import time
from typing import Any, Callable

import numpy as np

from drlhp.cluster.service import PreferenceService
from drlhp.errors import ConfigError, ObservationError
from drlhp.frontends.base import RELABEL_CHUNK, unbatch
from drlhp.reward.predictor import RewardPredictor
from drlhp.reward.relabel_bound import DEFAULT_MAX_TIME_SHARE, check_max_time_share, next_allowed

log = logging.getLogger("drlhp")


class ReplayBufferRelabeller:
    """Relabels ``buffer`` (an ``EpisodeReplayBuffer`` of single-agent episodes) with ``service``'s newest
    reward predictor, each time ``maybe_relabel()`` finds a newer one and the time bound allows.

    Args:
        max_time_share: relabel a newer predictor only once the time since the last relabelling is at least
            ``(1 - share) / share`` times what that one took, so relabelling takes at most this share of the
            run's wall time (1.0: whenever there is a newer one). A predictor passed over is not lost: the next
            relabelling uses the newest.
    """

    def __init__(self, buffer: Any, service: PreferenceService,
                 max_time_share: float = DEFAULT_MAX_TIME_SHARE) -> None:
        check_relabellable(buffer)
        self.buffer, self.service, self.max_time_share = buffer, service, check_max_time_share(max_time_share)
        self._transform: Callable[[Any], np.ndarray] | None = service.config.obs_transform_func
        self.version = 0  # the service's weights version the stored rewards come from (0: the runners' zeros)
        self.predictor: RewardPredictor | None = None  # the predictor of that version
        self.relabellings = 0
        self.seconds = 0.0  # spent relabelling, in all (fetching the weights included)
        self.last_seconds = 0.0
        self._next_allowed = 0.0  # monotonic time before which no relabelling starts

    def maybe_relabel(self) -> bool:
        """Relabel the whole buffer if the service has a newer predictor and the time bound allows; whether it did."""
        if time.monotonic() < self._next_allowed:
            return False
        start = time.monotonic()
        newer = self.service.weights_after(self.version)
        if newer is None:
            return False
        version, data = newer
        predictor = RewardPredictor.from_bytes(data)
        self.relabel(predictor)
        self.version, self.predictor = version, predictor
        took = time.monotonic() - start
        self.relabellings += 1
        self.seconds += took
        self.last_seconds = took
        self._next_allowed = next_allowed(took, self.max_time_share)
        return True

    def relabel(self, predictor: RewardPredictor) -> int:
        """Rewrite every stored reward with ``predictor``'s normalised reward; returns the rewards rewritten."""
        pending: list[tuple[Any, int, Any]] = []  # (episode, first reward index in its data, frames)
        n_pending = n_done = 0
        for episode in self.buffer.episodes:
            for first, frames in self._frames_of(episode):
                pending.append((episode, first, frames))
                n_pending += len(frames)
                if n_pending >= RELABEL_CHUNK:
                    n_done += self._write(predictor, pending)
                    pending, n_pending = [], 0
        return n_done + self._write(predictor, pending)

    def _frames_of(self, episode: Any):
        """``(first, frames)`` pieces of at most ``RELABEL_CHUNK`` frames: the frames of the observations that
        the rewards at ``first, first + 1, ...`` of the episode's reward data (lookback included) ended in."""
        rewards, observations = episode.rewards, episode.observations
        n_rewards = rewards.len_incl_lookback()
        # Reward data index i is of step t = i - rewards.lookback, which ends in observation t + 1, at observation
        # data index t + 1 + observations.lookback. A reward in the lookback whose observation is not kept (never
        # in the buffers RLlib fills: both lookbacks are as long) keeps its value.
        shift = observations.lookback + 1 - rewards.lookback
        for first in range(max(0, -shift), n_rewards, RELABEL_CHUNK):
            stop = min(n_rewards, first + RELABEL_CHUNK)
            yield first, self._frames(observations.data, first + shift, stop + shift)

    def _frames(self, data: Any, start: int, stop: int) -> np.ndarray:
        """The frames of observations ``start:stop`` of an episode's observation data (a list of observations, or,
        once numpy'd, an array or a dict / tuple of arrays)."""
        if isinstance(data, list):
            return np.stack([self._frame(obs) for obs in data[start:stop]])
        if isinstance(data, np.ndarray) and self._transform is None:
            return data[start:stop]
        return np.stack([self._frame(unbatch(data, i)) for i in range(start, stop)])

    def _frame(self, obs: Any) -> np.ndarray:
        return self._transform(obs) if self._transform is not None else obs

    def _write(self, predictor: RewardPredictor, pending: list[tuple[Any, int, Any]]) -> int:
        if not pending:
            return 0
        frames = np.concatenate([f for _, _, f in pending])
        expected = predictor.config.frame_spec.shape
        if frames.shape[1:] != tuple(expected):
            raise ObservationError(
                f"the replay buffer's observations make frames of shape {frames.shape[1:]}, the reward network's are "
                f"{tuple(expected)}: the buffer does not hold the observations the env runners rewarded. An "
                "env-to-module connector that writes observations into episodes (FlattenObservations, "
                "MeanStdFilter, an ObservationPreprocessor) changes them after drlhp rewarded them: do that in "
                "make_env's env (a gymnasium wrapper) instead, or pass relabel=False to with_preferences")
        rewards = predictor.normalised_rewards(frames)
        at = 0
        for episode, first, piece in pending:
            _set_rewards(episode.rewards, first, rewards[at:at + len(piece)])
            at += len(piece)
        return at

    def stats(self) -> dict:
        """What ``result["drlhp"]`` carries: relabellings, their seconds, the weights version the rewards are of."""
        return {"relabellings": self.relabellings, "relabel_seconds": self.seconds,
                "relabel_last_seconds": self.last_seconds, "relabelled_weights_version": self.version}


def _set_rewards(rewards: Any, first: int, values: np.ndarray) -> None:
    """Write ``values`` at data indices ``first, ...`` of an episode's rewards (``InfiniteLookbackBuffer``:
    its ``data`` is a list of floats, or an array once numpy'd)."""
    data = rewards.data
    stop = first + len(values)
    if isinstance(data, list):
        data[first:stop] = values.tolist()
        return
    if not np.issubdtype(data.dtype, np.floating):  # an env's integer rewards: the predicted ones are not
        data = rewards.data = data.astype(np.float64)
    data[first:stop] = values


def check_relabellable(buffer: Any) -> None:
    """Raise ``ConfigError`` naming the fix unless ``buffer`` stores single-agent episodes drlhp can relabel."""
    from ray.rllib.utils.replay_buffers.episode_replay_buffer import EpisodeReplayBuffer
    from ray.rllib.utils.replay_buffers.multi_agent_episode_buffer import MultiAgentEpisodeReplayBuffer

    fix = ("with_preferences(..., relabel=False) trains on the rewards as the runners gave them (each of the "
           "predictor of its time)")
    if isinstance(buffer, MultiAgentEpisodeReplayBuffer):
        raise ConfigError(
            f"drlhp relabels replay buffers of single-agent episodes; {type(buffer).__name__} keeps multi-agent "
            "ones, and drlhp's env runners step single-agent envs: use EpisodeReplayBuffer or "
            "PrioritizedEpisodeReplayBuffer (config.training(replay_buffer_config={'type': ...})), or " + fix)
    if not isinstance(buffer, EpisodeReplayBuffer):
        raise ConfigError(
            f"drlhp relabels the replay buffers of RLlib's new API stack, which store episodes "
            f"(EpisodeReplayBuffer, PrioritizedEpisodeReplayBuffer); this algorithm has a {type(buffer).__name__}: "
            "run it on the new API stack (RLlib's default) with one of those "
            "(config.training(replay_buffer_config={'type': 'PrioritizedEpisodeReplayBuffer'})), or " + fix)
