"""A log_dir is one run: resuming it continues everything, killing any process loses no acknowledged label,
and a new run never overwrites an earlier run's labels."""
import contextlib
import csv
import json
import os
import signal
import socket
import subprocess
import sys
import threading
from collections import Counter

import numpy as np
import pytest
from conftest import FAST, FakePixelEnv, gone, step_until, wait_for

from drlhp import HumanPreferencesEnvWrapper, LogDirHasLabelsError, PrefBuffer, WorkerError
from drlhp.label_store.journal import JournalLabel, read_journal
from drlhp.storage.layout import LogDir

SCRIPT = os.path.join(os.path.dirname(__file__), "scripts", "labelling_session.py")


def saved_labels(log_dir, max_labels=3000):
    buffer = PrefBuffer.load(str(log_dir), max_labels, 0.2)
    return buffer, list(buffer.train_db.prefs) + list(buffer.val_db.prefs)


def test_a_new_run_refuses_a_log_dir_holding_labels_and_leaves_them_intact(tmp_path):
    with HumanPreferencesEnvWrapper(FakePixelEnv(), log_dir=str(tmp_path), train_reward=False, **FAST) as env:
        step_until(env, lambda: env.stats().labels_received >= 5)
    before = saved_labels(tmp_path)[1]
    with pytest.raises(LogDirHasLabelsError, match=r"holds labels of an earlier run .*resume=True"):
        HumanPreferencesEnvWrapper(FakePixelEnv(), log_dir=str(tmp_path), **FAST)
    assert saved_labels(tmp_path)[1] == before
    with pytest.raises(ValueError, match="holds no labels and no reward-network checkpoint"):
        HumanPreferencesEnvWrapper(FakePixelEnv(), log_dir=str(tmp_path / "empty"), resume=True, **FAST)


def test_labels_of_other_clips_are_refused_at_construction(tmp_path):
    with HumanPreferencesEnvWrapper(FakePixelEnv(), log_dir=str(tmp_path), train_reward=False, **FAST) as env:
        step_until(env, lambda: env.stats().labels_received >= 3)
    with pytest.raises(ValueError, match=r"clips of shape \(5, 12, 12, 1\).*segment_length they were collected"):
        HumanPreferencesEnvWrapper(FakePixelEnv(), log_dir=str(tmp_path), resume=True, **{**FAST, "segment_length": 6})


def test_resume_continues_labels_network_optimiser_and_numbering(tmp_path):
    # Room for every label: on a loaded machine the env labels thousands of pairs before the network has trained
    # 8 steps, and evicting the oldest would take the first run's pairs out of the databases this test compares.
    keep_all = {**FAST, "max_prefs_in_db": 1_000_000}
    with HumanPreferencesEnvWrapper(FakePixelEnv(), log_dir=str(tmp_path), **keep_all) as env:
        step_until(env, lambda: env.using_reward_from_predictor and env.stats().training_steps >= 8)
    first_step = env.stats().training_steps
    buffer, first_labels = saved_labels(tmp_path, keep_all["max_prefs_in_db"])
    first_ids, first_train, first_val = buffer.clip_ids, list(buffer.train_db.prefs), list(buffer.val_db.prefs)

    with HumanPreferencesEnvWrapper(FakePixelEnv(), log_dir=str(tmp_path), resume=True, **keep_all) as env:
        # The run's own network from the first step on, at the step it stopped (close() checkpoints it).
        assert env.using_reward_from_predictor and env.stats().predictor_training_step == first_step
        assert env.stats().run_labels == buffer.n_received
        step_until(env, lambda: env.stats().labels_received >= 20 and env.stats().training_steps >= 4)
    buffer, labels = saved_labels(tmp_path, keep_all["max_prefs_in_db"])
    # Each database goes on where it stopped: the first run's pairs, then the new ones.
    assert list(buffer.train_db.prefs)[:len(first_train)] == first_train
    assert list(buffer.val_db.prefs)[:len(first_val)] == first_val
    assert buffer.n_received == len(first_labels) + env.stats().labels_received
    new_ids = buffer.clip_ids - first_ids
    assert new_ids and min(new_ids) > max(first_ids)  # clip numbering continued: no id means two clips
    with open(tmp_path / "reward_training_metrics.csv") as f:
        steps = [int(row["training_step"]) for row in csv.DictReader(f)]
    assert steps == sorted(steps) and steps[-1] > first_step  # one run's metrics, continuing


def test_a_new_run_from_the_same_directory_sets_the_earlier_metrics_aside(tmp_path):
    with HumanPreferencesEnvWrapper(FakePixelEnv(), log_dir=str(tmp_path), **FAST) as env:
        step_until(env, lambda: env.stats().training_steps >= 4)
    # Train anew from the first run's labels in the same log_dir: allowed, they become this run's.
    with HumanPreferencesEnvWrapper(FakePixelEnv(), log_dir=str(tmp_path), prefs_dir=str(tmp_path), **FAST) as env:
        step_until(env, lambda: env.stats().training_steps >= 4)
    aside = [f for f in os.listdir(tmp_path)
             if f.startswith("reward_training_metrics.") and f != "reward_training_metrics.csv"]
    assert len(aside) == 1
    with open(tmp_path / "reward_training_metrics.csv") as f:
        assert int(next(csv.DictReader(f))["training_step"]) <= 4  # starts again: not appended to the first run's


def test_resuming_after_a_torn_journal_record_warns_and_keeps_the_rest(tmp_path, capfd):
    env = HumanPreferencesEnvWrapper(FakePixelEnv(), log_dir=str(tmp_path), train_reward=False, **FAST)
    step_until(env, lambda: env.stats().labels_received >= 12)
    os.kill(env.pipeline.processes["pref_interface"].pid, signal.SIGKILL)  # no more labels ...
    os.kill(env.pipeline.processes["reward_trainer"].pid, signal.SIGKILL)  # ... and no snapshot on close
    with contextlib.suppress(WorkerError):
        env.close()
    journaled = [r.seq for r in read_journal(str(tmp_path)) if isinstance(r, JournalLabel)]
    path = LogDir(str(tmp_path)).journal_files()[-1]
    with open(path, "ab") as f:
        f.write(b"DLJ1\x40\x00\x00\x00\x00\x00")  # the start of a record the power cut ended
    with HumanPreferencesEnvWrapper(FakePixelEnv(), log_dir=str(tmp_path), train_reward=False, resume=True,
                                    **FAST) as env:
        assert env.stats().run_labels == journaled[-1] + 1
    assert "incomplete record header" in capfd.readouterr().err
    buffer, labels = saved_labels(tmp_path)
    assert buffer.n_received == journaled[-1] + 1 and len(labels) == len(journaled)
    assert not LogDir(str(tmp_path)).journal_files()  # a resumed run starts from one snapshot: the journal is folded in


class Answerer(threading.Thread):
    """The person at the keyboard: answers each pair the script's labeller asks about.

    An answer is acknowledged when the next question arrives (the interface journals a
    label before it asks again). After ``stop_after`` acknowledged answers it leaves the
    next question hanging and sets ``reached``.
    """

    def __init__(self, stop_after=None):
        super().__init__(daemon=True)
        self.server = socket.create_server(("127.0.0.1", 0))
        self.server.settimeout(60)
        self.port = self.server.getsockname()[1]
        self.stop_after = stop_after
        self.answered, self.acknowledged = [], 0
        self.reached = threading.Event()
        self.conn = None

    def run(self):
        self.conn, _ = self.server.accept()
        with self.conn.makefile("rw") as f:
            for n, line in enumerate(f):
                self.acknowledged = len(self.answered)
                if self.stop_after is not None and self.acknowledged >= self.stop_after:
                    self.reached.set()
                    return
                a, b = json.loads(line)
                label = (1.0, 0.0, 0.5)[n % 3]
                self.answered.append((a, b, label))
                f.write(json.dumps(label) + "\n")
                f.flush()

    def hang_up(self):
        if self.conn is not None:
            self.conn.shutdown(socket.SHUT_RDWR)
        self.server.close()


def start_session(log_dir, answerer, mode, target=None):
    args = [sys.executable, SCRIPT, str(log_dir), str(answerer.port), mode] + ([str(target)] if target else [])
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    answerer.start()
    return proc, json.loads(proc.stdout.readline() or "{}")


@pytest.mark.parametrize("victim", ["main", "reward_trainer", "pref_interface"])
def test_every_acknowledged_label_survives_a_sigkill_exactly_once(tmp_path, victim):
    first = Answerer(stop_after=15)
    proc, pids = start_session(tmp_path, first, "collect")
    assert pids, proc.stderr.read()
    assert first.reached.wait(90), f"only {first.acknowledged} answers acknowledged"
    os.kill(pids[victim], signal.SIGKILL)  # while a question waits for its answer
    first.hang_up()
    proc.communicate(timeout=60)  # a dead worker ends the session with its error; a dead main ends it at once
    assert wait_for(lambda: all(gone(p) for p in pids.values() if isinstance(p, int)), timeout=45)

    # Restart with resume and label on: the earlier labels are all there, once, and new ones join them.
    second = Answerer()
    target = first.acknowledged + 10
    proc, resumed = start_session(tmp_path, second, "resume", target)
    _, err = proc.communicate(timeout=120)
    second.hang_up()
    assert proc.returncode == 0, err
    assert first.acknowledged <= resumed["run_labels"] <= len(first.answered)

    buffer, labels = saved_labels(tmp_path)
    counts = Counter(labels)
    assert all(counts[label] == 1 for label in first.answered[:first.acknowledged]), "a label was lost"
    assert max(counts.values()) == 1, "a label was recorded twice"
    assert set(labels) <= set(first.answered) | set(second.answered)
    assert buffer.n_received == len(labels) >= target
    ids_before = {i for a, b, _ in first.answered for i in (a, b)}
    ids_after = {i for a, b, _ in second.answered for i in (a, b)}
    assert min(ids_after - ids_before) > max(ids_before)


def test_journal_and_snapshot_agree_after_2000_synthetic_labels(tmp_path):
    with HumanPreferencesEnvWrapper(FakePixelEnv(shape=(4, 4, 1)), log_dir=str(tmp_path), train_reward=False,
                                    max_prefs_in_db=20_000, label_budget=None, segment_length=2,
                                    synthetic_prefs_per_segment=8, max_segs=400, seed=0, log_level=30) as env:
        step_until(env, lambda: env.stats().labels_received >= 2_000, timeout=240)
    buffer, _ = saved_labels(tmp_path, max_labels=20_000)  # the snapshot written on close
    # What the journal still holds (since the last compaction): labels only, this run took none back.
    records = [r for r in read_journal(str(tmp_path)) if isinstance(r, JournalLabel)]
    assert records[0].seq > 0 and buffer.n_received >= 2_000  # snapshots let the journal drop older labels
    assert [r.seq for r in records] == list(range(records[0].seq, buffer.n_received))
    # With nothing evicted, the k-th label routed to a database is its k-th pair.
    per_db = {id(buffer.train_db): [], id(buffer.val_db): []}
    for seq in range(buffer.n_received):
        per_db[id(buffer.db_for(seq))].append(seq)
    index = {seq: (db, i) for db in (buffer.train_db, buffer.val_db) for i, seq in enumerate(per_db[id(db)])}
    for r in records:
        db, i = index[r.seq]
        assert db.prefs[i] == (r.a.clip_id, r.b.clip_id, r.label)
        for clip in (r.a, r.b):
            assert np.array_equal(db.segments[clip.clip_id].frames, clip.frames)
