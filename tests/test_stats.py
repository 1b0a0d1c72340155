"""``stats()``: one frozen ``PipelineStats`` from the local pipeline and from a Ray runner's, read by field
(``HumanPreferencesLogger`` works on both) or as the read-only mapping ``stats()`` was. No process starts."""
import dataclasses
from types import SimpleNamespace

import numpy as np
import pytest

from drlhp import PipelineStats, PreferenceConfig, PreferencePipeline
from drlhp.clips.cutting import EpisodeClips
from drlhp.clips.frames import infer_frame_spec
from drlhp.cluster.runner_pipeline import RunnerPipeline

SPEC = infer_frame_spec(np.zeros((8, 8, 1), np.uint8))


def local_stats(tmp_path) -> PipelineStats:
    """A local pipeline that starts no process (nothing to collect or train) counting two envs' steps."""
    config = PreferenceConfig(collect_prefs=False, train_reward=False, log_dir=str(tmp_path), label_budget=30,
                              n_initial_prefs=10)
    pipeline = PreferencePipeline(config, SPEC, n_envs=2)
    try:
        pipeline.step(np.zeros((2, 8, 8, 1), np.uint8), [0.0, 0.0])
        return pipeline.stats()
    finally:
        pipeline.close()


def runner_stats() -> PipelineStats:
    """A Ray runner's pipeline's stats(), without Ray: its counters as they are after some steps."""
    runner = object.__new__(RunnerPipeline)  # its __init__ looks up the service on a Ray cluster
    runner.n_envs, runner._predictor, runner._weights_version = 3, None, 2
    runner.episode_clips = EpisodeClips(SPEC, 5, 3)
    runner.counts = {"clips_cut": 9, "clips_sent": 5, "clips_over_share": 3, "clips_dropped_backlog": 1}
    return runner.stats()


def test_the_local_pipeline_returns_typed_stats(tmp_path):
    stats = local_stats(tmp_path)
    assert isinstance(stats, PipelineStats)
    assert stats.n_envs == 2 and stats.env_steps == 2 and stats.run_labels == 0
    assert stats.label_budget == 30 and stats.labels_remaining == 30 and stats.weights_version is None
    fields = {f.name for f in dataclasses.fields(PipelineStats)}
    assert stats.to_dict()["env_steps"] == 2 and set(stats.to_dict()) == fields
    with pytest.raises(dataclasses.FrozenInstanceError):
        stats.n_envs = 3  # type: ignore[misc]


def test_a_ray_runners_pipeline_returns_the_same_type_with_its_own_counts():
    stats = runner_stats()
    assert isinstance(stats, PipelineStats)
    assert (stats.n_envs, stats.clips_sent, stats.clips_dropped) == (3, 5, 4)  # over its share + backlog
    assert (stats.clips_cut, stats.weights_version, stats.predictor_training_step) == (9, 2, None)
    assert stats.run_labels is None and stats.training_steps is None  # the service's, not the runner's


class FakeLogger:
    def __init__(self):
        self.records = {}

    def record(self, key, value):
        self.records[key] = value


@pytest.mark.parametrize("source", ["local", "ray runner"])
def test_the_sb3_logger_records_the_stats_of_either_pipeline(tmp_path, source):
    pytest.importorskip("stable_baselines3")
    from drlhp.sb3 import HumanPreferencesLogger

    stats = local_stats(tmp_path) if source == "local" else runner_stats()
    callback = HumanPreferencesLogger()
    callback.model = SimpleNamespace(logger=FakeLogger())  # type: ignore[assignment]  # what SB3 sets
    callback.record_stats(stats, using_predicted_reward=False)
    records = callback.model.logger.records
    assert records["drlhp/clips_dropped"] == stats.clips_dropped
    assert records["drlhp/using_predicted_reward"] == 0.0
    if source == "local":
        assert records["drlhp/labels"] == 0 and records["drlhp/labels_remaining"] == 30
    else:  # the runner does not count labels: none logged rather than a false 0
        assert "drlhp/labels" not in records and "drlhp/reward_training_steps" not in records
