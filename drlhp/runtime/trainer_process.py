"""The reward-training process: a thin loop around the label store and the learner.

It holds the log_dir's lock for as long as it runs, loads what the run starts from, tells the
interface where numbering continues and the main process that it is ready. Then, until asked to
stop: labels arriving from the interface go into the store (a thread takes them off the queue the
moment they come, so the interface never waits on a training step), ``SaveLabels`` commands are
answered, the learner takes a training step once there are enough labels (with
``training_steps_per_label``, until it has taken that many per label), and the store snapshots as
its labels grow. With ``train_reward=False`` it only collects, so ``save_prefs()`` works while
nothing trains. On stop it saves the labels not in a snapshot and checkpoints the last steps.
"""
from __future__ import annotations

import logging
import multiprocessing
import os
import queue
import threading
import time
import traceback

from drlhp.errors import DrlhpError, LogDirInUseError, WorkerError, WriteError
from drlhp.label_store.store import LabelStore
from drlhp.label_store.stream import LabelRecord, Preference
from drlhp.labelling.schedule import labels_remaining
from drlhp.reward.learner import Evaluation, Learner
from drlhp.reward.metrics import MetricsLog
from drlhp.reward.torch_setup import set_up_torch
from drlhp.runtime.messages import LabelsSaved, RunStart, SaveLabels, TrainerFailed, TrainerReady
from drlhp.runtime.settings import TrainerConfig
from drlhp.runtime.shared import SharedStats, StopFlag
from drlhp.storage.files import write_error
from drlhp.storage.layout import LogDir
from drlhp.storage.lock import LogDirLock
from drlhp.storage.run_dir import set_aside_earlier_logs

log = logging.getLogger("drlhp.trainer")

#: Errors in what the user asked for at start (drlhp's own, each naming the fix): raised as themselves in the
#: main process. Any other exception is a failure of the process, reported as a ``WorkerError`` with its traceback.
STARTUP_ERRORS = (DrlhpError,)
#: Seconds the trainer waits, once asked to stop, for the interface's end marker (it may have died without one).
END_MARKER_WAIT_S = 5.0


def run_reward_trainer(config: TrainerConfig, label_queue, run_start, commands, replies, stop: StopFlag,
                       stats: SharedStats) -> None:
    """Process main of the reward-training process."""
    try:  # held until this process ends: after the run's last save, even if the main program crashed
        parent = multiprocessing.parent_process()
        assert parent is not None and parent.pid is not None  # a worker process: the program started it
        LogDirLock(config.log_dir).acquire(parent.pid)
    except (LogDirInUseError, WriteError) as e:
        replies.put(TrainerFailed(e))
        stop.wait()  # the main process raises the error and stops us
        return
    set_up_torch(config.trainer_torch_threads, config.seed)
    try:
        trainer = TrainerProcess(config, label_queue, commands, replies, stop, stats)
    except STARTUP_ERRORS as e:
        replies.put(TrainerFailed(e))
        stop.wait()
        return
    store = trainer.store
    if config.collect_prefs:
        run_start.put(RunStart(store.next_clip_id, store.next_seq, len(store.buffer.retracted), store.agreement))
    replies.put(TrainerReady(len(store.buffer.train_db), len(store.buffer.val_db), store.buffer.n_received,
                             trainer.learner.step))
    trainer.run()


def pause_step(steps_per_label: int, n_labels: int, steps_brought: int, ckpt_interval: int) -> int:
    """The training step at which a trainer with ``training_steps_per_label`` waits for more labels:
    ``steps_per_label`` for each of the run's ``n_labels``, after the ``steps_brought`` a network started from
    had, rounded up to a checkpoint (the run's reward is then the network as trained)."""
    return -(-(steps_brought + steps_per_label * n_labels) // ckpt_interval) * ckpt_interval


class LabelReceiver(threading.Thread):
    """Moves the interface's label records off the process queue into ``arrived`` as they come; ends at the
    ``None`` end marker."""

    def __init__(self, label_queue) -> None:
        super().__init__(name="drlhp-label-receiver", daemon=True)
        self.label_queue = label_queue
        self.arrived: queue.SimpleQueue[LabelRecord] = queue.SimpleQueue()
        self.done = threading.Event()
        self.error: str | None = None

    def run(self) -> None:
        try:
            while (record := self.label_queue.get()) is not None:
                self.arrived.put(record)
        except BaseException:
            self.error = traceback.format_exc()
        finally:
            self.done.set()


class TrainerProcess:
    """The trainer process's main thread; ``run()`` returns when asked to stop."""

    def __init__(self, config: TrainerConfig, label_queue, commands, replies, stop: StopFlag,
                 stats: SharedStats) -> None:
        self.config, self.commands, self.replies, self.stop, self.stats = config, commands, replies, stop, stats
        self.store = LabelStore(config.labels)
        self.learner = Learner(config.learner, config.log_dir, config.pretrained_ckpt, config.resume)
        if not config.resume:
            for path in set_aside_earlier_logs(config.log_dir):
                log.info("a new run in %s: the earlier run's log is now %s", config.log_dir, path)
        self.metrics = MetricsLog(LogDir(config.log_dir).metrics, config.tensorboard_log)
        self.receiver = LabelReceiver(label_queue)
        self._next_byte_count = 0.0
        # Steps the network came with beyond what its labels pay for (a pretrained network's): not the run's own.
        per_label = config.training_steps_per_label
        self._steps_brought = 0 if per_label is None else max(0, self.learner.step - pause_step(
            per_label, self.store.buffer.n_labels, 0, config.learner.ckpt_interval))
        stats.labels_in_snapshot.value = self.store.buffer.n_received
        stats.run_labels.value = self.store.buffer.n_labels
        stats.training_steps.value = self.learner.step

    def run(self) -> None:
        if self.config.collect_prefs:
            self.receiver.start()
        else:
            self.receiver.done.set()  # without an interface there are no labels to take
        stop_deadline = None
        try:
            while not (self.stop.is_set() and self.receiver.done.is_set() and self.receiver.arrived.empty()):
                if self.stop.is_set():
                    # The interface sends an end marker when it stops; if it died without one, stop anyway
                    # (and save what arrived) after a short wait.
                    stop_deadline = stop_deadline or time.monotonic() + END_MARKER_WAIT_S
                    if time.monotonic() > stop_deadline:
                        break
                self._take_labels()
                self._serve_command(timeout=0.0 if self._can_train else 0.05)
                if self._can_train:
                    self._train_step()
                if self.store.snapshot_if_due():
                    self.stats.labels_in_snapshot.value = self.store.n_in_snapshot
                self._count_bytes()
        finally:
            self._take_labels()
            self.store.save_unsaved()
            self.stats.labels_in_snapshot.value = self.store.n_in_snapshot
        self._check_receiver()
        self.metrics.close()
        if not self.learner.checkpointed:  # a resumed run continues from the last step, not the last checkpoint
            # Not evaluated: validation would only slow close() down.
            self.learner.checkpoint(self.store.buffer.train_db, self.store.buffer.val_db, evaluate=False)

    def _take_labels(self) -> None:
        """Put the label records that arrived into the store."""
        self._check_receiver()
        n_labels = 0
        while not self.receiver.arrived.empty():
            record = self.receiver.arrived.get()
            self.store.add(record)
            n_labels += isinstance(record, Preference)
        self.stats.labels_received.value += n_labels
        self.stats.run_labels.value = self.store.buffer.n_labels

    def _check_receiver(self) -> None:
        if self.receiver.error:
            raise RuntimeError(f"label receiver thread failed:\n{self.receiver.error}")

    @property
    def _can_train(self) -> bool:
        per_label = self.config.training_steps_per_label
        return (self.config.train_reward and len(self.store.buffer.train_db) > 0
                and self.store.n_labels >= self.config.n_initial_prefs
                and (per_label is None or self.learner.step < pause_step(
                    per_label, self.store.buffer.n_labels, self._steps_brought,
                    self.config.learner.ckpt_interval)))

    def _train_step(self) -> None:
        for evaluation in self.learner.train(1, self.store.buffer.train_db, self.store.buffer.val_db,
                                             on_step=self._publish_step):
            self._log(evaluation)

    def _publish_step(self, step: int) -> None:
        self.stats.training_steps.value = step  # before a checkpoint: stats() counts the steps taken

    def _log(self, evaluation: Evaluation) -> None:
        asked = self.stats.pairs_asked.value
        self.metrics.write(evaluation, self.store.buffer.n_labels, asked,
                           labels_remaining(self.config.label_budget, asked), len(self.store.buffer.retracted),
                           self.store.agreement)

    def _serve_command(self, timeout: float) -> None:
        try:
            cmd = self.commands.get(timeout=timeout) if timeout else self.commands.get_nowait()
        except queue.Empty:
            return
        if isinstance(cmd, SaveLabels):
            try:
                paths = self.store.save(cmd.directory)
                self.stats.labels_in_snapshot.value = self.store.n_in_snapshot
                self.replies.put(LabelsSaved(paths, len(self.store.buffer.train_db), len(self.store.buffer.val_db)))
            except WriteError as e:  # the run goes on: its labels are where they were
                assert isinstance(e.__cause__, OSError)
                then = "then call save_prefs() again: the run goes on, and has lost nothing."
                names = " and ".join(os.path.abspath(path) for path in LogDir(cmd.directory).snapshot)
                self.replies.put(TrainerFailed(write_error(names, e.__cause__, then) or e))
            except Exception:
                self.replies.put(TrainerFailed(WorkerError(
                    f"drlhp's reward_trainer process could not save the labels:\n{traceback.format_exc()}")))

    def _count_bytes(self) -> None:
        # Summing a full database's clips takes a moment: once a second is plenty for stats().
        if time.monotonic() >= self._next_byte_count:
            self._next_byte_count = time.monotonic() + 1.0
            self.stats.db_bytes.value = self.store.buffer.nbytes
