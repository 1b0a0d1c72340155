"""The control for the reward's scale: SAC on the env's reward, standardised as drlhp standardises its own."""
from __future__ import annotations

import numpy as np
import pytest
from stable_baselines3 import PPO, SAC
from standardised_reward import StandardisedRewardReplayBuffer, standardise_rewards

from drlhp.reward.normaliser import RewardNormaliser


def sac(**kwargs) -> SAC:
    return SAC("MlpPolicy", "Pendulum-v1", learning_starts=50, buffer_size=5_000, seed=0, **kwargs)


def test_sampled_rewards_are_the_stored_ones_through_drlhps_normaliser_refitted_as_the_buffer_fills():
    agent = sac()
    standardise_rewards(agent, reward_scale=0.05, reward_centre="lower")
    buffer = agent.replay_buffer
    assert isinstance(buffer, StandardisedRewardReplayBuffer) and buffer.buffer_size == 5_000
    buffer.refit_every = 3
    obs, action = np.zeros((1, 3), np.float32), np.zeros((1, 1), np.float32)
    rng = np.random.default_rng(0)
    raw = rng.exponential(7.0, size=200)  # skewed: its lower centre is the median, not the mean
    for r in raw:
        buffer.add(obs, obs, action, np.array([r]), np.array([False]), [{}])
    sampled = buffer.sample(64).rewards.numpy()[:, 0]
    np.testing.assert_allclose(buffer.stored_rewards(), raw.astype(np.float32))  # kept as the env gave them
    expected = RewardNormaliser.fit(raw, 0.05, "lower")(raw[:, None])
    assert np.std(expected) == pytest.approx(0.05) and np.median(expected) == pytest.approx(0, abs=1e-12)
    nearest = np.abs(sampled[:, None] - expected[None, :]).min(axis=1)
    assert sampled.shape == (64,) and nearest.max() < 1e-6  # each sampled reward is a stored one, standardised

    for r in raw + 100.0:  # the agent gets better: the next refit centres on the rewards seen since
        buffer.add(obs, obs, action, np.array([r]), np.array([False]), [{}])
    before = buffer.normaliser
    buffer.sample(8)
    buffer.sample(8)
    assert buffer.normaliser is before  # a fit serves refit_every samples: the first sample's and these two
    buffer.sample(8)
    assert buffer.normaliser is not before
    np.testing.assert_allclose(buffer.normaliser.centre, RewardNormaliser.fit(
        np.concatenate([raw, raw + 100.0]), 0.05, "lower").centre, rtol=1e-6)


def test_sac_learns_through_the_standardised_buffer():
    agent = sac()
    standardise_rewards(agent, reward_scale=0.05, reward_centre="lower")
    agent.learn(120)
    buffer = agent.replay_buffer
    assert buffer.pos == 120 and buffer.normaliser is not None
    assert (buffer.stored_rewards() <= 0).all()  # Pendulum's own rewards, never above 0, are what it stores


def test_an_agent_without_sb3s_plain_replay_buffer_is_refused_with_the_fix():
    with pytest.raises(ValueError, match="PPO has NoneType: run it without the flag"):
        standardise_rewards(PPO("MlpPolicy", "Pendulum-v1", n_steps=64), 0.05, "lower")
