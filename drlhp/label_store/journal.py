"""The label journal: every label on disk before the next pair is asked.

The preference interface appends each label -- its sequence number, the two
clip ids, the label, the time and who answered, plus each clip the first time a
journal file uses it -- in one write, then ``fsync``s, before it asks about the
next pair. A power cut loses at most the answer being typed; a killed process
loses nothing it acknowledged. An fsync is nothing beside a person's answer and
far quicker than synthetic labels arrive (docs/benchmarks.md, "Figures behind the
code"). A labeller taking an answer back, and a second
labeller's answer to a pair, are journaled the same way.

``train.pkl.gz`` / ``val.pkl.gz`` stay the compact snapshot. Each records how many
of the run's labels it covers; ``PrefBuffer.load`` replays the journal's later
records on top. The trainer publishes that count after each snapshot of
``log_dir``; the writer then starts a new file and deletes those wholly covered,
so every file holds the clips its labels use and the journal never grows past
what the next snapshot absorbs.

File format (``log_dir/label_journal/<first seq>.journal``), a sequence of records::

    b"DLJ1" | payload length (u32 LE) | CRC-32 of payload (u32 LE) | payload
    payload = JSON length (u32 LE) | JSON | blob

    {"kind": "task", "instructions", "val_fraction"}
        what the labellers were asked (the run's labelling_instructions, or null) and the run's
        validation split (null in older journals): the first record of every file, so a journal
        alone says what its labels answer and where the run put them
    {"kind": "clip", "seg_id", "shape", "dtype", "episode", "env_index", "n_frame_bytes"}
        ("seg_id": the clip's id, under the name it had when the format was made); blob: zlib-compressed
        frames (n_frame_bytes), then float64 rewards (shape[0] of them)
    {"kind": "label", "seq", "a", "b", "label", "time", "labeller", "seconds"}
        ("seconds": how long the person took to answer, or null; absent in older journals)
    {"kind": "retract", "seq", "labeller", "time", "position"}
        ``labeller`` takes back their answer to label ``seq`` (the label itself if they gave it, else
        their second answer to it)
    {"kind": "second", "seq", "labeller", "label", "time", "seconds", "position"}
        a second labeller's answer to the pair of label ``seq``

``position`` is the run's next label number when the record was written. The trainer
takes the label stream in order, so a snapshot covering label ``position`` (holding
more than ``position`` labels) has seen the record: a file is deleted only once a
snapshot covers the largest of its labels' numbers and its records' positions.
``MAGIC`` stays ``DLJ1``: journals written before undo and second answers read as before.

Reading never executes anything from the file. A record cut short (a crash in
the middle of a write), failing its checksum or of a kind this drlhp does not know
ends that file's replay with a warning, never an error.
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
from typing import Callable, Union

import numpy as np

from drlhp.clips.clip import PackedClip
from drlhp.storage.files import fsync_dir, writing
from drlhp.storage.layout import LogDir, journal_file_name

log = logging.getLogger("drlhp.journal")

MAGIC = b"DLJ1"
_HEAD = struct.Struct("<4sII")
_U32 = struct.Struct("<I")


@dataclass(frozen=True)
class JournalLabel:
    """One label as journaled, with its two clips."""

    seq: int
    a: PackedClip
    b: PackedClip
    label: float
    time: float  # Unix seconds
    labeller: str
    seconds: float | None = None  # how long the answer took (None: not timed, e.g. synthetic)


@dataclass(frozen=True)
class JournalRetraction:
    """``labeller`` took back their answer to label ``seq`` (the label, or their second answer to it)."""

    seq: int
    labeller: str
    time: float  # Unix seconds


@dataclass(frozen=True)
class JournalSecondAnswer:
    """A second labeller's answer to the pair of label ``seq``."""

    seq: int
    labeller: str
    label: float
    time: float  # Unix seconds
    seconds: float | None = None  # how long the answer took (None: not timed)


@dataclass(frozen=True)
class JournalTask:
    """What the labellers were asked (the run's labelling instructions, None: nothing) and the run's validation
    split (None: not recorded), at the top of a journal file."""

    instructions: str | None
    val_fraction: float | None = None


#: What ``read_journal`` yields.
JournalRecord = Union[JournalLabel, JournalRetraction, JournalSecondAnswer, JournalTask]


def remove_journal(log_dir: str) -> None:
    """Delete the journal's files (once a snapshot holds all their labels)."""
    for path in LogDir(log_dir).journal_files():
        os.unlink(path)


# -- writing ---------------------------------------------------------------------------
def _record(meta: dict, blob: bytes = b"") -> bytes:
    text = json.dumps(meta).encode()
    payload = _U32.pack(len(text)) + text + blob
    return _HEAD.pack(MAGIC, len(payload), zlib.crc32(payload)) + payload


def _clip_record(clip: PackedClip) -> bytes:
    data, shape, dtype = clip.packed_frames
    rewards = np.ascontiguousarray(clip.rewards, dtype=np.float64)
    meta = {"kind": "clip", "seg_id": clip.clip_id, "shape": list(shape), "dtype": dtype.str,
            "episode": clip.episode, "env_index": clip.env_index, "n_frame_bytes": len(data)}
    return _record(meta, data + rewards.tobytes())


class JournalWriter:
    """Appends labels, retractions and second answers to ``log_dir``'s journal; ``labels_in_snapshot()`` says how
    many of the run's labels a snapshot already holds; ``instructions`` and ``val_fraction`` (the run's) head each
    file."""

    def __init__(self, log_dir: str, labels_in_snapshot: Callable[[], int], instructions: str | None = None,
                 val_fraction: float | None = None) -> None:
        self.directory = LogDir(log_dir).journal_dir
        with writing(self.directory):
            os.makedirs(self.directory, exist_ok=True)
        self._labels_in_snapshot = labels_in_snapshot
        recorded = instructions is not None or val_fraction is not None
        self._task = _record({"kind": "task", "instructions": instructions, "val_fraction": val_fraction}) \
            if recorded else b""
        # Files not yet wholly in a snapshot: (path, the largest label number or position in it).
        self._closed_files: list[tuple[str, int]] = []
        self._fd: int | None = None
        self._path = ""
        self._first = self._needed_until = -1  # the current file's first and largest label number or position
        self._file_head: list[bytes] = []
        self._clips_in_file: set[int] = set()

    def append(self, seq: int, a: PackedClip, b: PackedClip, label: float, labeller: str,
               seconds: float | None = None) -> None:
        """Write one label (and its clips not yet in the current file) and fsync: it survives a power cut."""
        self._drop_covered(self._labels_in_snapshot())
        if self._fd is None:
            self._open(seq)
        records = [_clip_record(s) for s in (a, b) if s.clip_id not in self._clips_in_file]
        records.append(_record({"kind": "label", "seq": seq, "a": a.clip_id, "b": b.clip_id, "label": float(label),
                                "time": round(time.time(), 3), "labeller": labeller, "seconds": _rounded(seconds)}))
        self._write(records, seq)
        self._clips_in_file.update((a.clip_id, b.clip_id))

    def retract(self, seq: int, labeller: str, position: int) -> None:
        """Write that ``labeller`` takes back their answer to label ``seq``, ``position`` being the run's next label
        number, and fsync."""
        self._write_event({"kind": "retract", "seq": seq, "labeller": labeller, "time": round(time.time(), 3),
                           "position": position}, position)

    def second_answer(self, seq: int, labeller: str, label: float, seconds: float | None, position: int) -> None:
        """Write ``labeller``'s second answer to the pair of label ``seq``, ``position`` being the run's next label
        number, and fsync."""
        self._write_event({"kind": "second", "seq": seq, "labeller": labeller, "label": float(label),
                           "time": round(time.time(), 3), "seconds": _rounded(seconds), "position": position},
                          position)

    def _write_event(self, meta: dict, position: int) -> None:
        self._drop_covered(self._labels_in_snapshot())
        if self._fd is None:
            self._open(position)
        self._write([_record(meta)], position)

    def _write(self, records: list[bytes], needed_until: int) -> None:
        """Append ``records`` to the current file in one write and fsync; the file is needed until a snapshot
        covers label ``needed_until``."""
        assert self._fd is not None
        data = memoryview(b"".join(self._file_head + records))
        end = os.lseek(self._fd, 0, os.SEEK_END)
        with writing(self._path):
            try:
                while data:
                    data = data[os.write(self._fd, data):]
                os.fsync(self._fd)
            except OSError:
                os.ftruncate(self._fd, end)  # no record cut short: the file stays whole, as before the write
                raise
        self._file_head = []
        self._needed_until = max(self._needed_until, needed_until)

    def _drop_covered(self, covered: int) -> None:
        """Delete files a snapshot holds all of (labels and records); start a new file if the snapshot reaches into
        this one."""
        for path, needed_until in [f for f in self._closed_files if f[1] < covered]:
            os.unlink(path)
            self._closed_files.remove((path, needed_until))
        if self._fd is not None and self._first < covered:
            os.close(self._fd)
            self._fd = None
            if self._needed_until < covered:
                os.unlink(self._path)
            else:
                self._closed_files.append((self._path, self._needed_until))

    def _open(self, first: int) -> None:
        """Start the file of labels and records from label number (or position) ``first`` on (``self._fd``); it
        starts with the run's instructions."""
        self._path = os.path.join(self.directory, journal_file_name(first))
        with writing(self._path):
            self._fd = os.open(self._path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            fsync_dir(self.directory)  # so the new file's name survives a power cut too
        self._first, self._needed_until, self._clips_in_file = first, first, set()
        self._file_head = [self._task] if self._task else []  # goes out with the file's first record

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def _rounded(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds, 3)


# -- reading ---------------------------------------------------------------------------
class _BadRecord(Exception):
    pass


def read_journal(log_dir: str) -> Iterator[JournalRecord]:
    """Every complete record of ``log_dir``'s journal (labels, retractions, second answers, instructions), file by
    file, in the order written."""
    for path in LogDir(log_dir).journal_files():
        yield from _read_file(path)


def _read_file(path: str) -> Iterator[JournalRecord]:
    with open(path, "rb") as f:
        data = f.read()
    clips: dict[int, PackedClip] = {}
    pos = 0
    while pos < len(data):
        try:
            meta, blob, end = _parse_record(data, pos)
            kind = meta.get("kind")
            if kind == "clip":
                clips[int(meta["seg_id"])] = _parse_clip(meta, blob)
            elif kind == "label":
                a, b = clips.get(meta["a"]), clips.get(meta["b"])
                if a is None or b is None:
                    raise _BadRecord(f"label {meta.get('seq')} uses a clip not in this file")
                yield JournalLabel(int(meta["seq"]), a, b, _label(meta), float(meta["time"]), str(meta["labeller"]),
                                   _seconds(meta))
            elif kind == "retract":
                yield JournalRetraction(int(meta["seq"]), str(meta["labeller"]), float(meta["time"]))
            elif kind == "second":
                yield JournalSecondAnswer(int(meta["seq"]), str(meta["labeller"]), _label(meta), float(meta["time"]),
                                          _seconds(meta))
            elif kind == "task":
                instructions, val_fraction = meta["instructions"], meta.get("val_fraction")
                if instructions is not None and not isinstance(instructions, str):
                    raise _BadRecord("instructions that are not text")
                if val_fraction is not None and not 0.0 <= float(val_fraction) < 1.0:
                    raise _BadRecord(f"a validation split of {val_fraction!r}")
                yield JournalTask(instructions, None if val_fraction is None else float(val_fraction))
            else:
                raise _BadRecord(f"unknown record kind {kind!r}")
        except (_BadRecord, KeyError, TypeError, ValueError, zlib.error) as e:
            log.warning("label journal %s: %s at byte %d; skipped the last %d bytes (a write cut short by a "
                        "crash or power cut leaves this; the labels before it are kept)",
                        path, e, pos, len(data) - pos)
            return
        pos = end


def _label(meta: dict) -> float:
    label = float(meta["label"])
    if label not in (0.0, 0.5, 1.0):
        raise _BadRecord(f"label {label!r} is not 0, 0.5 or 1")
    return label


def _seconds(meta: dict) -> float | None:
    seconds = meta.get("seconds")
    return None if seconds is None else float(seconds)


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


def _parse_clip(meta: dict, blob: bytes) -> PackedClip:
    shape, dtype = tuple(int(n) for n in meta["shape"]), np.dtype(meta["dtype"])
    if dtype.kind not in "biuf" or not shape:
        raise _BadRecord(f"clip of dtype {dtype} and shape {shape}")
    n_frame_bytes = int(meta["n_frame_bytes"])
    data, rewards = blob[:n_frame_bytes], np.frombuffer(blob[n_frame_bytes:], dtype=np.float64)
    if rewards.shape != (shape[0],) or len(zlib.decompress(data)) != int(np.prod(shape)) * dtype.itemsize:
        raise _BadRecord(f"clip {meta['seg_id']} does not match its shape {shape}")
    return PackedClip.from_packed(int(meta["seg_id"]), data, shape, dtype, rewards.copy(),
                                     int(meta["episode"]), int(meta["env_index"]))
