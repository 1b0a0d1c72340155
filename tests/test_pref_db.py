import gzip
import os
import pickle

import numpy as np
import pytest

from drlhp.clips.segments import Segment
from drlhp.pref_db import PrefBuffer, PrefDB, PrefDBFormatError


def seg(i, length=4, shape=(5, 5, 1)):
    return Segment(i, np.full((length, *shape), i % 256, np.uint8), np.arange(length, dtype=np.float64) + i)


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
    buf = PrefBuffer(max_prefs=100, val_fraction=0.2)
    for i in range(50):
        buf.add(seg(i), seg(i + 1), 1.0)
    assert (len(buf.train_db), len(buf.val_db)) == (40, 10)
    paths = buf.save(str(tmp_path))
    assert sorted(os.path.basename(p) for p in paths) == ["train.pkl.gz", "val.pkl.gz"]
    loaded = PrefBuffer.load(str(tmp_path), max_prefs=100, val_fraction=0.2)
    assert (len(loaded.train_db), len(loaded.val_db)) == (40, 10)


def test_buffer_load_names_the_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="train.pkl.gz"):
        PrefBuffer.load(str(tmp_path), 10, 0.2)


def test_clips_are_held_compressed_and_unpack_exactly():
    from drlhp.clips.segments import PackedSegment, Segment

    frames = np.zeros((25, 84, 84, 4), np.uint8)
    frames[:, 40:44, 10:14] = np.arange(25)[:, None, None, None]  # a moving-ish blob on a plain screen
    seg = Segment(7, frames, np.arange(25.0), episode=3, env_index=2)
    packed = PackedSegment(seg)
    assert np.array_equal(packed.frames, frames) and packed.frames.dtype == np.uint8
    assert (packed.seg_id, packed.episode, packed.env_index, packed.true_return) == (7, 3, 2, seg.true_return)
    assert packed.nbytes < frames.nbytes / 50
    db = PrefDB(10)
    db.append(seg, Segment(8, frames[::-1].copy(), np.zeros(25)), 1.0)
    assert isinstance(db.segments[7], PackedSegment)
    frames_a, frames_b, labels = db.batch(np.array([0]))
    assert np.array_equal(frames_a[0], frames) and np.array_equal(frames_b[0], frames[::-1]) and labels[0] == 1.0


def test_files_of_format_version_1_still_load(tmp_path):
    """Version 1 (before clips were stored packed): raw frames in a gzip level-1 stream."""
    import json

    segs = [seg(i) for i in range(3)]
    path = str(tmp_path / "train.pkl.gz")
    header = {"format": "drlhp-prefdb", "version": 1, "maxlen": 10, "n_segments": 3, "n_prefs": 2,
              "segment_shape": [4, 5, 5, 1], "frame_dtype": "|u1"}
    with gzip.open(path, "wb") as f:
        for array in [np.frombuffer(json.dumps(header).encode(), np.uint8), np.arange(3),
                      np.stack([s.rewards for s in segs]), np.array([[0, 1], [2, 0]]), np.array([1.0, 0.5])]:
            np.lib.format.write_array(f, array, allow_pickle=False)
        for s in segs:
            np.lib.format.write_array(f, s.frames, allow_pickle=False)
    db = PrefDB.load(path)
    assert list(db.prefs) == [(0, 1, 1.0), (2, 0, 0.5)] and db.n_labels_when_saved is None
    assert list(db.labellers) == ["", ""] and np.isnan(db.answer_seconds).all()  # not recorded then
    assert all(np.array_equal(db.segments[s.seg_id].frames, s.frames) for s in segs)
