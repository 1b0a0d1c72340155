"""Preference databases: labelled pairs of segments, their train/validation split, and files.

File format (``train.pkl.gz`` / ``val.pkl.gz``, names kept from the original
drlhp): a gzip stream of consecutive NumPy ``.npy`` records -- a JSON header,
the segment ids and rewards, the preferences, then each segment's frames. It is
read with ``allow_pickle=False``, so loading a file cannot run code from it.
Version 2 stores each clip's frames as held in memory, zlib-compressed (a uint8
record; the gzip layer does not compress again), so a snapshot of a full Pong
database is written in a fraction of a second; version 3 adds who gave each
label (a fixed-width text array) and how long the answer took (seconds, NaN where
not timed) after the labels. Versions 1 (raw frames, gzip
level 1) and 2 are still read.
The header's ``n_labels`` is how many labels the run had when the file was
written: the journal's labels from there on are replayed on top of it
(``drlhp.labels.journal``). Its ``val_fraction`` (absent in files written before it was recorded)
is the run's split, so a reader that does not know the run's settings routes the journal's labels
where the run did.
"""
from __future__ import annotations

import contextlib
import gzip
import json
import math
import os
import zlib
from collections import deque
from collections.abc import Iterator

import numpy as np

from drlhp.clips.segments import PackedSegment, Segment, pack
from drlhp.errors import ConfigError, NoLabelsError, PrefDBFormatError
from drlhp.labels.journal import read_journal
from drlhp.storage.files import atomic_write
from drlhp.storage.layout import LogDir

FORMAT_NAME = "drlhp-prefdb"
FORMAT_VERSION = 3
READABLE_VERSIONS = (1, 2, 3)
#: The share of labels held out for validation unless a run says otherwise (``PreferenceConfig.val_fraction``).
DEFAULT_VAL_FRACTION = 0.2


class PrefDB:
    """Labelled segment pairs, oldest evicted first once ``maxlen`` pairs are held.

    A segment is stored once however many pairs it appears in (pairs hold ids;
    segments are reference-counted and dropped with their last pair), with its
    frames compressed (``PackedSegment``): a minibatch unpacks only its own clips.
    """

    def __init__(self, maxlen: int) -> None:
        if maxlen < 1:
            raise ConfigError(f"maxlen must be >= 1, got {maxlen}")
        self.maxlen = maxlen
        self.segments: dict[int, PackedSegment] = {}
        self._refs: dict[int, int] = {}
        self.prefs: deque[tuple[int, int, float]] = deque()
        self.labellers: deque[str] = deque()  # who gave each label ("" where not recorded)
        self.answer_seconds: deque[float] = deque()  # how long each answer took (nan: not timed)
        #: Set by ``load``: the run's label count when the file was saved (None: not recorded).
        self.n_labels_when_saved: int | None = None
        self.val_fraction_when_saved: float | None = None  # the run's split, from the file's header

    def __len__(self) -> int:
        return len(self.prefs)

    def append(self, a: Segment | PackedSegment, b: Segment | PackedSegment, label: float, labeller: str = "",
               seconds: float | None = None) -> None:
        """Add one labelled pair (label: P(a preferred)), evicting the oldest pair if full."""
        for seg in (a, b):
            if seg.seg_id not in self.segments:
                self.segments[seg.seg_id] = pack(seg)
            self._refs[seg.seg_id] = self._refs.get(seg.seg_id, 0) + 1
        self.prefs.append((a.seg_id, b.seg_id, float(label)))
        self.labellers.append(labeller)
        self.answer_seconds.append(math.nan if seconds is None else float(seconds))
        while len(self.prefs) > self.maxlen:
            self.labellers.popleft()
            self.answer_seconds.popleft()
            for seg_id in self.prefs.popleft()[:2]:
                self._refs[seg_id] -= 1
                if self._refs[seg_id] == 0:
                    del self._refs[seg_id], self.segments[seg_id]

    def batch(self, indices: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Frames of both sides ``(n, length, *frame_shape)`` and labels ``(n,)`` of the given pairs."""
        pairs = [self.prefs[i] for i in indices]
        frames_a = np.stack([self.segments[a].frames for a, _, _ in pairs])
        frames_b = np.stack([self.segments[b].frames for _, b, _ in pairs])
        labels = np.array([label for _, _, label in pairs], dtype=np.float32)
        return frames_a, frames_b, labels

    # -- files ----------------------------------------------------------------
    def save(self, path: str, n_labels: int | None = None, val_fraction: float | None = None) -> None:
        """Write atomically to ``path`` (see the module docstring); ``n_labels``: the run's label count now;
        ``val_fraction``: the run's validation split."""
        ids = sorted(self.segments)
        first = self.segments[ids[0]] if ids else None
        header = {
            "format": FORMAT_NAME,
            "version": FORMAT_VERSION,
            "maxlen": self.maxlen,
            "n_segments": len(ids),
            "n_prefs": len(self.prefs),
            "segment_shape": list(first.packed_frames[1]) if first else None,
            "frame_dtype": first.packed_frames[2].str if first else None,
            "n_labels": n_labels,
            "val_fraction": val_fraction,
        }
        prefs = np.array(self.prefs, dtype=np.float64).reshape(-1, 3)
        with atomic_write(path) as raw, gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=0) as f:
            _write(f, np.frombuffer(json.dumps(header).encode(), dtype=np.uint8))
            _write(f, np.array(ids, dtype=np.int64))
            _write(f, np.stack([self.segments[i].rewards for i in ids]) if ids else np.zeros((0, 0)))
            _write(f, prefs[:, :2].astype(np.int64))
            _write(f, prefs[:, 2].copy())
            _write(f, np.array(list(self.labellers) or [""], dtype=str)[:len(self.prefs)])
            _write(f, np.array(self.answer_seconds, dtype=np.float64))
            for i in ids:
                _write(f, np.frombuffer(self.segments[i].packed_frames[0], dtype=np.uint8))

    @classmethod
    def load(cls, path: str, maxlen: int | None = None) -> PrefDB:
        """Read a file written by ``save``; raises ``PrefDBFormatError`` naming what is wrong."""
        with _reading(path) as f:
            return cls._read(f, path, maxlen)

    @classmethod
    def _read(cls, f: gzip.GzipFile, path: str, maxlen: int | None) -> PrefDB:
        header = _read_header(f, path)
        ids, rewards, pair_ids, labels = _read(f), _read(f), _read(f), _read(f)
        n_seg, n_prefs = int(header["n_segments"]), int(header["n_prefs"])
        labellers = _read(f) if header["version"] >= 3 else np.full(n_prefs, "")
        seconds = _read(f) if header["version"] >= 3 else np.full(n_prefs, np.nan)
        if ids.shape != (n_seg,) or pair_ids.shape != (n_prefs, 2) or labels.shape != (n_prefs,):
            raise _format_error(path, "array shapes disagree with the header")
        if labellers.shape != (n_prefs,) or labellers.dtype.kind != "U":
            raise _format_error(path, "who gave the labels is not one text per label")
        if seconds.shape != (n_prefs,) or seconds.dtype.kind != "f":
            raise _format_error(path, "the answers' durations are not one number per label")
        if n_seg and rewards.shape != (n_seg, header["segment_shape"][0]):
            raise _format_error(path, "rewards do not match the segment length")
        if not np.all(np.isin(labels, (0.0, 0.5, 1.0))):
            raise _format_error(path, "labels must be 0, 0.5 or 1")
        segments: dict[int, PackedSegment] = {}
        shape = tuple(header["segment_shape"] or ())
        dtype = np.dtype(header["frame_dtype"] or "u1")
        if dtype.kind not in "biuf":
            raise _format_error(path, f"frames of dtype {dtype}")
        for k, seg_id in enumerate(ids.tolist()):
            record, seg_rewards = _read(f), rewards[k].astype(np.float64)
            if header["version"] == 1:
                if record.shape != shape or record.dtype != dtype:
                    raise _format_error(path, f"segment {seg_id} has shape {record.shape}, dtype {record.dtype}")
                segments[seg_id] = PackedSegment(Segment(seg_id, record, seg_rewards))
                continue
            data = record.tobytes()
            if record.dtype != np.uint8 or len(zlib.decompress(data)) != int(np.prod(shape)) * dtype.itemsize:
                raise _format_error(path, f"segment {seg_id}'s frames do not unpack to shape {shape}, dtype {dtype}")
            segments[seg_id] = PackedSegment.from_packed(seg_id, data, shape, dtype, seg_rewards)
        if f.read(1):
            raise _format_error(path, "unexpected data after the last segment")
        db = cls(maxlen if maxlen is not None else int(header["maxlen"]))
        for (a, b), label, labeller, secs in zip(pair_ids.tolist(), labels.tolist(), labellers.tolist(),
                                                 seconds.tolist()):
            if a not in segments or b not in segments:
                raise _format_error(path, f"a preference refers to missing segment {a} or {b}")
            db.append(segments[a], segments[b], label, labeller, secs)
        db.n_labels_when_saved = None if header.get("n_labels") is None else int(header["n_labels"])
        db.val_fraction_when_saved = None if header.get("val_fraction") is None else float(header["val_fraction"])
        return db


def _write(f: gzip.GzipFile, array: np.ndarray) -> None:
    np.lib.format.write_array(f, np.ascontiguousarray(array), allow_pickle=False)


def _read(f: gzip.GzipFile) -> np.ndarray:
    return np.lib.format.read_array(f, allow_pickle=False)


@contextlib.contextmanager
def _reading(path: str) -> Iterator[gzip.GzipFile]:
    """The file opened for reading; whatever is wrong with its contents raises ``PrefDBFormatError``."""
    try:
        with gzip.open(path, "rb") as f:
            yield f
    except (PrefDBFormatError, FileNotFoundError):
        raise
    except (OSError, EOFError, zlib.error, ValueError, KeyError, TypeError, json.JSONDecodeError) as e:
        raise _format_error(path, f"{type(e).__name__}: {e}") from e


def _read_header(f: gzip.GzipFile, path: str) -> dict:
    if f.peek(1)[:1] == b"\x80":
        raise _format_error(path, "it is a Python pickle (the original TensorFlow drlhp's format?). Pickles are "
                                  "not loaded because unpickling can run code from the file")
    header = json.loads(_read(f).tobytes().decode())
    if not isinstance(header, dict) or header.get("format") != FORMAT_NAME or \
            header.get("version") not in READABLE_VERSIONS:
        raise _format_error(path, f"unknown header {header!r}")
    return header


def _format_error(path: str, why: str) -> PrefDBFormatError:
    return PrefDBFormatError(
        f"{path} is not a valid drlhp preference database: {why}. "
        "Use a file written by HumanPreferencesEnvWrapper.save_prefs() (or PrefDB.save)."
    )


class PrefBuffer:
    """Routes incoming preferences to a training and a validation ``PrefDB``.

    Exactly ``val_fraction`` of preferences go to validation, spread evenly
    (with 0.2, every fifth), so even a small database has a validation set. Where
    a label goes depends only on its sequence number in the run, so replaying a
    journal puts every label where it went the first time.
    """

    def __init__(self, max_prefs: int, val_fraction: float) -> None:
        if not 0.0 <= val_fraction < 1.0:
            raise ConfigError(f"val_fraction must be in [0, 1), got {val_fraction}")
        n_val = int(round(max_prefs * val_fraction))
        self.train_db = PrefDB(max(1, max_prefs - n_val))
        self.val_db = PrefDB(max(1, n_val))
        self.val_fraction = val_fraction
        self.n_received = 0  # labels of the run so far: the next label's sequence number

    def db_for(self, seq: int) -> PrefDB:
        """The database the run's ``seq``-th label belongs to."""
        to_val = int((seq + 1) * self.val_fraction) > int(seq * self.val_fraction)
        return self.val_db if to_val else self.train_db

    def add(self, a: Segment | PackedSegment, b: Segment | PackedSegment, label: float, seq: int | None = None,
            labeller: str = "", seconds: float | None = None) -> None:
        """Add the run's seq-th label (None: the next) to the database its number routes it to."""
        seq = self.n_received if seq is None else seq
        self.db_for(seq).append(a, b, label, labeller, seconds)
        self.n_received = max(self.n_received, seq + 1)

    @property
    def segment_ids(self) -> set[int]:
        """Ids of every clip held, in training and validation pairs."""
        return set(self.train_db.segments) | set(self.val_db.segments)

    @property
    def nbytes(self) -> int:
        """Bytes of clip data held in memory, compressed (a clip in several pairs, or in both sets, counts once)."""
        segments = {**self.train_db.segments, **self.val_db.segments}
        return sum(s.nbytes for s in segments.values())

    def save(self, directory: str) -> list[str]:
        """Write ``train.pkl.gz`` and ``val.pkl.gz`` into ``directory`` (atomically); returns their paths."""
        paths = list(LogDir(directory).snapshot)
        self.train_db.save(paths[0], self.n_received, self.val_fraction)
        self.val_db.save(paths[1], self.n_received, self.val_fraction)
        return paths

    @classmethod
    def load(cls, directory: str, max_prefs: int, val_fraction: float) -> PrefBuffer:
        """The labels in ``directory``: its snapshot (train.pkl.gz, val.pkl.gz) plus its label journal."""
        train_path, val_path = LogDir(directory).snapshot
        has_snapshot = [os.path.exists(p) for p in (train_path, val_path)]
        if not all(has_snapshot) and (any(has_snapshot) or not LogDir(directory).journal_files()):
            missing = [os.path.basename(p) for p, ok in zip((train_path, val_path), has_snapshot) if not ok]
            raise NoLabelsError(
                f"{directory!r} has no {' or '.join(missing)}{'' if any(has_snapshot) else ' and no label journal'}. "
                "Point prefs_dir at the log_dir of a run that collected labels (where save_prefs() wrote "
                "train.pkl.gz and val.pkl.gz).")
        buffer = cls(max_prefs, val_fraction)
        covered = {id(buffer.train_db): 0, id(buffer.val_db): 0}  # labels each snapshot file holds
        if all(has_snapshot):
            buffer.train_db = PrefDB.load(train_path, maxlen=buffer.train_db.maxlen)
            buffer.val_db = PrefDB.load(val_path, maxlen=buffer.val_db.maxlen)
            n_old_format = len(buffer.train_db) + len(buffer.val_db)
            covered = {id(db): n_old_format if db.n_labels_when_saved is None else db.n_labels_when_saved
                       for db in (buffer.train_db, buffer.val_db)}
            buffer.n_received = max(covered.values())
        for rec in read_journal(directory):
            # Both files are written at each snapshot, but a crash between the two leaves one behind.
            if rec.seq >= covered[id(buffer.db_for(rec.seq))]:
                buffer.add(rec.a, rec.b, rec.label, rec.seq, rec.labeller, rec.seconds)
        return buffer

    @classmethod
    def load_all(cls, directory: str, val_fraction: float | None = None) -> PrefBuffer:
        """Every label in ``directory``, none evicted: for reading a database, not for training on it.

        The journal's labels go where the run put them: by ``val_fraction``, else the split its snapshot
        records, else (a run with no snapshot yet, or one written before the split was recorded)
        ``DEFAULT_VAL_FRACTION``, ``PreferenceConfig``'s default."""
        if val_fraction is None:
            val_fraction = recorded_val_fraction(directory)
        return cls.load(directory, max_prefs=2 ** 40,
                        val_fraction=DEFAULT_VAL_FRACTION if val_fraction is None else val_fraction)


def recorded_val_fraction(directory: str) -> float | None:
    """The validation split the run in ``directory`` recorded in its snapshot's header (None: not recorded)."""
    train_path, _ = LogDir(directory).snapshot
    if not os.path.exists(train_path):
        return None
    with _reading(train_path) as f:
        header = _read_header(f, train_path)
    return None if header.get("val_fraction") is None else float(header["val_fraction"])


def clip_format(directory: str) -> tuple[tuple[int, ...], np.dtype]:
    """Shape ``(length, *frame_shape)`` and dtype of the clips labelled in ``directory``, read cheaply."""
    train_path, _ = LogDir(directory).snapshot
    if os.path.exists(train_path):
        with _reading(train_path) as f:
            header = _read_header(f, train_path)
        if header.get("segment_shape"):
            return tuple(header["segment_shape"]), np.dtype(header["frame_dtype"])
    for rec in read_journal(directory):
        return rec.a.packed_frames[1], rec.a.packed_frames[2]
    raise NoLabelsError(f"{directory!r} holds no labelled clips (no train.pkl.gz with pairs, no label journal). "
                            "Point it at the log_dir of a run that collected labels.")
