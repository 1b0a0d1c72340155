"""A disk that fills during a run: what the main process is told, what is kept, and whether the run resumes.

Each trial runs MovingDot with synthetic labels, no label budget and the trainer training, its log_dir on a small
tmpfs of its own (3 MiB) with a ballast file that leaves a different amount free each trial, so the disk fills
during a different write (the journal, a snapshot, a checkpoint, the metrics). Then it checks the three things a
user needs:

- the main process gets one ``drlhp.WriteError`` whose message is one line naming the full disk;
- every label the run reported (``stats().run_labels`` at its last step) comes back: the log_dir is copied to a
  roomy disk and a wrapper with ``resume=True`` starts from at least as many;
- after ``close()`` no process of the run is left.

Needs root (it mounts the tmpfs) on Linux::

    python -m benchmarks.experiments.full_disk [--trials 10] [--out benchmarks/results/faults/full_disk.log]
"""
from __future__ import annotations

import argparse
import contextlib
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator

import psutil

from benchmarks.report.run_records import git_commit
from drlhp import HumanPreferencesEnvWrapper, WriteError
from drlhp.envs import MovingDotEnv

DISK_BYTES = 3 * 2 ** 20
#: Free space the first trial leaves; each later trial leaves STEP more, so the disk fills at other writes.
FIRST_FREE, STEP = 150_000, 150_000
#: A run that has not filled its disk by then is a failed trial.
TRIAL_TIMEOUT_S = 600.0
SETTINGS = dict(synthetic_preferences=True, n_initial_prefs=10, torch_threads=1, trainer_torch_threads=1)


@contextlib.contextmanager
def small_disk(free_bytes: int) -> Iterator[str]:
    """A tmpfs of ``DISK_BYTES`` mounted for the block, ``free_bytes`` of it left free."""
    mount_point = tempfile.mkdtemp(prefix="drlhp-full-disk-")
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={DISK_BYTES}", "tmpfs", mount_point], check=True)
    try:
        with open(os.path.join(mount_point, "ballast"), "wb") as f:
            f.write(b"\0" * (DISK_BYTES - free_bytes))
        yield mount_point
    finally:
        subprocess.run(["umount", mount_point], check=True)
        os.rmdir(mount_point)


def run_until_the_disk_fills(log_dir: str) -> dict:
    """Step a MovingDot run in ``log_dir`` until it raises; what it said and reported."""
    start = time.monotonic()
    env = HumanPreferencesEnvWrapper(MovingDotEnv(), log_dir=log_dir, **SETTINGS)
    reported, error = 0, None
    try:
        env.reset(seed=0)
        while time.monotonic() - start < TRIAL_TIMEOUT_S:
            _, _, terminated, truncated, _ = env.step(env.action_space.sample())
            if terminated or truncated:
                env.reset()
            reported = env.stats().run_labels or 0
    except Exception as e:  # what the user's program would catch
        error = e
    seconds = time.monotonic() - start
    close_error = None
    try:
        env.close()
    except Exception as e:
        close_error = e
    # Python's own resource tracker (one per program, started with the first spawned process) stays by design.
    left = [p.pid for p in psutil.Process().children(recursive=True)
            if "resource_tracker" not in " ".join(p.cmdline())]
    return {"error": error, "close_error": close_error, "reported": reported, "seconds": seconds, "left": left}


def labels_on_resume(log_dir: str) -> int:
    """The labels a wrapper resuming the run in ``log_dir`` starts from."""
    env = HumanPreferencesEnvWrapper(MovingDotEnv(), log_dir=log_dir, resume=True, **SETTINGS)
    try:
        return env.stats().run_labels or 0
    finally:
        env.close()


def failed_file(message: str) -> str:
    """The file (or files) a WriteError says could not be written, without their directory."""
    names = message.split("could not write ", 1)[-1].split(": ", 1)[0]
    return " and ".join(os.path.basename(name) for name in names.split(" and "))


def trial(number: int) -> dict:
    free = FIRST_FREE + number * STEP
    with small_disk(free) as disk:
        log_dir = os.path.join(disk, "run")
        result = run_until_the_disk_fills(log_dir)
        roomy = tempfile.mkdtemp(prefix="drlhp-resumed-")
        try:
            shutil.copytree(log_dir, roomy, dirs_exist_ok=True)
            result["resumed"] = labels_on_resume(roomy)
        finally:
            shutil.rmtree(roomy)
    error = result["error"]
    message = str(error) if error is not None else ""
    result.update(free_kb=free // 1000, kind=type(error).__name__ if error else "none", file=failed_file(message),
                  one_line="\n" not in message and "no space" in message)
    result["ok"] = (isinstance(error, WriteError) and result["one_line"] and result["close_error"] is None
                    and result["resumed"] >= result["reported"] and not result["left"])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--out", help="also append the table to this file")
    args = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("full_disk.py mounts a small tmpfs per trial: run it as root")
    header = (f"{'trial':>5} {'free kB':>7} {'s':>5} {'error':>10} {'one line':>8} {'close':>5} {'reported':>8} "
              f"{'resumed':>7} {'left':>4}  failed write")
    command = shlex.join(["python", "-m", "benchmarks.experiments.full_disk", *sys.argv[1:]])
    lines = [f"# {command} -- drlhp at {git_commit()}", header]
    print(header, flush=True)
    results = []
    for number in range(args.trials):
        r = trial(number)
        results.append(r)
        line = (f"{number:>5} {r['free_kb']:>7} {r['seconds']:>5.0f} {r['kind']:>10} {str(r['one_line']):>8} "
                f"{'ok' if r['close_error'] is None else 'raised':>5} {r['reported']:>8} {r['resumed']:>7} "
                f"{len(r['left']):>4}  {r['file']}")
        lines.append(line)
        print(line, flush=True)
    summary = f"{sum(r['ok'] for r in results)} of {len(results)} trials: one line, every label back, no process left"
    lines.append(summary)
    print(summary)
    if args.out:
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out, "a") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
