import gzip
import json
import os
import pickle

import numpy as np
import pytest

from drlhp import PrefBuffer, PrefDB, PrefDBFormatError
from drlhp.clips.clip import Clip
from drlhp.errors import LAST_TO_CONVERT


def seg(i, length=4, shape=(5, 5, 1)):
    return Clip(i, np.full((length, *shape), i % 256, np.uint8), np.arange(length, dtype=np.float64) + i)


def test_fifo_eviction_and_segments_stored_once():
    db = PrefDB(maxlen=3)
    s = [seg(i) for i in range(5)]
    db.append(s[0], s[1], 1.0)
    stored = db.segments[0]
    db.append(s[0], s[2], 0.0)
    db.append(s[1], s[2], 0.5)
    assert len(db.segments) == 3 and len(db) == 3
    assert db.segments[0] is stored  # one copy, not one per pair
    db.append(s[3], s[4], 1.0)  # evicts (0, 1)
    assert list(db.prefs)[0] == (0, 2, 0.0) and set(db.segments) == {0, 1, 2, 3, 4}
    db.append(s[3], s[4], 0.0)  # evicts (0, 2): segment 0 has no pair left
    assert set(db.segments) == {1, 2, 3, 4}


def test_batch_gathers_frames_and_labels():
    db = PrefDB(10)
    db.append(seg(1), seg(2), 1.0)
    db.append(seg(3), seg(1), 0.5)
    a, b, labels = db.batch(np.array([1, 0]))
    assert a.shape == (2, 4, 5, 5, 1) and a[0, 0, 0, 0, 0] == 3 and b[0, 0, 0, 0, 0] == 1
    assert labels.tolist() == [0.5, 1.0]


def test_save_load_round_trip(tmp_path):
    db = PrefDB(100)
    for i in range(10):
        db.append(seg(i), seg((i + 1) % 10), [0.0, 0.5, 1.0][i % 3], ["web:anna", "SyntheticLabeller"][i % 2],
                  [1.25, float("nan")][i % 2])
    path = str(tmp_path / "train.pkl.gz")
    db.save(path)
    loaded = PrefDB.load(path)
    assert list(loaded.prefs) == list(db.prefs) and loaded.maxlen == 100
    assert list(loaded.labellers) == ["web:anna", "SyntheticLabeller"] * 5
    np.testing.assert_array_equal(loaded.answer_seconds, [1.25, np.nan] * 5)
    for i, s in db.segments.items():
        assert np.array_equal(loaded.segments[i].frames, s.frames)
        assert np.array_equal(loaded.segments[i].rewards, s.rewards)
    assert [f for f in os.listdir(tmp_path)] == ["train.pkl.gz"]  # no temporary file left behind


def test_empty_db_round_trips(tmp_path):
    path = str(tmp_path / "val.pkl.gz")
    PrefDB(5).save(path)
    assert len(PrefDB.load(path)) == 0


def test_a_pickle_is_refused_without_being_run(tmp_path):
    marker = tmp_path / "ran"

    class Evil:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    path = tmp_path / "train.pkl.gz"
    with gzip.open(path, "wb") as f:
        pickle.dump({"prefs": Evil()}, f)
    with pytest.raises(PrefDBFormatError, match="pickle"):
        PrefDB.load(str(path))
    assert not marker.exists()


@pytest.mark.parametrize("tamper", ["truncate", "flip", "not_gzip", "label"])
def test_tampered_files_get_a_clear_error(tmp_path, tamper):
    db = PrefDB(10)
    db.append(seg(5), seg(6), 1.0)  # rewards 5..9: the label is the only 1.0 in the file
    path = str(tmp_path / "train.pkl.gz")
    db.save(path)
    data = bytearray(open(path, "rb").read())
    if tamper == "truncate":
        data = data[: len(data) // 2]
    elif tamper == "flip":
        data[len(data) // 2] ^= 0xFF
    elif tamper == "not_gzip":
        data = bytearray(b"hello world")
    elif tamper == "label":
        raw = bytearray(gzip.decompress(bytes(data)))
        i = raw.find(np.float64(1.0).tobytes())  # the only label
        raw[i:i + 8] = np.float64(0.7).tobytes()
        data = bytearray(gzip.compress(bytes(raw)))
    open(path, "wb").write(bytes(data))
    with pytest.raises(PrefDBFormatError, match="not a valid drlhp preference database"):
        PrefDB.load(path)


def test_buffer_splits_exactly_and_saves_both_files(tmp_path):
    buf = PrefBuffer(max_labels=100, val_fraction=0.2)
    for i in range(50):
        buf.add(seg(i), seg(i + 1), 1.0)
    assert (len(buf.train_db), len(buf.val_db)) == (40, 10)
    paths = buf.save(str(tmp_path))
    assert sorted(os.path.basename(p) for p in paths) == ["train.pkl.gz", "val.pkl.gz"]
    loaded = PrefBuffer.load(str(tmp_path), max_labels=100, val_fraction=0.2)
    assert (len(loaded.train_db), len(loaded.val_db)) == (40, 10)


def test_buffer_load_names_the_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="train.pkl.gz"):
        PrefBuffer.load(str(tmp_path), 10, 0.2)


def test_clips_are_held_compressed_and_unpack_exactly():
    from drlhp.clips.clip import Clip, PackedClip

    frames = np.zeros((25, 84, 84, 4), np.uint8)
    frames[:, 40:44, 10:14] = np.arange(25)[:, None, None, None]  # a moving-ish blob on a plain screen
    seg = Clip(7, frames, np.arange(25.0), episode=3, env_index=2)
    packed = PackedClip(seg)
    assert np.array_equal(packed.frames, frames) and packed.frames.dtype == np.uint8
    assert (packed.clip_id, packed.episode, packed.env_index, packed.true_return) == (7, 3, 2, seg.true_return)
    assert packed.nbytes < frames.nbytes / 50
    db = PrefDB(10)
    db.append(seg, Clip(8, frames[::-1].copy(), np.zeros(25)), 1.0)
    assert isinstance(db.segments[7], PackedClip)
    frames_a, frames_b, labels = db.batch(np.array([0]))
    assert np.array_equal(frames_a[0], frames) and np.array_equal(frames_b[0], frames[::-1]) and labels[0] == 1.0


def answered_db():
    """Six labels of the run (numbers 10-15) by two people, three of them answered a second time."""
    db = PrefDB(100)
    for k in range(6):
        db.append(seg(k), seg(k + 1), [1.0, 0.0, 0.5][k % 3], ["web:al", "web:bo"][k % 2], 1.5 + k, seq=10 + k)
    assert db.set_second(10, "web:bo", 1.0, 0.75)  # agrees
    assert db.set_second(11, "web:al", 1.0)  # disagrees: the pair trains on a tie
    assert db.set_second(14, "web:cy", 1.0, 2.0)  # disagrees
    return db


def test_a_second_answer_sets_the_training_label_and_its_retraction_restores_the_first():
    db = answered_db()
    assert [p[2] for p in db.prefs] == [1.0, 0.5, 0.5, 1.0, 0.5, 0.5]
    assert list(db.first_labels) == [1.0, 0.0, 0.5, 1.0, 0.0, 0.5]
    assert db.agreement.counts == {("web:al", "web:bo"): [2, 1], ("web:al", "web:cy"): [1, 0]}
    assert not db.set_second(12, "web:al", 1.0)  # their own label: no second opinion
    assert not db.set_second(99, "web:bo", 1.0)  # no such label
    assert not db.remove_second(11, "web:bo")  # web:bo gave the label, not the second answer
    assert db.remove_second(11, "web:al")
    assert db.prefs[1][2] == 0.0 and db.second_labellers[1] == "" and np.isnan(db.second_labels[1])
    assert db.agreement.counts == {("web:al", "web:bo"): [1, 1], ("web:al", "web:cy"): [1, 0]}
    assert not db.remove_second(11, "web:al")  # already gone
    assert db.set_second(10, "web:cy", 0.5)  # a later second answer replaces the earlier one
    assert db.prefs[0][2] == 0.5 and db.agreement.counts == {("web:al", "web:cy"): [2, 0]}


def test_removing_a_pair_releases_its_clips_and_keeps_the_columns_in_step():
    db = answered_db()
    assert db.remove(11) and not db.remove(11) and not db.remove(-1)
    assert list(db.seqs) == [10, 12, 13, 14, 15] and 1 in db.segments  # clip 1 is in pair 10 still
    assert db.remove(10)
    assert 0 not in db.segments and 1 not in db.segments and 2 in db.segments
    assert list(db.labellers) == ["web:al", "web:bo", "web:al", "web:bo"]
    assert list(db.second_labellers) == ["", "", "web:cy", ""]
    assert db.agreement.counts == {("web:al", "web:cy"): [1, 0]}  # the removed pairs' second answers no longer count
    assert all(len(column) == 4 for column in db._columns())


def test_eviction_keeps_every_column_in_step():
    db = PrefDB(maxlen=3)
    for k in range(5):
        db.append(seg(k), seg(k + 1), 1.0, f"p{k}", float(k), seq=k)
        db.set_second(k, "q", 0.0 if k % 2 else 1.0, 10.0 + k)
    assert list(db.seqs) == [2, 3, 4] and list(db.labellers) == ["p2", "p3", "p4"]
    assert list(db.answer_seconds) == [2.0, 3.0, 4.0] and list(db.second_seconds) == [12.0, 13.0, 14.0]
    assert [p[:2] for p in db.prefs] == [(2, 3), (3, 4), (4, 5)] and [p[2] for p in db.prefs] == [1.0, 0.5, 1.0]
    assert list(db.second_labels) == [1.0, 0.0, 1.0] and set(db.segments) == {2, 3, 4, 5}
    assert db.agreement.n_pairs == 3 and db.agreement.rate() == 2 / 3  # evicted pairs no longer count


def test_version_4_round_trips_numbers_second_answers_instructions_and_retracted(tmp_path):
    db = answered_db()
    path = str(tmp_path / "train.pkl.gz")
    db.save(path, n_labels=16, val_fraction=0.2, instructions="Which clip is better?", retracted={7, 3})
    loaded = PrefDB.load(path)
    for column in ("prefs", "labellers", "seqs", "first_labels", "second_labellers"):
        assert list(getattr(loaded, column)) == list(getattr(db, column)), column
    for column in ("answer_seconds", "second_labels", "second_seconds"):
        np.testing.assert_array_equal(getattr(loaded, column), getattr(db, column))
    assert loaded.agreement == db.agreement
    assert (loaded.instructions_when_saved, loaded.retracted_when_saved) == ("Which clip is better?", [3, 7])
    assert loaded.n_labels_when_saved == 16


def test_a_buffer_saves_and_loads_its_retractions_and_instructions(tmp_path):
    buf = PrefBuffer(max_labels=100, val_fraction=0.2)
    buf.instructions = "Which clip is better?"
    for i in range(10):
        buf.add(seg(i), seg(i + 1), 1.0, labeller="web:al")
    assert buf.add_second(5, "web:bo", 0.0) and buf.retract(8, "web:al") and buf.retract(5, "web:bo")
    assert buf.add_second(6, "web:bo", 1.0)
    buf.save(str(tmp_path))
    loaded = PrefBuffer.load(str(tmp_path), max_labels=100, val_fraction=0.2)
    assert (loaded.retracted, loaded.n_received, loaded.n_labels) == ({8}, 10, 9)
    assert loaded.instructions == "Which clip is better?" and loaded.agreement.counts == {("web:al", "web:bo"): [1, 1]}
    assert sorted([*loaded.train_db.seqs, *loaded.val_db.seqs]) == [0, 1, 2, 3, 4, 5, 6, 7, 9]


def test_only_the_labels_labeller_retracts_it_and_only_once():
    buf = PrefBuffer(max_labels=100, val_fraction=0.2)
    for i in range(5):
        buf.add(seg(i), seg(i + 1), 1.0, labeller="web:al")
    assert buf.add_second(3, "web:bo", 0.0)
    assert not buf.retract(2, "web:bo")  # another labeller's label
    assert not buf.retract(7, "web:al") and not buf.retract(-1, "web:al")  # unknown
    assert buf.retract(3, "web:bo")  # their second answer: only it goes
    assert buf.db_for(3).prefs[buf.db_for(3).index_of(3)][2] == 1.0 and buf.retracted == set()
    assert buf.retract(3, "web:al") and buf.retracted == {3} and buf.n_labels == 4
    assert not buf.retract(3, "web:al")  # already retracted
    assert not buf.add_second(3, "web:cy", 1.0)  # the label is gone
    assert buf.retracted == {3} and buf.n_received == 5 and len(buf.train_db) + len(buf.val_db) == 4
    buf.add(seg(9), seg(10), 0.0, labeller="web:al")
    assert buf.n_received == 6  # numbers are never reused


@pytest.mark.parametrize("version", [1, 2, 3])
def test_a_file_of_an_earlier_format_is_refused_naming_how_to_convert_it(tmp_path, version):
    path = str(tmp_path / "train.pkl.gz")
    header = {"format": "drlhp-prefdb", "version": version, "maxlen": 10, "n_segments": 0, "n_prefs": 0}
    with gzip.open(path, "wb") as f:
        np.lib.format.write_array(f, np.frombuffer(json.dumps(header).encode(), np.uint8), allow_pickle=False)
    with pytest.raises(PrefDBFormatError, match=f"earlier, unreleased drlhp \\(format version {version}\\).*"
                       f"commit {LAST_TO_CONVERT}.*PrefDB.load\\(path\\).save\\(path\\)"):
        PrefDB.load(path)
    header["version"] = 5
    with gzip.open(path, "wb") as f:
        np.lib.format.write_array(f, np.frombuffer(json.dumps(header).encode(), np.uint8), allow_pickle=False)
    with pytest.raises(PrefDBFormatError, match="format version 5, of a newer drlhp"):
        PrefDB.load(path)


def test_a_file_whose_labels_disagree_with_its_answers_is_refused(tmp_path):
    db = PrefDB(10)
    db.append(seg(1), seg(2), 1.0, "web:al", seq=0)
    db.set_second(0, "web:bo", 0.0)  # the label becomes 0.5
    path = str(tmp_path / "train.pkl.gz")
    db.save(path)
    raw = bytearray(gzip.decompress(open(path, "rb").read()))
    i = raw.find(np.float64(0.5).tobytes())  # the pair's training label, the first 0.5 in the file
    raw[i:i + 8] = np.float64(1.0).tobytes()
    open(path, "wb").write(gzip.compress(bytes(raw)))
    with pytest.raises(PrefDBFormatError, match="labels disagree with the answers"):
        PrefDB.load(path)
