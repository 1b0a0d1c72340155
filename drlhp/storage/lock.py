"""One run per ``log_dir`` at a time.

Two runs sharing a ``log_dir`` would load each other's reward network and
overwrite each other's labels. The reward-training process -- the one that
writes ``log_dir`` -- holds an OS lock (``flock``) on ``log_dir/drlhp.lock`` from
its start until it exits, i.e. until it has saved the run's last labels, also
when the main program crashed. The OS releases the lock whenever that process
ends, however it ends, so a ``log_dir`` left by a finished or crashed run is
reusable at once. The lock file itself stays; it names the last owner.
"""
from __future__ import annotations

import contextlib
import fcntl
import json
import os
import sys
import time

from drlhp.errors import LogDirInUseError
from drlhp.storage.files import writing
from drlhp.storage.layout import LogDir


class LogDirLock:
    """Held from ``acquire()`` until ``release()`` or the end of this process."""

    def __init__(self, log_dir: str) -> None:
        self.log_dir = log_dir
        self.path = LogDir(log_dir).lock
        self._fd: int | None = None

    def acquire(self, program_pid: int) -> None:
        """Take the lock for the run of ``program_pid`` (the user's program), or raise ``LogDirInUseError``."""
        with writing(self.path):
            os.makedirs(self.log_dir, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            owner = _read_owner(fd)
            os.close(fd)
            raise LogDirInUseError(
                f"log_dir {os.path.abspath(self.log_dir)!r} is in use by another drlhp run (program pid "
                f"{owner.get('program_pid', '?')}, started {owner.get('started', '?')}: {owner.get('command', '?')}). "
                "Two runs in one log_dir would load each other's reward network and overwrite each other's "
                "labels. Give this run its own log_dir=, or stop the other run first. (Wrapping each env of a "
                "vector env starts one run per env: wrap the vector env instead, with "
                "drlhp.HumanPreferencesVectorWrapper or drlhp.sb3.HumanPreferencesVecEnvWrapper.)") from None
        owner = {"program_pid": program_pid, "trainer_pid": os.getpid(),
                 "started": time.strftime("%Y-%m-%d %H:%M:%S"), "command": " ".join(sys.argv) or sys.executable}
        self._fd = fd  # the lock is held: what it says of its owner is for people, and may fail on a full disk
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps(owner).encode(), 0)

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the only descriptor releases the flock
            self._fd = None


def _read_owner(fd: int) -> dict:
    try:
        owner = json.loads(os.pread(fd, 4096, 0) or b"{}")
        return owner if isinstance(owner, dict) else {}
    except ValueError:  # written by hand, or torn: the lock itself is what counts
        return {}
