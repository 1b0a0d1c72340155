"""The reward trainer's memory as its preference database fills up.

A random policy plays the env with synthetic labels and default settings
(``max_prefs_in_db=3000``, training on). Every few seconds: labels received, the
database's clip bytes (``stats()["db_bytes"]``), the trainer process's resident
memory, and RSS ÷ database bytes; the baseline is the trainer's RSS before its
first label, measured in the same run. Stops once the database is full (or
after ``--seconds``), prints the trainer's peak RSS, then times ``close()``
(which writes the label snapshot).

    python benchmarks/trainer_memory.py [--seconds 300] [--envs pong moving_dot]
"""
from __future__ import annotations

import tempfile
import time

import numpy as np
from common import make_env, one_thread, run_per_env

from drlhp import HumanPreferencesEnvWrapper

MAX_PREFS = 3000  # drlhp's default database size


def rss_mib(pid: int, field: str = "VmRSS") -> float:
    """Resident memory now (``VmRSS``) or at its highest so far (``VmHWM``)."""
    with open(f"/proc/{pid}/status") as f:
        kb = next(int(line.split()[1]) for line in f if line.startswith(field + ":"))
    return kb / 1024


def measure(name: str, seconds: float) -> None:
    one_thread()
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        env = HumanPreferencesEnvWrapper(make_env(name), log_dir=tmp, max_prefs_in_db=MAX_PREFS, label_budget=None,
                                         log_level=30)
        trainer = env.pipeline.processes["reward_trainer"].pid
        baseline = rss_mib(trainer)
        print(f"{name}: trainer RSS before any label {baseline:.0f} MiB")
        print(f"  {'s':>5} {'labels':>7} {'db MiB':>7} {'RSS MiB':>7} {'RSS-base / db':>14}")
        env.reset(seed=0)
        start = next_sample = time.monotonic()
        full = False
        while time.monotonic() - start < seconds and not full:
            _, _, terminated, truncated, _ = env.step(int(rng.integers(env.action_space.n)))
            if terminated or truncated:
                env.reset()
            if time.monotonic() >= next_sample:
                next_sample += 5.0
                stats, rss = env.stats(), rss_mib(trainer)
                db_mib = stats["db_bytes"] / 2**20
                full = stats["prefs_received"] >= MAX_PREFS * 1.1  # full, and some evictions done
                ratio = f"{(rss - baseline) / db_mib:14.2f}" if db_mib else f"{'-':>14}"
                print(f"  {time.monotonic() - start:5.0f} {stats['prefs_received']:7d} {db_mib:7.0f} {rss:7.0f} "
                      f"{ratio}",
                      flush=True)
        print(f"  trainer's peak RSS so far: {rss_mib(trainer, 'VmHWM'):.0f} MiB")
        closing = time.monotonic()
        env.close()
        print(f"  close() with a {'full' if full else 'partly filled'} database: {time.monotonic() - closing:.1f} s")


if __name__ == "__main__":
    run_per_env(__doc__, measure, "--seconds", 300.0)
