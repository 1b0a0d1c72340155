"""The four workflows of the user's guide, end to end, on a tiny pixel env."""
import logging
import os

import gymnasium
import numpy as np
import pytest
from conftest import FAST, FakePixelEnv, step_until, wait_for
from gymnasium.utils.env_checker import check_env

from drlhp import PREDICTED_REWARD_KEY, TRUE_REWARD_KEY, HumanPreferencesEnvWrapper, PrefBuffer, PrefDB, RewardPredictor
from drlhp.cli.offline import train_reward
from drlhp.clips.clip import Clip

CKPT = os.path.join("reward_predictor_checkpoints", "reward_predictor.ckpt")


def test_collect_train_and_switch_to_predicted_reward(tmp_path):
    with HumanPreferencesEnvWrapper(FakePixelEnv(), log_dir=str(tmp_path), **FAST) as env:
        assert not env.using_reward_from_predictor
        env.reset()
        _, reward, _, _, info = env.step(0)
        assert info[TRUE_REWARD_KEY] == reward == 1.0 and PREDICTED_REWARD_KEY not in info
        step_until(env, lambda: env.using_reward_from_predictor)
        assert env.stats().predictor_training_step >= FAST["n_initial_training_steps"]
        _, reward, _, _, info = env.step(0)
        assert reward == info[PREDICTED_REWARD_KEY] and info[TRUE_REWARD_KEY] == float(env.unwrapped.t % 7)
        env.switch_to_true_reward()
        _, reward, _, _, info = env.step(0)
        assert not env.using_reward_from_predictor and reward == info[TRUE_REWARD_KEY]
        env.switch_to_predicted_reward()
        assert env.using_reward_from_predictor
        stats = env.stats()
        assert stats.labels_sent >= FAST["n_initial_prefs"]
    assert os.path.isfile(tmp_path / CKPT)
    metrics = (tmp_path / "reward_training_metrics.csv").read_text().splitlines()
    assert metrics[0].startswith("training_step,") and len(metrics) >= 2


def test_batch_collection_then_save_prefs(tmp_path):
    env = HumanPreferencesEnvWrapper(FakePixelEnv(), collect_prefs=True, train_reward=False,
                                     log_dir=str(tmp_path), **FAST)
    try:
        step_until(env, lambda: env.stats().labels_received >= 20)
        before = env.stats().labels_received
        paths = env.save_prefs()  # labels keep arriving meanwhile: bracket the count
        received = env.stats().labels_received
        assert sorted(os.path.basename(p) for p in paths) == ["train.pkl.gz", "val.pkl.gz"]
        train, val = PrefDB.load(paths[0]), PrefDB.load(paths[1])
        saved = len(train) + len(val)
        assert before <= saved <= received and len(val) == saved // 5
        assert not os.path.exists(tmp_path / CKPT)  # nothing trained
        for a, b, label in train.prefs:  # synthetic labels agree with the true returns
            ra, rb = train.segments[a].true_return, train.segments[b].true_return
            assert label == (1.0 if ra > rb else 0.0 if ra < rb else 0.5)
    finally:
        env.close()
    # close() saved what arrived after save_prefs(): nothing is lost.
    total = len(PrefDB.load(paths[0])) + len(PrefDB.load(paths[1]))
    assert total == env.stats().labels_received >= received


def test_train_from_saved_prefs_writes_checkpoints(tmp_path):
    prefs_dir, log_dir = tmp_path / "prefs", tmp_path / "train"
    collect = HumanPreferencesEnvWrapper(FakePixelEnv(), train_reward=False, log_dir=str(prefs_dir), **FAST)
    with collect:
        step_until(collect, lambda: collect.stats().labels_received >= 30)
        collect.save_prefs()
    n_saved = len(PrefDB.load(str(prefs_dir / "train.pkl.gz")))
    # The seed's workflow 3 names no segment_length: a run that does not collect takes the database's clips.
    fast = {k: v for k, v in dict(FAST, reward_predictor_ckpt_interval=10).items() if k != "segment_length"}
    with HumanPreferencesEnvWrapper(FakePixelEnv(), prefs_dir=str(prefs_dir), collect_prefs=False,
                                    train_reward=True, log_dir=str(log_dir), **fast) as env:
        step_until(env, lambda: env.stats().training_steps >= 20)
        assert env.stats().labels_sent == 0  # no interface in this workflow
    steps = [int(line.split(",")[0]) for line in (log_dir / "reward_training_metrics.csv").read_text().splitlines()[1:]]
    assert steps[:2] == [4, 10] and all(s % 10 == 0 for s in steps[1:])
    # close() checkpoints the last step taken, whichever it is (a resumed run continues from there).
    assert RewardPredictor.load(str(log_dir / CKPT)).training_step == env.stats().training_steps >= 20
    assert n_saved > 0 and not (log_dir / "train.pkl.gz").exists()  # nothing collected: nothing to autosave


@pytest.mark.parametrize("frame_shape, weight_decay, advice", [
    ((16, 16, 1), 1e-4, "reward_predictor_batchnorm=True"),  # images: dead units on a flat background
    ((8,), 1e-4, "reward_predictor_lr"),  # vectors: no frame norm to suggest
    ((8,), 0.5, "adaptive_l2=False"),  # a large L2 penalty, whatever the frames
])
def test_a_reward_network_whose_output_does_not_vary_is_reported_once_and_rewards_nothing(
        tmp_path, caplog, frame_shape, weight_decay, advice):
    # Frames that are all alike flatten any network's output, as dead units do on Pong's flat background.
    frame_stack = np.full((5, *frame_shape), 87, np.uint8 if len(frame_shape) == 3 else np.float32)
    buffer = PrefBuffer(100, 0.2)
    for i in range(20):
        buffer.add(Clip(2 * i, frame_stack, np.zeros(5)), Clip(2 * i + 1, frame_stack, np.ones(5)), 0.0)
    buffer.save(str(tmp_path / "prefs"))
    with caplog.at_level(logging.WARNING, logger="drlhp.learner"):
        train_reward(str(tmp_path / "prefs"), str(tmp_path / "run"), steps=30, reward_predictor_ckpt_interval=10,
                     ensemble_size=1, reward_predictor_weight_decay=weight_decay)
    flat = [r.getMessage() for r in caplog.records if "hardly varies" in r.getMessage()]
    assert len(flat) == 1 and advice in flat[0], caplog.text
    predictor = RewardPredictor.load(str(tmp_path / "run" / CKPT))
    # Exactly 0, not "small": the flat network's outputs differ from the normaliser's mean only by float32
    # rounding, which differs between CPUs and batch sizes; the normaliser leaves a flat member out entirely.
    assert np.all(predictor.normalised_rewards(frame_stack) == 0.0)
    assert np.all(predictor.rewards(frame_stack) == 0.0)  # the env process's fast path too


def test_pretrained_reward_predictor_from_the_first_step(tmp_path):
    with HumanPreferencesEnvWrapper(FakePixelEnv(), log_dir=str(tmp_path / "run"), **FAST) as env:
        step_until(env, lambda: env.using_reward_from_predictor)
    ckpt_dir = str(tmp_path / "run" / "reward_predictor_checkpoints")
    predictor = RewardPredictor.load(os.path.join(ckpt_dir, "reward_predictor.ckpt"))
    with HumanPreferencesEnvWrapper(FakePixelEnv(), pretrained_reward_predictor_dir=ckpt_dir,
                                    collect_prefs=False, train_reward=False, log_dir=str(tmp_path / "use")) as env:
        env.reset()
        assert env.using_reward_from_predictor
        obs, reward, _, _, info = env.step(0)
        assert reward == pytest.approx(predictor.reward(obs)) and info[TRUE_REWARD_KEY] == 1.0
        # No background process runs, yet stats() counts what a collecting run counts: zeros, not None.
        stats = env.stats()
        assert (stats.env_steps, stats.run_labels, stats.pairs_asked, stats.training_steps) == (1, 0, 0, 0)
    assert not os.path.exists(tmp_path / "use")  # this workflow writes nothing


def test_obs_transform_func_for_dict_observations(tmp_path):
    env = gymnasium.wrappers.TransformObservation(
        FakePixelEnv(), lambda o: {"pixels": o, "step": 0},
        gymnasium.spaces.Dict({"pixels": FakePixelEnv().observation_space, "step": gymnasium.spaces.Discrete(1)}))
    with pytest.raises(ValueError, match="obs_transform_func"):
        HumanPreferencesEnvWrapper(env, log_dir=str(tmp_path))
    with HumanPreferencesEnvWrapper(env, obs_transform_func=lambda o: o["pixels"], log_dir=str(tmp_path),
                                    train_reward=False, **FAST) as wrapped:
        assert wrapped.frame_spec.shape == (12, 12, 1)
        step_until(wrapped, lambda: wrapped.stats().labels_received >= 3)


@pytest.mark.parametrize("shape, dtype", [((4, 16, 16), np.uint8), ((16, 16), np.float32), ((6,), np.float32)])
def test_other_observation_layouts_train(tmp_path, shape, dtype):
    with HumanPreferencesEnvWrapper(FakePixelEnv(shape, dtype), log_dir=str(tmp_path), **FAST) as env:
        step_until(env, lambda: env.using_reward_from_predictor)
        assert np.isfinite(env.step(0)[1])


def test_segments_never_span_episodes_and_tails_are_dropped(tmp_path):
    # Episodes of 7 steps with segments of 5: each episode gives one segment and a 2-frame tail.
    with HumanPreferencesEnvWrapper(FakePixelEnv(episode_length=7, truncate=True), log_dir=str(tmp_path),
                                    train_reward=False, **FAST) as env:
        step_until(env, lambda: env.stats().labels_received >= 10)
        env.save_prefs()
        assert env.stats().tail_frames_dropped > 0
    db = PrefDB.load(str(tmp_path / "train.pkl.gz"))
    for seg in db.segments.values():
        assert seg.frames[:, 0, 0, 0].tolist() == [1, 2, 3, 4, 5]  # always the first 5 steps of an episode


def test_gymnasium_check_env_passes(tmp_path):
    with HumanPreferencesEnvWrapper(FakePixelEnv(), log_dir=str(tmp_path), **FAST) as env:
        check_env(env, skip_render_check=True)
        assert env._saved_kwargs["segment_length"] == 5  # recorded the gymnasium way


def test_a_checkpoint_left_by_an_earlier_run_is_not_used(tmp_path):
    with HumanPreferencesEnvWrapper(FakePixelEnv(), log_dir=str(tmp_path), **FAST) as env:
        step_until(env, lambda: env.using_reward_from_predictor)
    # A new run in the same log_dir (from the first run's labels) starts on the true reward, like the first did.
    with HumanPreferencesEnvWrapper(FakePixelEnv(), log_dir=str(tmp_path), prefs_dir=str(tmp_path),
                                    train_reward=False, **FAST) as env:
        env.reset()
        for _ in range(50):
            env.step(0)
        assert not env.using_reward_from_predictor and env.stats().predictor_training_step is None


def test_stats_report_the_bytes_the_database_holds(tmp_path):
    from drlhp import PrefBuffer
    from drlhp.clips.clip import Clip

    rng = np.random.default_rng(0)
    frames = np.repeat(rng.integers(0, 256, (5, 12, 1, 1), dtype=np.uint8), 12, axis=2)  # rows of one value
    segments = [Clip(i, frames + i, rng.normal(size=5)) for i in range(12)]
    buffer = PrefBuffer(100, 0.2)
    for i in range(20):  # 20 pairs over 12 clips: most clips are in several pairs, each is counted once
        buffer.add(segments[i % 12], segments[(i * 5 + 1) % 12], 1.0)
    buffer.save(str(tmp_path / "prefs"))
    raw = 12 * (5 * 12 * 12 + 5 * 8)  # uint8 frames + float64 rewards of each clip
    expected = buffer.nbytes
    assert 12 * 5 * 8 < expected < raw / 2  # held compressed
    with HumanPreferencesEnvWrapper(FakePixelEnv(), prefs_dir=str(tmp_path / "prefs"), collect_prefs=False,
                                    log_dir=str(tmp_path / "run"), **FAST) as env:
        assert wait_for(lambda: env.stats().db_bytes == expected, timeout=30), env.stats()


def test_wait_for_reward_predictor_pretrains_on_the_initial_labels_without_stepping(tmp_path):
    with HumanPreferencesEnvWrapper(FakePixelEnv(), log_dir=str(tmp_path), **FAST) as env:
        step_until(env, lambda: env.stats().run_labels >= FAST["n_initial_prefs"])
        steps = env.stats().env_steps
        env.wait_for_reward_predictor(timeout=60)
        assert env.using_reward_from_predictor and env.stats().env_steps == steps
    with HumanPreferencesEnvWrapper(FakePixelEnv(), log_dir=str(tmp_path / "idle"), train_reward=False, **FAST) as env:
        with pytest.raises(TimeoutError, match="not ready within 0.2 s"):
            env.wait_for_reward_predictor(timeout=0.2)
