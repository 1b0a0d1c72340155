"""Off-policy agents: after the wrapper moves to a newer reward checkpoint, every reward in an SB3 replay buffer is
the one the current predictor gives the observation its transition ended in."""
import time

import gymnasium
import numpy as np
import pytest
from conftest import FAST, FakePixelEnv, assert_same_in_float32, step_vec_until, wait_for
from gymnasium import spaces

pytest.importorskip("stable_baselines3")
from stable_baselines3 import DQN, PPO, SAC  # noqa: E402
from stable_baselines3.common.vec_env import DummyVecEnv, VecFrameStack, VecTransposeImage  # noqa: E402

from drlhp.errors import ConfigError, UsageError  # noqa: E402
from drlhp.sb3 import HumanPreferencesVecEnvWrapper, RelabelReplayBuffer  # noqa: E402


class PointEnv(gymnasium.Env):
    """A point on a line pushed by the action; reward: closeness to 0; ``episode_length`` steps an episode."""

    def __init__(self, episode_length: int = 9) -> None:
        self.observation_space = spaces.Box(-10, 10, (3,), np.float32)
        self.action_space = spaces.Box(-1, 1, (1,), np.float32)
        self.episode_length = episode_length

    def _obs(self) -> np.ndarray:
        return np.array([self.x, self.t / self.episode_length, 1.0], np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.x, self.t = float(self.np_random.uniform(-2, 2)), 0
        return self._obs(), {}

    def step(self, action):
        self.x, self.t = float(np.clip(self.x + action[0], -10, 10)), self.t + 1
        return self._obs(), -abs(self.x), False, self.t >= self.episode_length, {}


class DotEnv(FakePixelEnv):
    """FakePixelEnv's steps and episodes, the frame a dot that moves with the step counter (a uniform frame would
    get one reward whatever its step: frames are centred on their mean)."""

    def _obs(self) -> np.ndarray:
        frame = np.zeros(self.observation_space.shape, np.uint8)
        frame[self.t % 12, (5 * self.t) % 12] = 255
        return frame


def wrapped(venv, tmp_path):
    """drlhp's wrapper with synthetic labels and a trainer that checkpoints every few steps, recording the frames
    each of its steps rewarded, in order."""
    env = HumanPreferencesVecEnvWrapper(venv, log_dir=str(tmp_path), synthetic_preferences=True, **FAST)
    rewarded: list[np.ndarray] = []
    step = env.pipeline.step

    def recording(frames, *args, **kwargs):
        rewarded.append(np.array(frames))
        return step(frames, *args, **kwargs)
    env.pipeline.step = recording
    return env, rewarded


def until_predicted(env) -> None:
    step_vec_until(env, lambda: env.using_reward_from_predictor)


@pytest.mark.parametrize("agent, n_envs, memory_optimised", [
    ("sac", 1, False), ("sac", 4, False), ("dqn", 2, False), ("dqn", 2, True)])
def test_after_checkpoint_switches_every_stored_reward_is_the_current_predictors(tmp_path, agent, n_envs,
                                                                                    memory_optimised):
    if agent == "sac":
        venv = DummyVecEnv([PointEnv] * n_envs)
    else:  # frame-stacked pixels; SB3 puts a VecTransposeImage between the model and drlhp's wrapper
        venv = VecFrameStack(DummyVecEnv([lambda: DotEnv(episode_length=7)] * n_envs), 4)
    env, rewarded = wrapped(venv, tmp_path)
    with env:
        until_predicted(env)
        buffer_size = 120  # fewer slots than steps: the buffer wraps round
        if agent == "sac":
            model = SAC("MlpPolicy", env, buffer_size=buffer_size, learning_starts=50, batch_size=16, seed=0,
                        policy_kwargs=dict(net_arch=[16]))
        else:
            model = DQN("MlpPolicy", env, buffer_size=buffer_size, learning_starts=50, batch_size=16, seed=0,
                        optimize_memory_usage=memory_optimised,
                        replay_buffer_kwargs=dict(handle_timeout_termination=not memory_optimised),
                        policy_kwargs=dict(net_arch=[16]))
        assert isinstance(model.get_env(), VecTransposeImage) == (agent == "dqn")
        relabel = RelabelReplayBuffer(max_time_share=1.0)
        del rewarded[:]  # the model's steps from here: step k's transition goes to slot k % buffer_size
        model.learn(total_timesteps=300 * n_envs, callback=relabel)
        # The trainer's pace is not the agent's: on a loaded machine learn on (same buffer) until it switched twice.
        deadline = time.monotonic() + 60
        while relabel.relabellings < 2 and time.monotonic() < deadline:
            model.learn(total_timesteps=50 * n_envs, callback=relabel, reset_num_timesteps=False)
        assert relabel.relabellings >= 2, "no checkpoint switch while the buffer held transitions"
        # One more step once the trainer has written a newer checkpoint: the switch comes with a full buffer.
        assert wait_for(lambda: env.pipeline.poll_predictor(now=True), timeout=60)
        relabellings = relabel.relabellings
        model.learn(total_timesteps=1, callback=relabel, reset_num_timesteps=False)

        predictor = env.pipeline.predictor
        assert relabel.relabellings == relabellings + 1 and relabel.relabelled_with is predictor
        n_slots = model.replay_buffer.buffer_size  # SB3 gives each env buffer_size / n_envs
        assert len(rewarded) > n_slots
        stored = np.array(rewarded[-n_slots:])
        slots = np.arange(len(rewarded) - n_slots, len(rewarded)) % n_slots
        expected = predictor.normalised_rewards(stored.reshape(-1, *stored.shape[2:])).reshape(n_slots, n_envs)
        assert np.ptp(expected) > 0.1  # rewards that tell transitions apart
        assert_same_in_float32(model.replay_buffer.rewards[slots], expected)


def test_predicted_rewards_applies_obs_transform_func_and_needs_a_predictor(tmp_path):
    env = HumanPreferencesVecEnvWrapper(DummyVecEnv([PointEnv]), log_dir=str(tmp_path), synthetic_preferences=True,
                                        obs_transform_func=lambda obs: obs[:2], **FAST)
    with env:
        with pytest.raises(UsageError, match="no reward predictor yet"):
            env.predicted_rewards(np.zeros((2, 3), np.float32))
        until_predicted(env)
        observations = np.random.default_rng(0).uniform(-2, 2, (5, 3)).astype(np.float32)
        assert_same_in_float32(env.predicted_rewards(observations),
                               [env.pipeline.predictor.rewards(obs[None, :2])[0] for obs in observations])


def test_relabelling_is_refused_where_it_means_nothing_or_cannot_be_done(tmp_path):
    with pytest.raises(ConfigError, match="max_time_share"):
        RelabelReplayBuffer(max_time_share=0)
    env = HumanPreferencesVecEnvWrapper(DummyVecEnv([PointEnv]), log_dir=str(tmp_path), collect_prefs=False,
                                        train_reward=False, **FAST)
    with env:
        with pytest.raises(ConfigError, match="PPO has none.*on-policy agent.*needs no relabelling"):
            PPO("MlpPolicy", env, n_steps=8, batch_size=8).learn(8, callback=RelabelReplayBuffer())
        with pytest.raises(UsageError, match="VecFrameStack sits between the model and drlhp's wrapper"):
            SAC("MlpPolicy", VecFrameStack(env, 2)).learn(1, callback=RelabelReplayBuffer())
