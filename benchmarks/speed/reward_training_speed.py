"""Time to a good reward model: held-out accuracy against seconds of training, per setting.

A fixed database of 500 labels (MovingDot clips of a random policy, perfect synthetic
teacher; 400 train / 100 validation) is trained on by drlhp's own learner, as the
reward-training process runs it (checkpoints, validation, adaptive L2 and all), one
setting at a time. Every second of training the latest network is scored on 1,000
fresh pairs of fresh clips (the sign of the predicted return difference against the
true one; the clock is paused meanwhile).
Start-up (a new process importing drlhp and torch and building the network, as the
trainer process does) is measured and added. Aim: the plateau within ~10 s on 2 cores.

    python -m benchmarks.speed.reward_training_speed [--seconds 30] [--settings old chosen ...]
"""
from __future__ import annotations

import argparse
import random
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch

from benchmarks.dot_clips import clip_stream, random_pairs
from drlhp import PrefBuffer, PreferenceConfig, SyntheticTeacher
from drlhp.clips.frames import infer_frame_spec
from drlhp.reward.learner import Learner
from drlhp.runtime.settings import learner_config

# name: (ensemble members, batch size, lr, dropout, noise_prob, torch threads)
SETTINGS = {
    "old": (1, 16, 3e-4, 0.5, 0.0, 1),  # the defaults before label efficiency
    "m1_b8_lr1e-3": (1, 8, 1e-3, 0.2, 0.1, 1),
    "m3_b16_lr1e-3": (3, 16, 1e-3, 0.2, 0.1, 1),
    "m3_b8_lr1e-3": (3, 8, 1e-3, 0.2, 0.1, 1),
    "m3_b4_lr1e-3": (3, 4, 1e-3, 0.2, 0.1, 1),
    "m3_b8_lr3e-3": (3, 8, 3e-3, 0.2, 0.1, 1),
    "m3_b8_lr1e-3_d0.5": (3, 8, 1e-3, 0.5, 0.1, 1),
    "m3_b8_lr1e-3_d0": (3, 8, 1e-3, 0.0, 0.1, 1),
    "m3_b8_lr1e-3_2threads": (3, 8, 1e-3, 0.2, 0.1, 2),
}


def labelled_database(directory: str, n_labels: int, seed: int) -> None:
    clips = clip_stream(400, "random", False, seed)
    rng, teacher, answer_rng = np.random.default_rng(seed), SyntheticTeacher(), random.Random(seed)
    buffer = PrefBuffer(10_000, 0.2)
    for a, b in random_pairs(len(clips), n_labels, rng):
        buffer.add(clips[a], clips[b], teacher.answer(clips[a].rewards, clips[b].rewards, answer_rng))
    buffer.save(directory)


def held_out(seed: int):
    clips = clip_stream(300, "random", False, seed)
    pairs = random_pairs(len(clips), 1000, np.random.default_rng(seed))
    true = np.array([c.true_return for c in clips])
    keep = true[pairs[:, 0]] != true[pairs[:, 1]]
    return np.stack([c.frames for c in clips]), pairs[keep], np.sign(true[pairs[keep, 0]] - true[pairs[keep, 1]])


def accuracy(predictor, frames, pairs, wanted) -> float:
    returns = predictor.normalised_rewards(frames.reshape(-1, *frames.shape[2:])).reshape(len(frames), -1).sum(1)
    return float(np.mean(np.sign(returns[pairs[:, 0]] - returns[pairs[:, 1]]) == wanted))


def start_up_seconds() -> float:
    """A new process: import torch and drlhp's trainer, build a 3-member network (what the trainer does first)."""
    code = ("import numpy as np; from drlhp.reward.learner import Learner; "
            "from drlhp.reward.predictor import NetConfig, RewardPredictor; "
            "from drlhp.clips.frames import infer_frame_spec; "
            "RewardPredictor(NetConfig(infer_frame_spec(np.zeros((64, 64, 1), np.uint8)), n_members=3))")
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True)
    return time.perf_counter() - start


def curve(setting, prefs_dir: str, seconds: float, evaluation) -> list[tuple[float, float]]:
    members, batch, lr, dropout, noise, threads = setting
    torch.set_num_threads(threads)
    spec = infer_frame_spec(np.zeros((64, 64, 1), np.uint8))
    run = PreferenceConfig(ensemble_size=members, reward_predictor_batch_size=batch, reward_predictor_lr=lr,
                           reward_predictor_dropout=dropout, noise_prob=noise, seed=0)
    labels = PrefBuffer.load(prefs_dir, run.max_prefs_in_db, run.val_fraction)
    with tempfile.TemporaryDirectory() as log_dir:
        learner = Learner(learner_config(run, spec), log_dir)
        points, trained, next_point = [], 0.0, 0.0
        while trained < seconds:
            start = time.perf_counter()
            learner.train(1, labels.train_db, labels.val_db)
            trained += time.perf_counter() - start  # the clock stops while the network is scored
            if trained >= next_point:
                points.append((trained, accuracy(learner.predictor, *evaluation)))
                next_point += 1.0
    return points


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--settings", nargs="+", default=list(SETTINGS))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as prefs_dir:
        labelled_database(prefs_dir, 500, seed=1)
        evaluation = held_out(seed=2)
        start_up = start_up_seconds()
        print(f"start-up (new process, imports, network): {start_up:.1f} s; held-out pairs: {len(evaluation[1])}")
        marks = (2.5, 5, 10, 20, args.seconds)
        print(f"{'setting':24s} " + " ".join(f"{'acc@' + format(m, 'g') + 's':>9s}" for m in marks) +
              "   plateau   to within 1 pt (s, incl. start-up)")
        for name in args.settings:
            points = curve(SETTINGS[name], prefs_dir, args.seconds, evaluation)
            t, acc = np.array(points).T
            at = [acc[t <= m - start_up][-1] if np.any(t <= m - start_up) else float("nan") for m in marks]
            plateau = float(np.mean(acc[-3:]))
            reached = t[np.argmax(acc >= plateau - 0.01)] + start_up
            print(f"{name:24s} " + " ".join(f"{a:9.3f}" for a in at) + f"   {plateau:7.3f}   {reached:6.1f}",
                  flush=True)


if __name__ == "__main__":
    main()
