"""Preference databases: labelled pairs of clips, their train/validation split, and files.

File format (``train.pkl.gz`` / ``val.pkl.gz``, names kept from the original
drlhp): a gzip stream of consecutive NumPy ``.npy`` records -- a JSON header,
the clip ids and rewards, the labels, then each clip's frames. It is
read with ``allow_pickle=False``, so loading a file cannot run code from it.
Each clip's frames are stored as held in memory, zlib-compressed (a uint8
record; the gzip layer does not compress again), so a snapshot of a full Pong
database is written without compressing anything twice. After the labels come, per
pair: who gave the label (a fixed-width text array), how long the answer took
(seconds, NaN where not timed), the run's number of its label (int64; -1 where not
recorded), the first answer (the pairs' labels column holds the training label,
``drlhp.label_store.agreement.combined_label`` of both answers), and a second labeller's
answer: who (text, "" for none), the label (NaN for none) and how long it took
(NaN: none, or not timed). Header fields ``instructions`` (what the labellers
were asked, or null) and ``retracted`` (the numbers of the run's labels their
labeller took back, sorted). This is version 4; files of the earlier versions
(written by unreleased commits of drlhp) are refused with the way to convert them.
The header's ``n_labels`` is how many labels the run had when the file was
written: the journal's records from there on are replayed on top of it
(``drlhp.label_store.journal``). Its ``val_fraction`` is the run's split, so a reader
that does not know the run's settings routes the journal's labels where the run did.
"""
from __future__ import annotations

import contextlib
import gzip
import json
import math
import os
import zlib
from collections import deque
from collections.abc import Iterable, Iterator
from typing import BinaryIO

import numpy as np

from drlhp.clips.clip import Clip, PackedClip, pack
from drlhp.errors import LAST_TO_CONVERT, ConfigError, NoLabelsError, PrefDBFormatError
from drlhp.label_store.agreement import Agreement, combined_label
from drlhp.label_store.journal import JournalLabel, JournalRetraction, JournalSecondAnswer, JournalTask, read_journal
from drlhp.storage.files import atomic_write, atomic_writes
from drlhp.storage.layout import LogDir

FORMAT_NAME = "drlhp-prefdb"
FORMAT_VERSION = 4
LABEL_VALUES = (0.0, 0.5, 1.0)
#: The share of labels held out for validation unless a run says otherwise (``PreferenceConfig.val_fraction``).
DEFAULT_VAL_FRACTION = 0.2


class PrefDB:
    """Labelled pairs of clips, oldest evicted first once ``maxlen`` pairs are held.

    A clip is stored once however many pairs it appears in (pairs hold ids;
    clips are reference-counted and dropped with their last pair), with its
    frames compressed (``PackedClip``): a minibatch unpacks only its own clips.
    Per pair, parallel columns (kept in step on eviction and removal) say who answered,
    how fast, the run's number of the label, and a second labeller's answer if any.
    """

    def __init__(self, maxlen: int) -> None:
        if maxlen < 1:
            raise ConfigError(f"maxlen must be >= 1, got {maxlen}")
        self.maxlen = maxlen
        self.segments: dict[int, PackedClip] = {}
        self._refs: dict[int, int] = {}
        self.prefs: deque[tuple[int, int, float]] = deque()  # (clip a, clip b, the label the pair trains on)
        self.labellers: deque[str] = deque()  # who gave each label, its first answer ("" where not recorded)
        self.answer_seconds: deque[float] = deque()  # how long each answer took (nan: not timed)
        self.seqs: deque[int] = deque()  # the run's number of each label (-1: not recorded)
        self.first_labels: deque[float] = deque()  # the first answer: the label unless a second answer differs
        self.second_labellers: deque[str] = deque()  # who answered the pair a second time ("" none)
        self.second_labels: deque[float] = deque()  # their answer (nan: none)
        self.second_seconds: deque[float] = deque()  # how long it took (nan: none, or not timed)
        #: Pairs answered twice, per labeller pair, over the pairs held (an evicted or removed pair no longer counts).
        self.agreement = Agreement()
        #: Set by ``load``: the run's label count when the file was saved (None: not recorded).
        self.n_labels_when_saved: int | None = None
        self.val_fraction_when_saved: float | None = None  # the run's split, from the file's header
        self.instructions_when_saved: str | None = None  # what the labellers were asked, from the file's header
        self.retracted_when_saved: list[int] = []  # the run's labels taken back when the file was written

    def __len__(self) -> int:
        return len(self.prefs)

    def _columns(self) -> tuple[deque, ...]:
        return (self.prefs, self.labellers, self.answer_seconds, self.seqs, self.first_labels, self.second_labellers,
                self.second_labels, self.second_seconds)

    def append(self, a: Clip | PackedClip, b: Clip | PackedClip, label: float, labeller: str = "",
               seconds: float | None = None, seq: int = -1) -> None:
        """Add one labelled pair (label: P(a preferred)), the run's ``seq``-th label, evicting the oldest pair if
        full."""
        for clip in (a, b):
            if clip.clip_id not in self.segments:
                self.segments[clip.clip_id] = pack(clip)
            self._refs[clip.clip_id] = self._refs.get(clip.clip_id, 0) + 1
        label = float(label)
        self.prefs.append((a.clip_id, b.clip_id, label))
        self.labellers.append(labeller)
        self.answer_seconds.append(_or_nan(seconds))
        self.seqs.append(int(seq))
        self.first_labels.append(label)
        self.second_labellers.append("")
        self.second_labels.append(math.nan)
        self.second_seconds.append(math.nan)
        while len(self.prefs) > self.maxlen:
            self._drop(0)

    def index_of(self, seq: int) -> int | None:
        """Where the run's ``seq``-th label is among the pairs (None: not held, or ``seq`` unknown)."""
        if seq < 0:
            return None  # -1 marks every pair whose number was not recorded
        try:
            return self.seqs.index(seq)
        except ValueError:
            return None

    def remove(self, seq: int) -> bool:
        """Take the run's ``seq``-th label out (its clips go with it unless another pair uses them); returns whether
        it was held."""
        i = self.index_of(seq)
        if i is None:
            return False
        self._drop(i)
        return True

    def _drop(self, i: int) -> None:
        a, b, _ = self.prefs[i]
        self._set_second(i, "", math.nan, math.nan)  # uncounts its agreement
        for column in self._columns():
            del column[i]
        for clip_id in (a, b):
            self._refs[clip_id] -= 1
            if self._refs[clip_id] == 0:
                del self._refs[clip_id], self.segments[clip_id]

    def set_second(self, seq: int, labeller: str, label: float, seconds: float | None = None) -> bool:
        """Record ``labeller``'s second answer to the pair of the run's ``seq``-th label (replacing an earlier second
        answer); returns False, changing nothing, if the label is not held or ``labeller`` gave it."""
        i = self.index_of(seq)
        if i is None or not labeller or labeller == self.labellers[i]:
            return False  # a labeller agreeing with themselves is no second opinion
        self._set_second(i, labeller, float(label), _or_nan(seconds))
        return True

    def remove_second(self, seq: int, labeller: str) -> bool:
        """Take ``labeller``'s second answer to the ``seq``-th label back: the pair trains on its first answer again.
        Returns False, changing nothing, if the label is not held or its second answer is not ``labeller``'s."""
        i = self.index_of(seq)
        if i is None or not labeller or self.second_labellers[i] != labeller:
            return False
        self._set_second(i, "", math.nan, math.nan)
        return True

    def _set_second(self, i: int, labeller: str, label: float, seconds: float) -> None:
        """The ``i``-th pair's second answer becomes ``labeller``'s (""; none), its training label and the agreement
        counts follow."""
        first_by, first = self.labellers[i], self.first_labels[i]
        if self.second_labellers[i]:
            self.agreement.remove(first_by, first, self.second_labellers[i], self.second_labels[i])
        if labeller:
            self.agreement.add(first_by, first, labeller, label)
        self.second_labellers[i], self.second_labels[i], self.second_seconds[i] = labeller, label, seconds
        a, b, _ = self.prefs[i]
        self.prefs[i] = (a, b, combined_label(first, label) if labeller else first)

    def batch(self, indices: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Frames of both sides ``(n, length, *frame_shape)`` and labels ``(n,)`` of the given pairs."""
        pairs = [self.prefs[i] for i in indices]
        frames_a = np.stack([self.segments[a].frames for a, _, _ in pairs])
        frames_b = np.stack([self.segments[b].frames for _, b, _ in pairs])
        labels = np.array([label for _, _, label in pairs], dtype=np.float32)
        return frames_a, frames_b, labels

    # -- files ----------------------------------------------------------------
    def save(self, path: str, n_labels: int | None = None, val_fraction: float | None = None,
             instructions: str | None = None, retracted: Iterable[int] = ()) -> None:
        """Write atomically to ``path`` (see the module docstring); ``n_labels``: the run's label count now;
        ``val_fraction``: the run's validation split; ``instructions``: what the labellers were asked;
        ``retracted``: the numbers of the run's labels taken back."""
        with atomic_write(path) as raw:
            self.write(raw, n_labels, val_fraction, instructions, retracted)

    def write(self, raw: BinaryIO, n_labels: int | None = None, val_fraction: float | None = None,
              instructions: str | None = None, retracted: Iterable[int] = ()) -> None:
        """Write the database, in the file format, to the open binary file ``raw`` (arguments: ``save``'s)."""
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
            "instructions": instructions,
            "retracted": sorted(int(seq) for seq in retracted),
        }
        prefs = np.array(self.prefs, dtype=np.float64).reshape(-1, 3)
        with gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=0) as f:
            _write(f, np.frombuffer(json.dumps(header).encode(), dtype=np.uint8))
            _write(f, np.array(ids, dtype=np.int64))
            _write(f, np.stack([self.segments[i].rewards for i in ids]) if ids else np.zeros((0, 0)))
            _write(f, prefs[:, :2].astype(np.int64))
            _write(f, prefs[:, 2].copy())
            _write(f, _texts(self.labellers))
            _write(f, np.array(self.answer_seconds, dtype=np.float64))
            _write(f, np.array(self.seqs, dtype=np.int64))
            _write(f, np.array(self.first_labels, dtype=np.float64))
            _write(f, _texts(self.second_labellers))
            _write(f, np.array(self.second_labels, dtype=np.float64))
            _write(f, np.array(self.second_seconds, dtype=np.float64))
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
        if ids.shape != (n_seg,) or pair_ids.shape != (n_prefs, 2) or labels.shape != (n_prefs,):
            raise _format_error(path, "array shapes disagree with the header")
        if not np.all(np.isin(labels, LABEL_VALUES)):
            raise _format_error(path, "labels must be 0, 0.5 or 1")
        answers = _read_answers(f, path, header, labels)
        if n_seg and rewards.shape != (n_seg, header["segment_shape"][0]):
            raise _format_error(path, "rewards do not match the clip length")
        segments: dict[int, PackedClip] = {}
        shape = tuple(header["segment_shape"] or ())
        dtype = np.dtype(header["frame_dtype"] or "u1")
        if dtype.kind not in "biuf":
            raise _format_error(path, f"frames of dtype {dtype}")
        for k, clip_id in enumerate(ids.tolist()):
            record, clip_rewards = _read(f), rewards[k].astype(np.float64)
            data = record.tobytes()
            if record.dtype != np.uint8 or len(zlib.decompress(data)) != int(np.prod(shape)) * dtype.itemsize:
                raise _format_error(path, f"clip {clip_id}'s frames do not unpack to shape {shape}, dtype {dtype}")
            segments[clip_id] = PackedClip.from_packed(clip_id, data, shape, dtype, clip_rewards)
        if f.read(1):
            raise _format_error(path, "unexpected data after the last clip")
        db = cls(maxlen if maxlen is not None else int(header["maxlen"]))
        for (a, b), labeller, secs, seq, first, second_by, second, second_secs in zip(
                pair_ids.tolist(), *(column.tolist() for column in answers)):
            if a not in segments or b not in segments:
                raise _format_error(path, f"a label refers to missing clip {a} or {b}")
            db.append(segments[a], segments[b], first, labeller, secs, seq)
            if second_by:
                db._set_second(len(db) - 1, second_by, second, second_secs)
        db.n_labels_when_saved = None if header.get("n_labels") is None else int(header["n_labels"])
        db.val_fraction_when_saved = None if header.get("val_fraction") is None else float(header["val_fraction"])
        db.instructions_when_saved, db.retracted_when_saved = _read_task(header, path)
        return db


def _read_answers(f: gzip.GzipFile, path: str, header: dict, labels: np.ndarray) -> list[np.ndarray]:
    """The per-pair columns after the labels, checked: who answered, how fast, the label's number, the first answer,
    and the second answer (who, label, how fast)."""
    n = len(labels)
    labellers, seconds = _read(f), _read(f)
    if labellers.shape != (n,) or labellers.dtype.kind != "U":
        raise _format_error(path, "who gave the labels is not one text per label")
    if seconds.shape != (n,) or seconds.dtype.kind != "f":
        raise _format_error(path, "the answers' durations are not one number per label")
    seqs, first, second_by, second, second_seconds = _read(f), _read(f), _read(f), _read(f), _read(f)
    if seqs.shape != (n,) or seqs.dtype.kind not in "iu":
        raise _format_error(path, "the labels' numbers are not one whole number per label")
    if second_by.shape != (n,) or second_by.dtype.kind != "U":
        raise _format_error(path, "who gave the second answers is not one text per label")
    if any(a.shape != (n,) or a.dtype.kind != "f" for a in (first, second, second_seconds)):
        raise _format_error(path, "the first and second answers are not one number per label")
    answered_twice = second_by != ""
    if not np.all(np.isin(first, LABEL_VALUES)) or not np.all(np.isin(second[answered_twice], LABEL_VALUES)) or \
            not np.all(np.isnan(second[~answered_twice])):
        raise _format_error(path, "answers must be 0, 0.5 or 1 (a second answer NaN where none was given)")
    combined = np.where(answered_twice & (first != second), 0.5, first)
    if not np.array_equal(labels, combined):
        raise _format_error(path, "labels disagree with the answers they combine")
    return [labellers, seconds, seqs, first, second_by, second, second_seconds]


def _read_task(header: dict, path: str) -> tuple[str | None, list[int]]:
    """The header's instructions and retracted labels' numbers."""
    instructions, retracted = header["instructions"], header["retracted"]
    if instructions is not None and not isinstance(instructions, str):
        raise _format_error(path, "the instructions are not text")
    if not isinstance(retracted, list) or not all(type(seq) is int for seq in retracted):
        raise _format_error(path, "the retracted labels are not a list of numbers")
    return instructions, retracted


def _or_nan(seconds: float | None) -> float:
    return math.nan if seconds is None else float(seconds)


def _texts(texts: deque[str]) -> np.ndarray:
    """A fixed-width text array (a Unicode one even when empty, as the reader checks)."""
    return np.array(list(texts) or [""], dtype=str)[:len(texts)]


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
    if not isinstance(header, dict) or header.get("format") != FORMAT_NAME or type(header.get("version")) is not int:
        raise _format_error(path, f"unknown header {header!r}")
    if header["version"] < FORMAT_VERSION:
        raise PrefDBFormatError(
            f"{path} is a preference database of an earlier, unreleased drlhp (format version {header['version']}), "
            f"which this drlhp (version {FORMAT_VERSION}) does not read. Convert it once with drlhp at commit "
            f"{LAST_TO_CONVERT}, the last to read it: `PrefDB.load(path).save(path)`; nothing in it is lost.")
    if header["version"] > FORMAT_VERSION:
        raise _format_error(path, f"format version {header['version']}, of a newer drlhp than this one (reads "
                                  f"version {FORMAT_VERSION}): upgrade drlhp")
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
    journal puts every label where it went the first time. A label taken back by its
    labeller leaves its database, and its number joins ``retracted`` (numbers are never
    reused).
    """

    def __init__(self, max_labels: int, val_fraction: float) -> None:
        if not 0.0 <= val_fraction < 1.0:
            raise ConfigError(f"val_fraction must be in [0, 1), got {val_fraction}")
        n_val = int(round(max_labels * val_fraction))
        self.train_db = PrefDB(max(1, max_labels - n_val))
        self.val_db = PrefDB(max(1, n_val))
        self.val_fraction = val_fraction
        self.n_received = 0  # labels of the run so far: the next label's sequence number
        self.retracted: set[int] = set()  # numbers of the run's labels their labeller took back
        self.instructions: str | None = None  # what the labellers were asked (the run's labelling_instructions)

    @property
    def n_labels(self) -> int:
        """The run's labels not taken back: what the label budget counts."""
        return self.n_received - len(self.retracted)

    @property
    def agreement(self) -> Agreement:
        """Pairs answered twice, per labeller pair, over both databases."""
        return Agreement.total(self.train_db.agreement, self.val_db.agreement)

    def db_for(self, seq: int) -> PrefDB:
        """The database the run's ``seq``-th label belongs to."""
        to_val = int((seq + 1) * self.val_fraction) > int(seq * self.val_fraction)
        return self.val_db if to_val else self.train_db

    def add(self, a: Clip | PackedClip, b: Clip | PackedClip, label: float, seq: int | None = None,
            labeller: str = "", seconds: float | None = None) -> None:
        """Add the run's seq-th label (None: the next) to the database its number routes it to."""
        seq = self.n_received if seq is None else seq
        self.db_for(seq).append(a, b, label, labeller, seconds, seq)
        self.n_received = max(self.n_received, seq + 1)

    def retract(self, seq: int, labeller: str) -> bool:
        """``labeller`` takes back their answer to the run's ``seq``-th label: the label itself if they gave it (it
        leaves its database and ``seq`` joins ``retracted``), else their second answer to it. Returns False, changing
        nothing, for anything else: another labeller's answer, an unknown or evicted label, one already retracted."""
        if seq < 0 or seq in self.retracted:
            return False
        db = self.db_for(seq)
        i = db.index_of(seq)
        if i is None:
            return False
        if db.labellers[i] != labeller:
            return db.remove_second(seq, labeller)
        db.remove(seq)
        self.retracted.add(seq)
        return True

    def add_second(self, seq: int, labeller: str, label: float, seconds: float | None = None) -> bool:
        """Record ``labeller``'s second answer to the pair of the run's ``seq``-th label; returns False, changing
        nothing, if the label is gone (retracted, evicted, unknown) or ``labeller`` gave it."""
        if seq < 0 or seq in self.retracted:
            return False
        return self.db_for(seq).set_second(seq, labeller, label, seconds)

    @property
    def clip_ids(self) -> set[int]:
        """Ids of every clip held, in training and validation pairs."""
        return set(self.train_db.segments) | set(self.val_db.segments)

    @property
    def nbytes(self) -> int:
        """Bytes of clip data held in memory, compressed (a clip in several pairs, or in both sets, counts once)."""
        segments = {**self.train_db.segments, **self.val_db.segments}
        return sum(s.nbytes for s in segments.values())

    def save(self, directory: str) -> list[str]:
        """Write ``train.pkl.gz`` and ``val.pkl.gz`` into ``directory``; returns their paths. Both are written in
        full before either replaces its older self, so a failure (a full disk) leaves the earlier snapshot whole."""
        paths = list(LogDir(directory).snapshot)
        with atomic_writes(paths) as files:
            for db, f in zip((self.train_db, self.val_db), files):
                db.write(f, self.n_received, self.val_fraction, self.instructions, self.retracted)
        return paths

    @classmethod
    def load(cls, directory: str, max_labels: int, val_fraction: float) -> PrefBuffer:
        """The labels in ``directory``: its snapshot (train.pkl.gz, val.pkl.gz) plus its label journal.

        The journal's records are applied in order on top of the snapshot, and applying one the snapshot already
        holds changes nothing: a label it covers is skipped, a retraction of a label already retracted is a no-op,
        a label retracted is not added again, a second answer to a label that is gone is ignored. The instructions
        are the newest recorded: the journal's, else the snapshot's."""
        files = LogDir(directory)
        train_path, val_path = files.snapshot
        has_snapshot = [os.path.exists(p) for p in (train_path, val_path)]
        # Half a snapshot (the other file's write failed in a drlhp that wrote them one by one, or a crash came
        # between the renames of a first snapshot) is whole with a journal holding every label from the first on.
        journal_whole = files.journal_from_first_label()
        if not all(has_snapshot) and not (journal_whole if any(has_snapshot) else files.journal_files()):
            missing = [os.path.basename(p) for p, ok in zip((train_path, val_path), has_snapshot) if not ok]
            raise NoLabelsError(
                f"{directory!r} has no {' or '.join(missing)}{'' if any(has_snapshot) else ' and no label journal'}. "
                "Point prefs_dir at the log_dir of a run that collected labels (where save_prefs() wrote "
                "train.pkl.gz and val.pkl.gz).")
        buffer = cls(max_labels, val_fraction)
        loaded = [buffer._load_snapshot_file(path, name)
                  for path, ok, name in zip((train_path, val_path), has_snapshot, ("train_db", "val_db")) if ok]
        n_old_format = len(buffer.train_db) + len(buffer.val_db)  # files that do not say how many labels they hold
        covered = {id(db): 0 for db in (buffer.train_db, buffer.val_db)}  # labels each snapshot file holds
        covered.update({id(db): n_old_format if db.n_labels_when_saved is None else db.n_labels_when_saved
                        for db in loaded})
        buffer._reconcile_snapshot()
        buffer.n_received = max(covered.values())
        for rec in read_journal(directory):
            if isinstance(rec, JournalLabel):
                # Both files are written at each snapshot, but a crash between the two leaves one behind.
                if rec.seq >= covered[id(buffer.db_for(rec.seq))] and rec.seq not in buffer.retracted:
                    buffer.add(rec.a, rec.b, rec.label, rec.seq, rec.labeller, rec.seconds)
                buffer.n_received = max(buffer.n_received, rec.seq + 1)
            elif isinstance(rec, JournalRetraction):
                buffer.retract(rec.seq, rec.labeller)
            elif isinstance(rec, JournalSecondAnswer):
                buffer.add_second(rec.seq, rec.labeller, rec.label, rec.seconds)
            elif isinstance(rec, JournalTask) and rec.instructions is not None:
                buffer.instructions = rec.instructions
        return buffer

    def _load_snapshot_file(self, path: str, db_name: str) -> PrefDB:
        """Load ``train.pkl.gz`` or ``val.pkl.gz`` as the ``db_name`` database (``train_db`` or ``val_db``)."""
        db = PrefDB.load(path, maxlen=getattr(self, db_name).maxlen)
        setattr(self, db_name, db)
        return db

    def _reconcile_snapshot(self) -> None:
        """The snapshot's instructions and retractions from its newer file, applied to both files."""
        dbs = (self.train_db, self.val_db)
        newer = max(dbs, key=lambda db: db.n_labels_when_saved or 0)
        self.instructions = newer.instructions_when_saved
        self.retracted = set(self.train_db.retracted_when_saved) | set(self.val_db.retracted_when_saved)
        for db in dbs:
            # A crash between writing the two files leaves one older: it may hold a label the other says is retracted.
            for seq in [seq for seq in db.seqs if seq in self.retracted]:
                db.remove(seq)

    @classmethod
    def load_all(cls, directory: str, val_fraction: float | None = None) -> PrefBuffer:
        """Every label in ``directory``, none evicted: for reading a database, not for training on it.

        The journal's labels go where the run put them: by ``val_fraction``, else the split its snapshot
        (or, with none yet, its journal) records, else (a run written before the split was recorded)
        ``DEFAULT_VAL_FRACTION``, ``PreferenceConfig``'s default."""
        if val_fraction is None:
            val_fraction = recorded_val_fraction(directory)
        return cls.load(directory, max_labels=2 ** 40,
                        val_fraction=DEFAULT_VAL_FRACTION if val_fraction is None else val_fraction)


def recorded_val_fraction(directory: str) -> float | None:
    """The validation split the run in ``directory`` recorded: in its snapshot's header, else (a run with no
    snapshot yet) at the top of its journal (None: not recorded)."""
    train_path, _ = LogDir(directory).snapshot
    if not os.path.exists(train_path):
        tasks = (rec for rec in read_journal(directory) if isinstance(rec, JournalTask))
        return next((task.val_fraction for task in tasks if task.val_fraction is not None), None)
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
        if isinstance(rec, JournalLabel):
            return rec.a.packed_frames[1], rec.a.packed_frames[2]
    raise NoLabelsError(f"{directory!r} holds no labelled clips (no train.pkl.gz with pairs, no label journal). "
                            "Point it at the log_dir of a run that collected labels.")
