"""The label journal: every label on disk before the next pair is asked.

The preference interface appends each label -- its sequence number, the two
clip ids, the label, the time and who answered, plus each clip the first time a
journal file uses it -- in one write, then ``fsync``s, before it asks about the
next pair. A power cut loses at most the answer being typed; a killed process
loses nothing it acknowledged. An fsync is nothing beside a person's answer and
leaves room for thousands of synthetic labels a second (docs/benchmarks.md,
"Figures behind the code").

``train.pkl.gz`` / ``val.pkl.gz`` stay the compact snapshot. Each records how many
of the run's labels it covers; ``PrefBuffer.load`` replays the journal's later
labels on top. The trainer publishes that count after each snapshot of
``log_dir``; the writer then starts a new file and deletes those wholly covered,
so every file holds the clips its labels use and the journal never grows past
what the next snapshot absorbs.

File format (``log_dir/label_journal/<first seq>.journal``), a sequence of records::

    b"DLJ1" | payload length (u32 LE) | CRC-32 of payload (u32 LE) | payload
    payload = JSON length (u32 LE) | JSON | blob

    {"kind": "clip", "seg_id", "shape", "dtype", "episode", "env_index", "n_frame_bytes"}
        blob: zlib-compressed frames (n_frame_bytes), then float64 rewards (shape[0] of them)
    {"kind": "label", "seq", "a", "b", "label", "time", "labeller", "seconds"}
        ("seconds": how long the person took to answer, or null; absent in older journals)

Reading never executes anything from the file. A record cut short (a crash in
the middle of a write) or failing its checksum ends that file's replay with a
warning, never an error.
"""
from __future__ import annotations

import json
import logging
import os
import struct
import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Callable

import numpy as np

from drlhp.clips.segments import PackedSegment
from drlhp.storage.layout import JOURNAL_SUFFIX, LogDir

log = logging.getLogger("drlhp.journal")

MAGIC = b"DLJ1"
_HEAD = struct.Struct("<4sII")
_U32 = struct.Struct("<I")


@dataclass(frozen=True)
class JournalLabel:
    """One label as journaled, with its two clips."""

    seq: int
    a: PackedSegment
    b: PackedSegment
    label: float
    time: float  # Unix seconds
    labeller: str
    seconds: float | None = None  # how long the answer took (None: not timed, e.g. synthetic)


def remove_journal(log_dir: str) -> None:
    """Delete the journal's files (once a snapshot holds all their labels)."""
    for path in LogDir(log_dir).journal_files():
        os.unlink(path)


# -- writing ---------------------------------------------------------------------------
def _record(meta: dict, blob: bytes = b"") -> bytes:
    text = json.dumps(meta).encode()
    payload = _U32.pack(len(text)) + text + blob
    return _HEAD.pack(MAGIC, len(payload), zlib.crc32(payload)) + payload


def _clip_record(seg: PackedSegment) -> bytes:
    data, shape, dtype = seg.packed_frames
    rewards = np.ascontiguousarray(seg.rewards, dtype=np.float64)
    meta = {"kind": "clip", "seg_id": seg.seg_id, "shape": list(shape), "dtype": dtype.str,
            "episode": seg.episode, "env_index": seg.env_index, "n_frame_bytes": len(data)}
    return _record(meta, data + rewards.tobytes())


class JournalWriter:
    """Appends labels to ``log_dir``'s journal; ``labels_in_snapshot()`` says what a snapshot already holds."""

    def __init__(self, log_dir: str, labels_in_snapshot: Callable[[], int]) -> None:
        self.directory = LogDir(log_dir).journal_dir
        os.makedirs(self.directory, exist_ok=True)
        self._labels_in_snapshot = labels_in_snapshot
        self._closed_files: list[tuple[str, int]] = []  # (path, last seq) not yet wholly in a snapshot
        self._fd: int | None = None
        self._path = ""
        self._first_seq = self._last_seq = -1
        self._clips_in_file: set[int] = set()

    def append(self, seq: int, a: PackedSegment, b: PackedSegment, label: float, labeller: str,
               seconds: float | None = None) -> None:
        """Write one label (and its clips not yet in the current file) and fsync: it survives a power cut."""
        self._drop_covered(self._labels_in_snapshot())
        fd = self._fd if self._fd is not None else self._open(seq)
        records = [_clip_record(s) for s in (a, b) if s.seg_id not in self._clips_in_file]
        records.append(_record({"kind": "label", "seq": seq, "a": a.seg_id, "b": b.seg_id, "label": float(label),
                                "time": round(time.time(), 3), "labeller": labeller,
                                "seconds": None if seconds is None else round(seconds, 3)}))
        data = memoryview(b"".join(records))
        while data:
            data = data[os.write(fd, data):]
        os.fsync(fd)
        self._clips_in_file.update((a.seg_id, b.seg_id))
        self._last_seq = seq

    def _drop_covered(self, covered: int) -> None:
        """Delete files whose labels all are in the snapshot; start a new file if the snapshot reaches into this one."""
        for path, last in [f for f in self._closed_files if f[1] < covered]:
            os.unlink(path)
            self._closed_files.remove((path, last))
        if self._fd is not None and self._first_seq < covered:
            os.close(self._fd)
            self._fd = None
            if self._last_seq < covered:
                os.unlink(self._path)
            else:
                self._closed_files.append((self._path, self._last_seq))

    def _open(self, seq: int) -> int:
        """Start the file of labels from ``seq`` on; returns its descriptor (``self._fd``)."""
        self._path = os.path.join(self.directory, f"{seq:012d}{JOURNAL_SUFFIX}")
        self._fd = fd = os.open(self._path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        _fsync_dir(self.directory)  # so the new file's name survives a power cut too
        self._first_seq, self._clips_in_file = seq, set()
        return fd

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def _fsync_dir(directory: str) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


# -- reading ---------------------------------------------------------------------------
class _BadRecord(Exception):
    pass


def read_journal(log_dir: str) -> Iterator[JournalLabel]:
    """Every complete label in ``log_dir``'s journal, file by file, in the order written."""
    for path in LogDir(log_dir).journal_files():
        yield from _read_file(path)


def _read_file(path: str) -> Iterator[JournalLabel]:
    with open(path, "rb") as f:
        data = f.read()
    clips: dict[int, PackedSegment] = {}
    pos = 0
    while pos < len(data):
        try:
            meta, blob, end = _parse_record(data, pos)
            if meta.get("kind") == "clip":
                clips[int(meta["seg_id"])] = _parse_clip(meta, blob)
            elif meta.get("kind") == "label":
                a, b = clips.get(meta["a"]), clips.get(meta["b"])
                if a is None or b is None:
                    raise _BadRecord(f"label {meta.get('seq')} uses a clip not in this file")
                label = float(meta["label"])
                if label not in (0.0, 0.5, 1.0):
                    raise _BadRecord(f"label {label!r} is not 0, 0.5 or 1")
                seconds = meta.get("seconds")
                yield JournalLabel(int(meta["seq"]), a, b, label, float(meta["time"]), str(meta["labeller"]),
                                   None if seconds is None else float(seconds))
            else:
                raise _BadRecord(f"unknown record kind {meta.get('kind')!r}")
        except (_BadRecord, KeyError, TypeError, ValueError, zlib.error) as e:
            log.warning("label journal %s: %s at byte %d; skipped the last %d bytes (a write cut short by a "
                        "crash or power cut leaves this; the labels before it are kept)",
                        path, e, pos, len(data) - pos)
            return
        pos = end


def _parse_record(data: bytes, pos: int) -> tuple[dict, bytes, int]:
    if len(data) - pos < _HEAD.size:
        raise _BadRecord("incomplete record header")
    magic, length, crc = _HEAD.unpack_from(data, pos)
    start, end = pos + _HEAD.size, pos + _HEAD.size + length
    if magic != MAGIC:
        raise _BadRecord("not a journal record")
    if end > len(data):
        raise _BadRecord("record cut short")
    payload = data[start:end]
    if zlib.crc32(payload) != crc:
        raise _BadRecord("checksum mismatch")
    (n_text,) = _U32.unpack_from(payload)
    meta = json.loads(payload[_U32.size:_U32.size + n_text])
    if not isinstance(meta, dict):
        raise _BadRecord("record metadata is not an object")
    return meta, payload[_U32.size + n_text:], end


def _parse_clip(meta: dict, blob: bytes) -> PackedSegment:
    shape, dtype = tuple(int(n) for n in meta["shape"]), np.dtype(meta["dtype"])
    if dtype.kind not in "biuf" or not shape:
        raise _BadRecord(f"clip of dtype {dtype} and shape {shape}")
    n_frame_bytes = int(meta["n_frame_bytes"])
    data, rewards = blob[:n_frame_bytes], np.frombuffer(blob[n_frame_bytes:], dtype=np.float64)
    if rewards.shape != (shape[0],) or len(zlib.decompress(data)) != int(np.prod(shape)) * dtype.itemsize:
        raise _BadRecord(f"clip {meta['seg_id']} does not match its shape {shape}")
    return PackedSegment.from_packed(int(meta["seg_id"]), data, shape, dtype, rewards.copy(),
                                     int(meta["episode"]), int(meta["env_index"]))
