"""A label database or checkpoint that is foreign, of an old format or corrupt: every way in that reads one
(the ``drlhp`` commands, ``prefs_dir=``, ``pretrained_reward_predictor_dir=``, ``resume=True``) refuses it
with the same one-line error naming the file and the problem, and nothing in the file runs."""
import gzip
import pickle
import shutil

import numpy as np
import pytest
import torch
from conftest import FAST, FakePixelEnv

from drlhp import CheckpointFormatError, DrlhpError, HumanPreferencesEnvWrapper, PrefBuffer
from drlhp.cli.main import main as drlhp_command
from drlhp.clips.frames import infer_frame_spec
from drlhp.clips.segments import Segment
from drlhp.reward.predictor import NetConfig, RewardPredictor
from drlhp.storage.layout import CHECKPOINT_DIRNAME, CHECKPOINT_FILENAME

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
        a, b = (Segment(2 * i + k, rng.integers(0, 256, (FAST["segment_length"], *FRAME.shape), dtype=np.uint8),
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
