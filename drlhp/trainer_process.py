"""The reward-training process: owns the preference database, trains, writes checkpoints.

A receiver thread moves labels from the preference interface into the
``PrefBuffer`` the moment they arrive (so the interface never waits on a
training step); the main thread trains on minibatches, answers ``SavePrefs``
commands between steps, and checkpoints atomically. With ``train_reward=False``
it only collects, so ``save_prefs()`` works while nothing trains.
"""
from __future__ import annotations

import logging
import multiprocessing
import os
import queue
import threading
import time
import traceback
from dataclasses import dataclass
from typing import Dict, Optional

import numpy as np
import torch

from drlhp.files import append_csv_row
from drlhp.log_dir_lock import LogDirInUseError, LogDirLock
from drlhp.messages import ForgetSegment, Preference, SavePrefs, SegmentData
from drlhp.normaliser import RewardNormaliser
from drlhp.pref_db import PrefBuffer
from drlhp.reward_predictor import CHECKPOINT_DIRNAME, CHECKPOINT_FILENAME, NetConfig, RewardPredictor
from drlhp.reward_trainer import RewardTrainer
from drlhp.segments import PackedSegment, Segment, pack

log = logging.getLogger("drlhp.trainer")

METRICS_FILENAME = "reward_training_metrics.csv"
METRICS_COLUMNS = ("training_step", "wall_time_s", "n_train_prefs", "n_val_prefs", "train_loss",
                   "train_accuracy", "val_loss", "val_accuracy", "pairs_per_second")


@dataclass(frozen=True)
class TrainerConfig:
    """Settings of the reward-training process (see the wrapper's docstring for each)."""

    net: NetConfig
    log_dir: str
    collect_prefs: bool
    train_reward: bool
    prefs_dir: Optional[str] = None
    pretrained_ckpt: Optional[str] = None
    max_prefs_in_db: int = 3000
    val_fraction: float = 0.2
    n_initial_prefs: int = 40
    n_initial_training_steps: int = 50
    ckpt_interval: int = 100
    batch_size: int = 16
    lr: float = 3e-4
    noise_prob: float = 0.0
    weight_decay: float = 0.0
    reward_scale: float = 0.05
    n_val_pairs: int = 128
    n_normaliser_segments: int = 32
    torch_threads: Optional[int] = 1
    seed: Optional[int] = None
    autosave_prefs: bool = True
    autosave_interval: Optional[float] = None  # seconds; None: save only on request and at the end

    @property
    def ckpt_path(self) -> str:
        return os.path.join(self.log_dir, CHECKPOINT_DIRNAME, CHECKPOINT_FILENAME)


class PrefReceiver(threading.Thread):
    """Moves interface messages into the buffer; stops at the ``None`` end marker."""

    def __init__(self, pref_queue, buffer: PrefBuffer, lock: threading.Lock, id_offset: int, stats) -> None:
        super().__init__(name="drlhp-pref-receiver", daemon=True)
        self.pref_queue, self.buffer, self.lock, self.stats = pref_queue, buffer, lock, stats
        self.id_offset = id_offset  # keeps new segment ids clear of those loaded from prefs_dir
        self.live: Dict[int, PackedSegment] = {}
        self.done = threading.Event()
        self.error: Optional[str] = None
        self.n_unsaved = 0

    def run(self) -> None:
        try:
            while (msg := self.pref_queue.get()) is not None:
                if isinstance(msg, SegmentData):
                    seg_id = msg.seg_id + self.id_offset
                    # Packed here, outside the lock, once for every pair and both sets it joins.
                    self.live[msg.seg_id] = pack(Segment(seg_id, msg.frames, msg.rewards))
                elif isinstance(msg, ForgetSegment):
                    del self.live[msg.seg_id]
                elif isinstance(msg, Preference):
                    with self.lock:
                        self.buffer.add(self.live[msg.seg_id_a], self.live[msg.seg_id_b], msg.label)
                        self.n_unsaved += 1
                    self.stats.prefs_received.value += 1
                else:
                    raise TypeError(f"unexpected message {type(msg).__name__}")
        except BaseException:
            self.error = traceback.format_exc()
        finally:
            self.done.set()


class RewardTrainingLoop:
    """The trainer process's main thread; ``run()`` returns when asked to stop."""

    def __init__(self, config: TrainerConfig, pref_queue, commands, replies, stop_event, stats) -> None:
        self.config, self.commands, self.replies, self.stop_event, self.stats = config, commands, replies, stop_event, stats
        self.rng = np.random.default_rng(config.seed)
        if config.prefs_dir:
            self.buffer = PrefBuffer.load(config.prefs_dir, config.max_prefs_in_db, config.val_fraction)
        else:
            self.buffer = PrefBuffer(config.max_prefs_in_db, config.val_fraction)
        self.lock = threading.Lock()
        loaded_ids = list(self.buffer.train_db.segments) + list(self.buffer.val_db.segments)
        self.receiver = PrefReceiver(pref_queue, self.buffer, self.lock, max(loaded_ids, default=-1) + 1, stats)
        predictor = RewardPredictor.load(config.pretrained_ckpt) if config.pretrained_ckpt else RewardPredictor(config.net)
        self.trainer = RewardTrainer(predictor, config.lr, config.noise_prob, config.weight_decay)
        self.metrics_path = os.path.join(config.log_dir, METRICS_FILENAME)
        self._recent = {"loss": [], "accuracy": []}
        self._pairs_trained = 0
        self._rate_clock = time.monotonic()
        self._start = time.monotonic()
        self._next_autosave = self._start + (config.autosave_interval or 0)
        self._next_byte_count = 0.0

    @property
    def step(self) -> int:
        return self.trainer.predictor.training_step

    def run(self) -> None:
        if self.config.collect_prefs:
            self.receiver.start()
        else:
            self.receiver.done.set()
        stop_deadline = None
        try:
            while not self.receiver.done.is_set() or not self.stop_event.is_set():
                if self.stop_event.is_set():
                    # The interface sends an end marker when it stops; if it died without
                    # one, stop anyway (and save what arrived) after a short wait.
                    stop_deadline = stop_deadline or time.monotonic() + 5.0
                    if time.monotonic() > stop_deadline:
                        break
                self._check_receiver()
                can_train = self.config.train_reward and len(self.buffer.train_db) >= self.config.n_initial_prefs
                self._serve_command(timeout=0.0 if can_train else 0.05)
                if can_train:
                    self._train_step()
                self._maybe_autosave()
                self._maybe_count_bytes()
        finally:
            n_unsaved = self.receiver.n_unsaved
            if self.config.collect_prefs and self.config.autosave_prefs and n_unsaved:
                self._save_prefs(self.config.log_dir)
                log.info("saved %d unsaved preferences to %s on close", n_unsaved, self.config.log_dir)
        self._check_receiver()

    def _check_receiver(self) -> None:
        if self.receiver.error:
            raise RuntimeError(f"preference receiver thread failed:\n{self.receiver.error}")

    def _maybe_count_bytes(self) -> None:
        # About a millisecond for a full database: once a second is plenty for stats().
        if time.monotonic() >= self._next_byte_count:
            self._next_byte_count = time.monotonic() + 1.0
            with self.lock:
                self.stats.db_bytes.value = self.buffer.nbytes

    def _maybe_autosave(self) -> None:
        if not self.config.autosave_interval or not self.receiver.n_unsaved or time.monotonic() < self._next_autosave:
            return
        start = time.monotonic()
        self._save_prefs(self.config.log_dir)
        # Large databases take long to write: keep saving to at most ~10 % of the time.
        took = time.monotonic() - start
        self._next_autosave = time.monotonic() + max(self.config.autosave_interval, 10 * took)
        log.info("autosaved preferences to %s in %.1f s", self.config.log_dir, took)

    def _serve_command(self, timeout: float) -> None:
        try:
            cmd = self.commands.get(timeout=timeout) if timeout else self.commands.get_nowait()
        except queue.Empty:
            return
        if isinstance(cmd, SavePrefs):
            try:
                self.replies.put(("ok", self._save_prefs(cmd.directory)))
            except Exception:
                self.replies.put(("error", traceback.format_exc()))

    def _save_prefs(self, directory: str) -> dict:
        with self.lock:
            n_unsaved = self.receiver.n_unsaved
            paths = self.buffer.save(directory)
            self.receiver.n_unsaved -= n_unsaved
            return {"paths": paths, "n_train": len(self.buffer.train_db), "n_val": len(self.buffer.val_db)}

    def _sample(self, db, n: int):
        with self.lock:
            idx = self.rng.integers(0, len(db), size=n) if len(db) > n else np.arange(len(db))
            return db.batch(idx)

    def _train_step(self) -> None:
        loss, acc = self.trainer.train_step(*self._sample(self.buffer.train_db, self.config.batch_size))
        self._recent["loss"].append(loss)
        self._recent["accuracy"].append(acc)
        self._pairs_trained += self.config.batch_size
        self.stats.training_steps.value = self.step
        if self.step % self.config.ckpt_interval == 0 or self.step == self.config.n_initial_training_steps:
            self._checkpoint()

    def _checkpoint(self) -> None:
        predictor = self.trainer.predictor
        with self.lock:
            seg_ids = list(self.buffer.train_db.segments)
            pick = self.rng.choice(len(seg_ids), min(len(seg_ids), self.config.n_normaliser_segments), replace=False)
            frames = np.concatenate([self.buffer.train_db.segments[seg_ids[i]].frames for i in pick])
        # Zero mean and fixed std over frames of recent behaviour, so the RL agent
        # sees rewards of a stable scale as the network changes.
        predictor.normaliser = RewardNormaliser.fit(predictor.raw_rewards(frames), self.config.reward_scale)
        predictor.save(self.config.ckpt_path)
        self._log_metrics()

    def _log_metrics(self) -> None:
        val_loss = val_acc = float("nan")
        if len(self.buffer.val_db):
            val_loss, val_acc = self.trainer.evaluate(*self._sample(self.buffer.val_db, self.config.n_val_pairs))
        now = time.monotonic()
        row = {
            "training_step": self.step,
            "wall_time_s": round(now - self._start, 3),
            "n_train_prefs": len(self.buffer.train_db),
            "n_val_prefs": len(self.buffer.val_db),
            "train_loss": float(np.mean(self._recent["loss"])),
            "train_accuracy": _mean_ignoring_nan(self._recent["accuracy"]),
            "val_loss": val_loss,
            "val_accuracy": val_acc,
            "pairs_per_second": self._pairs_trained / max(now - self._rate_clock, 1e-9),
        }
        self._recent = {"loss": [], "accuracy": []}
        self._pairs_trained, self._rate_clock = 0, now
        append_csv_row(self.metrics_path, METRICS_COLUMNS, row)
        log.info("reward step %d: train loss %.4f acc %.3f | val loss %.4f acc %.3f | %d/%d prefs | %.0f pairs/s",
                 row["training_step"], row["train_loss"], row["train_accuracy"], val_loss, val_acc,
                 row["n_train_prefs"], row["n_val_prefs"], row["pairs_per_second"])


def _mean_ignoring_nan(values: list) -> float:
    """Batches of only tie labels have no accuracy (NaN); average the others."""
    kept = [v for v in values if not np.isnan(v)]
    return float(np.mean(kept)) if kept else float("nan")


def run_reward_trainer(config: TrainerConfig, pref_queue, commands, replies, stop_event, stats) -> None:
    """Process main of the reward-training process."""
    try:  # held until this process ends: after the run's last save, even if the main program crashed
        LogDirLock(config.log_dir).acquire(multiprocessing.parent_process().pid)
    except LogDirInUseError as e:
        replies.put(("log_dir_in_use", str(e)))
        stop_event.wait()  # the main process raises the error and stops us
        return
    if config.torch_threads:
        torch.set_num_threads(config.torch_threads)
    if config.seed is not None:
        torch.manual_seed(config.seed)
    loop = RewardTrainingLoop(config, pref_queue, commands, replies, stop_event, stats)
    replies.put(("ready", {"n_train": len(loop.buffer.train_db), "n_val": len(loop.buffer.val_db)}))
    loop.run()
