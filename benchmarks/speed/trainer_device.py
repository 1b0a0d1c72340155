"""Reward-training throughput by device: preference pairs trained per second on the CPU and, where torch finds
one, on a CUDA GPU (``reward_predictor_device``), same run, same data.

drlhp's own ``Learner`` with the run's defaults (``learner_config(PreferenceConfig(...))``: the default reward
network (keypoints), batch size, ensemble size, dropout, weight average, label noise), on Pong-sized frames
(84x84x4 uint8) in a synthetic database of random 25-frame clips with random labels. One torch thread, as the
reward-training process runs by default. Each device trains a few warm-up steps first (CUDA's start-up,
cuDNN's choice of kernels), then ``--steps`` timed gradient steps; checkpoints (normaliser fit, validation,
writing files) are moved out of the timed window, so this is the gradient steps alone: sampling the batch,
unpacking its clips, moving them to the device, forward, loss, backward, Adam, the weights' average.
Random frames do not compress, so unpacking costs more than on real Atari clips: a floor for the CPU side.
Without CUDA it says so and times the CPU only.

    python -m benchmarks.speed.trainer_device [--steps 100] [--warmup 10]
"""
from __future__ import annotations

import argparse
import dataclasses
import tempfile
import time

import numpy as np
import torch

from drlhp import PrefBuffer, PreferenceConfig
from drlhp.clips.clip import Clip
from drlhp.clips.frames import infer_frame_spec
from drlhp.reward.learner import Learner
from drlhp.runtime.settings import learner_config

FRAME_SHAPE, LENGTH, N_SEGMENTS, N_PREFS = (84, 84, 4), 25, 100, 400


def synthetic_labels(rng: np.random.Generator) -> PrefBuffer:
    segments = [Clip(i, rng.integers(0, 256, (LENGTH, *FRAME_SHAPE), dtype=np.uint8), rng.normal(size=LENGTH))
                for i in range(N_SEGMENTS)]
    buffer = PrefBuffer(N_PREFS, 0.2)
    for a, b in rng.integers(0, N_SEGMENTS, (N_PREFS, 2)):
        buffer.add(segments[a], segments[b], float(rng.integers(0, 2)))
    return buffer


def pairs_per_s(device: str, labels: PrefBuffer, n_steps: int, n_warmup: int) -> tuple[float, object]:
    run = PreferenceConfig(reward_predictor_device=device, seed=0)
    config = learner_config(run, infer_frame_spec(np.zeros(FRAME_SHAPE, np.uint8)))
    never = n_warmup + n_steps + 1  # no checkpoint inside the timed window
    config = dataclasses.replace(config, ckpt_interval=never, n_initial_training_steps=never)
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
    with tempfile.TemporaryDirectory() as log_dir:
        learner = Learner(config, log_dir)
        learner.train(n_warmup, labels.train_db, labels.val_db)
        sync()
        start = time.perf_counter()
        learner.train(n_steps, labels.train_db, labels.val_db)
        sync()
        seconds = time.perf_counter() - start
        assert all(p.device.type == torch.device(device).type for p in learner.predictor.net.parameters())
    return n_steps * config.batch_size / seconds, config


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=100, help="timed gradient steps per device (default: 100)")
    parser.add_argument("--warmup", type=int, default=10, help="untimed steps first (default: 10)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    labels = synthetic_labels(np.random.default_rng(0))
    cpu, config = pairs_per_s("cpu", labels, args.steps, args.warmup)
    net = config.net
    print(f"torch {torch.__version__}; network {net.arch}, {net.n_members} member(s), batch {config.batch_size} pairs "
          f"of {LENGTH} frames {'x'.join(map(str, FRAME_SHAPE))} uint8; {args.steps} timed steps after "
          f"{args.warmup} warm-up; 1 torch thread")
    print(f"cpu : {cpu:8.1f} pairs/s")
    if not torch.cuda.is_available():
        print("no CUDA device present: timed the CPU only")
        return
    cuda, _ = pairs_per_s("cuda", labels, args.steps, args.warmup)
    print(f"cuda: {cuda:8.1f} pairs/s ({torch.cuda.get_device_name(0)})")
    print(f"cuda / cpu: {cuda / cpu:.2f}x")


if __name__ == "__main__":
    main()
