"""Recorded datasets: Minari episodes replayed into the labellers, and a dataset relabelled by a reward model."""
from __future__ import annotations

import dataclasses
import json
import os

import gymnasium
import numpy as np
import pytest

minari = pytest.importorskip("minari")
h5py = pytest.importorskip("h5py")

from drlhp import PrefBuffer  # noqa: E402
from drlhp.cli.main import main  # noqa: E402
from drlhp.clips.frames import infer_frame_spec  # noqa: E402
from drlhp.datasets.minari_source import Episode  # noqa: E402
from drlhp.datasets.replay_env import EPISODE_KEY, STEP_KEY, DatasetReplayEnv  # noqa: E402
from drlhp.datasets.writing import PROVENANCE_KEY, relabel_dataset, write_dataset  # noqa: E402
from drlhp.errors import (  # noqa: E402
    CheckpointFormatError,
    ConfigError,
    DatasetFormatError,
    MissingFileError,
    ObservationError,
)
from drlhp.reward.predictor import NetConfig, RewardPredictor  # noqa: E402

OBS = gymnasium.spaces.Box(-100, 100, (4,), np.float32)
ACT = gymnasium.spaces.Box(-1, 1, (1,), np.float32)
LENGTHS = (12, 7, 15, 10)  # steps of each episode; 7 is shorter than two clips of 5


def episode(i: int, n: int, render: bool = False) -> Episode:
    """Observation t of episode i is (i, t, t^2 / 100, 1); the reward of step t is (t + 1) % 5 + i."""
    t = np.arange(n + 1, dtype=np.float32)
    obs = np.stack([np.full_like(t, i), t, t * t / 100, np.ones_like(t)], axis=1)
    infos = {"render": np.full((n + 1, 20, 30, 3), (i + 1) * 50, np.uint8)} if render else {}
    return Episode(i, obs, np.zeros((n, 1), np.float32), (np.arange(n) + 1) % 5 + float(i), np.zeros(n, bool),
                   np.eye(1, n, n - 1, dtype=bool)[0], infos)


@pytest.fixture
def datasets(tmp_path, monkeypatch):
    """Minari's local datasets in tmp_path, one of them ``test/replay-v0``; returns the folder."""
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "datasets"))
    write_dataset("test/replay-v0", [episode(i, n) for i, n in enumerate(LENGTHS)], OBS, ACT, None,
                  algorithm_name="a test's", description="observations that say where they are")
    return tmp_path / "datasets"


def test_the_replay_plays_every_episode_once_a_pass_in_a_seeded_order_as_recorded(datasets):
    env = DatasetReplayEnv("test/replay-v0")
    orders = []
    for seed in (0, 0, 1):
        obs, info = env.reset(seed=seed)
        order = []
        for _ in LENGTHS:
            i = int(obs[0])
            order.append(i)
            assert info == {EPISODE_KEY: i, STEP_KEY: 0} and obs[1] == 0
            for t in range(LENGTHS[i]):
                obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
                assert (obs[0], obs[1], reward, info[STEP_KEY]) == (i, t + 1, (t + 1) % 5 + i, t + 1)
                assert truncated == (t == LENGTHS[i] - 1) and not terminated
            if len(order) < len(LENGTHS):
                obs, info = env.reset()
        orders.append(order)
    assert sorted(orders[0]) == [0, 1, 2, 3] and orders[0] == orders[1] != orders[2]
    assert env.passes == 3


def test_collect_labels_a_datasets_clips_and_a_session_resumes(datasets, tmp_path, capsys):
    log_dir = str(tmp_path / "labels")
    flags = ["--dataset", "test/replay-v0", "--synthetic", "--segment-length", "5", "--seed", "0",
             "--log-dir", log_dir]
    assert main(["collect", "--labels", "12", *flags]) == 0
    assert len(PrefBuffer.load_all(log_dir).train_db) + len(PrefBuffer.load_all(log_dir).val_db) >= 12
    assert main(["collect", "--labels", "20", "--resume", *flags]) == 0
    buffer = PrefBuffer.load_all(log_dir)
    assert len(buffer.train_db) + len(buffer.val_db) >= 20
    for db in (buffer.train_db, buffer.val_db):
        for clip in db.segments.values():  # five consecutive observations of one episode, with their rewards
            frames = clip.frames
            i, steps = int(frames[0, 0]), frames[:, 1].astype(int)
            assert (frames[:, 0] == i).all() and np.diff(steps).tolist() == [1] * 4
            assert clip.rewards.tolist() == [float((t % 5) + i) for t in steps]
        for a, b, label in db.prefs:  # the synthetic teacher: the larger recorded return wins
            ra, rb = db.segments[a].rewards.sum(), db.segments[b].rewards.sum()
            assert label == (1.0 if ra > rb else 0.0 if rb > ra else 0.5)


def test_relabelling_writes_a_new_dataset_with_the_models_rewards_and_its_provenance(datasets, tmp_path):
    log_dir = str(tmp_path / "labels")
    assert main(["collect", "--dataset", "test/replay-v0", "--synthetic", "--labels", "30", "--segment-length", "5",
                 "--seed", "0", "--log-dir", log_dir]) == 0
    assert main(["train-reward", log_dir, "--steps", "30", "--log-dir", str(tmp_path / "reward"), "--seed", "0",
                 "--threads", "1"]) == 0
    ckpt = str(tmp_path / "reward" / "reward_predictor_checkpoints")
    assert main(["relabel-dataset", "test/replay-v0", ckpt, "--out", "test/relabelled-v0"]) == 0
    model = RewardPredictor.load(os.path.join(ckpt, "reward_predictor.ckpt"))
    source, made = minari.load_dataset("test/replay-v0"), minari.load_dataset("test/relabelled-v0")
    assert made.total_steps == source.total_steps == sum(LENGTHS)
    for old, new in zip(source.iterate_episodes(), made.iterate_episodes()):
        assert np.array_equal(old.observations, new.observations) and np.array_equal(old.actions, new.actions)
        assert np.array_equal(old.truncations, new.truncations)
        assert np.allclose(new.rewards, model.rewards(old.observations[1:]), atol=1e-6)
        assert not np.allclose(new.rewards, old.rewards)
    provenance = json.loads(made.storage.metadata[PROVENANCE_KEY])
    assert provenance["relabelled_from"] == "test/replay-v0"
    assert provenance["reward_model"]["provenance"]["train_labels"] == model.provenance["train_labels"] > 0
    with pytest.raises(ConfigError, match="exists already"):  # nothing is overwritten
        relabel_dataset("test/replay-v0", ckpt, "test/relabelled-v0")


def test_bad_datasets_and_reward_models_get_one_clear_error_and_nothing_is_written(datasets, tmp_path):
    with pytest.raises(MissingFileError, match="no Minari dataset 'test/absent-v0'.*test/replay-v0"):
        DatasetReplayEnv("test/absent-v0")
    # A dataset whose episodes lack their rewards.
    write_dataset("test/norewards-v0", [episode(0, 6)], OBS, ACT, None)
    with h5py.File(datasets / "test" / "norewards-v0" / "data" / "main_data.hdf5", "a") as f:
        del f["episode_0"]["rewards"]
    with pytest.raises(DatasetFormatError, match="lacks the field 'rewards'"):
        DatasetReplayEnv("test/norewards-v0").reset()
    # Reward models: one for other observations (6 features, not 4), one tampered with.
    other = RewardPredictor(NetConfig(infer_frame_spec(np.zeros(6, np.float32))))
    ckpt = str(tmp_path / "other.ckpt")
    other.save(ckpt)
    with pytest.raises(ObservationError):
        relabel_dataset("test/replay-v0", ckpt, "test/out-v0")
    with open(ckpt, "r+b") as f:
        data = bytearray(f.read())
        data[len(data) // 2] ^= 0xFF
        f.seek(0)
        f.write(data)
    with pytest.raises(CheckpointFormatError):
        relabel_dataset("test/replay-v0", ckpt, "test/out-v0")
    assert "test/out-v0" not in minari.list_local_datasets()
    assert main(["collect", "--dataset", "test/absent-v0", "--synthetic", "--log-dir", str(tmp_path / "x")]) == 2


def test_a_person_is_shown_the_datasets_frames_or_its_observations_drawn(datasets, monkeypatch):
    write_dataset("test/frames-v0", [episode(2, 6, render=True)], OBS, ACT, None)
    env = DatasetReplayEnv("test/frames-v0", render_mode="rgb_array")
    env.reset(seed=0)
    env.step(None)
    assert env.render().shape == (20, 30, 3) and (env.render() == 150).all()
    bars = DatasetReplayEnv("test/replay-v0", render_mode="rgb_array")
    bars.reset(seed=0)
    first = bars.render()
    bars.step(None)
    assert first.shape == (160, 160, 3) and not np.array_equal(first, bars.render())  # the step's value grew


def test_people_label_a_datasets_clips_in_chromium_and_the_labels_reach_the_database(datasets, tmp_path):
    pytest.importorskip("aiohttp")
    from test_web import CHROMIUM, wait_for_text_change

    if CHROMIUM is None:
        pytest.skip("needs Debian's chromium (apt-get install chromium)")
    sync_api = pytest.importorskip("playwright.sync_api")
    import threading

    from drlhp import HumanPreferencesEnvWrapper

    # Each episode's recorded frames have their own colour: a clip on the page shows which episode it is from.
    write_dataset("test/coloured-v0", [episode(i, n, render=True) for i, n in enumerate(LENGTHS)], OBS, ACT, None)
    log_dir = str(tmp_path / "labels")
    env = HumanPreferencesEnvWrapper(DatasetReplayEnv("test/coloured-v0", render_mode="rgb_array"),
                                     synthetic_preferences=False, labelling="web", web_port=0, segment_length=5,
                                     log_dir=log_dir, train_reward=False, label_budget=100, seed=0, log_level=30)
    stop = threading.Event()

    def replay():
        env.reset(seed=0)
        while not stop.wait(0.001):
            if any(env.step(None)[2:4]):
                env.reset()

    thread = threading.Thread(target=replay)
    thread.start()
    try:
        with sync_api.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1000, "height": 700})
            page.goto(env.labelling_url)
            page.fill("#name", "alice")
            page.click("#who button")
            page.wait_for_selector("#pair:not([hidden])", timeout=30000)
            shown = []
            for key in ("l", "r"):
                shown.append(_episode_colour(page.locator("#left").screenshot()))
                status = page.text_content("#status")
                page.keyboard.press(key)
                wait_for_text_change(page, "#status", status)
            browser.close()
    finally:
        stop.set()
        thread.join()
        env.close()
    buffer = PrefBuffer.load_all(log_dir)
    labelled = [(db.segments[a], label, who) for db in (buffer.train_db, buffer.val_db)
                for (a, _, label), who in zip(db.prefs, db.labellers)]
    assert sorted((label, who) for _, label, who in labelled) == [(0.0, "web:alice"), (1.0, "web:alice")]
    # The left clips shown were the recorded frames of the episodes whose observations were labelled.
    episodes_shown = sorted(round(colour / 50) - 1 for colour in shown)
    assert episodes_shown == sorted(int(clip.frames[0, 0]) for clip, _, _ in labelled)


def _episode_colour(png: bytes) -> int:
    """The grey most of a screenshot's pixels are, black (the frame's surround) left out."""
    import io

    from PIL import Image

    pixels = np.asarray(Image.open(io.BytesIO(png)).convert("RGB")).reshape(-1, 3)
    grey = pixels[(pixels[:, 0] == pixels[:, 1]) & (pixels[:, 1] == pixels[:, 2]) & (pixels[:, 0] > 0), 0]
    return int(np.bincount(grey).argmax())


def test_a_relabelled_dataset_names_the_sources_env_with_its_arguments_but_gymnasiums_entry_point(tmp_path,
                                                                                               monkeypatch):
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "datasets"))
    spec = dataclasses.replace(gymnasium.spec("CartPole-v1"), kwargs={"sutton_barto_reward": True},
                               max_episode_steps=123)
    source = write_dataset("test/cartpole-v0", [episode(i, n) for i, n in enumerate(LENGTHS)], OBS, ACT, spec)
    # The file, as someone may have sent it: the same env, made by an entry point of their choosing.
    metadata_file = source.storage.data_path / "metadata.json"
    metadata = json.loads(metadata_file.read_text())
    metadata["env_spec"] = dataclasses.replace(spec, entry_point="os:system").to_json()
    metadata_file.write_text(json.dumps(metadata))
    assert minari.load_dataset("test/cartpole-v0").spec.env_spec.entry_point == "os:system"
    model = RewardPredictor(NetConfig(infer_frame_spec(np.zeros(4, np.float32))))
    made = relabel_dataset("test/cartpole-v0", model, "test/cartpole-relabelled-v0").spec.env_spec
    assert (made.id, made.kwargs, made.max_episode_steps) == ("CartPole-v1", {"sutton_barto_reward": True}, 123)
    assert made.entry_point == gymnasium.spec("CartPole-v1").entry_point
