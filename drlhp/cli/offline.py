"""Reward training and evaluation on saved preferences, without an env (``drlhp train-reward``, ``eval-reward``).

Training calls the learner the wrappers' trainer process runs (``drlhp.reward.learner``), in this
process, on the saved database: the same minibatches, checkpoints, normaliser, validation and metrics
CSV, so a checkpoint written here is what ``pretrained_reward_predictor_dir`` loads, and the figures
compare one to one with a wrapper's run. It starts no process and makes no queue.
"""
from __future__ import annotations

import dataclasses
import math
import os
from dataclasses import dataclass
from typing import Callable, cast

import numpy as np

from drlhp.clips.frames import check_format, infer_frame_spec
from drlhp.config import PreferenceConfig
from drlhp.errors import ConfigError, MissingFileError, NoLabelsError
from drlhp.label_store.database import PrefBuffer, clip_format
from drlhp.reward.learner import Learner
from drlhp.reward.metrics import MetricsLog
from drlhp.reward.optimiser import RewardOptimiser
from drlhp.reward.predictor import RewardPredictor
from drlhp.reward.torch_setup import set_up_torch
from drlhp.runtime.settings import learner_config
from drlhp.storage.layout import LogDir, checkpoint_path
from drlhp.storage.lock import LogDirLock
from drlhp.storage.run_dir import set_aside_earlier_logs


def train_reward(prefs_dir: str, log_dir: str, steps: int | None = None, epochs: float | None = None,
                 on_step: Callable[[int, int], None] | None = None, torch_threads: int | None = None,
                 keypoint_temperature: float | None = None, **settings) -> dict:
    """Train a reward network on the labels in ``prefs_dir``; checkpoints and metrics go to ``log_dir``.

    ``steps`` training steps, or ``epochs`` passes over the training pairs (one of them).
    ``settings``: the wrappers' reward-training settings, by name (the fields of ``drlhp.PreferenceConfig``:
    ``reward_predictor_lr``, ``ensemble_size``, ``reward_net_arch``, ``seed``, ...), their defaults the
    wrappers'. ``torch_threads``: this process's (None: all its cores); ``keypoint_temperature``: the
    keypoint network's softmax temperature (None: its default). ``on_step(step, total)`` reports
    progress. Returns the last row of the metrics CSV.
    """
    if (steps is None) == (epochs is None):
        raise ConfigError("give either steps or epochs")
    shape, dtype = clip_format(prefs_dir)
    config = PreferenceConfig(prefs_dir=prefs_dir, log_dir=log_dir, collect_prefs=False, train_reward=True,
                              **settings)
    how = learner_config(config, infer_frame_spec(np.zeros(shape[1:], dtype)))
    if keypoint_temperature is not None:
        how = dataclasses.replace(how, net=dataclasses.replace(how.net, keypoint_temperature=keypoint_temperature))
    set_up_torch(torch_threads, config.seed)  # the seed makes the network's starting weights reproducible
    lock = LogDirLock(log_dir)
    lock.acquire(os.getpid())
    try:
        labels = PrefBuffer.load(prefs_dir, config.max_prefs_in_db, config.val_fraction)
        train_db, val_db = labels.train_db, labels.val_db
        if len(train_db) == 0:
            raise NoLabelsError(f"{prefs_dir!r} has no training pairs")
        total = steps if steps is not None else math.ceil(
            cast(float, epochs) * len(train_db) / config.reward_predictor_batch_size)
        set_aside_earlier_logs(log_dir)
        learner = Learner(how, log_dir)
        metrics = MetricsLog(LogDir(log_dir).metrics, config.tensorboard_log)
        row: dict = {}
        for step in range(1, total + 1):
            for evaluation in learner.train(1, train_db, val_db):
                row = metrics.write(evaluation, labels.n_labels, pairs_asked=0, labels_remaining=None,
                                    labels_retracted=len(labels.retracted), agreement=labels.agreement)
            if on_step is not None:
                on_step(step, total)
        if not learner.checkpointed:  # the last step gets its checkpoint (and metrics row) too
            evaluation = learner.checkpoint(train_db, val_db)
            row = metrics.write(evaluation, labels.n_labels, pairs_asked=0, labels_remaining=None,
                                labels_retracted=len(labels.retracted), agreement=labels.agreement)
        metrics.close()
        return row
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
        raise MissingFileError(f"no checkpoint at {path}: pass a reward_predictor.ckpt, the directory holding it, "
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
        raise NoLabelsError(f"{prefs_dir!r} has no {split} pairs")

    clips = [clip for db in dbs for clip in db.segments.values()]
    total, report = n_pairs + len(clips), on_progress or (lambda done, total: None)

    def batches():
        done = 0
        for db in dbs:
            for i in range(0, len(db), batch_size):
                yield db.batch(np.arange(i, min(i + batch_size, len(db))))
                done += min(batch_size, len(db) - i)
                report(done, total)

    loss, accuracy = RewardOptimiser(predictor).evaluate(batches())
    predicted, true = [], []
    for k, clip in enumerate(clips):
        predicted.append(predictor.normalised_rewards(clip.frames))
        true.append(clip.rewards)
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
