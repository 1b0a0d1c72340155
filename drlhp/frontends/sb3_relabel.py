"""``RelabelReplayBuffer``: an SB3 off-policy agent's replay buffer kept on the current reward.

SAC, TD3, DQN and their kin store each transition's reward as it was when collected. drlhp replaces its
reward network and refits its normaliser at every checkpoint, so without relabelling a buffer of 100k-1M
transitions mixes the rewards of dozens of models and scales. This callback recomputes every stored reward
with the wrapper's current reward predictor when a newer checkpoint is in use (PEBBLE, Lee et al. 2021,
relabels the same way), within a bound on the share of the run's wall time it takes. With ``unsupervised_steps``
and a ``NoveltyReplayBuffer`` it also ends the exploration (``drlhp.frontends.sb3_novelty``).

The reward of a transition is the predicted reward of the observation it ends in: the buffer's
``next_observations`` (with ``optimize_memory_usage``, the next slot's observation, and, for a step that ended
an episode, its last observation, which such a buffer does not keep: the callback keeps those few itself).
Observations pass back through the wrappers SB3 or you put between the model and drlhp's wrapper
(``VecTransposeImage`` is undone; ``VecNormalize``'s buffer holds the original observations).
"""
from __future__ import annotations

import time
from typing import Any, Callable

import numpy as np

from drlhp.errors import ConfigError, UsageError
from drlhp.frontends.base import RELABEL_CHUNK
from drlhp.frontends.sb3 import HumanPreferencesVecEnvWrapper  # first: it quiets gym and names a missing extra
from drlhp.frontends.sb3_novelty import RESET_UPDATES, NoveltyReplayBuffer, check_can_explore, reset_critic
from drlhp.reward.predictor import RewardPredictor
from drlhp.reward.relabel_bound import DEFAULT_MAX_TIME_SHARE, check_max_time_share, next_allowed

from stable_baselines3.common.buffers import DictReplayBuffer, ReplayBuffer  # isort: skip  (after the wrapper's import)
from stable_baselines3.common.callbacks import BaseCallback  # isort: skip
from stable_baselines3.common.vec_env import VecEnv, VecEnvWrapper, VecNormalize, VecTransposeImage  # isort: skip


class RelabelReplayBuffer(BaseCallback):
    """Relabels ``model.replay_buffer`` with the reward predictor a ``HumanPreferencesVecEnvWrapper`` uses now.

    ``model.learn(..., callback=RelabelReplayBuffer())``, the model's env holding a
    ``drlhp.sb3.HumanPreferencesVecEnvWrapper``. Once the wrapper returns predicted rewards, each newer
    checkpoint it loads makes the callback recompute every reward in the buffer (``ReplayBuffer``,
    ``DictReplayBuffer`` and their subclasses, any number of envs, ``optimize_memory_usage`` too), before the
    step's transition is stored: the buffer then holds one reward function, the wrapper's.

    Args:
        max_time_share: relabel a newer checkpoint only once the time since the last relabelling is at least
            ``(1 - share) / share`` times what that one took, so relabelling takes at most this share of the run's
            wall time (1.0: at every checkpoint the wrapper loads). A checkpoint passed over is not lost: the next
            relabelling uses the newest.

    While the wrapper returns the env's reward (before its first checkpoint, or after
    ``switch_to_true_reward()``), stored rewards are left as they are.

    With the wrapper's ``unsupervised_steps``, the buffer must be a ``drlhp.sb3.NoveltyReplayBuffer``: the agent
    explores for that many env steps (the initial labels are asked then), and on until the reward model's first
    checkpoint; then the callback resets the agent's critic, relabels the buffer and trains the agent on it for
    ``RESET_UPDATES`` gradient steps (PEBBLE's), before it acts again.
    """

    def __init__(self, max_time_share: float = DEFAULT_MAX_TIME_SHARE, verbose: int = 0) -> None:
        super().__init__(verbose)
        self.max_time_share = check_max_time_share(max_time_share)
        self.relabelled_with: RewardPredictor | None = None  # the predictor the buffer's rewards come from
        self.relabellings = 0
        self.seconds = 0.0  # spent relabelling, in all
        self._next_allowed = 0.0  # monotonic time before which no relabelling starts
        self._last_frames: dict[int, dict[int, Any]] = {}  # slot -> {env: last obs of an episode} (memory-optimised)

    def _init_callback(self) -> None:
        buffer = getattr(self.model, "replay_buffer", None)
        if not isinstance(buffer, ReplayBuffer):  # DictReplayBuffer's too
            raise ConfigError(
                f"RelabelReplayBuffer relabels an off-policy agent's replay buffer (SAC, TD3, DQN, ...): "
                f"{type(self.model).__name__} has {'none' if buffer is None else type(buffer).__name__}. An on-policy "
                "agent (PPO, A2C) collects fresh rewards for every update and needs no relabelling.")
        self.buffer = buffer
        self.wrapper, self._to_wrapper_obs = _wrapper_and_undo(self.model.get_env())
        self._memory_optimised = bool(getattr(buffer, "optimize_memory_usage", False))
        unsupervised_steps = self.wrapper.config.unsupervised_steps
        if unsupervised_steps and not isinstance(buffer, NoveltyReplayBuffer):
            raise ConfigError(f"unsupervised_steps={unsupervised_steps}: the agent explores with novelty as its "
                              "reward, which drlhp.sb3.NoveltyReplayBuffer gives it: create the agent with "
                              "replay_buffer_class=NoveltyReplayBuffer (or set unsupervised_steps=0)")
        if isinstance(buffer, NoveltyReplayBuffer):
            check_can_explore(self.model, buffer, unsupervised_steps)
            buffer.unsupervised_steps = unsupervised_steps
        self._exploration_ended = False  # this step's transition was the last explored: relabel once it is stored

    def _on_step(self) -> bool:
        if self._memory_optimised:
            self._keep_last_frames()
        buffer = self.buffer
        if isinstance(buffer, NoveltyReplayBuffer) and buffer.exploring:  # its rewards are novelty: nothing to relabel
            if buffer.transitions + buffer.n_envs >= buffer.unsupervised_steps:
                # Explored enough; the initial labels are asked from here. Exploring ends once the reward model is
                # ready, not with a wait without steps: labels need clips, and a clip the interface missed (it drops
                # those it is too busy to take, so that a step never waits) would leave them short forever.
                buffer.awaiting_reward_model = not self.wrapper.using_reward_from_predictor
                if not buffer.awaiting_reward_model:
                    reset_critic(self.model)
                    self._exploration_ended = True
            return True
        predictor = self.wrapper.pipeline.predictor
        if (predictor is not None and predictor is not self.relabelled_with and self.wrapper.using_reward_from_predictor
                and time.monotonic() >= self._next_allowed):
            self.relabel()
        return True

    def _on_rollout_end(self) -> None:
        # SB3 stores a step's transition after the callbacks' on_step and trains after the rollout's end.
        if self._exploration_ended:
            self._exploration_ended = False
            self.relabel()
            agent: Any = self.model  # off-policy (it has a replay buffer): train() and batch_size are its
            agent.train(gradient_steps=RESET_UPDATES, batch_size=agent.batch_size)

    def _keep_last_frames(self) -> None:
        """Keep the last observation of each episode that ended with this step: this step's transition goes to
        slot ``pos``, whose next slot will hold the next episode's first observation instead."""
        pos = self.buffer.pos
        self._last_frames.pop(pos, None)  # slot pos is overwritten now
        vec_normalize = self.model.get_vec_normalize_env()
        for i in np.flatnonzero(self.locals["dones"]):
            last = self.locals["infos"][i].get("terminal_observation")
            if last is not None:
                self._last_frames.setdefault(pos, {})[int(i)] = np.array(
                    vec_normalize.unnormalize_obs(last) if vec_normalize is not None else last)

    def relabel(self) -> int:
        """Recompute every stored reward with the wrapper's predictor now; returns the transitions relabelled."""
        start = time.monotonic()
        predictor = self.wrapper.pipeline.predictor
        buffer = self.buffer
        n_slots = buffer.buffer_size if buffer.full else buffer.pos
        per_chunk = max(1, RELABEL_CHUNK // buffer.n_envs)
        for first in range(0, n_slots, per_chunk):
            slots = np.arange(first, min(n_slots, first + per_chunk))
            buffer.rewards[slots] = self._rewards(self._next_observations(slots)).reshape(len(slots), buffer.n_envs)
        for slot, lasts in self._last_frames.items():
            for env, last in lasts.items():
                buffer.rewards[slot, env] = self._rewards(_batched(last))[0]
        self.relabelled_with = predictor
        took = time.monotonic() - start
        self.relabellings += 1
        self.seconds += took
        self._next_allowed = next_allowed(took, self.max_time_share)
        self.logger.record("drlhp/relabel_seconds", took)
        return n_slots * buffer.n_envs

    def _next_observations(self, slots: np.ndarray) -> Any:
        """The observations the transitions in ``slots`` end in, ``(len(slots) * n_envs, ...)``."""
        buffer = self.buffer
        if isinstance(buffer, DictReplayBuffer):
            return {k: _flat(v[slots]) for k, v in buffer.next_observations.items()}
        if self._memory_optimised:
            return _flat(buffer.observations[(slots + 1) % buffer.buffer_size])
        return _flat(buffer.next_observations[slots])

    def _rewards(self, observations: Any) -> np.ndarray:
        return self.wrapper.predicted_rewards(self._to_wrapper_obs(observations))


def _flat(array: np.ndarray) -> np.ndarray:
    """``(slots, n_envs, ...)`` -> ``(slots * n_envs, ...)``."""
    return array.reshape(-1, *array.shape[2:])


def _batched(obs: Any) -> Any:
    return {k: v[None] for k, v in obs.items()} if isinstance(obs, dict) else obs[None]


def _wrapper_and_undo(env: VecEnv | None) -> tuple[HumanPreferencesVecEnvWrapper, Callable[[Any], Any]]:
    """drlhp's wrapper in the model's env, and what turns the model's observations back into the ones it saw."""
    undo: list[Callable[[Any], Any]] = []
    while not isinstance(env, HumanPreferencesVecEnvWrapper):
        if not isinstance(env, VecEnvWrapper):
            raise UsageError("RelabelReplayBuffer needs a drlhp.sb3.HumanPreferencesVecEnvWrapper in the model's env "
                             "(wrap your VecEnv with it)")
        if isinstance(env, VecTransposeImage):
            undo.append(_untranspose(env))
        elif not isinstance(env, VecNormalize) and env.observation_space != env.venv.observation_space:
            raise UsageError(
                f"{type(env).__name__} sits between the model and drlhp's wrapper and changes the observations, so "
                "the replay buffer's observations are not those drlhp rewarded: wrap it inside drlhp's wrapper "
                "(HumanPreferencesVecEnvWrapper(YourWrapper(venv))), or relabel with the wrapper's "
                "predicted_rewards() yourself")
        env = env.venv

    def to_wrapper_obs(obs: Any) -> Any:
        for step in undo:  # the outermost wrapper's change first
            obs = step(obs)
        return obs
    return env, to_wrapper_obs


def _untranspose(env: VecTransposeImage) -> Callable[[Any], Any]:
    """The inverse of ``env``'s channel-first transposition, on a batch of observations."""
    def untranspose(obs: Any) -> Any:
        if isinstance(obs, dict):
            return {k: np.moveaxis(v, 1, -1) if k in env.image_space_keys else v for k, v in obs.items()}
        return np.moveaxis(obs, 1, -1)
    return untranspose
