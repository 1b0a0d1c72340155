"""Unsupervised exploration before the first label (PEBBLE): the label schedule waits ``unsupervised_steps``, the
replay buffer's sampled rewards are novelty until then, and the agent never learns from the env's reward."""
import math

import gymnasium
import numpy as np
import pytest
from conftest import FAST
from gymnasium import spaces
from test_relabel import PointEnv

pytest.importorskip("stable_baselines3")
from stable_baselines3 import DQN, SAC  # noqa: E402
from stable_baselines3.common.callbacks import BaseCallback  # noqa: E402
from stable_baselines3.common.vec_env import DummyVecEnv  # noqa: E402

import drlhp.frontends.sb3_novelty as sb3_novelty  # noqa: E402
import drlhp.frontends.sb3_relabel as sb3_relabel  # noqa: E402
from drlhp import PreferenceConfig  # noqa: E402
from drlhp.errors import ConfigError  # noqa: E402
from drlhp.labelling.schedule import LabelSchedule  # noqa: E402
from drlhp.sb3 import HumanPreferencesVecEnvWrapper, NoveltyReplayBuffer, RelabelReplayBuffer  # noqa: E402

BOX = spaces.Box(-100, 100, (2,), np.float32)
ACT = spaces.Box(-1, 1, (1,), np.float32)


def buffer(k: int = 2, n_envs: int = 1, **kwargs) -> NoveltyReplayBuffer:
    return NoveltyReplayBuffer(1000, BOX, ACT, device="cpu", n_envs=n_envs, k=k, **kwargs)


def test_the_schedule_asks_nothing_before_unsupervised_steps_then_spends_the_budget_from_there():
    schedule = LabelSchedule(budget=100, initial=10, horizon=1000, unsupervised_steps=200)
    assert [schedule.allowed(t) for t in (0, 199)] == [0, 0]
    assert schedule.allowed(200) == 10 and schedule.allowed(600) == 55 and schedule.allowed(1000) == 100
    unlimited = LabelSchedule(budget=None, unsupervised_steps=200)
    assert unlimited.allowed(199) == 0 and unlimited.allowed(200) == math.inf
    with pytest.raises(ConfigError, match="unsupervised_steps must be >= 0 and below label_schedule_steps"):
        PreferenceConfig(unsupervised_steps=1000, label_schedule_steps=1000)


def test_novelty_is_the_distance_to_the_kth_nearest_other_observation_over_its_running_std(monkeypatch):
    b = buffer(k=2)
    points = np.array([[x, 0] for x in (0, 1, 2, 3, 7)], np.float32)
    assert b.knn_distances(points, points).tolist() == [2, 1, 1, 2, 5]  # itself left out: the 2nd of the others
    assert b.knn_distances(points[:3], points[:3]).tolist() == [2, 1, 2]
    assert b.knn_distances(points[:2], points[:2]).tolist() == [1, 1]  # fewer than k others: the farthest
    monkeypatch.setattr(sb3_novelty, "MEMORY_CHUNK", 2)  # stored observations compared a chunk at a time
    assert b.knn_distances(points, points).tolist() == [2, 1, 1, 2, 5]
    for p in points:
        b.add(p, p, np.zeros(1), np.array([5.0]), np.array([False]), [{}])
    novelty = b.novelty(points)
    assert np.allclose(novelty, np.array([2, 1, 1, 2, 5]) / np.std([2, 1, 1, 2, 5]))


def test_while_exploring_the_buffer_stores_no_env_reward_and_samples_novelty_then_its_own_rewards():
    b = buffer(k=1, n_envs=2)
    b.unsupervised_steps = 6  # three steps of two envs
    rng = np.random.default_rng(0)
    for _ in range(3):
        obs = rng.normal(size=(2, 2)).astype(np.float32)
        b.add(obs, obs, np.zeros((2, 1)), np.array([1.0, 2.0]), np.array([False, False]), [{}, {}])
    assert not b.exploring and (b.rewards[:3] == 0).all()
    b.unsupervised_steps = 100  # as if still exploring: sampled rewards are novelty, not the zeros stored
    sampled = b.sample(32).rewards.numpy()
    assert (sampled > 0).all() and np.ptp(sampled) > 0
    b.unsupervised_steps = 6
    assert (b.sample(32).rewards.numpy() == 0).all()
    b.add(obs, obs, np.zeros((2, 1)), np.array([1.0, 2.0]), np.array([False, False]), [{}, {}])
    assert b.rewards[3].tolist() == [1.0, 2.0]  # exploring over: what the wrapper returns is stored


def test_novelty_needs_flat_state_vectors():
    with pytest.raises(ConfigError, match="flat state vectors.*shape \\(8, 8, 3\\)"):
        NoveltyReplayBuffer(100, spaces.Box(0, 255, (8, 8, 3), np.uint8), ACT, device="cpu")
    with pytest.raises(ConfigError, match="optimize_memory_usage=False"):
        buffer(optimize_memory_usage=True, handle_timeout_termination=False)


class LabelsAsked(BaseCallback):
    """The labels asked by each agent step."""

    def __init__(self, wrapper) -> None:
        super().__init__()
        self.wrapper, self.asked = wrapper, {}

    def _on_step(self) -> bool:
        self.asked[self.num_timesteps] = self.wrapper.stats().pairs_asked
        return True


class StopAfterExploring(BaseCallback):
    """Stops the run at the step after the one at which exploring ended."""

    def __init__(self, resets: list[int]) -> None:
        super().__init__()
        self.resets = resets

    def _on_step(self) -> bool:
        return not self.resets or self.num_timesteps == self.resets[0]


def test_the_agent_explores_until_the_reward_model_is_ready_then_its_critic_is_reset_and_its_buffer_relabelled(
        tmp_path, monkeypatch):
    resets = []
    reset_critic = sb3_relabel.reset_critic
    monkeypatch.setattr(sb3_relabel, "reset_critic", lambda model: (resets.append(model.num_timesteps),
                                                                     reset_critic(model)))
    # 20 steps make 4 clips of 5, and the synthetic teacher asks a pair per clip: fewer than the 8 initial labels.
    # The agent must explore on for the clips they need (a wait without steps would never end).
    explored = 20
    env = HumanPreferencesVecEnvWrapper(DummyVecEnv([PointEnv]), log_dir=str(tmp_path), synthetic_preferences=True,
                                        **{**FAST, "unsupervised_steps": explored})
    with env:
        model = SAC("MlpPolicy", env, replay_buffer_class=NoveltyReplayBuffer, learning_starts=10, batch_size=16,
                    seed=0, policy_kwargs=dict(net_arch=[16]))
        asked = LabelsAsked(env)
        relabel = RelabelReplayBuffer(max_time_share=1e-9)  # after the end of exploration's, none for a long while
        model.learn(total_timesteps=100_000, callback=[relabel, asked, StopAfterExploring(resets)])
        assert len(resets) == 1, "exploring never ended"
        ended = resets[0]
        assert all(n == 0 for step, n in asked.asked.items() if step < explored)
        assert ended > explored + 4 * FAST["segment_length"]  # the 4 clips more the initial labels needed
        assert asked.asked[ended] >= FAST["n_initial_prefs"]
        # Every reward stored while exploring (0), the last step's too, is now the reward model's.
        assert relabel.relabellings == 1 and not model.replay_buffer.exploring
        observations = model.replay_buffer.next_observations[:ended, 0]
        assert np.ptp(model.replay_buffer.rewards[:ended, 0]) > 0
        assert np.allclose(model.replay_buffer.rewards[:ended, 0],
                           relabel.relabelled_with.normalised_rewards(observations), atol=1e-5)
        assert model._n_updates == ended - 10 + 100  # one after each step from the 11th, and 100 after the reset


def test_exploring_is_refused_before_any_step_where_it_could_not_end_as_it_should(tmp_path):
    env = HumanPreferencesVecEnvWrapper(DummyVecEnv([PointEnv]), log_dir=str(tmp_path), collect_prefs=False,
                                        train_reward=False, **{**FAST, "unsupervised_steps": 10})
    with env:
        with pytest.raises(ConfigError, match="replay_buffer_class=NoveltyReplayBuffer"):
            SAC("MlpPolicy", env).learn(1, callback=RelabelReplayBuffer())
        with pytest.raises(ConfigError, match="more than the replay buffer holds \\(8 transitions\\)"):
            SAC("MlpPolicy", env, buffer_size=8, replay_buffer_class=NoveltyReplayBuffer).learn(
                1, callback=RelabelReplayBuffer())
        with pytest.raises(ConfigError, match="DQN has none"):
            DQN("MlpPolicy", HumanPreferencesVecEnvWrapper(
                DummyVecEnv([lambda: gymnasium.make("CartPole-v1")]), log_dir=str(tmp_path / "dqn"),
                collect_prefs=False, train_reward=False, **{**FAST, "unsupervised_steps": 10}),
                replay_buffer_class=NoveltyReplayBuffer).learn(1, callback=RelabelReplayBuffer())
