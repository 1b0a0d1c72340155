"""A run's labels in one place: those it starts from, those the interface sends, and their snapshots.

At start the store loads the labels the run builds on (its own when resuming, else ``prefs_dir``'s) and,
when the run journals, writes one snapshot into its log_dir if the journal or another directory added
labels, so the log_dir alone holds every label. Labels then arrive as ``drlhp.label_store.stream`` records, with
the labellers' retractions and second answers. A
snapshot of the log_dir is due once the labels since the last are as many as the older ones in the database
(so rewriting it costs at most as much again as journaling them did), or every ``snapshot_interval``
seconds; the journal holds everything in between, and its writer drops what a snapshot holds.
"""
from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass

from drlhp.clips.clip import PackedClip
from drlhp.clips.frames import FrameSpec, check_format
from drlhp.label_store.agreement import Agreement
from drlhp.label_store.database import PrefBuffer
from drlhp.label_store.journal import remove_journal
from drlhp.label_store.stream import ClipData, ForgetClip, LabelRecord, Preference, Retraction, SecondAnswer
from drlhp.storage.layout import LogDir
from drlhp.storage.run_dir import refuse_earlier_labels

log = logging.getLogger("drlhp.label_store")

#: A snapshot is due once this many labels, and as many as the database's older ones, arrived since the last.
MIN_LABELS_PER_SNAPSHOT = 100


@dataclass(frozen=True)
class LabelStoreConfig:
    """Where a run's labels come from and go, and how many are kept.

    ``collecting``: labels arrive during the run (so they must not overwrite an earlier run's);
    ``journaling``: the preference interface journals each one in ``log_dir`` (so the store writes
    snapshots there that let the journal shrink); ``clip_length``: the length of the clips the run
    cuts (None: it cuts none and trains on whatever clips its labels have); ``instructions``: what the run
    asks its labellers (recorded with the labels; None: the labels keep what they recorded).
    """

    log_dir: str
    prefs_dir: str | None
    resume: bool
    max_labels: int
    val_fraction: float
    collecting: bool
    journaling: bool
    snapshot_interval: float | None
    frame_spec: FrameSpec
    clip_length: int | None
    instructions: str | None


class LabelStore:
    """The run's labelled pairs (``buffer``: training and validation databases) and the clips the interface
    may still pair."""

    def __init__(self, config: LabelStoreConfig) -> None:
        self.config = config
        self.files = LogDir(config.log_dir)
        self.buffer = self._load()
        self.n_unsaved = 0  # records (labels, retractions, second answers) since the last snapshot in log_dir
        self.n_in_snapshot = self.buffer.n_received  # the run's labels log_dir's snapshot holds
        self._clips: dict[int, PackedClip] = {}  # sent by the interface, which may still pair them
        self._next_snapshot = time.monotonic() + (config.snapshot_interval or 0)

    # -- start ---------------------------------------------------------------------
    def _load(self) -> PrefBuffer:
        """The labels the run starts from: its own (resume), prefs_dir's, or none."""
        c = self.config
        own = c.resume and self.files.has_labels()
        source = c.log_dir if own else c.prefs_dir
        if c.collecting and not own and not same_dir(source, c.log_dir):
            refuse_earlier_labels(c.log_dir)  # save_prefs() or a snapshot would overwrite them
        buffer = PrefBuffer.load(source, c.max_labels, c.val_fraction) if source else PrefBuffer(
            c.max_labels, c.val_fraction)
        self._check_clips(buffer, source)
        self._take_instructions(buffer, source)
        labels_from_elsewhere = buffer.n_received and not same_dir(source, c.log_dir)
        if c.journaling and (self.files.journal_files() or labels_from_elsewhere):
            # One snapshot in log_dir holds them all, so the run's log_dir alone has every label.
            buffer.save(c.log_dir)
            remove_journal(c.log_dir)
        return buffer

    def _check_clips(self, buffer: PrefBuffer, source: str | None) -> None:
        clips = {**buffer.train_db.segments, **buffer.val_db.segments}
        if not clips:
            return
        _, shape, dtype = next(iter(clips.values())).packed_frames
        spec, length = self.config.frame_spec, self.config.clip_length
        settings = "env and obs_transform_func" if length is None else "env, obs_transform_func and segment_length"
        check_format(f"The labels in {source} are of clips", shape, dtype, "this run makes clips",
                     (shape[0] if length is None else length, *spec.shape), spec.dtype,
                     f"Use the {settings} they were collected with (segment_length={shape[0]}).")

    def _take_instructions(self, buffer: PrefBuffer, source: str | None) -> None:
        """The run's instructions become the labels' (a warning if the labels loaded were asked something else)."""
        new = self.config.instructions
        if new is None:
            return
        if buffer.instructions is not None and buffer.instructions != new:
            log.warning("the labels in %s were asked with the instructions %r; this run asks %r: the database will "
                        "record only the new ones (its earlier labels answer the old)", source, buffer.instructions,
                        new)
        buffer.instructions = new

    @property
    def next_clip_id(self) -> int:
        """A clip id past every clip the run has: where the interface's numbering of new clips starts."""
        return max(self.buffer.clip_ids, default=-1) + 1

    @property
    def next_seq(self) -> int:
        """The sequence number of the run's next label."""
        return self.buffer.n_received

    # -- while the run goes on ---------------------------------------------------------
    def add(self, record: LabelRecord) -> None:
        """Take one record of the interface's stream: a clip, a label of two clips it sent, a clip forgotten, a
        label (or second answer) taken back, or a second answer."""
        if isinstance(record, ClipData):
            self._clips[record.clip.clip_id] = record.clip
        elif isinstance(record, ForgetClip):
            del self._clips[record.clip_id]
        elif isinstance(record, Preference):
            self.buffer.add(self._clips[record.clip_id_a], self._clips[record.clip_id_b], record.label, record.seq,
                            record.labeller, record.seconds)
            self.n_unsaved += 1
        elif isinstance(record, Retraction):
            if not self.buffer.retract(record.seq, record.labeller):
                log.info("label %d: nothing of %s's to take back (not their answer, or gone)", record.seq,
                         record.labeller)
            self.n_unsaved += 1  # its journal record is dropped only once a snapshot holds it
        elif isinstance(record, SecondAnswer):
            if not self.buffer.add_second(record.seq, record.labeller, record.label, record.seconds):
                log.info("label %d: %s's second answer ignored (the label is gone, or theirs)", record.seq,
                         record.labeller)
            self.n_unsaved += 1
        else:
            raise TypeError(f"not a label record: {type(record).__name__}")

    @property
    def n_labels(self) -> int:
        """Labels held for training and validation (the oldest are evicted past ``max_labels``)."""
        return len(self.buffer.train_db) + len(self.buffer.val_db)

    @property
    def agreement(self) -> Agreement:
        """Pairs answered twice per labeller pair, among the pairs held: current with every record taken."""
        return self.buffer.agreement

    def snapshot_if_due(self) -> bool:
        """Write log_dir's snapshot if the labels since the last one call for it; returns whether it did."""
        c = self.config
        if not c.journaling or not self.n_unsaved:
            return False
        journal_as_large = self.n_unsaved >= max(MIN_LABELS_PER_SNAPSHOT, self.n_labels - self.n_unsaved)
        interval_passed = bool(c.snapshot_interval) and time.monotonic() >= self._next_snapshot
        if not (journal_as_large or interval_passed):
            return False
        start = time.monotonic()
        self.save(c.log_dir)
        # Large databases take long to write: keep saving to at most ~10 % of the time.
        took = time.monotonic() - start
        self._next_snapshot = time.monotonic() + max(c.snapshot_interval or 0, 10 * took)
        log.info("wrote a snapshot of %d labels to %s in %.1f s", self.buffer.n_received, c.log_dir, took)
        return True

    def save(self, directory: str) -> list[str]:
        """Write the snapshot (``train.pkl.gz``, ``val.pkl.gz``) into ``directory``; returns the two paths."""
        paths = self.buffer.save(directory)
        if same_dir(directory, self.config.log_dir):
            self.n_unsaved = 0
            self.n_in_snapshot = self.buffer.n_received  # the journal may drop these now
        return paths

    def save_unsaved(self) -> None:
        """At the end of the run: the labels not in a snapshot yet go into one."""
        n_unsaved = self.n_unsaved
        if self.config.journaling and n_unsaved:
            self.save(self.config.log_dir)
            log.info("saved %d unsaved preferences to %s on close", n_unsaved, self.config.log_dir)


def same_dir(a: str | None, b: str) -> bool:
    """Whether ``a`` names the directory ``b`` (None names none)."""
    return a is not None and os.path.realpath(a) == os.path.realpath(b)
