"""The control for the reward's scale: an off-policy agent on the env's own reward, standardised as drlhp
standardises its predicted reward (``--true-reward --standardised-reward``).

drlhp gives the agent its predicted reward centred (by default on the lower of its mean and median) and scaled to
a standard deviation of ``reward_scale`` (0.05); a true-reward run gives it the env's reward as it is (about 7 a
step for a running HalfCheetah). Where drlhp's agent ends above the true-reward agent, the learned reward may be
the better reward, or only the better-scaled one: this run tells the two apart.

The buffer keeps each reward as the env gave it and hands the agent every sampled reward through drlhp's own
``RewardNormaliser``, fitted on the rewards in the buffer (all the agent has seen until it wraps round) and
refitted every ``refit_every`` samples, as drlhp's agent gets each stored transition's reward from the newest
reward checkpoint (``drlhp.sb3.RelabelReplayBuffer``).
"""
from __future__ import annotations

import numpy as np
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.buffers import ReplayBuffer
from stable_baselines3.common.vec_env import VecNormalize

from drlhp.reward.normaliser import RewardCentre, RewardNormaliser

#: Samples between refits: SAC samples once per agent step, so about as often as drlhp writes a reward checkpoint
#: early in a run; a refit of 300k rewards takes milliseconds.
REFIT_EVERY = 1000


class StandardisedRewardReplayBuffer(ReplayBuffer):
    """SB3's replay buffer whose sampled rewards are the stored ones centred and scaled as drlhp's are."""

    def __init__(self, *args, reward_scale: float, reward_centre: RewardCentre, refit_every: int = REFIT_EVERY,
                 **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.reward_scale, self.reward_centre, self.refit_every = reward_scale, reward_centre, refit_every
        self.normaliser: RewardNormaliser | None = None
        self._samples_since_fit = 0

    def stored_rewards(self) -> np.ndarray:
        """Every reward in the buffer, as the env gave it."""
        return self.rewards[:self.buffer_size if self.full else self.pos].ravel()

    def _normalize_reward(self, reward: np.ndarray, env: VecNormalize | None = None) -> np.ndarray:
        # SB3 passes every sampled batch's rewards, (batch, 1), through here.
        reward = super()._normalize_reward(reward, env)
        if self.normaliser is None or self._samples_since_fit >= self.refit_every:
            self.normaliser = RewardNormaliser.fit(self.stored_rewards(), self.reward_scale, self.reward_centre)
            self._samples_since_fit = 0
        self._samples_since_fit += 1
        return self.normaliser(reward).astype(np.float32).reshape(-1, 1)


def standardise_rewards(agent: BaseAlgorithm, reward_scale: float, reward_centre: RewardCentre) -> None:
    """Give ``agent`` (a fresh off-policy SB3 agent with SB3's plain replay buffer) a
    ``StandardisedRewardReplayBuffer`` of the same size and settings in its place."""
    buffer = getattr(agent, "replay_buffer", None)
    if type(buffer) is not ReplayBuffer:
        raise ValueError(f"--standardised-reward standardises the rewards an off-policy agent samples from SB3's "
                         f"ReplayBuffer; {type(agent).__name__} has {type(buffer).__name__}: run it without the flag")
    agent.replay_buffer = StandardisedRewardReplayBuffer(
        buffer.buffer_size * buffer.n_envs, buffer.observation_space, buffer.action_space, device=buffer.device,
        n_envs=buffer.n_envs, optimize_memory_usage=buffer.optimize_memory_usage,
        handle_timeout_termination=buffer.handle_timeout_termination, reward_scale=reward_scale,
        reward_centre=reward_centre)
