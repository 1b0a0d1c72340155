"""Reward-trainer throughput: preference pairs trained per second by drlhp's trainer
process vs a bare PyTorch loop of the same network, batch size and data, same run.

drlhp: workflow 3 (train from a saved preference database: checkpoint + normaliser
fit + validation every 100 steps, one torch thread), with one network and 16 pairs a
step like the bare loop (``SAME_AS_BARE``): this measures the loop around the
network, not the ensemble's extra work (``ensemble_forward.py``, docs/benchmarks.md).
Bare loop: sample indices, stack frames, convert, forward, loss, backward, step.
Aim: drlhp >= 0.9x the bare loop. Then ``drlhp train-reward``'s loop (the same
code, in this process) on the same database: aim within 10 % of the trainer process.

    python -m benchmarks.speed.trainer_throughput [--steps 60] [--envs moving_dot pong]
"""
from __future__ import annotations

import tempfile
import time

import numpy as np
import torch

from benchmarks.measured_envs import make_env, one_thread, run_per_env
from drlhp import HumanPreferencesEnvWrapper, PrefBuffer
from drlhp.clips.clip import Clip
from drlhp.clips.frames import frames_to_net_input, infer_frame_spec
from drlhp.reward.predictor import NetConfig, build_reward_net, clip_returns, preference_loss

BATCH, LENGTH, N_SEGMENTS, N_PREFS = 16, 25, 200, 600
SAME_AS_BARE = dict(ensemble_size=1, reward_predictor_batch_size=BATCH, reward_predictor_lr=3e-4,
                    reward_predictor_dropout=0.5, noise_prob=0.0, adaptive_l2=False, reward_predictor_weight_decay=0.0)


def random_segments(shape, rng) -> list[Clip]:
    return [Clip(i, rng.integers(0, 256, (LENGTH, *shape), dtype=np.uint8), rng.normal(size=LENGTH))
            for i in range(N_SEGMENTS)]


def bare_loop_pairs_per_s(segments, spec, n_steps: int, rng) -> float:
    net = build_reward_net(NetConfig(spec, dropout=0.5)).train()
    opt = torch.optim.Adam(net.parameters(), lr=3e-4)
    frames = np.stack([s.frames for s in segments])
    pairs = rng.integers(0, N_SEGMENTS, (N_PREFS, 2))
    labels = rng.integers(0, 2, N_PREFS).astype(np.float32)

    def step():
        idx = rng.integers(0, N_PREFS, BATCH)
        both = np.concatenate([frames[pairs[idx, 0]], frames[pairs[idx, 1]]]).reshape(-1, *spec.shape)
        returns = clip_returns(net, frames_to_net_input(both, spec), 2 * BATCH)[:, 0]  # one member
        loss = preference_loss(returns[:BATCH], returns[BATCH:], torch.from_numpy(labels[idx]))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    for _ in range(3):
        step()
    start = time.perf_counter()
    for _ in range(n_steps):
        step()
    return n_steps * BATCH / (time.perf_counter() - start)


def drlhp_pairs_per_s(name: str, segments, n_steps: int, rng, tmp: str) -> float:
    buffer = PrefBuffer(N_PREFS, 0.2)
    for a, b in rng.integers(0, N_SEGMENTS, (N_PREFS, 2)):
        buffer.add(segments[a], segments[b], float(rng.integers(0, 2)))
    buffer.save(tmp + "/prefs")
    env = HumanPreferencesEnvWrapper(make_env(name), prefs_dir=tmp + "/prefs", collect_prefs=False, train_reward=True,
                                     n_initial_training_steps=10**9, log_dir=tmp + "/log", log_level=30,
                                     **SAME_AS_BARE)
    with env:
        counter = lambda: env.stats().training_steps  # noqa: E731
        while counter() < 3:  # warm-up; the trainer process works on its own core
            time.sleep(0.05)
        first, start = counter(), time.perf_counter()
        while counter() < first + n_steps:
            time.sleep(0.05)
        return (counter() - first) * BATCH / (time.perf_counter() - start)


def offline_pairs_per_s(n_steps: int, tmp: str) -> float:
    """``drlhp train-reward``'s in-process loop on the database the trainer process used."""
    from drlhp.cli.offline import train_reward

    times = {}

    def on_step(step: int, total: int) -> None:
        times[step] = time.perf_counter()

    train_reward(tmp + "/prefs", tmp + "/offline", steps=n_steps + 3, on_step=on_step, **SAME_AS_BARE)
    return n_steps * BATCH / (times[n_steps + 3] - times[3])  # after 3 warm-up steps, as for the others


def measure(name: str, n_steps: int) -> None:
    one_thread()
    rng = np.random.default_rng(0)
    spec = infer_frame_spec(make_env(name).observation_space.sample())
    segments = random_segments(spec.shape, rng)
    with tempfile.TemporaryDirectory() as tmp:
        bare = bare_loop_pairs_per_s(segments, spec, n_steps, rng)
        ours = drlhp_pairs_per_s(name, segments, n_steps, rng, tmp)
        offline = offline_pairs_per_s(n_steps, tmp)
    print(f"{name:10s} bare PyTorch loop {bare:6.1f} pairs/s | drlhp trainer process {ours:6.1f} pairs/s | "
          f"ratio {ours / bare:.2f} (aim >= 0.9) | drlhp train-reward {offline:6.1f} pairs/s, "
          f"÷ trainer process {offline / ours:.2f} (aim 0.9-1.1)")


if __name__ == "__main__":
    run_per_env(__doc__, measure, "--steps", 60)
