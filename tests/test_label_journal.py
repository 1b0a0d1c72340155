"""The label journal: what it writes, reads back, drops after a snapshot, and survives; and a run's labels rebuilt
from its snapshot and journal, with labels taken back and pairs answered twice."""
import json
import logging
import math
import os
import struct
import time
import zlib

import numpy as np
import pytest

from drlhp import PrefBuffer
from drlhp.clips.clip import Clip, pack
from drlhp.label_store.journal import (
    JournalLabel,
    JournalRetraction,
    JournalSecondAnswer,
    JournalTask,
    JournalWriter,
    read_journal,
)
from drlhp.storage.layout import LogDir


def clips(n, shape=(3, 6, 6, 1), seed=0):
    rng = np.random.default_rng(seed)
    return [pack(Clip(i, rng.integers(0, 256, shape, dtype=np.uint8), rng.normal(size=shape[0]), i // 4, i % 2))
            for i in range(n)]


class Snapshot:
    """What the trainer publishes: how many labels the last snapshot of log_dir holds."""

    def __init__(self):
        self.n = 0

    def __call__(self):
        return self.n


def test_labels_and_their_clips_read_back_exactly(tmp_path):
    segs = clips(4)
    writer = JournalWriter(str(tmp_path), Snapshot())
    writer.append(0, segs[0], segs[1], 1.0, "HumanLabeller")
    writer.append(1, segs[1], segs[2], 0.5, "HumanLabeller")
    writer.append(2, segs[3], segs[0], 0.0, "SyntheticLabeller")
    writer.close()
    records = list(read_journal(str(tmp_path)))
    assert all(isinstance(r, JournalLabel) for r in records)
    assert [(r.seq, r.a.clip_id, r.b.clip_id, r.label, r.labeller) for r in records] == [
        (0, 0, 1, 1.0, "HumanLabeller"), (1, 1, 2, 0.5, "HumanLabeller"), (2, 3, 0, 0.0, "SyntheticLabeller")]
    for r in records:
        for got in (r.a, r.b):
            want = segs[got.clip_id]
            assert np.array_equal(got.frames, want.frames) and np.array_equal(got.rewards, want.rewards)
            assert (got.episode, got.env_index) == (want.episode, want.env_index)
    # Each clip is written once per file: 4 clips, not 6.
    size = os.path.getsize(LogDir(str(tmp_path)).journal_files()[0])
    assert size < sum(len(s.packed_frames[0]) for s in segs) + 4 * 3 * 8 + 1000


@pytest.mark.parametrize("cut", [1, 7, 30])
def test_a_torn_last_record_is_skipped_with_a_warning(tmp_path, caplog, cut):
    segs = clips(3)
    writer = JournalWriter(str(tmp_path), Snapshot())
    for seq in range(3):
        writer.append(seq, segs[seq], segs[(seq + 1) % 3], 1.0, "HumanLabeller")
    writer.close()
    (path,) = LogDir(str(tmp_path)).journal_files()
    with open(path, "r+b") as f:  # a power cut in the middle of the last write
        f.truncate(os.path.getsize(path) - cut)
    with caplog.at_level(logging.WARNING, logger="drlhp.journal"):
        records = list(read_journal(str(tmp_path)))
    assert [r.seq for r in records] == [0, 1]
    assert "skipped the last" in caplog.text and path in caplog.text


def test_a_corrupted_byte_is_caught_by_the_checksum(tmp_path, caplog):
    segs = clips(2)
    writer = JournalWriter(str(tmp_path), Snapshot())
    writer.append(0, segs[0], segs[1], 1.0, "x")
    writer.append(1, segs[1], segs[0], 0.0, "x")
    writer.close()
    (path,) = LogDir(str(tmp_path)).journal_files()
    data = bytearray(open(path, "rb").read())
    data[-3] ^= 0xFF  # inside the last record's payload
    open(path, "wb").write(bytes(data))
    with caplog.at_level(logging.WARNING, logger="drlhp.journal"):
        assert [r.seq for r in read_journal(str(tmp_path))] == [0]
    assert "checksum mismatch" in caplog.text


def test_files_wholly_in_a_snapshot_are_deleted_and_each_file_stands_alone(tmp_path):
    segs = clips(6)
    snapshot = Snapshot()
    writer = JournalWriter(str(tmp_path), snapshot)
    writer.append(0, segs[0], segs[1], 1.0, "x")
    writer.append(1, segs[1], segs[2], 1.0, "x")
    snapshot.n = 1  # a snapshot holds label 0 only: label 1 is still needed
    writer.append(2, segs[1], segs[3], 0.0, "x")  # a new file, which writes clip 1 again
    assert len(LogDir(str(tmp_path)).journal_files()) == 2
    assert [r.seq for r in read_journal(str(tmp_path))] == [0, 1, 2]
    snapshot.n = 3  # everything so far is in a snapshot
    writer.append(3, segs[4], segs[5], 0.5, "x")
    writer.close()
    assert len(LogDir(str(tmp_path)).journal_files()) == 1
    assert [r.seq for r in read_journal(str(tmp_path))] == [3]


def test_snapshot_plus_journal_rebuild_the_database_through_crashes_between_snapshot_files(tmp_path):
    """The trainer's view (labels as they arrive, snapshots now and then) equals what log_dir rebuilds."""
    rng = np.random.default_rng(1)
    segs = clips(40, seed=1)
    live = PrefBuffer(max_labels=60, val_fraction=0.2)  # small: eviction happens too
    snapshot = Snapshot()
    writer = JournalWriter(str(tmp_path), snapshot)
    for seq in range(300):
        a, b = rng.choice(40, 2, replace=False)
        label = float(rng.choice([0.0, 0.5, 1.0]))
        writer.append(seq, segs[a], segs[b], label, "SyntheticLabeller")
        live.add(segs[a], segs[b], label, seq)
        if seq < 290 and rng.random() < 0.05:
            live.save(str(tmp_path))
            snapshot.n = live.n_received
        if seq == 295:  # a crash between the two files of a snapshot: val.pkl.gz stays older
            live.train_db.save(str(tmp_path / "train.pkl.gz"), live.n_received)
    writer.close()
    rebuilt = PrefBuffer.load(str(tmp_path), max_labels=60, val_fraction=0.2)
    assert rebuilt.n_received == live.n_received == 300
    for got, want in ((rebuilt.train_db, live.train_db), (rebuilt.val_db, live.val_db)):
        assert list(got.prefs) == list(want.prefs)
        assert sorted(got.segments) == sorted(want.segments)
        for i in want.segments:
            assert np.array_equal(got.segments[i].frames, want.segments[i].frames)


def test_reading_a_database_routes_the_journals_labels_by_the_runs_own_split(tmp_path):
    segs = clips(12)
    run = PrefBuffer(max_labels=100, val_fraction=0.5)  # not the default 0.2: every second label to validation
    writer = JournalWriter(str(tmp_path), Snapshot())
    for seq in range(10):
        a, b = segs[seq], segs[seq + 1]
        writer.append(seq, a, b, 1.0, "SyntheticLabeller")
        run.add(a, b, 1.0, seq)
        if seq == 3:
            run.save(str(tmp_path))  # a snapshot of the first four; the other six only in the journal
    writer.close()
    read = PrefBuffer.load_all(str(tmp_path))  # show-prefs, eval-reward, plot: they do not know the run's settings
    assert read.val_fraction == 0.5 and (len(read.train_db), len(read.val_db)) == (5, 5) == (
        len(run.train_db), len(run.val_db))
    assert len(PrefBuffer.load_all(str(tmp_path), val_fraction=0.5).val_db) == 5  # or told


def test_a_run_with_no_snapshot_yet_says_its_split_in_its_journal(tmp_path):
    segs = clips(12)
    writer = JournalWriter(str(tmp_path), Snapshot(), val_fraction=0.5)
    for seq in range(10):
        writer.append(seq, segs[seq], segs[seq + 1], 1.0, "SyntheticLabeller")
    writer.close()
    read = PrefBuffer.load_all(str(tmp_path))  # no train.pkl.gz: the journal alone says where its labels went
    assert read.val_fraction == 0.5 and (len(read.train_db), len(read.val_db)) == (5, 5)
    assert next(read_journal(str(tmp_path))) == JournalTask(None, 0.5)


def labels_in(log_dir):
    return [r.seq for r in read_journal(str(log_dir)) if isinstance(r, JournalLabel)]


def test_retractions_second_answers_and_instructions_read_back(tmp_path):
    segs = clips(3)
    snapshot = Snapshot()
    task = "Which clip keeps the dot nearer the target?"
    writer = JournalWriter(str(tmp_path), snapshot, instructions=task)
    writer.append(0, segs[0], segs[1], 1.0, "web:al", 2.5)
    writer.second_answer(0, "web:bo", 0.0, 1.25, position=1)
    writer.append(1, segs[1], segs[2], 0.5, "web:al")
    writer.retract(1, "web:al", position=2)
    writer.second_answer(0, "web:cy", 0.5, None, position=2)
    snapshot.n = 2
    writer.append(2, segs[2], segs[0], 0.0, "web:al")  # a new file: it starts with the instructions too
    writer.close()
    records = list(read_journal(str(tmp_path)))
    assert [type(r).__name__ for r in records] == [
        "JournalTask", "JournalLabel", "JournalSecondAnswer", "JournalLabel", "JournalRetraction",
        "JournalSecondAnswer", "JournalTask", "JournalLabel"]
    assert records[0] == records[6] == JournalTask(task)
    second, retraction, untimed = records[2], records[4], records[5]
    assert isinstance(second, JournalSecondAnswer) and isinstance(retraction, JournalRetraction)
    assert (second.seq, second.labeller, second.label, second.seconds) == (0, "web:bo", 0.0, 1.25)
    assert untimed == JournalSecondAnswer(0, "web:cy", 0.5, untimed.time, None)
    assert (retraction.seq, retraction.labeller) == (1, "web:al")
    assert abs(retraction.time - time.time()) < 60 and abs(second.time - time.time()) < 60
    assert not any(isinstance(r, JournalTask) for r in _journal_without_instructions(tmp_path / "plain", segs))


def _journal_without_instructions(log_dir, segs):
    writer = JournalWriter(str(log_dir), Snapshot())
    writer.append(0, segs[0], segs[1], 1.0, "x")
    writer.close()
    return list(read_journal(str(log_dir)))


def _record(meta, blob=b""):
    """A journal record framed by hand (b"DLJ1", length, CRC-32, JSON length, JSON, blob), as drlhp wrote them
    before retractions and second answers: this test does not lean on the writer it checks against."""
    text = json.dumps(meta).encode()
    payload = struct.pack("<I", len(text)) + text + blob
    return b"DLJ1" + struct.pack("<II", len(payload), zlib.crc32(payload)) + payload


def test_a_journal_written_before_retractions_and_second_answers_still_reads(tmp_path):
    rng = np.random.default_rng(0)
    frames = [rng.integers(0, 256, (3, 6, 6, 1), dtype=np.uint8) for _ in range(3)]
    rewards = [rng.normal(size=3) for _ in range(3)]
    data = b""
    for i in range(3):
        packed = zlib.compress(frames[i].tobytes(), 1)
        data += _record({"kind": "clip", "seg_id": i, "shape": [3, 6, 6, 1], "dtype": "|u1", "episode": i,
                         "env_index": 0, "n_frame_bytes": len(packed)}, packed + rewards[i].tobytes())
    # The oldest label records have no "seconds"; later ones do.
    data += _record({"kind": "label", "seq": 0, "a": 0, "b": 1, "label": 1.0, "time": 1.7e9, "labeller": "x"})
    data += _record({"kind": "label", "seq": 1, "a": 1, "b": 2, "label": 0.5, "time": 1.7e9, "labeller": "web:al",
                     "seconds": 3.25})
    os.makedirs(LogDir(str(tmp_path)).journal_dir)
    with open(os.path.join(LogDir(str(tmp_path)).journal_dir, "000000000000.journal"), "wb") as f:
        f.write(data)
    records = list(read_journal(str(tmp_path)))
    assert [(r.seq, r.a.clip_id, r.b.clip_id, r.label, r.labeller, r.seconds) for r in records] == [
        (0, 0, 1, 1.0, "x", None), (1, 1, 2, 0.5, "web:al", 3.25)]
    assert np.array_equal(records[1].b.frames, frames[2]) and np.array_equal(records[1].b.rewards, rewards[2])
    buffer = PrefBuffer.load_all(str(tmp_path))
    assert buffer.n_labels == 2 and buffer.retracted == set() and buffer.instructions is None
    assert list(buffer.train_db.seqs) == [0, 1] and list(buffer.train_db.answer_seconds)[1] == 3.25


@pytest.mark.parametrize("cut", [1, 9, 40])
def test_a_torn_retraction_at_the_end_is_skipped_and_the_labels_before_it_kept(tmp_path, caplog, cut):
    segs = clips(3)
    writer = JournalWriter(str(tmp_path), Snapshot())
    writer.append(0, segs[0], segs[1], 1.0, "web:al")
    writer.append(1, segs[1], segs[2], 0.0, "web:al")
    (path,) = LogDir(str(tmp_path)).journal_files()
    size = os.path.getsize(path)
    writer.retract(1, "web:al", position=2)
    writer.close()
    assert os.path.getsize(path) - size > cut
    with open(path, "r+b") as f:  # a power cut in the middle of writing the retraction
        f.truncate(os.path.getsize(path) - cut)
    with caplog.at_level(logging.WARNING, logger="drlhp.journal"):
        records = list(read_journal(str(tmp_path)))
    assert [(type(r), r.seq) for r in records] == [(JournalLabel, 0), (JournalLabel, 1)]
    assert "skipped the last" in caplog.text
    assert PrefBuffer.load_all(str(tmp_path)).n_labels == 2  # the retraction never happened: label 1 stays


def test_a_record_of_an_unknown_kind_ends_the_files_replay_with_a_warning(tmp_path, caplog):
    segs = clips(2)
    writer = JournalWriter(str(tmp_path), Snapshot())
    writer.append(0, segs[0], segs[1], 1.0, "x")
    writer.close()
    (path,) = LogDir(str(tmp_path)).journal_files()
    with open(path, "ab") as f:  # a later drlhp's record, then a label after it
        f.write(_record({"kind": "rename", "seq": 0}) + _record({"kind": "retract", "seq": 0, "labeller": "x",
                                                                 "time": 1.0, "position": 1}))
    with caplog.at_level(logging.WARNING, logger="drlhp.journal"):
        assert [type(r) for r in read_journal(str(tmp_path))] == [JournalLabel]
    assert "unknown record kind 'rename'" in caplog.text


def test_a_file_is_kept_until_a_snapshot_covers_the_positions_of_its_records_not_only_its_labels(tmp_path):
    run = Run(tmp_path)
    run.label()
    run.label()
    run.writer.retract(1, "web:al", position=2)  # journaled; the trainer has not taken it yet ...
    run.save()  # ... when it snapshots labels 0 and 1: the snapshot covers the file's labels, not the retraction
    assert run.live.retract(1, "web:al")
    run.label()  # a new file; the first one is still needed
    assert len(LogDir(run.log_dir).journal_files()) == 2
    assert_same(run.rebuilt(), run.live)  # label 1 does not come back
    assert run.second(2, "web:bo", 1.0)
    run.save()  # a snapshot that has seen label 2, so the retraction before it: the first file goes
    run.label()
    assert len(LogDir(run.log_dir).journal_files()) == 2  # the second file's second answer is not covered yet
    assert labels_in(tmp_path) == [2, 3]
    run.save()
    run.label()
    assert labels_in(tmp_path) == [4] and len(LogDir(run.log_dir).journal_files()) == 1
    assert_same(run.rebuilt(), run.live)


class Run:
    """A run as the trainer sees it (``live``, snapshots now and then) and as the interface journals it."""

    def __init__(self, log_dir, max_labels=100, val_fraction=0.2, instructions=None):
        self.log_dir = str(log_dir)
        self.live = PrefBuffer(max_labels, val_fraction)
        self.live.instructions = instructions
        self.snapshot = Snapshot()
        self.writer = JournalWriter(self.log_dir, self.snapshot, instructions)
        self.segs = clips(40, seed=2)

    def label(self, labeller="web:al", label=1.0, a=None, b=None):
        seq = self.live.n_received
        a, b = self.segs[seq % 40 if a is None else a], self.segs[(seq + 1) % 40 if b is None else b]
        self.writer.append(seq, a, b, label, labeller)
        self.live.add(a, b, label, seq, labeller)
        return seq

    def retract(self, seq, labeller):
        self.writer.retract(seq, labeller, position=self.live.n_received)
        return self.live.retract(seq, labeller)

    def second(self, seq, labeller, label, seconds=None):
        self.writer.second_answer(seq, labeller, label, seconds, position=self.live.n_received)
        return self.live.add_second(seq, labeller, label, seconds)

    def save(self):
        self.live.save(self.log_dir)
        self.snapshot.n = self.live.n_received

    def rebuilt(self):
        # Each record was fsynced as written: the journal reads whole while the writer still appends.
        return PrefBuffer.load(self.log_dir, self.live.train_db.maxlen + self.live.val_db.maxlen,
                               self.live.val_fraction)


def assert_same(got: PrefBuffer, want: PrefBuffer):
    assert (got.n_received, got.retracted, got.n_labels, got.instructions) == (
        want.n_received, want.retracted, want.n_labels, want.instructions)
    for g, w in ((got.train_db, want.train_db), (got.val_db, want.val_db)):
        for column in ("prefs", "labellers", "seqs", "first_labels", "second_labellers"):
            assert list(getattr(g, column)) == list(getattr(w, column)), column
        np.testing.assert_array_equal(g.second_labels, w.second_labels)
        assert sorted(g.segments) == sorted(w.segments)
    assert got.agreement == want.agreement


def test_a_label_retracted_after_its_snapshot_is_gone_on_load(tmp_path):
    run = Run(tmp_path)
    for _ in range(4):
        run.label()
    run.save()
    assert run.retract(2, "web:al")  # in the journal only
    loaded = run.rebuilt()
    assert_same(loaded, run.live)
    assert 2 not in loaded.train_db.seqs and loaded.retracted == {2} and (loaded.n_received, loaded.n_labels) == (4, 3)


def test_a_label_retracted_before_its_snapshot_stays_gone_once_the_journal_is_dropped(tmp_path):
    run = Run(tmp_path)
    for _ in range(4):
        run.label()
    assert run.retract(2, "web:al")
    run.save()
    run.label()  # a new file; the old one holds the retraction the snapshot has seen (it is replayed: a no-op)
    assert_same(run.rebuilt(), run.live)
    run.save()
    run.label()  # the snapshot covers everything before: the journal drops its earlier files
    assert not any(isinstance(r, JournalRetraction) for r in read_journal(run.log_dir))
    loaded = run.rebuilt()
    assert_same(loaded, run.live)
    assert loaded.retracted == {2} and 2 not in loaded.train_db.seqs


def test_a_label_journaled_and_retracted_without_a_snapshot_is_gone(tmp_path):
    run = Run(tmp_path)
    for _ in range(3):
        run.label()
    assert run.retract(1, "web:al") and not run.retract(1, "web:al")  # once
    assert not LogDir(run.log_dir).has_labels() or not os.path.exists(LogDir(run.log_dir).snapshot[0])
    loaded = run.rebuilt()
    assert_same(loaded, run.live)
    assert loaded.retracted == {1} and [*loaded.train_db.seqs, *loaded.val_db.seqs] == [0, 2]


def test_second_answers_before_and_after_a_snapshot(tmp_path):
    run = Run(tmp_path, instructions="Which is better?")
    for _ in range(5):
        run.label("web:al", 1.0)
    assert run.second(0, "web:bo", 1.0, 2.0)  # agrees
    assert run.second(2, "web:bo", 0.0)  # disagrees: a tie
    run.save()
    assert run.second(1, "web:cy", 0.5)  # after the snapshot: in the journal only
    assert run.retract(2, "web:bo")  # the second answer goes: label 2 is its first answer again
    assert not run.second(3, "web:al", 0.0)  # not a second opinion: the label is theirs
    loaded = run.rebuilt()
    assert_same(loaded, run.live)
    db = loaded.train_db
    assert [p[2] for p in db.prefs] == [1.0, 0.5, 1.0, 1.0]  # labels 0, 1, 2, 3
    assert list(db.second_labellers) == ["web:bo", "web:cy", "", ""]
    assert db.second_seconds[0] == 2.0 and math.isnan(db.second_seconds[1])
    assert loaded.agreement.counts == {("web:al", "web:bo"): [1, 1], ("web:al", "web:cy"): [1, 0]}
    assert loaded.instructions == "Which is better?"


def test_a_crash_between_the_snapshot_files_does_not_bring_a_retracted_label_back(tmp_path):
    run = Run(tmp_path, val_fraction=0.5)  # odd labels go to validation
    for _ in range(4):
        run.label()
    run.save()
    assert run.retract(3, "web:al")  # a validation label
    run.label()
    live = run.live  # the next snapshot writes train.pkl.gz, then the process dies before val.pkl.gz
    live.train_db.save(str(tmp_path / "train.pkl.gz"), live.n_received, live.val_fraction, None, live.retracted)
    loaded = run.rebuilt()
    assert_same(loaded, run.live)
    assert 3 not in loaded.val_db.seqs and loaded.retracted == {3}


def test_the_journal_s_instructions_are_newer_than_the_snapshot_s(tmp_path):
    run = Run(tmp_path, instructions="old")
    run.label()
    run.save()
    run.writer.close()
    run.writer = JournalWriter(run.log_dir, run.snapshot, "new")  # a resumed run that asks something else
    run.live.instructions = "new"
    run.label()
    assert run.rebuilt().instructions == "new"


def test_snapshot_and_journal_rebuild_retractions_and_second_answers_through_crashes(tmp_path):
    """Labels, retractions (right and wrong labeller) and second answers at random, snapshots now and then, a
    crash between a snapshot's two files: the log_dir rebuilds exactly what the trainer held."""
    rng = np.random.default_rng(3)
    run = Run(tmp_path, max_labels=60, val_fraction=0.2)  # small: eviction happens too
    people = ["web:al", "web:bo", "web:cy"]
    for step in range(600):
        recent = max(0, run.live.n_received - 10)
        seq = int(rng.integers(recent, run.live.n_received)) if run.live.n_received else 0
        roll = rng.random()
        if roll < 0.1 and run.live.n_received:
            run.retract(seq, people[rng.integers(3)])
        elif roll < 0.25 and run.live.n_received:
            run.second(seq, people[rng.integers(3)], float(rng.choice([0.0, 0.5, 1.0])), float(rng.random()))
        else:
            a, b = rng.choice(40, 2, replace=False)
            run.label(people[rng.integers(3)], float(rng.choice([0.0, 0.5, 1.0])), int(a), int(b))
        if step < 580 and rng.random() < 0.03:
            run.save()
        if step == 590:  # a crash between the two files of a snapshot: val.pkl.gz stays older
            live = run.live
            live.train_db.save(str(tmp_path / "train.pkl.gz"), live.n_received, live.val_fraction, None,
                               live.retracted)
    assert run.live.retracted and run.live.agreement.n_pairs  # the run did retract and answer twice
    assert len(LogDir(run.log_dir).journal_files()) < 10  # and the journal shrank as it went
    assert_same(run.rebuilt(), run.live)
