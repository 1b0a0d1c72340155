"""The reward-training process: owns the preference database, trains, writes checkpoints.

Its labels -- loaded at start, received from the interface by a thread, written as
snapshots -- are ``drlhp.reward.label_intake``'s job. The main thread trains on
minibatches, answers ``SavePrefs`` commands between steps, and checkpoints atomically.
With ``train_reward=False`` it only collects, so ``save_prefs()`` works while nothing
trains. At start it tells the interface where numbering continues.
"""
from __future__ import annotations

import logging
import multiprocessing
import os
import queue
import time
import traceback
from dataclasses import dataclass
from typing import Callable

import numpy as np

from drlhp.clips.frames import FrameSpec
from drlhp.config import PreferenceConfig, worker_settings
from drlhp.errors import WorkerError
from drlhp.labels.pref_db import PrefDBFormatError
from drlhp.reward.augment import Augmentation
from drlhp.reward.bootstrap import member_batches
from drlhp.reward.label_intake import LabelIntake
from drlhp.reward.normaliser import MIN_STD, RewardNormaliser
from drlhp.reward.predictor import NetConfig, RewardPredictor, check_checkpoint_frames
from drlhp.reward.tensorboard_log import ScalarLog
from drlhp.reward.torch_setup import set_up_torch
from drlhp.reward.trainer import RewardTrainer, adapted_l2
from drlhp.runtime.messages import RunStart, SavePrefs, TrainerFailed, TrainerReady
from drlhp.storage.files import append_csv_row
from drlhp.storage.layout import LogDir
from drlhp.storage.lock import LogDirInUseError, LogDirLock
from drlhp.storage.run_dir import LogDirHasLabelsError, set_aside_earlier_logs

log = logging.getLogger("drlhp.trainer")

#: Errors in what the user asked for at start: raised as themselves in the main process.
STARTUP_ERRORS = (LogDirHasLabelsError, PrefDBFormatError, FileNotFoundError, ValueError)
METRICS_COLUMNS = ("training_step", "wall_time_s", "labels", "labels_asked", "labels_remaining", "n_train_prefs",
                   "n_val_prefs", "train_loss", "train_accuracy", "val_loss", "val_accuracy", "l2_coefficient",
                   "pairs_per_second")


@dataclass(frozen=True)
class TrainerConfig:
    """Settings of the reward-training process (see the wrapper's docstring for each)."""

    net: NetConfig
    segment_length: int
    log_dir: str
    collect_prefs: bool
    train_reward: bool
    prefs_dir: str | None = None
    pretrained_ckpt: str | None = None
    max_prefs_in_db: int = 3000
    val_fraction: float = 0.2
    n_initial_prefs: int = 40
    n_initial_training_steps: int = 50
    ckpt_interval: int = 100
    batch_size: int = 8
    lr: float = 1e-3
    noise_prob: float = 0.1
    weight_decay: float = 1e-4
    adaptive_l2: bool = True
    reward_scale: float = 0.05
    n_val_pairs: int = 128
    n_normaliser_segments: int = 32
    torch_threads: int | None = 1
    seed: int | None = None
    autosave_prefs: bool = True
    autosave_interval: float | None = None  # seconds; None: snapshots only as the journal grows, and at the end
    resume: bool = False
    tensorboard_log: str | None = None  # a directory for TensorBoard runs (None: none)
    label_budget: int | None = None  # only reported: the interface keeps to it
    augmentation: Augmentation = Augmentation()

    @property
    def files(self) -> LogDir:
        return LogDir(self.log_dir)

    @classmethod
    def from_preference_config(cls, config: PreferenceConfig, frame_spec: FrameSpec,
                               pretrained_ckpt: str | None) -> TrainerConfig:
        """The trainer's settings in a run with ``config`` on frames of ``frame_spec``."""
        net = NetConfig(frame_spec, config.reward_predictor_dropout, config.reward_predictor_batchnorm,
                        n_members=config.ensemble_size, arch=config.reward_net_arch)
        return worker_settings(cls, config, _TRAINER_SETTINGS, net=net, pretrained_ckpt=pretrained_ckpt,
                               label_budget=config.label_budget if config.collect_prefs else None)


#: ``TrainerConfig``'s fields named otherwise in ``PreferenceConfig`` (the others have the same name there).
_TRAINER_SETTINGS = {"ckpt_interval": "reward_predictor_ckpt_interval", "batch_size": "reward_predictor_batch_size",
                     "lr": "reward_predictor_lr", "weight_decay": "reward_predictor_weight_decay",
                     "torch_threads": "trainer_torch_threads", "autosave_interval": "prefs_autosave_interval"}


class RewardTrainingLoop:
    """The trainer process's main thread; ``run()`` returns when asked to stop."""

    def __init__(self, config: TrainerConfig, pref_queue, commands, replies, stop_event, stats) -> None:
        self.config, self.commands, self.replies = config, commands, replies
        self.stop_event, self.stats = stop_event, stats
        self.rng = np.random.default_rng(config.seed)
        self.labels = LabelIntake(config, pref_queue, stats)
        self.buffer, self.lock = self.labels.buffer, self.labels.lock  # what the training steps read
        self.trainer = self._load_trainer()
        self._ckpt_step = stats.training_steps.value = self.step
        if not config.resume:
            for path in set_aside_earlier_logs(config.log_dir):
                log.info("a new run in %s: the earlier run's log is now %s", config.log_dir, path)
        self.metrics_path = config.files.metrics
        self.max_steps: int | None = None  # offline training (``drlhp train-reward``) stops here
        self.on_step: Callable[[int], None] | None = None  # called after each training step
        self.last_metrics: dict | None = None  # the last row written to the metrics CSV
        self.scalars = ScalarLog(config.tensorboard_log) if config.tensorboard_log else None
        self._recent: dict[str, list[float]] = {"loss": [], "accuracy": []}
        self._pairs_trained = 0
        self._warned_flat = False
        self._rate_clock = time.monotonic()
        self._start = time.monotonic()

    # -- start ---------------------------------------------------------------------
    def _load_trainer(self) -> RewardTrainer:
        """The reward network to train: the run's own checkpoint (resume), a pretrained one, or a new one."""
        c = self.config
        own = c.resume and os.path.exists(c.files.checkpoint)
        ckpt = c.files.checkpoint if own else c.pretrained_ckpt
        predictor = RewardPredictor.load(ckpt) if ckpt else RewardPredictor(c.net)
        check_checkpoint_frames(predictor, c.net.frame_spec, ckpt)
        trainer = RewardTrainer(predictor, c.lr, c.noise_prob, c.weight_decay, augmentation=c.augmentation,
                                seed=c.seed)
        if own and trainer.load_state(c.files.trainer_state):
            log.info("resumed the reward network at training step %d, with its optimiser state",
                     predictor.training_step)
        return trainer

    @property
    def step(self) -> int:
        return self.trainer.predictor.training_step

    def run_start(self) -> RunStart:
        """Where the interface's numbering continues: past every clip id and label the run has."""
        return self.labels.run_start()

    def run(self) -> None:
        self.labels.start_receiving()
        stop_deadline = None
        try:
            while not self.labels.receiver.done.is_set() or not self.stop_event.is_set():
                if self.stop_event.is_set():
                    # The interface sends an end marker when it stops; if it died without
                    # one, stop anyway (and save what arrived) after a short wait.
                    stop_deadline = stop_deadline or time.monotonic() + 5.0
                    if time.monotonic() > stop_deadline:
                        break
                self.labels.check()
                can_train = (self.config.train_reward and len(self.buffer.train_db) > 0
                             and self.labels.n_labels >= self.config.n_initial_prefs)
                self._serve_command(timeout=0.0 if can_train else 0.05)
                if can_train:
                    self._train_step()
                self.labels.maybe_snapshot()
                self.labels.maybe_count_bytes()
        finally:
            self.labels.save_unsaved()
        self.labels.check()
        if self.scalars is not None:
            self.scalars.close()
        if self.step > self._ckpt_step:  # so that a resumed run continues from the last step, not the last checkpoint
            self._checkpoint(log_metrics=False)  # validation would only slow close() down

    def _serve_command(self, timeout: float) -> None:
        try:
            cmd = self.commands.get(timeout=timeout) if timeout else self.commands.get_nowait()
        except queue.Empty:
            return
        if isinstance(cmd, SavePrefs):
            try:
                self.replies.put(self.labels.save(cmd.directory))
            except Exception:
                self.replies.put(TrainerFailed(WorkerError(
                    f"drlhp's reward_trainer process could not save the labels:\n{traceback.format_exc()}")))

    def _sample(self, db, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """A training batch: each ensemble member's ``n`` pairs from its bootstrap resample of ``db``."""
        with self.lock:
            idx = member_batches(db.prefs, self.trainer.n_members, n, self.rng, self.config.seed or 0)
            frames_a, frames_b, labels = db.batch(idx.ravel())
        shape = idx.shape
        return frames_a.reshape(*shape, *frames_a.shape[1:]), frames_b.reshape(*shape, *frames_b.shape[1:]), \
            labels.reshape(shape)

    def _unlabelled(self, n: int):
        """For pseudo-labels: each member's ``n`` new pairings of the training clips, ``(M, n, length, ...)`` each."""
        if self.config.augmentation.pseudo_label_threshold is None:
            return None
        with self.lock:
            segments = list(self.buffer.train_db.segments.values())
            pick = self.rng.integers(0, len(segments), size=(self.trainer.n_members, n, 2))
            unpacked = {i: segments[i].frames for i in np.unique(pick)}
        frames = np.stack([unpacked[i] for i in pick.ravel()]).reshape(*pick.shape, *unpacked[pick.flat[0]].shape)
        return frames[:, :, 0], frames[:, :, 1]

    def _pick(self, db, n: int) -> np.ndarray:
        return self.rng.integers(0, len(db), size=n) if len(db) > n else np.arange(len(db))

    def _batches(self, db, n: int):
        """``n`` random pairs of ``db``, unpacked a training batch at a time (bounded memory)."""
        idx, size = self._pick(db, n), self.config.batch_size
        for i in range(0, len(idx), size):
            with self.lock:
                batch = db.batch(idx[i:i + size])
            yield batch

    def _train_step(self) -> None:
        batch = self.config.batch_size
        loss, acc = self.trainer.train_step(*self._sample(self.buffer.train_db, batch), self._unlabelled(batch))
        self._recent["loss"].append(loss)
        self._recent["accuracy"].append(acc)
        self._pairs_trained += self.config.batch_size
        self.stats.training_steps.value = self.step
        if self.step % self.config.ckpt_interval == 0 or self.step == self.config.n_initial_training_steps:
            self._checkpoint()
        if self.on_step is not None:
            self.on_step(self.step)
        if self.max_steps is not None and self.step >= self.max_steps:
            if self._ckpt_step != self.step:
                self._checkpoint()
            self.stop_event.set()

    def _checkpoint(self, log_metrics: bool = True) -> None:
        predictor = self.trainer.predictor
        with self.lock:
            seg_ids = list(self.buffer.train_db.segments)
            pick = self.rng.choice(len(seg_ids), min(len(seg_ids), self.config.n_normaliser_segments), replace=False)
            frames = np.concatenate([self.buffer.train_db.segments[seg_ids[i]].frames for i in pick])
        # Zero mean and fixed std over frames of recent behaviour, so the RL agent
        # sees rewards of a stable scale as the network changes.
        raw = predictor.member_rewards(frames)
        predictor.normaliser = RewardNormaliser.fit(raw, self.config.reward_scale)
        self._warn_if_flat(raw.std(axis=0))
        predictor.save(self.config.files.checkpoint)
        self.trainer.save_state(self.config.files.trainer_state)
        self._ckpt_step = self.step
        if log_metrics:
            self._log_metrics()

    def _warn_if_flat(self, member_stds: np.ndarray) -> None:
        """Say so (once) when a member's output hardly varies over recent frames: it rewards nothing."""
        if self._warned_flat or member_stds.min() >= MIN_STD:
            return
        self._warned_flat = True
        log.warning("the reward network's output hardly varies over recent clips (std %.1g at training step %d): "
                    "its units have probably died, so it adds nothing to the agent's reward (0 if no ensemble member "
                    "varies). On frames with a large flat background (Atari) train it with "
                    "reward_predictor_batchnorm=True.", member_stds.min(), self.step)

    def _adapt_l2(self, val_loss: float) -> None:
        """Keep validation loss 1.1-1.5x training loss (both without dropout) by scaling the L2 penalty."""
        train_loss, _ = self.trainer.evaluate(self._batches(self.buffer.train_db, self.config.n_val_pairs))
        self.trainer.weight_decay = adapted_l2(self.trainer.weight_decay, val_loss, train_loss)

    def _log_metrics(self) -> None:
        val_loss = val_acc = float("nan")
        if len(self.buffer.val_db):
            val_loss, val_acc = self.trainer.evaluate(self._batches(self.buffer.val_db, self.config.n_val_pairs))
            if self.config.adaptive_l2:
                self._adapt_l2(val_loss)
        now, budget, asked = time.monotonic(), self.config.label_budget, self.stats.labels_asked.value
        row = {
            "training_step": self.step,
            "wall_time_s": round(now - self._start, 3),
            "labels": self.buffer.n_received,
            "labels_asked": asked,
            "labels_remaining": float("nan") if budget is None else max(0, budget - asked),
            "n_train_prefs": len(self.buffer.train_db),
            "n_val_prefs": len(self.buffer.val_db),
            "train_loss": float(np.mean(self._recent["loss"])),
            "train_accuracy": _mean_ignoring_nan(self._recent["accuracy"]),
            "val_loss": val_loss,
            "val_accuracy": val_acc,
            "l2_coefficient": self.trainer.weight_decay,
            "pairs_per_second": self._pairs_trained / max(now - self._rate_clock, 1e-9),
        }
        self._recent = {"loss": [], "accuracy": []}
        self._pairs_trained, self._rate_clock = 0, now
        append_csv_row(self.metrics_path, METRICS_COLUMNS, row)
        self.last_metrics = row
        if self.scalars is not None:
            normaliser = self.trainer.predictor.normaliser
            self.scalars.add(self.step, {
                "reward/train_loss": row["train_loss"], "reward/train_accuracy": row["train_accuracy"],
                "reward/val_loss": val_loss, "reward/val_accuracy": val_acc,
                "reward/pairs_per_second": row["pairs_per_second"], "reward/labels": self.buffer.n_received,
                "reward/labels_asked": row["labels_asked"],
                "reward/prefs_in_db": row["n_train_prefs"] + row["n_val_prefs"],
                "reward/l2_coefficient": self.trainer.weight_decay,
                "reward/raw_reward_mean": float(np.mean(normaliser.mean)),
                "reward/raw_reward_std": float(np.mean(normaliser.std))})
        log.info("reward step %d: train loss %.4f acc %.3f | val loss %.4f acc %.3f | %d/%d prefs | L2 %.2g | "
                 "%.0f pairs/s", row["training_step"], row["train_loss"], row["train_accuracy"], val_loss, val_acc,
                 row["n_train_prefs"], row["n_val_prefs"], row["l2_coefficient"], row["pairs_per_second"])


def _mean_ignoring_nan(values: list) -> float:
    """Batches of only tie labels have no accuracy (NaN); average the others."""
    kept = [v for v in values if not np.isnan(v)]
    return float(np.mean(kept)) if kept else float("nan")


def run_reward_trainer(config: TrainerConfig, pref_queue, run_start, commands, replies, stop_event, stats) -> None:
    """Process main of the reward-training process."""
    try:  # held until this process ends: after the run's last save, even if the main program crashed
        parent = multiprocessing.parent_process()
        assert parent is not None and parent.pid is not None  # a worker process: the program started it
        LogDirLock(config.log_dir).acquire(parent.pid)
    except LogDirInUseError as e:
        replies.put(TrainerFailed(e))
        stop_event.wait()  # the main process raises the error and stops us
        return
    set_up_torch(config.torch_threads, config.seed)
    try:
        loop = RewardTrainingLoop(config, pref_queue, commands, replies, stop_event, stats)
    except STARTUP_ERRORS as e:
        replies.put(TrainerFailed(e))
        stop_event.wait()
        return
    if config.collect_prefs:
        run_start.put(loop.run_start())
    replies.put(TrainerReady(len(loop.buffer.train_db), len(loop.buffer.val_db), loop.buffer.n_received, loop.step))
    loop.run()
