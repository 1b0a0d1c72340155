"""A label database or checkpoint that is foreign, of an old format or corrupt: every way in that reads one
(the ``drlhp`` commands, ``prefs_dir=``, ``pretrained_reward_predictor_dir=``, ``resume=True``) refuses it
with the same one-line error naming the file and the problem, and nothing in the file runs.

Not only a file that is a pickle from its first byte: every loader of a file a user may receive (label database,
label journal, reward checkpoint and optimiser state, an SB3 model for ``drlhp collect --policy``, the examples'
replay buffer, the benchmarks' recordings) is also given a file well-formed up to a Python object, or a pickle of
one, where it expects plain data."""
import base64
import contextlib
import gzip
import io
import json
import logging
import os
import pickle
import shutil
import zipfile

import gymnasium
import numpy as np
import pytest
import torch
from conftest import FAST, FakePixelEnv

from drlhp import CheckpointFormatError, DrlhpError, HumanPreferencesEnvWrapper, PrefBuffer, PrefDBFormatError
from drlhp.cli.main import main as drlhp_command
from drlhp.clips.clip import Clip, pack
from drlhp.clips.frames import infer_frame_spec
from drlhp.label_store.database import PrefDB
from drlhp.reward.predictor import NetConfig, RewardPredictor
from drlhp.storage.layout import CHECKPOINT_DIRNAME, CHECKPOINT_FILENAME, LogDir

FRAME = np.zeros((12, 12, 1), np.uint8)  # FakePixelEnv's
DB_ERROR = "is not a valid drlhp preference database"
CKPT_ERROR = "is not a valid drlhp reward-predictor checkpoint"


class RunsCode:
    """Unpickling this would create a file: proof that nothing in a refused file ran."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return open, (self.marker, "w")


def bad_bytes(kind: str, marker: str, checkpoint: bool) -> bytes:
    if kind == "old format":  # the original TensorFlow drlhp pickled its database and saved TF checkpoints
        data = pickle.dumps({"segments": [np.zeros(3)], "prefs": [(0, 0, 0.5)], "code": RunsCode(marker)})
        return data if checkpoint else gzip.compress(data)
    if kind == "foreign":  # a valid file of another program
        if checkpoint:
            path = marker + ".pt"
            torch.save({"model": torch.nn.Linear(2, 1)}, path)  # a whole module: needs unpickling code
            with open(path, "rb") as f:
                return f.read()
        return gzip.compress(b'{"some": "json"}')
    return b"\x1f\x8b\x08\x00 truncated"  # corrupt


def labels_dir(path) -> str:
    rng = np.random.default_rng(0)
    buffer = PrefBuffer(100, 0.2)
    for i in range(10):
        a, b = (Clip(2 * i + k, rng.integers(0, 256, (FAST["segment_length"], *FRAME.shape), dtype=np.uint8),
                        rng.random(FAST["segment_length"])) for k in (0, 1))
        buffer.add(a, b, float(a.true_return > b.true_return))
    buffer.save(str(path))
    return str(path)


def checkpoint_dir(path) -> str:
    path.mkdir(parents=True)
    RewardPredictor(NetConfig(infer_frame_spec(FRAME))).save(str(path / CHECKPOINT_FILENAME))
    return str(path)


def assert_one_line(message: str, path: str, problem: str) -> None:
    assert "\n" not in message.strip(), f"not one line:\n{message}"
    assert path in message and problem in message, message


KINDS = ["foreign", "old format", "corrupt"]


@pytest.mark.parametrize("kind", KINDS)
def test_a_bad_label_database_is_refused_the_same_way_by_every_command(tmp_path, kind, capsys):
    prefs = labels_dir(tmp_path / "prefs")
    bad_file = f"{prefs}/train.pkl.gz"
    with open(bad_file, "wb") as f:
        f.write(bad_bytes(kind, str(tmp_path / "ran"), checkpoint=False))
    ckpt = checkpoint_dir(tmp_path / "ckpt")
    for args in (["train-reward", prefs, "--steps", "1", "--log-dir", str(tmp_path / "run")],
                 ["eval-reward", ckpt, prefs], ["show-prefs", bad_file, "--summary"]):
        assert drlhp_command(args) != 0
        assert_one_line(capsys.readouterr().err.strip(), bad_file, DB_ERROR)
    assert not (tmp_path / "ran").exists()


@pytest.mark.parametrize("kind", KINDS)
def test_a_bad_checkpoint_is_refused_the_same_way_by_every_command(tmp_path, kind, capsys):
    prefs = labels_dir(tmp_path / "prefs")
    bad_file = str(tmp_path / "ckpt" / CHECKPOINT_FILENAME)
    (tmp_path / "ckpt").mkdir()
    with open(bad_file, "wb") as f:
        f.write(bad_bytes(kind, str(tmp_path / "ran"), checkpoint=True))
    assert drlhp_command(["eval-reward", bad_file, prefs]) != 0
    assert_one_line(capsys.readouterr().err.strip(), bad_file, CKPT_ERROR)
    with pytest.raises(CheckpointFormatError) as refused:
        HumanPreferencesEnvWrapper(FakePixelEnv(), pretrained_reward_predictor_dir=str(tmp_path / "ckpt"),
                                   collect_prefs=False, train_reward=False)
    assert_one_line(str(refused.value), bad_file, CKPT_ERROR)
    assert not (tmp_path / "ran").exists()


def test_a_bad_database_or_checkpoint_is_refused_by_a_wrapper_that_reads_it_in_its_trainer(tmp_path):
    prefs = labels_dir(tmp_path / "prefs")
    bad_db = f"{prefs}/val.pkl.gz"
    with open(bad_db, "wb") as f:
        f.write(bad_bytes("old format", str(tmp_path / "ran"), checkpoint=False))
    # The trainer process meets these at its start: each is raised in this process as drlhp's own error (and,
    # as before, a ValueError), not as a WorkerError.
    with pytest.raises(DrlhpError) as refused:  # prefs_dir=: the trainer process reads it
        HumanPreferencesEnvWrapper(FakePixelEnv(), prefs_dir=prefs, collect_prefs=False,
                                   log_dir=str(tmp_path / "from_prefs"), **FAST)
    assert_one_line(str(refused.value), bad_db, DB_ERROR)
    assert isinstance(refused.value, ValueError)

    run = tmp_path / "run"  # resume=True: the run's own labels, then its own checkpoint
    shutil.copytree(prefs, run)
    with pytest.raises(DrlhpError) as refused:
        HumanPreferencesEnvWrapper(FakePixelEnv(), log_dir=str(run), resume=True, **FAST)
    assert_one_line(str(refused.value), str(run / "val.pkl.gz"), DB_ERROR)

    labels_dir(run)  # good labels again
    bad_ckpt = run / CHECKPOINT_DIRNAME / CHECKPOINT_FILENAME
    bad_ckpt.parent.mkdir()
    bad_ckpt.write_bytes(bad_bytes("corrupt", str(tmp_path / "ran"), checkpoint=True))
    with pytest.raises(DrlhpError) as refused:
        HumanPreferencesEnvWrapper(FakePixelEnv(), log_dir=str(run), resume=True, **FAST)
    assert_one_line(str(refused.value), str(bad_ckpt), CKPT_ERROR)
    assert not (tmp_path / "ran").exists()


# -- a valid file up to a Python object -----------------------------------------------------------------------
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def code_object(marker) -> np.ndarray:
    """A NumPy array of one object whose unpickling creates ``marker``."""
    array = np.empty(1, dtype=object)
    array[0] = RunsCode(str(marker))
    return array


def code_field(marker) -> np.ndarray:
    """A record of a number and such an object: plain-looking, but its dtype holds an object."""
    return np.array([(1, RunsCode(str(marker)))], dtype=[("n", "i8"), ("o", "O")])


def db_records(path: str, allow_pickle: bool = False) -> list[np.ndarray]:
    """The ``.npy`` records of a label database file, in order."""
    records = []
    with gzip.open(path, "rb") as f:
        while f.peek(1):
            records.append(np.lib.format.read_array(f, allow_pickle=allow_pickle))
    return records


POSITIONS = {"header": 0, "segment ids": 1, "last clip's frames": -1}


@pytest.mark.parametrize("position", POSITIONS)
@pytest.mark.parametrize("payload", [code_object, code_field])
def test_a_database_valid_up_to_an_object_array_is_refused_and_runs_nothing(tmp_path, position, payload, capsys):
    prefs = labels_dir(tmp_path / "prefs")
    bad_file = f"{prefs}/train.pkl.gz"
    records = db_records(bad_file)
    records[POSITIONS[position]] = payload(tmp_path / "ran")
    with gzip.open(bad_file, "wb") as f:  # the records before it as drlhp wrote them
        for record in records:
            np.lib.format.write_array(f, record, allow_pickle=True)

    with pytest.raises(PrefDBFormatError) as refused:
        PrefDB.load(bad_file)
    assert_one_line(str(refused.value), bad_file, "Object arrays cannot be loaded")
    ckpt = checkpoint_dir(tmp_path / "ckpt")
    for args in (["show-prefs", bad_file, "--summary"], ["eval-reward", ckpt, prefs],
                 ["train-reward", prefs, "--steps", "1", "--log-dir", str(tmp_path / "run")]):
        assert drlhp_command(args) != 0
        assert_one_line(capsys.readouterr().err.strip(), bad_file, DB_ERROR)
    assert not (tmp_path / "ran").exists()
    db_records(bad_file, allow_pickle=True)  # the file is a real threat: read with pickles allowed, it runs code
    assert (tmp_path / "ran").exists()


def drlhp_checkpoint_state(path) -> dict:
    RewardPredictor(NetConfig(infer_frame_spec(FRAME))).save(str(path))
    return torch.load(path, weights_only=True)


@pytest.mark.parametrize("payload", [RunsCode, code_object], ids=["an object", "a NumPy array of objects"])
def test_a_checkpoint_valid_but_for_an_object_in_its_fields_is_refused_and_runs_nothing(tmp_path, payload, capsys):
    (tmp_path / "ckpt").mkdir()
    bad_file = str(tmp_path / "ckpt" / CHECKPOINT_FILENAME)
    state = drlhp_checkpoint_state(bad_file)  # its format marker, network config and weights as drlhp wrote them
    state["normaliser"] = payload(str(tmp_path / "ran"))
    torch.save(state, bad_file)

    with pytest.raises(CheckpointFormatError) as refused:
        RewardPredictor.load(bad_file)
    assert_one_line(str(refused.value), bad_file, "it holds Python objects, not only tensors")
    with open(bad_file, "rb") as f:  # as a cluster's object store carries it
        with pytest.raises(CheckpointFormatError, match="it holds Python objects, not only tensors"):
            RewardPredictor.from_bytes(f.read())
    assert drlhp_command(["eval-reward", bad_file, labels_dir(tmp_path / "prefs")]) != 0
    assert_one_line(capsys.readouterr().err.strip(), bad_file, CKPT_ERROR)
    assert not (tmp_path / "ran").exists()
    torch.load(bad_file, weights_only=False)  # the file is a real threat: unpickled, it runs code
    assert (tmp_path / "ran").exists()


def test_an_optimiser_state_valid_but_for_an_object_is_refused_on_resume_and_runs_nothing(tmp_path):
    run = tmp_path / "run"
    labels_dir(run)
    (run / CHECKPOINT_DIRNAME).mkdir()
    drlhp_checkpoint_state(run / CHECKPOINT_DIRNAME / CHECKPOINT_FILENAME)
    bad_file = LogDir(str(run)).trainer_state
    torch.save({"training_step": 0, "optimizer": RunsCode(str(tmp_path / "ran")), "weights": {}}, bad_file)

    with pytest.raises(CheckpointFormatError) as refused:
        HumanPreferencesEnvWrapper(FakePixelEnv(), log_dir=str(run), resume=True, **FAST)
    assert_one_line(str(refused.value), bad_file, "is not a valid drlhp optimiser state: it holds Python objects")
    assert "Move it away" in str(refused.value)
    assert not (tmp_path / "ran").exists()
    torch.load(bad_file, weights_only=False)
    assert (tmp_path / "ran").exists()


@pytest.mark.parametrize("dtype", ["|O", {"names": ["frames"], "formats": ["|O"]}],
                         ids=["object", "a field of objects"])
def test_a_journal_record_of_objects_ends_the_replay_with_a_warning_and_runs_nothing(tmp_path, dtype, caplog):
    from drlhp.label_store.journal import JournalWriter, _record  # _record: the journal's framing, for a crafted record

    good = [pack(Clip(i, np.zeros((FAST["segment_length"], *FRAME.shape), np.uint8),
                         np.zeros(FAST["segment_length"]))) for i in (0, 1)]
    writer = JournalWriter(str(tmp_path), lambda: 0, instructions="Which is better?", val_fraction=0.2)
    writer.append(0, good[0], good[1], 1.0, "alice")
    writer.close()
    journal_file = LogDir(str(tmp_path)).journal_files()[0]
    payload = pickle.dumps(code_object(tmp_path / "ran"))  # a well-formed record (its checksum holds) of objects
    with open(journal_file, "ab") as f:
        f.write(_record({"kind": "clip", "seg_id": 7, "shape": [1], "dtype": dtype, "episode": 0, "env_index": 0,
                         "n_frame_bytes": len(payload)}, payload + np.zeros(1).tobytes()))
        f.write(_record({"kind": "label", "seq": 1, "a": 7, "b": 0, "label": 0.0, "time": 0.0, "labeller": "eve"}))

    with caplog.at_level(logging.WARNING, logger="drlhp.journal"):
        buffer = PrefBuffer.load_all(str(tmp_path))
    assert buffer.n_labels == 1  # the label before the bad record is kept
    assert journal_file in caplog.text and "clip of dtype" in caplog.text
    assert not (tmp_path / "ran").exists()


def sb3_model_with(tmp_path, setting: str, payload: bytes) -> str:
    """A PPO model file as SB3 writes it, but for ``setting``'s pickle, which is ``payload``."""
    from stable_baselines3 import PPO

    buffer = io.BytesIO()
    PPO("MlpPolicy", gymnasium.make("drlhp/MovingDot-v0"), n_steps=32, batch_size=32).save(buffer)
    path = str(tmp_path / "model.zip")
    with zipfile.ZipFile(buffer) as valid, zipfile.ZipFile(path, "w") as bad:
        for name in valid.namelist():
            data = valid.read(name)
            if name == "data":
                settings = json.loads(data)
                settings[setting][":serialized:"] = base64.b64encode(payload).decode()
                data = json.dumps(settings).encode()
            bad.writestr(name, data)
    return path


@pytest.mark.parametrize("setting", ["observation_space", "policy_class", "lr_schedule"])
def test_an_sb3_model_whose_settings_pickle_code_is_refused_by_collect_and_runs_nothing(tmp_path, setting, capsys):
    from stable_baselines3 import PPO

    from drlhp.cli.collect import load_policy

    bad_file = sb3_model_with(tmp_path, setting, pickle.dumps(RunsCode(str(tmp_path / "ran"))))
    if setting == "lr_schedule":  # training-only: never unpickled, so the model loads and acts
        env = gymnasium.make("drlhp/MovingDot-v0")
        assert env.action_space.contains(load_policy(bad_file, "ppo")(env.observation_space.sample()))
    else:
        args = ["collect", "drlhp/MovingDot-v0", "--synthetic", "--labels", "1", "--policy", bad_file,
                "--log-dir", str(tmp_path / "prefs")]
        assert drlhp_command(args) == 2
        assert_one_line(capsys.readouterr().err.strip(), bad_file, f"its {setting} refers to ")
        assert not (tmp_path / "prefs").exists()  # refused before the run starts
    assert not (tmp_path / "ran").exists()
    with contextlib.suppress(Exception):  # SB3's own load runs the file's code (then may fail on what it made)
        PPO.load(bad_file)
    assert (tmp_path / "ran").exists()


@pytest.mark.parametrize("algo, env_id", [("ppo", "drlhp/MovingDot-v0"), ("a2c", "CartPole-v1"),
                                          ("dqn", "CartPole-v1"), ("sac", "Pendulum-v1"), ("td3", "Pendulum-v1"),
                                          ("ddpg", "Pendulum-v1")])
def test_an_sb3_model_of_each_algorithm_loads_for_collect_and_acts_as_saved(tmp_path, algo, env_id):
    import stable_baselines3

    from drlhp.cli.collect import SB3_ALGOS, load_policy

    assert algo in SB3_ALGOS
    env = gymnasium.make(env_id)
    off_policy = {"buffer_size": 64, "learning_starts": 0} if algo in ("dqn", "sac", "td3", "ddpg") else {}
    model = getattr(stable_baselines3, algo.upper())("MlpPolicy", env, seed=0, **off_policy)
    model.save(str(tmp_path / "model.zip"))
    observations = np.stack([env.observation_space.sample() for _ in range(8)])
    act = load_policy(str(tmp_path / "model.zip"), algo)
    np.testing.assert_array_equal(act(observations), model.predict(observations, deterministic=True)[0])


def test_a_replay_buffer_valid_but_for_an_object_array_is_refused_and_runs_nothing(tmp_path):
    from agent_checkpoint import AgentCheckpointError, replay_buffer_path, restore_replay_buffer
    from stable_baselines3.common.buffers import ReplayBuffer

    space = gymnasium.spaces.Box(0, 1, (3,), np.float32)
    buffer = ReplayBuffer(4, space, gymnasium.spaces.Discrete(2), device="cpu")
    agent_file = str(tmp_path / "agent.pt")
    arrays = {"pos": np.array(0), "full": np.array(True), "observations": code_object(tmp_path / "ran")}
    arrays |= {name: value for name, value in vars(buffer).items()
               if isinstance(value, np.ndarray) and name != "observations"}
    with open(replay_buffer_path(agent_file), "wb") as f:
        np.savez(f, **arrays)

    with pytest.raises(AgentCheckpointError) as refused:
        restore_replay_buffer(buffer, agent_file)
    assert_one_line(str(refused.value), replay_buffer_path(agent_file), "Object arrays cannot be loaded")
    assert not (tmp_path / "ran").exists()


def test_a_recording_valid_but_for_an_object_array_is_refused_and_runs_nothing(tmp_path):
    from benchmarks.experiments.reward_signal import Recording

    path = str(tmp_path / "agent_1.npz")
    np.savez_compressed(path, observations=np.zeros((3, 4), np.float32), rewards=np.zeros(3, np.float32),
                        episodes=code_object(tmp_path / "ran"), agent_steps=1, seed=0)
    with pytest.raises(ValueError) as refused:
        Recording(path)
    assert_one_line(str(refused.value), path, "Object arrays cannot be loaded")
    assert not (tmp_path / "ran").exists()
