"""Preference databases: labelled pairs of segments, their train/validation split, and files.

File format (``train.pkl.gz`` / ``val.pkl.gz``, names kept from the original
drlhp): a gzip stream of consecutive NumPy ``.npy`` records -- a JSON header,
the segment ids and rewards, the preferences, then each segment's frames. It is
read with ``allow_pickle=False``, so loading a file cannot run code from it.
"""
from __future__ import annotations

import gzip
import json
import os
import zlib
from collections import deque
from typing import BinaryIO, Dict, List, Optional, Tuple

import numpy as np

from drlhp.files import atomic_write
from drlhp.segments import PackedSegment, Segment, pack

FORMAT_NAME = "drlhp-prefdb"
FORMAT_VERSION = 1
TRAIN_FILE = "train.pkl.gz"
VAL_FILE = "val.pkl.gz"


class PrefDBFormatError(ValueError):
    """A preference file is corrupt, tampered with, or not a drlhp preference database."""


class PrefDB:
    """Labelled segment pairs, oldest evicted first once ``maxlen`` pairs are held.

    A segment is stored once however many pairs it appears in (pairs hold ids;
    segments are reference-counted and dropped with their last pair), with its
    frames compressed (``PackedSegment``): a minibatch unpacks only its own clips.
    """

    def __init__(self, maxlen: int) -> None:
        if maxlen < 1:
            raise ValueError(f"maxlen must be >= 1, got {maxlen}")
        self.maxlen = maxlen
        self.segments: Dict[int, PackedSegment] = {}
        self._refs: Dict[int, int] = {}
        self.prefs: deque[Tuple[int, int, float]] = deque()

    def __len__(self) -> int:
        return len(self.prefs)

    def append(self, a: Segment, b: Segment, label: float) -> None:
        for seg in (a, b):
            if seg.seg_id not in self.segments:
                self.segments[seg.seg_id] = pack(seg)
            self._refs[seg.seg_id] = self._refs.get(seg.seg_id, 0) + 1
        self.prefs.append((a.seg_id, b.seg_id, float(label)))
        while len(self.prefs) > self.maxlen:
            for seg_id in self.prefs.popleft()[:2]:
                self._refs[seg_id] -= 1
                if self._refs[seg_id] == 0:
                    del self._refs[seg_id], self.segments[seg_id]

    def batch(self, indices: np.ndarray) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Frames of both sides ``(n, length, *frame_shape)`` and labels ``(n,)`` of the given pairs."""
        pairs = [self.prefs[i] for i in indices]
        frames_a = np.stack([self.segments[a].frames for a, _, _ in pairs])
        frames_b = np.stack([self.segments[b].frames for _, b, _ in pairs])
        labels = np.array([label for _, _, label in pairs], dtype=np.float32)
        return frames_a, frames_b, labels

    # -- files ----------------------------------------------------------------
    def save(self, path: str) -> None:
        """Write atomically to ``path`` (see the module docstring for the format)."""
        ids = sorted(self.segments)
        first = self.segments[ids[0]] if ids else None
        header = {
            "format": FORMAT_NAME,
            "version": FORMAT_VERSION,
            "maxlen": self.maxlen,
            "n_segments": len(ids),
            "n_prefs": len(self.prefs),
            "segment_shape": list(first.frames.shape) if first else None,
            "frame_dtype": first.frames.dtype.str if first else None,
        }
        prefs = np.array(self.prefs, dtype=np.float64).reshape(-1, 3)
        with atomic_write(path) as raw, gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=1) as f:
            _write(f, np.frombuffer(json.dumps(header).encode(), dtype=np.uint8))
            _write(f, np.array(ids, dtype=np.int64))
            _write(f, np.stack([self.segments[i].rewards for i in ids]) if ids else np.zeros((0, 0)))
            _write(f, prefs[:, :2].astype(np.int64))
            _write(f, prefs[:, 2].copy())
            for i in ids:
                _write(f, self.segments[i].frames)

    @classmethod
    def load(cls, path: str, maxlen: Optional[int] = None) -> "PrefDB":
        """Read a file written by ``save``; raises ``PrefDBFormatError`` naming what is wrong."""
        try:
            with gzip.open(path, "rb") as f:
                return cls._read(f, path, maxlen)
        except PrefDBFormatError:
            raise
        except (OSError, EOFError, zlib.error, ValueError, KeyError, TypeError, json.JSONDecodeError) as e:
            if isinstance(e, FileNotFoundError):
                raise
            raise _format_error(path, f"{type(e).__name__}: {e}") from e

    @classmethod
    def _read(cls, f: BinaryIO, path: str, maxlen: Optional[int]) -> "PrefDB":
        if f.peek(1)[:1] == b"\x80":
            raise _format_error(
                path,
                "it is a Python pickle (the original TensorFlow drlhp's format?). Pickles are "
                "not loaded because unpickling can run code from the file",
            )
        header = json.loads(_read(f).tobytes().decode())
        if header.get("format") != FORMAT_NAME or header.get("version") != FORMAT_VERSION:
            raise _format_error(path, f"unknown header {header!r}")
        ids, rewards, pair_ids, labels = _read(f), _read(f), _read(f), _read(f)
        n_seg, n_prefs = int(header["n_segments"]), int(header["n_prefs"])
        if ids.shape != (n_seg,) or pair_ids.shape != (n_prefs, 2) or labels.shape != (n_prefs,):
            raise _format_error(path, "array shapes disagree with the header")
        if n_seg and rewards.shape != (n_seg, header["segment_shape"][0]):
            raise _format_error(path, "rewards do not match the segment length")
        if not np.all(np.isin(labels, (0.0, 0.5, 1.0))):
            raise _format_error(path, "labels must be 0, 0.5 or 1")
        segments: Dict[int, PackedSegment] = {}
        for k, seg_id in enumerate(ids.tolist()):
            frames = _read(f)
            if list(frames.shape) != header["segment_shape"] or frames.dtype.str != header["frame_dtype"]:
                raise _format_error(path, f"segment {seg_id} has shape {frames.shape}, dtype {frames.dtype}")
            segments[seg_id] = PackedSegment(Segment(seg_id, frames, rewards[k].astype(np.float64)))
        if f.read(1):
            raise _format_error(path, "unexpected data after the last segment")
        db = cls(maxlen if maxlen is not None else int(header["maxlen"]))
        for (a, b), label in zip(pair_ids.tolist(), labels.tolist()):
            if a not in segments or b not in segments:
                raise _format_error(path, f"a preference refers to missing segment {a} or {b}")
            db.append(segments[a], segments[b], label)
        return db


def _write(f: BinaryIO, array: np.ndarray) -> None:
    np.lib.format.write_array(f, np.ascontiguousarray(array), allow_pickle=False)


def _read(f: BinaryIO) -> np.ndarray:
    return np.lib.format.read_array(f, allow_pickle=False)


def _format_error(path: str, why: str) -> PrefDBFormatError:
    return PrefDBFormatError(
        f"{path} is not a valid drlhp preference database: {why}. "
        "Use a file written by HumanPreferencesEnvWrapper.save_prefs() (or PrefDB.save)."
    )


class PrefBuffer:
    """Routes incoming preferences to a training and a validation ``PrefDB``.

    Exactly ``val_fraction`` of preferences go to validation, spread evenly
    (with 0.2, every fifth), so even a small database has a validation set.
    """

    def __init__(self, max_prefs: int, val_fraction: float,
                 train_db: Optional[PrefDB] = None, val_db: Optional[PrefDB] = None) -> None:
        if not 0.0 <= val_fraction < 1.0:
            raise ValueError(f"val_fraction must be in [0, 1), got {val_fraction}")
        n_val = int(round(max_prefs * val_fraction))
        self.train_db = train_db or PrefDB(max(1, max_prefs - n_val))
        self.val_db = val_db or PrefDB(max(1, n_val))
        self.val_fraction = val_fraction
        self.n_received = 0

    def add(self, a: Segment, b: Segment, label: float) -> None:
        n = self.n_received
        to_val = int((n + 1) * self.val_fraction) > int(n * self.val_fraction)
        (self.val_db if to_val else self.train_db).append(a, b, label)
        self.n_received += 1

    @property
    def nbytes(self) -> int:
        """Bytes of clip data held in memory, compressed (a clip in several pairs, or in both sets, counts once)."""
        segments = {**self.train_db.segments, **self.val_db.segments}
        return sum(s.nbytes for s in segments.values())

    def save(self, directory: str) -> List[str]:
        paths = [os.path.join(directory, TRAIN_FILE), os.path.join(directory, VAL_FILE)]
        self.train_db.save(paths[0])
        self.val_db.save(paths[1])
        return paths

    @classmethod
    def load(cls, directory: str, max_prefs: int, val_fraction: float) -> "PrefBuffer":
        train_path, val_path = os.path.join(directory, TRAIN_FILE), os.path.join(directory, VAL_FILE)
        for p in (train_path, val_path):
            if not os.path.exists(p):
                raise FileNotFoundError(
                    f"prefs_dir {directory!r} has no {os.path.basename(p)}. Point prefs_dir at the "
                    "log_dir where save_prefs() wrote train.pkl.gz and val.pkl.gz."
                )
        buffer = cls(max_prefs, val_fraction)
        buffer.train_db = PrefDB.load(train_path, maxlen=max(buffer.train_db.maxlen, 1))
        buffer.val_db = PrefDB.load(val_path, maxlen=max(buffer.val_db.maxlen, 1))
        buffer.n_received = len(buffer.train_db) + len(buffer.val_db)
        return buffer
