"""The label journal: what it writes, reads back, drops after a snapshot, and survives."""
import logging
import os

import numpy as np
import pytest

from drlhp.clips.segments import Segment, pack
from drlhp.labels.journal import JournalWriter, read_journal
from drlhp.pref_db import PrefBuffer
from drlhp.storage.layout import LogDir


def clips(n, shape=(3, 6, 6, 1), seed=0):
    rng = np.random.default_rng(seed)
    return [pack(Segment(i, rng.integers(0, 256, shape, dtype=np.uint8), rng.normal(size=shape[0]), i // 4, i % 2))
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
    assert [(r.seq, r.a.seg_id, r.b.seg_id, r.label, r.labeller) for r in records] == [
        (0, 0, 1, 1.0, "HumanLabeller"), (1, 1, 2, 0.5, "HumanLabeller"), (2, 3, 0, 0.0, "SyntheticLabeller")]
    for r in records:
        for got in (r.a, r.b):
            want = segs[got.seg_id]
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
    live = PrefBuffer(max_prefs=60, val_fraction=0.2)  # small: eviction happens too
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
    rebuilt = PrefBuffer.load(str(tmp_path), max_prefs=60, val_fraction=0.2)
    assert rebuilt.n_received == live.n_received == 300
    for got, want in ((rebuilt.train_db, live.train_db), (rebuilt.val_db, live.val_db)):
        assert list(got.prefs) == list(want.prefs)
        assert sorted(got.segments) == sorted(want.segments)
        for i in want.segments:
            assert np.array_equal(got.segments[i].frames, want.segments[i].frames)


def test_reading_a_database_routes_the_journals_labels_by_the_runs_own_split(tmp_path):
    segs = clips(12)
    run = PrefBuffer(max_prefs=100, val_fraction=0.5)  # not the default 0.2: every second label to validation
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
