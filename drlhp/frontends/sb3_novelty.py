"""``NoveltyReplayBuffer``: an SB3 replay buffer whose rewards, while the agent explores, are its observations'
novelty (PEBBLE's unsupervised pre-training, Lee et al. 2021).

A run with ``unsupervised_steps`` asks no label before then. Meanwhile the agent learns to reach observations
unlike those it has seen: a sampled transition's reward is the distance from the observation it ends in to its
k-th nearest neighbour among every observation in the buffer (a particle estimate of the state entropy, recomputed
as PEBBLE does at each gradient step over the whole buffer; PEBBLE scores the observation a transition starts in),
divided by the running standard deviation of those distances. The initial labels then compare clips of varied
behaviour rather than of a random policy.

While exploring, the buffer stores a reward of 0 for each transition, not the one the wrapper returned (the env's
own before its first checkpoint): the agent never learns from the env's reward. ``drlhp.sb3.RelabelReplayBuffer``
tells the buffer how long to explore (the wrapper's ``unsupervised_steps``, then on until the reward model's first
checkpoint), resets the critic when exploration ends (what it learned was the value of novelty, as PEBBLE resets
it), relabels the buffer and trains on it for ``RESET_UPDATES`` gradient steps.
"""
from __future__ import annotations

import numpy as np
import torch

from drlhp.errors import ConfigError
from drlhp.frontends.sb3 import HumanPreferencesVecEnvWrapper  # noqa: F401  (first: it quiets gym, names the extra)

from stable_baselines3.common.buffers import ReplayBuffer  # isort: skip  (after the wrapper's import)
from stable_baselines3.common.type_aliases import ReplayBufferSamples  # isort: skip
from stable_baselines3.common.vec_env import VecNormalize  # isort: skip

#: PEBBLE's k for state vectors.
DEFAULT_K = 5
#: Gradient steps on the relabelled buffer right after the critic's reset, before the agent acts again (PEBBLE's).
RESET_UPDATES = 100
#: Observations compared with a batch at a time (bounds the distance matrix's memory).
MEMORY_CHUNK = 65_536


class NoveltyReplayBuffer(ReplayBuffer):
    """SB3's ``ReplayBuffer``, whose sampled rewards are novelty for the run's first ``unsupervised_steps`` env steps
    and on until the reward model is ready.

    ``SAC("MlpPolicy", venv, replay_buffer_class=NoveltyReplayBuffer, learning_starts=1000)`` with
    ``venv = HumanPreferencesVecEnvWrapper(..., unsupervised_steps=10_000)`` and ``RelabelReplayBuffer()`` among
    the callbacks. Observations must be flat vectors (what a distance between states means; for images PEBBLE's
    estimate needs an encoder, which this does not provide).

    Args:
        k: the neighbour whose distance is the novelty (PEBBLE: 5).
        **kwargs: SB3's ``ReplayBuffer`` arguments.
    """

    def __init__(self, *args, k: int = DEFAULT_K, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        if len(self.obs_shape) != 1:
            raise ConfigError(f"NoveltyReplayBuffer measures novelty as distances between flat state vectors; these "
                              f"observations have shape {self.obs_shape}. Explore without it (unsupervised_steps=0)")
        if self.optimize_memory_usage:
            raise ConfigError("NoveltyReplayBuffer needs the next observations kept apart: optimize_memory_usage=False")
        if k < 1:
            raise ConfigError(f"k must be >= 1, got {k}")
        self.k = k
        self.unsupervised_steps = 0  # set by RelabelReplayBuffer from the wrapper's config
        self.awaiting_reward_model = False  # set by RelabelReplayBuffer: explored enough, on until the model is ready
        self._count = self._sum = self._sum_sq = 0.0  # the distances so far, for their running std

    @property
    def transitions(self) -> int:
        """Transitions stored so far (all envs)."""
        return (self.buffer_size if self.full else self.pos) * self.n_envs

    @property
    def exploring(self) -> bool:
        """True until the buffer holds ``unsupervised_steps`` transitions, and after while awaiting the reward model."""
        return self.transitions < self.unsupervised_steps or self.awaiting_reward_model

    def add(self, obs, next_obs, action, reward, done, infos) -> None:
        """Store a step's transitions, their reward 0 while exploring."""
        if self.exploring:  # the env's own reward: never stored, never learned from
            reward = np.zeros_like(reward)
        super().add(obs, next_obs, action, reward, done, infos)

    def _get_samples(self, batch_inds: np.ndarray, env: VecNormalize | None = None) -> ReplayBufferSamples:
        if not self.exploring:
            return super()._get_samples(batch_inds, env)
        # SB3's own sampling, with the rows kept: novelty is of the observations as stored, not as normalised.
        env_indices = np.random.randint(0, high=self.n_envs, size=(len(batch_inds),))
        ends = self.next_observations[batch_inds, env_indices, :]
        data = (self._normalize_obs(self.observations[batch_inds, env_indices, :], env),
                self.actions[batch_inds, env_indices, :], self._normalize_obs(ends, env),
                (self.dones[batch_inds, env_indices] * (1 - self.timeouts[batch_inds, env_indices])).reshape(-1, 1),
                self.novelty(ends).reshape(-1, 1).astype(np.float32))
        return ReplayBufferSamples(*tuple(map(self.to_torch, data)))

    def novelty(self, observations: np.ndarray) -> np.ndarray:
        """Each observation's distance to its k-th nearest neighbour in the buffer (itself, when stored, not
        counted), over the running standard deviation of those distances."""
        n_slots = self.buffer_size if self.full else self.pos
        stored = self.next_observations[:n_slots].reshape(-1, self.obs_shape[0])
        distances = self.knn_distances(observations, stored)
        self._count += len(distances)
        self._sum += float(distances.sum())
        self._sum_sq += float(np.square(distances).sum())
        variance = self._sum_sq / self._count - (self._sum / self._count) ** 2
        return distances / np.sqrt(variance) if variance > 0 else np.zeros_like(distances)

    def knn_distances(self, queries: np.ndarray, stored: np.ndarray) -> np.ndarray:
        """Distance from each query (one of the stored observations) to its k-th nearest neighbour among
        ``stored``, its own copy left out: the (k+1)-th nearest (with k or fewer others stored, the farthest)."""
        q = torch.as_tensor(np.asarray(queries, np.float32))
        nearest = torch.full((len(q), 0), float("inf"))
        for first in range(0, len(stored), MEMORY_CHUNK):  # keep the k + 1 nearest of each chunk
            chunk = torch.as_tensor(np.asarray(stored[first:first + MEMORY_CHUNK], np.float32))
            both = torch.cat([nearest, torch.cdist(q, chunk, compute_mode="donot_use_mm_for_euclid_dist")], dim=1)
            nearest = torch.topk(both, min(self.k + 1, both.shape[1]), dim=1, largest=False).values
        return nearest[:, -1].numpy() if nearest.shape[1] > 1 else np.zeros(len(q), np.float32)


def check_can_explore(model, buffer: NoveltyReplayBuffer, unsupervised_steps: int) -> None:
    """Refuse, before any step, an agent or buffer with which exploring could not end as it should."""
    _critic(model)
    if unsupervised_steps > buffer.buffer_size * buffer.n_envs:
        raise ConfigError(f"unsupervised_steps={unsupervised_steps} is more than the replay buffer holds "
                          f"({buffer.buffer_size * buffer.n_envs} transitions), so exploring would never end: raise "
                          "the agent's buffer_size or lower unsupervised_steps")


def _critic(model):
    critic, target = getattr(model, "critic", None), getattr(model, "critic_target", None)
    if critic is None or target is None:
        raise ConfigError(f"unsupervised_steps explores with an actor-critic agent (SAC, TD3, DDPG) whose critic is "
                          f"reset when exploring ends; {type(model).__name__} has none")
    return critic, target


def reset_critic(model) -> None:
    """Re-initialise an SB3 actor-critic's critic (SAC, TD3, DDPG: ``critic``, its target and its optimizer's
    state): after exploring, it holds the value of novelty, not of the reward to come (PEBBLE resets it too)."""
    critic, target = _critic(model)
    for module in critic.modules():
        if hasattr(module, "reset_parameters"):
            module.reset_parameters()
    target.load_state_dict(critic.state_dict())
    critic.optimizer.state.clear()
