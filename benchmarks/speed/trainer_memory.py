"""Each drlhp process's memory in a user's Pong run, with the default database full and the trainer training.

A random policy plays Pong (``ALE/Pong-v5``, gymnasium's ``AtariPreprocessing`` and a 4-frame stack) through
``HumanPreferencesEnvWrapper(env, label_budget=None)`` with the default settings: synthetic labels as fast as
clips come, so the default database (``max_prefs_in_db=3000``) fills while the trainer trains. Every 5 s: labels
received, training steps, the database's clip bytes and each process's resident memory. Once the database is
full the run goes on for ``--after-full`` seconds (checkpoints of a full database), then prints each process's
peak (``VmHWM``, kept by the kernel, so no sample misses it) and times ``close()``. The aim: the trainer and
the interface at or below 512 MiB each (the main process is yours: the env and the wrapper).

Each measurement runs in a fresh process, one per network (``--nets``). With ``--before DIR``, a checkout of
the code to compare with (``git worktree add --detach /tmp/wt-base HEAD``), each network is measured on that
code, then on this one, in turn in the same run, and the peaks are printed side by side.

    python -m benchmarks.speed.trainer_memory [--nets keypoints atari] [--before DIR] [--after-full 60]
        [--seconds 900] [--envs pong moving_dot]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

# At the top, as a user's script imports its libraries: drlhp's processes start (spawn) by importing this module.
import numpy as np

import drlhp
from benchmarks.measured_envs import make_env, one_thread
from drlhp import HumanPreferencesEnvWrapper

MAX_PREFS = 3000  # drlhp's default database size
AIM_MIB = 512
PROCESSES = ("reward_trainer", "pref_interface", "main")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def status_mib(pid: int, field: str) -> float:
    """Resident memory now (``VmRSS``) or at its highest so far (``VmHWM``), in MiB."""
    with open(f"/proc/{pid}/status") as f:
        kb = next(int(line.split()[1]) for line in f if line.startswith(field + ":"))
    return kb / 1024


def measure(env_name: str, net: str, after_full: float, seconds: float) -> dict:
    """One run of the wrapper until its database is full and ``after_full`` s beyond; each process's peak."""
    one_thread()
    print(f"  {env_name}, reward_net_arch={net}, drlhp from {os.path.dirname(drlhp.__file__)}", flush=True)
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        env = HumanPreferencesEnvWrapper(make_env(env_name), log_dir=tmp, label_budget=None, reward_net_arch=net,
                                         log_level=30)
        pids = {name: proc.pid for name, proc in env.pipeline.processes.items()}
        pids["main"] = os.getpid()
        print(f"  {'s':>5} {'labels':>7} {'steps':>6} {'db MiB':>7} " + " ".join(f"{n:>15}" for n in pids)
              + "  (resident MiB)", flush=True)
        env.reset(seed=0)
        start = next_sample = time.monotonic()
        full_at = None
        while time.monotonic() - start < seconds and (full_at is None or time.monotonic() - full_at < after_full):
            _, _, terminated, truncated, _ = env.step(int(rng.integers(env.action_space.n)))
            if terminated or truncated:
                env.reset()
            if time.monotonic() >= next_sample:
                next_sample += 5.0
                stats = env.stats()
                if full_at is None and stats.labels_received >= MAX_PREFS:
                    full_at = time.monotonic()
                print(f"  {time.monotonic() - start:5.0f} {stats.labels_received:7d} {stats.training_steps:6d} "
                      f"{stats.db_bytes / 2**20:7.1f} " + " ".join(f"{status_mib(p, 'VmRSS'):15.0f}"
                                                                   for p in pids.values()), flush=True)
        peaks = {name: status_mib(pid, "VmHWM") for name, pid in pids.items()}
        stats = env.stats()
        closing = time.monotonic()
        env.close()
        return {"peaks": peaks, "full": full_at is not None, "labels": stats.labels_received,
                "training_steps": stats.training_steps, "db_mib": stats.db_bytes / 2**20,
                "close_s": time.monotonic() - closing}


def run_one(code: str | None, env_name: str, net: str, args: argparse.Namespace) -> dict:
    """``measure`` in a fresh process, importing drlhp from ``code`` (None: this checkout's).

    The child runs in ``code``, whose folder comes first on its path (``python -m``), so drlhp is that checkout's;
    this checkout's root on PYTHONPATH gives it the benchmarks where ``code`` has none as a package."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (ROOT, os.environ.get("PYTHONPATH")) if p))
    command = [sys.executable, "-m", "benchmarks.speed.trainer_memory", "--one", env_name, net,
               "--after-full", str(args.after_full), "--seconds", str(args.seconds)]
    result = None
    with subprocess.Popen(command, cwd=os.path.abspath(code or ROOT), env=env, stdout=subprocess.PIPE,
                          text=True) as child:
        assert child.stdout is not None
        for line in child.stdout:  # its samples as they come
            if line.startswith("RESULT "):
                result = json.loads(line[len("RESULT "):])
            else:
                print(line, end="", flush=True)
    if child.returncode or result is None:
        raise RuntimeError(f"the measurement {command} failed (exit status {child.returncode})")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--envs", nargs="+", default=["pong"])
    parser.add_argument("--nets", nargs="+", default=["keypoints", "atari"], help="reward_net_arch values")
    parser.add_argument("--before", help="a checkout of the drlhp to compare with (its repository root)")
    parser.add_argument("--after-full", type=float, default=60.0, help="seconds to go on once the database is full")
    parser.add_argument("--seconds", type=float, default=900.0, help="at most this long a measurement")
    parser.add_argument("--one", nargs=2, metavar=("ENV", "NET"), help=argparse.SUPPRESS)  # a child's measurement
    args = parser.parse_args()
    if args.one:
        print("RESULT " + json.dumps(measure(*args.one, args.after_full, args.seconds)), flush=True)
        return
    sides = [("before", args.before), ("after", None)] if args.before else [("this code", None)]
    rows = []
    for env_name in args.envs:
        for net in args.nets:
            for side, code in sides:
                print(f"{side}:", flush=True)
                rows.append((env_name, net, side, run_one(code, env_name, net, args)))
    print(f"\npeak resident memory (VmHWM), MiB; aim: each drlhp process <= {AIM_MIB}")
    print(f"{'env':10s} {'net':10s} {'code':10s} " + " ".join(f"{p:>15}" for p in PROCESSES)
          + "  labels  steps  db MiB  close()")
    for env_name, net, side, r in rows:
        note = "" if r["full"] else "  (database not full)"
        print(f"{env_name:10s} {net:10s} {side:10s} " + " ".join(f"{r['peaks'][p]:15.0f}" for p in PROCESSES)
              + f"  {r['labels']:6d} {r['training_steps']:6d} {r['db_mib']:7.1f} {r['close_s']:6.1f} s{note}")
    if args.before:
        for env_name in args.envs:
            for net in args.nets:
                before, after = (r for e, n, _, r in rows if (e, n) == (env_name, net))
                print(f"{env_name} {net}: after / before " + ", ".join(
                    f"{p} {after['peaks'][p] / before['peaks'][p]:.2f}" for p in PROCESSES))


if __name__ == "__main__":
    main()
