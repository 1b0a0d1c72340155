"""The label store, without a process: the label stream in, snapshots out, a run's labels replayed from its
snapshot and journal, and the journal retracted once a snapshot holds its labels."""
from __future__ import annotations

import logging

import numpy as np
import pytest

from drlhp.clips.clip import Clip, pack
from drlhp.clips.frames import infer_frame_spec
from drlhp.errors import LogDirHasLabelsError
from drlhp.label_store.database import PrefBuffer
from drlhp.label_store.journal import JournalWriter, read_journal
from drlhp.label_store.store import MIN_LABELS_PER_SNAPSHOT, LabelStore, LabelStoreConfig
from drlhp.label_store.stream import ClipData, ForgetClip, Preference, Retraction, SecondAnswer
from drlhp.storage.layout import LogDir

LENGTH = 3
SPEC = infer_frame_spec(np.zeros((4, 4, 1), np.uint8))


def clip(i: int) -> Clip:
    return Clip(i, np.full((LENGTH, 4, 4, 1), i % 256, np.uint8), np.full(LENGTH, float(i)))


def store(log_dir, **changes) -> LabelStore:
    base = dict(log_dir=str(log_dir), prefs_dir=None, resume=False, max_labels=1000, val_fraction=0.2,
                collecting=True, journaling=True, snapshot_interval=None, frame_spec=SPEC, clip_length=LENGTH,
                instructions=None)
    return LabelStore(LabelStoreConfig(**{**base, **changes}))


def label(s: LabelStore, seq: int, journal: JournalWriter | None = None) -> None:
    """What the interface sends for its ``seq``-th label: two new clips, the label, then it forgets the first."""
    a, b = pack(clip(2 * seq)), pack(clip(2 * seq + 1))
    if journal is not None:
        journal.append(seq, a, b, 1.0, "test")
    for record in (ClipData(a), ClipData(b), Preference(a.clip_id, b.clip_id, 1.0, seq, "test"),
                   ForgetClip(a.clip_id)):
        s.add(record)


def test_the_stream_becomes_labelled_pairs_split_by_their_number(tmp_path):
    s = store(tmp_path)
    for seq in range(10):
        label(s, seq)
    assert (len(s.buffer.train_db), len(s.buffer.val_db), s.n_labels, s.n_unsaved) == (8, 2, 10, 10)
    assert (s.next_seq, s.next_clip_id) == (10, 20)
    a, b, value = s.buffer.train_db.prefs[0]
    assert (a, b, value) == (0, 1, 1.0) and s.buffer.train_db.labellers[0] == "test"
    with pytest.raises(TypeError, match="not a label record"):
        s.add("a label")  # type: ignore[arg-type]


def test_a_snapshot_is_due_once_the_new_labels_are_as_many_as_the_old(tmp_path):
    s = store(tmp_path)
    for seq in range(MIN_LABELS_PER_SNAPSHOT - 1):
        label(s, seq)
    assert not s.snapshot_if_due() and not LogDir(str(tmp_path)).has_labels()
    label(s, MIN_LABELS_PER_SNAPSHOT - 1)
    assert s.snapshot_if_due() and s.n_unsaved == 0 and s.n_in_snapshot == MIN_LABELS_PER_SNAPSHOT
    for seq in range(MIN_LABELS_PER_SNAPSHOT, MIN_LABELS_PER_SNAPSHOT + 50):
        label(s, seq)
    assert not s.snapshot_if_due()  # 50 new labels against 100 in the snapshot: not yet
    s.save_unsaved()  # at the end of the run, they go in anyway
    assert s.n_in_snapshot == MIN_LABELS_PER_SNAPSHOT + 50


def test_a_resumed_run_replays_its_snapshot_and_journal_and_the_journal_is_retracted(tmp_path):
    first = store(tmp_path)
    journal = JournalWriter(str(tmp_path), lambda: first.n_in_snapshot)
    for seq in range(5):
        label(first, seq, journal)
    first.save(str(tmp_path))  # a snapshot of labels 0-4 ...
    for seq in range(5, 8):
        label(first, seq, journal)  # ... and 5-7 in the journal only: the run was killed here
    journal.close()
    assert [r.seq for r in read_journal(str(tmp_path))] == [5, 6, 7]  # the files the snapshot covers are gone

    resumed = store(tmp_path, resume=True)
    assert resumed.next_seq == 8 and resumed.n_labels == 8 and resumed.next_clip_id == 16
    assert sorted(p[:2] for p in [*resumed.buffer.train_db.prefs, *resumed.buffer.val_db.prefs]) == \
        [(2 * i, 2 * i + 1) for i in range(8)]
    # The resumed run wrote one snapshot with all of them and retracted the journal.
    assert list(read_journal(str(tmp_path))) == [] and resumed.n_in_snapshot == 8


def test_a_new_run_never_collects_over_an_earlier_runs_labels(tmp_path):
    earlier = store(tmp_path)
    label(earlier, 0)
    earlier.save_unsaved()
    with pytest.raises(LogDirHasLabelsError, match="resume=True"):
        store(tmp_path)
    new = store(tmp_path / "new", prefs_dir=str(tmp_path))  # a new run from them, in a log_dir of its own
    assert new.n_labels == 1 and LogDir(str(tmp_path / "new")).has_labels()


def test_labels_of_other_clips_than_the_run_makes_are_refused(tmp_path):
    earlier = store(tmp_path)
    label(earlier, 0)
    earlier.save_unsaved()
    with pytest.raises(ValueError, match=r"clips of shape \(3, 4, 4, 1\).*segment_length=3"):
        store(tmp_path, resume=True, clip_length=5)
    training_only = store(tmp_path / "train", prefs_dir=str(tmp_path), collecting=False, journaling=False,
                          clip_length=None)
    assert training_only.n_labels == 1  # it trains on the clips its labels have, of any length


def held(s: LabelStore) -> dict:
    """Each held label by number: (clips, training label, who answered first, second answer)."""
    return {seq: (p[:2], p[2], who, second_by, second)
            for db in (s.buffer.train_db, s.buffer.val_db)
            for p, who, seq, second_by, second in zip(db.prefs, db.labellers, db.seqs, db.second_labellers,
                                                      db.second_labels)}


@pytest.mark.parametrize("closed", [True, False], ids=["closed", "killed"])
def test_retractions_and_second_answers_reach_the_database_and_a_resumed_run(tmp_path, closed):
    s = store(tmp_path)
    journal = JournalWriter(str(tmp_path), lambda: s.n_in_snapshot)
    for seq in range(6):
        label(s, seq, journal)  # answered 1.0 by "test"
    s.save(str(tmp_path))
    records = [SecondAnswer(0, "web:bo", 1.0, 2.5), SecondAnswer(1, "web:bo", 0.0), SecondAnswer(4, "web:cy", 0.5),
               Retraction(2, "test"), Retraction(3, "web:bo"), Retraction(1, "web:bo"), Retraction(4, "test")]
    for record in records:  # as the interface sends them: journaled first
        if isinstance(record, Retraction):
            journal.retract(record.seq, record.labeller, position=s.next_seq)
        else:
            journal.second_answer(record.seq, record.labeller, record.label, record.seconds, position=s.next_seq)
        s.add(record)
    journal.close()
    assert s.n_unsaved == len(records)  # each one due in a snapshot (a refused one too: its journal record is there)
    assert s.buffer.retracted == {2, 4} and (s.next_seq, s.buffer.n_labels, s.n_labels) == (6, 4, 4)
    assert s.agreement.counts == {("test", "web:bo"): [1, 1]}  # label 1's second answer was taken back, 4 is gone
    assert held(s)[1][1:4] == (1.0, "test", "") and held(s)[0][1:4] == (1.0, "test", "web:bo")
    if closed:
        s.save_unsaved()
        assert s.n_unsaved == 0 and PrefBuffer.load(str(tmp_path), 1000, 0.2).retracted == {2, 4}
    resumed = store(tmp_path, resume=True)
    assert held(resumed) == held(s) and resumed.agreement == s.agreement
    assert resumed.buffer.retracted == {2, 4} and resumed.next_seq == 6 and resumed.buffer.n_labels == 4
    assert list(read_journal(str(tmp_path))) == []  # folded into the resumed run's snapshot


def test_the_runs_instructions_are_recorded_and_a_change_is_named_in_a_warning(tmp_path, caplog):
    first = store(tmp_path / "a", instructions="Which dot gets nearer?")
    label(first, 0)
    first.save_unsaved()
    assert PrefBuffer.load_all(str(tmp_path / "a")).instructions == "Which dot gets nearer?"
    with caplog.at_level(logging.WARNING, logger="drlhp.label_store"):
        second = store(tmp_path / "b", prefs_dir=str(tmp_path / "a"), instructions="Which dot moves less?")
    assert "'Which dot gets nearer?'" in caplog.text and "'Which dot moves less?'" in caplog.text
    assert second.buffer.instructions == "Which dot moves less?"
    assert PrefBuffer.load_all(str(tmp_path / "b")).instructions == "Which dot moves less?"  # its first snapshot
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="drlhp.label_store"):
        third = store(tmp_path / "c", prefs_dir=str(tmp_path / "a"))  # asks nothing new: the labels keep theirs
        store(tmp_path / "d", prefs_dir=str(tmp_path / "a"), instructions="Which dot gets nearer?")
    assert third.buffer.instructions == "Which dot gets nearer?" and not caplog.text
