"""Noticing a newer checkpoint without slowing down whoever asks: one ``stat`` call, at most every so often.

The trainer replaces its checkpoint file atomically; the main process (to reward steps) and the
preference interface (to judge pairs by the ensemble's disagreement) each load every new one.
"""
from __future__ import annotations

import os
import time
from typing import Callable, TypeVar

Loaded = TypeVar("Loaded")

#: Seconds between checks for a newer checkpoint: a stat call, so cheap, yet a new checkpoint is soon in use.
DEFAULT_POLL_INTERVAL = 1.0


def file_version(path: str) -> tuple | None:
    """What changes when a file is replaced (one stat call), or None if there is no file."""
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):  # none, or a file where its directory was (the trainer says)
        return None
    return st.st_mtime_ns, st.st_size, st.st_ino


class CheckpointWatch:
    """Loads the file at ``path`` each time it is replaced, checking at most every ``interval`` seconds.

    ``skip_existing``: the file there now is not new (e.g. an earlier run's checkpoint).
    """

    def __init__(self, path: str, interval: float, skip_existing: bool = False) -> None:
        self.path, self.interval = path, interval
        self._seen = file_version(path) if skip_existing else None
        self.next_check = 0.0  # time.monotonic() from which poll() looks at the file again

    def poll(self, load: Callable[[str], Loaded], now: bool = False) -> Loaded | None:
        """``load(path)`` of a file not loaded before, else None; ``now``: check even if checked a moment ago.

        If ``load`` raises, the file counts as not loaded: the next check tries it again.
        """
        t = time.monotonic()
        if t < self.next_check and not now:
            return None
        self.next_check = t + self.interval
        version = file_version(self.path)
        if version is None or version == self._seen:
            return None
        loaded = load(self.path)
        self._seen = version
        return loaded
