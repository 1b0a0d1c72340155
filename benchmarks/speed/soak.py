"""Soak: a long run of MovingDot with synthetic labels and the trainer training; does anything grow?

A random policy steps the wrapped env (default settings: a 3,000-label database,
a checkpoint every 100 training steps, predicted rewards once trained). Every
``--interval`` seconds it samples each process's resident memory and open file
descriptors, ``/dev/shm`` in use, the database's bytes in memory, and the label
journal and snapshot on disk. The table ends with each figure at the end ÷ the
same figure when the database first became full (measured in this run): ~1.0
means it stopped growing.

    python -m benchmarks.speed.soak [--minutes 30] [--interval 30]
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time

import numpy as np

from benchmarks.measured_envs import make_env, one_thread
from drlhp import HumanPreferencesEnvWrapper
from drlhp.storage.layout import LogDir

MAX_PREFS = 3000
MIB = 2 ** 20


def rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:")) / 1024


def open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def shm_used_mib() -> float:
    st = os.statvfs("/dev/shm")
    return (st.f_blocks - st.f_bfree) * st.f_frsize / MIB


def disk_mib(paths) -> float:
    return sum(os.path.getsize(p) for p in paths if os.path.exists(p)) / MIB


def sample(env, log_dir: str, pids: dict, start: float) -> dict:
    stats = env.stats()
    row = {"min": (time.monotonic() - start) / 60, "labels": stats.run_labels, "steps": stats.training_steps,
           "db MiB": stats.db_bytes / MIB, "shm MiB": shm_used_mib(),
           "journal MiB": disk_mib(LogDir(log_dir).journal_files()),
           "snapshot MiB": disk_mib([os.path.join(log_dir, f) for f in ("train.pkl.gz", "val.pkl.gz")])}
    for name, pid in pids.items():
        row[f"{name} RSS"] = rss_mib(pid)
        row[f"{name} fds"] = open_fds(pid)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--interval", type=float, default=30.0, help="seconds between samples")
    args = parser.parse_args()
    one_thread()
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as log_dir:
        env = HumanPreferencesEnvWrapper(make_env("moving_dot"), log_dir=log_dir, max_prefs_in_db=MAX_PREFS,
                                         label_budget=None,
                                         seed=0, log_level=30)
        pids = {"main": os.getpid(), **{name.split("_")[-1]: p.pid for name, p in env.pipeline.processes.items()}}
        start = time.monotonic()
        rows, full_at = [sample(env, log_dir, pids, start)], None
        print("  ".join(f"{k:>12}" for k in rows[0]), flush=True)
        env.reset(seed=0)
        next_sample, n_steps = start + args.interval, 0
        while time.monotonic() < start + 60 * args.minutes:
            if any(env.step(int(rng.integers(env.action_space.n)))[2:4]):
                env.reset()
            n_steps += 1
            if time.monotonic() >= next_sample:
                next_sample += args.interval
                rows.append(sample(env, log_dir, pids, start))
                print("  ".join(f"{v:12.1f}" if isinstance(v, float) else f"{v:12d}" for v in rows[-1].values()),
                      flush=True)
                if full_at is None and rows[-1]["labels"] >= MAX_PREFS:
                    full_at = rows[-1]
        close_start = time.monotonic()
        env.close()
        print(f"\n{n_steps} env steps ({n_steps / (time.monotonic() - start):.0f}/s), "
              f"{rows[-1]['labels']} labels, {rows[-1]['steps']} reward-training steps; "
              f"close() took {time.monotonic() - close_start:.1f} s")
        if full_at is None:
            print("the database never became full: run longer to see whether anything grows")
            return
        print(f"end ÷ when the database became full (minute {full_at['min']:.1f}):")
        for key in full_at:
            if key not in ("min", "labels", "steps"):
                base = full_at[key]
                ratio = rows[-1][key] / base if base else float("nan")
                print(f"  {key:>14}: {base:8.1f} -> {rows[-1][key]:8.1f}  ({ratio:.2f}x)")


if __name__ == "__main__":
    main()
