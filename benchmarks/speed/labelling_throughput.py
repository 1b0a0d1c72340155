"""Synthetic labels per second reaching the preference database, and how many were lost.

The env is stepped as fast as it goes for a fixed time (collecting only, no
reward training); labels are counted where the interface sends them and where
the trainer process stores them, after close() has drained the queue.
Baseline in the same run: clips produced per second (the labeller asks one pair
per new clip, so labelling can keep up with production at best).
Aim: >= 200 labels/s, 0 lost.

    python -m benchmarks.speed.labelling_throughput [--seconds 20] [--envs moving_dot pong]
"""
from __future__ import annotations

import tempfile
import time

from benchmarks.measured_envs import make_env, one_thread, run_per_env
from drlhp import HumanPreferencesEnvWrapper


def measure(name: str, seconds: float, prefs_per_segment: float) -> None:
    one_thread()
    with tempfile.TemporaryDirectory() as tmp:
        env = HumanPreferencesEnvWrapper(make_env(name), collect_prefs=True, train_reward=False, log_dir=tmp,
                                         label_budget=None,
                                         log_level=30, autosave_prefs=False,
                                         synthetic_prefs_per_segment=prefs_per_segment)
        with env:
            env.reset(seed=0)
            start = time.perf_counter()
            while time.perf_counter() - start < seconds:
                for _ in range(100):
                    _, _, terminated, truncated, _ = env.step(env.action_space.sample())
                    if terminated or truncated:
                        env.reset()
            elapsed = time.perf_counter() - start
            received_in_time = env.stats().labels_received
        stats = env.stats()  # after close(): the queue has been drained
    lost = stats.labels_sent - stats.labels_received
    print(f"{name:10s} clips produced {stats.clips_sent + stats.clips_dropped:6d} "
          f"({(stats.clips_sent + stats.clips_dropped) / elapsed:5.0f}/s), sent {stats.clips_sent}, "
          f"dropped {stats.clips_dropped} | labels stored {received_in_time / elapsed:5.0f}/s (aim >= 200) "
          f"= {received_in_time / max(stats.clips_sent, 1):.2f} per clip sent | lost {lost} (must be 0)")


if __name__ == "__main__":
    run_per_env(__doc__, measure, "--seconds", 20.0,
                ("--prefs-per-segment", float, 1.0,
                 "synthetic labels asked per new clip (Pong makes only ~80 clips/s: try 4)"))
