"""Reward training and evaluation on saved preferences, without an env (``drlhp train-reward``, ``eval-reward``).

Training runs the wrapper's own training loop (``RewardTrainingLoop``) in this
process: the same minibatches, checkpoints, normaliser, validation and metrics
CSV, so a checkpoint written here is what ``pretrained_reward_predictor_dir``
loads, and the figures compare one to one with a wrapper's run.
"""
from __future__ import annotations

import math
import multiprocessing
import os
import queue
import threading
from dataclasses import dataclass
from typing import Callable, cast

import numpy as np

from drlhp.clips.frames import check_format, infer_frame_spec
from drlhp.labels.pref_db import PrefBuffer, clip_format
from drlhp.reward.predictor import (
    DEFAULT_ARCH,
    DEFAULT_ENSEMBLE_SIZE,
    DEFAULT_KEYPOINT_TEMPERATURE,
    NetConfig,
    RewardPredictor,
)
from drlhp.reward.tensorboard_log import require_tensorboard
from drlhp.reward.torch_setup import set_up_torch
from drlhp.reward.trainer import RewardTrainer
from drlhp.reward.training_loop import RewardTrainingLoop, TrainerConfig
from drlhp.runtime.workers import SharedStats
from drlhp.storage.layout import LogDir, checkpoint_path
from drlhp.storage.lock import LogDirLock


def train_reward(prefs_dir: str, log_dir: str, steps: int | None = None, epochs: float | None = None,
                 on_step: Callable[[int, int], None] | None = None, **settings) -> dict:
    """Train a reward network on the labels in ``prefs_dir``; checkpoints and metrics go to ``log_dir``.

    ``steps`` training steps, or ``epochs`` passes over the training pairs (one of them).
    ``settings``: ``TrainerConfig`` fields (``batch_size``, ``lr``, ``ckpt_interval``, ``seed``,
    ``val_fraction``, ...) and the network's ``dropout`` / ``batchnorm`` / ``arch`` /
    ``keypoint_temperature``. ``on_step(step, total)`` reports progress. Returns the last metrics row.
    """
    if (steps is None) == (epochs is None):
        raise ValueError("give either steps or epochs")
    shape, dtype = clip_format(prefs_dir)
    net = NetConfig(infer_frame_spec(np.zeros(shape[1:], dtype)), settings.pop("dropout", 0.2),
                    settings.pop("batchnorm", False), n_members=settings.pop("ensemble_size", DEFAULT_ENSEMBLE_SIZE),
                    arch=settings.pop("arch", DEFAULT_ARCH),
                    keypoint_temperature=settings.pop("keypoint_temperature", DEFAULT_KEYPOINT_TEMPERATURE))
    settings.setdefault("n_initial_prefs", 1)
    if settings.get("tensorboard_log"):
        require_tensorboard()
    settings.setdefault("torch_threads", None)  # this process: all its cores unless told
    config = TrainerConfig(net=net, segment_length=shape[0], log_dir=log_dir, collect_prefs=False, train_reward=True,
                           prefs_dir=prefs_dir, **settings)
    set_up_torch(config.torch_threads)
    lock = LogDirLock(log_dir)
    lock.acquire(os.getpid())
    try:
        stats = SharedStats(multiprocessing.get_context())
        loop = RewardTrainingLoop(config, None, queue.Queue(), queue.Queue(), threading.Event(), stats)
        n_train = len(loop.buffer.train_db)
        if n_train == 0:
            raise ValueError(f"{prefs_dir!r} has no training pairs")
        if steps is not None:
            total = steps
        else:
            assert epochs is not None  # checked above: one of steps and epochs is given
            total = math.ceil(epochs * n_train / config.batch_size)
        loop.max_steps = loop.step + total
        if on_step is not None:
            start = loop.step
            loop.on_step = lambda step: on_step(step - start, total)
        loop.run()
        # run() stops after a training step at max_steps, with a checkpoint that writes a metrics row.
        return cast(dict, loop.last_metrics)
    finally:
        lock.release()


@dataclass(frozen=True)
class RewardEvaluation:
    n_pairs: int
    loss: float
    accuracy: float  # on strict labels; ties left out
    spearman: float  # per-frame predicted vs true reward; NaN when the clips carry no true reward


def evaluate_reward(checkpoint: str, prefs_dir: str, split: str = "val", batch_size: int = 16,
                    on_progress: Callable[[int, int], None] | None = None) -> RewardEvaluation:
    """How well the checkpoint's network agrees with the labels (and true rewards) of ``prefs_dir``.

    ``on_progress(done, total)`` counts pairs evaluated, then clips scored.
    """
    if os.path.isdir(LogDir(checkpoint).checkpoint_dir):  # a log_dir
        checkpoint = LogDir(checkpoint).checkpoint_dir
    path = checkpoint_path(checkpoint)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"no checkpoint at {path}: pass a reward_predictor.ckpt, the directory holding it, "
                                "or the log_dir of a run that trained one")
    predictor = RewardPredictor.load(path)
    buffer = PrefBuffer.load_all(prefs_dir)
    dbs = {"train": [buffer.train_db], "val": [buffer.val_db], "all": [buffer.train_db, buffer.val_db]}[split]
    shape, dtype = clip_format(prefs_dir)
    spec = predictor.config.frame_spec
    check_format(f"The reward network of checkpoint {path} takes frames", spec.shape, spec.dtype,
                 f"the clips in {prefs_dir!r} have frames", shape[1:], dtype,
                 "Evaluate it on labels of the env and obs_transform_func it was trained with.")
    n_pairs = sum(len(db) for db in dbs)
    if n_pairs == 0:
        raise ValueError(f"{prefs_dir!r} has no {split} pairs")

    clips = [seg for db in dbs for seg in db.segments.values()]
    total, report = n_pairs + len(clips), on_progress or (lambda done, total: None)

    def batches():
        done = 0
        for db in dbs:
            for i in range(0, len(db), batch_size):
                yield db.batch(np.arange(i, min(i + batch_size, len(db))))
                done += min(batch_size, len(db) - i)
                report(done, total)

    loss, accuracy = RewardTrainer(predictor).evaluate(batches())
    predicted, true = [], []
    for k, seg in enumerate(clips):
        predicted.append(predictor.normalised_rewards(seg.frames))
        true.append(seg.rewards)
        report(n_pairs + k + 1, total)
    return RewardEvaluation(n_pairs, loss, accuracy, spearman(np.concatenate(predicted), np.concatenate(true)))


def spearman(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman's rank correlation (ties get their average rank); NaN if either side is constant."""
    rx, ry = _ranks(x), _ranks(y)
    if rx.std() == 0 or ry.std() == 0:
        return float("nan")
    return float(np.corrcoef(rx, ry)[0, 1])


def _ranks(x: np.ndarray) -> np.ndarray:
    order = np.argsort(x, kind="mergesort")
    ranks = np.empty(len(x))
    ranks[order] = np.arange(len(x))
    _, groups, counts = np.unique(x, return_inverse=True, return_counts=True)
    return (np.bincount(groups, ranks) / counts)[groups]
