"""The reward-training process's labels: those the run starts from, those the interface sends, their snapshots.

A receiver thread moves labels from the preference interface into the ``PrefBuffer`` the moment
they arrive (so the interface never waits on a training step). At start, the labels the run
builds on are loaded (``drlhp.storage.run_dir``: resume, or a new run from ``prefs_dir``) and the
log_dir snapshot is written if the journal or another directory added labels. A snapshot of the
labels is written on ``save_prefs()``, on close, and once the labels since the last one are as
many as the older ones in the database (so rewriting it costs at most as much again as journaling
them did); the journal holds everything in between.
"""
from __future__ import annotations

import logging
import os
import threading
import time
import traceback
from typing import TYPE_CHECKING

from drlhp.clips.frames import check_format
from drlhp.clips.segments import PackedSegment
from drlhp.labels.journal import remove_journal
from drlhp.labels.pref_db import PrefBuffer
from drlhp.runtime.messages import ForgetSegment, Preference, PrefsSaved, RunStart, SegmentData
from drlhp.storage.run_dir import refuse_earlier_labels

if TYPE_CHECKING:
    from drlhp.reward.training_loop import TrainerConfig

log = logging.getLogger("drlhp.trainer")

#: A snapshot is due once this many labels, and as many as the database's older ones, arrived since the last.
MIN_LABELS_PER_SNAPSHOT = 100


class PrefReceiver(threading.Thread):
    """Moves interface messages into the buffer; stops at the ``None`` end marker."""

    def __init__(self, pref_queue, buffer: PrefBuffer, lock: threading.Lock, stats) -> None:
        super().__init__(name="drlhp-pref-receiver", daemon=True)
        self.pref_queue, self.buffer, self.lock, self.stats = pref_queue, buffer, lock, stats
        self.live: dict[int, PackedSegment] = {}
        self.done = threading.Event()
        self.error: str | None = None
        self.n_unsaved = 0

    def run(self) -> None:
        try:
            while (msg := self.pref_queue.get()) is not None:
                if isinstance(msg, SegmentData):
                    self.live[msg.segment.seg_id] = msg.segment
                elif isinstance(msg, ForgetSegment):
                    del self.live[msg.seg_id]
                elif isinstance(msg, Preference):
                    with self.lock:
                        self.buffer.add(self.live[msg.seg_id_a], self.live[msg.seg_id_b], msg.label, msg.seq,
                                        msg.labeller, msg.seconds)
                        self.n_unsaved += 1
                    self.stats.prefs_received.value += 1
                    self.stats.run_labels.value = self.buffer.n_received
                else:
                    raise TypeError(f"unexpected message {type(msg).__name__}")
        except BaseException:
            self.error = traceback.format_exc()
        finally:
            self.done.set()


class LabelIntake:
    """The run's labels in the trainer process; the training steps read ``buffer`` holding ``lock``."""

    def __init__(self, config: TrainerConfig, pref_queue, stats) -> None:
        self.config, self.stats = config, stats
        self.journaling = config.collect_prefs and config.autosave_prefs
        self.buffer = self._load_labels()
        self.lock = threading.Lock()
        self.receiver = PrefReceiver(pref_queue, self.buffer, self.lock, stats)
        self._next_autosave = time.monotonic() + (config.autosave_interval or 0)
        self._next_byte_count = 0.0

    # -- start ---------------------------------------------------------------------
    def _load_labels(self) -> PrefBuffer:
        """The labels the run starts from: its own (resume), prefs_dir's, or none."""
        c = self.config
        own = c.resume and c.files.has_labels()
        source = c.log_dir if own else c.prefs_dir
        if c.collect_prefs and not own and not same_dir(source, c.log_dir):
            refuse_earlier_labels(c.log_dir)  # save_prefs() or a snapshot would overwrite them
        buffer = PrefBuffer.load(source, c.max_prefs_in_db, c.val_fraction) if source else PrefBuffer(
            c.max_prefs_in_db, c.val_fraction)
        self._check_clips(buffer, source)
        labels_from_elsewhere = buffer.n_received and not same_dir(source, c.log_dir)
        if self.journaling and (c.files.journal_files() or labels_from_elsewhere):
            # One snapshot in log_dir holds them all, so the run's log_dir alone has every label.
            buffer.save(c.log_dir)
            remove_journal(c.log_dir)
        self.stats.labels_in_snapshot.value = self.stats.run_labels.value = buffer.n_received
        return buffer

    def _check_clips(self, buffer: PrefBuffer, source: str | None) -> None:
        segments = {**buffer.train_db.segments, **buffer.val_db.segments}
        if not segments:
            return
        _, shape, dtype = next(iter(segments.values())).packed_frames
        spec = self.config.net.frame_spec
        # A run that does not collect trains on the database's clips, whatever their length.
        length = self.config.segment_length if self.config.collect_prefs else shape[0]
        settings = "env, obs_transform_func and segment_length" if self.config.collect_prefs else \
            "env and obs_transform_func"
        check_format(f"The labels in {source} are of clips", shape, dtype, "this run makes clips",
                     (length, *spec.shape), spec.dtype,
                     f"Use the {settings} they were collected with (segment_length={shape[0]}).")

    def run_start(self) -> RunStart:
        """Where the interface's numbering continues: past every clip id and label the run has."""
        return RunStart(max(self.buffer.segment_ids, default=-1) + 1, self.buffer.n_received)

    # -- while the run goes on ---------------------------------------------------------
    def start_receiving(self) -> None:
        """Take labels from the interface from now on (without an interface: there are none to take)."""
        if self.config.collect_prefs:
            self.receiver.start()
        else:
            self.receiver.done.set()

    def check(self) -> None:
        """Raise if the receiver thread failed."""
        if self.receiver.error:
            raise RuntimeError(f"preference receiver thread failed:\n{self.receiver.error}")

    @property
    def n_labels(self) -> int:
        """Labels held for training and validation."""
        return len(self.buffer.train_db) + len(self.buffer.val_db)

    def maybe_count_bytes(self) -> None:
        # About a millisecond for a full database: once a second is plenty for stats().
        if time.monotonic() >= self._next_byte_count:
            self._next_byte_count = time.monotonic() + 1.0
            with self.lock:
                self.stats.db_bytes.value = self.buffer.nbytes

    def maybe_snapshot(self) -> None:
        n_unsaved = self.receiver.n_unsaved
        if not self.journaling or not n_unsaved:
            return
        n_older = self.n_labels - n_unsaved
        journal_as_large = n_unsaved >= max(MIN_LABELS_PER_SNAPSHOT, n_older)
        interval_passed = self.config.autosave_interval and time.monotonic() >= self._next_autosave
        if not (journal_as_large or interval_passed):
            return
        start = time.monotonic()
        self.save(self.config.log_dir)
        # Large databases take long to write: keep saving to at most ~10 % of the time.
        took = time.monotonic() - start
        self._next_autosave = time.monotonic() + max(self.config.autosave_interval or 0, 10 * took)
        log.info("wrote a snapshot of %d labels to %s in %.1f s", self.buffer.n_received, self.config.log_dir, took)

    def save(self, directory: str) -> PrefsSaved:
        """Write the snapshot (``train.pkl.gz``, ``val.pkl.gz``) into ``directory``."""
        with self.lock:
            n_unsaved = self.receiver.n_unsaved
            paths = self.buffer.save(directory)
            if same_dir(directory, self.config.log_dir):
                self.receiver.n_unsaved -= n_unsaved
                self.stats.labels_in_snapshot.value = self.buffer.n_received  # the journal may drop these now
            return PrefsSaved(paths, len(self.buffer.train_db), len(self.buffer.val_db))

    def save_unsaved(self) -> None:
        """On close: the labels not in a snapshot yet go into one."""
        n_unsaved = self.receiver.n_unsaved
        if self.journaling and n_unsaved:
            self.save(self.config.log_dir)
            log.info("saved %d unsaved preferences to %s on close", n_unsaved, self.config.log_dir)


def same_dir(a: str | None, b: str) -> bool:
    return a is not None and os.path.realpath(a) == os.path.realpath(b)
