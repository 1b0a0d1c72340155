"""The front-ends' pipeline contract: the local and the Ray pipelines keep it, and a front-end drives whatever
pipeline its factory makes, with that pipeline's settings."""
from __future__ import annotations

import gymnasium
import numpy as np
import pytest

import drlhp  # noqa: F401  (registers drlhp/MovingDot-v0)
from drlhp import ConfigError, HumanPreferencesEnvWrapper, HumanPreferencesVectorWrapper, PreferenceConfig
from drlhp.clips.frames import infer_frame_spec
from drlhp.runtime.contract import Pipeline
from drlhp.runtime.pipeline import PreferencePipeline
from drlhp.runtime.stats import PipelineStats


class Recording(Pipeline):
    """A pipeline that records what the front-end asks of it and rewards every frame with its mean."""

    def __init__(self, n_envs: int, frame: np.ndarray) -> None:
        self.config = PreferenceConfig(obs_transform_func=None)
        self.frame_spec, self.n_envs = infer_frame_spec(frame), n_envs
        self.labelling_url = self.labelling_owner_url = None
        self.episode_clips = self.display_spec = None
        self.steps: list[tuple] = []
        self.closed = False

    def count_env_steps(self, n: int) -> None: ...

    def step(self, frames, true_rewards, recorded=None, episode_ends=None, display=None):
        self.steps.append((frames.shape, list(true_rewards), episode_ends))
        return frames.reshape(len(frames), -1).mean(axis=1)

    @property
    def predictor(self) -> None:
        return None

    @property
    def using_reward_from_predictor(self) -> bool:
        return True

    def switch_to_true_reward(self) -> None: ...

    def switch_to_predicted_reward(self) -> None: ...

    def wait_for_reward_predictor(self, timeout=None) -> None: ...

    def save_prefs(self, timeout: float = 120.0) -> list[str]:
        return []

    def stats(self) -> PipelineStats:
        return PipelineStats(n_envs=self.n_envs)

    def check_workers(self) -> None: ...

    def close(self) -> None:
        self.closed = True


def test_both_pipelines_keep_the_contract_and_end_episodes_is_written_once():
    from drlhp.cluster.runner_pipeline import RunnerPipeline  # imports no Ray until one is made

    for cls in (PreferencePipeline, RunnerPipeline):
        assert issubclass(cls, Pipeline) and not cls.__abstractmethods__
        assert "end_episode" not in vars(cls) and "end_all_episodes" not in vars(cls)


def test_a_front_end_drives_the_pipeline_its_factory_makes():
    made = []

    def factory(n_envs: int) -> Recording:
        made.append(Recording(n_envs, np.zeros((84, 84, 3), np.uint8)))
        return made[-1]

    env = HumanPreferencesEnvWrapper(gymnasium.make("drlhp/MovingDot-v0"), pipeline_factory=factory)
    with env:
        obs, _ = env.reset(seed=0)
        obs, reward, *_, info = env.step(0)
        assert reward == pytest.approx(obs.mean()) and info["drlhp_true_reward"] is not None
    [pipeline] = made
    assert pipeline.n_envs == 1 and pipeline.closed and pipeline.steps[0][0] == (1, *obs.shape)

    venv = HumanPreferencesVectorWrapper(gymnasium.make_vec("drlhp/MovingDot-v0", num_envs=3), pipeline_factory=factory)
    with venv:
        venv.reset(seed=0)
        obs, rewards, *_ = venv.step(np.zeros(3, dtype=int))
        np.testing.assert_allclose(rewards, obs.reshape(3, -1).mean(axis=1))
    assert made[-1].n_envs == 3


def test_settings_beside_a_pipeline_factory_are_refused_by_name():
    with pytest.raises(ConfigError, match=r"takes its settings from that pipeline.*segment_length"):
        HumanPreferencesEnvWrapper(gymnasium.make("drlhp/MovingDot-v0"), segment_length=10,
                                   pipeline_factory=lambda n: Recording(n, np.zeros((84, 84, 3), np.uint8)))
