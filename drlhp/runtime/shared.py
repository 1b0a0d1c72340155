"""What the processes share without a lock: a stop flag, and the counters ``stats()`` reads."""
from __future__ import annotations

import json
import time


class StopFlag:
    """A stop signal shared between processes, like ``multiprocessing.Event`` but without a lock.

    An Event takes a lock inside ``is_set()``; a worker SIGKILLed while holding it would make
    the main process's ``set()`` in ``close()`` wait forever. One shared byte cannot be left locked.
    """

    POLL_S = 0.05

    def __init__(self, ctx) -> None:
        self._flag = ctx.RawValue("b", 0)

    def set(self) -> None:
        self._flag.value = 1

    def is_set(self) -> bool:
        return bool(self._flag.value)

    def wait(self, timeout: float | None = None) -> bool:
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self.is_set():
            if deadline is not None and time.monotonic() >= deadline:
                return False
            time.sleep(self.POLL_S)
        return True


class SharedStats:
    """Counters the processes update and the main process reads without locking (each has one writer)."""

    def __init__(self, ctx) -> None:
        self.env_steps = ctx.RawValue("q", 0)  # steps of all envs in this session: the label schedule's clock
        self.clips_received = ctx.RawValue("q", 0)
        self.pairs_asked = ctx.RawValue("q", 0)  # pairs the run asked about (answered or skipped)
        self.labels_sent = ctx.RawValue("q", 0)  # labels answered in this session
        self.labels_received = ctx.RawValue("q", 0)  # labels the trainer received in this session
        self.run_labels = ctx.RawValue("q", 0)  # labels of the run: a resumed run's earlier ones too, less retracted
        self.training_steps = ctx.RawValue("q", 0)
        self.db_bytes = ctx.RawValue("q", 0)  # clip data the trainer's database holds in memory
        self.labels_in_snapshot = ctx.RawValue("q", 0)  # the run's labels in log_dir's train/val files
        self.labels_retracted = ctx.RawValue("q", 0)  # answers taken back in this session
        self.agreement = SharedRows(ctx)  # the interface's ``Agreement.rows()``

    def as_dict(self) -> dict:
        counters = {k: v.value for k, v in vars(self).items() if k != "agreement"}
        return {**counters, "agreement": [tuple(row) for row in self.agreement.read()]}


class SharedRows:
    """A small JSON value one process writes and others read without a lock (e.g. agreement rows for ``stats()``).

    A seqlock: the writer makes the version odd, writes, makes it even; a reader retries while the version is odd
    or changed under it. Values past ``size`` bytes are cut to an empty list (agreement rows of a few dozen
    labeller pairs fit).
    """

    def __init__(self, ctx, size: int = 16384) -> None:
        self._version = ctx.RawValue("q", 0)
        self._length = ctx.RawValue("q", 2)
        self._data = ctx.RawArray("c", size)
        self._data[:2] = b"[]"

    def write(self, rows: list) -> None:
        data = json.dumps(rows).encode()
        if len(data) > len(self._data):
            data = b"[]"
        self._version.value += 1
        self._data[:len(data)] = data
        self._length.value = len(data)
        self._version.value += 1

    def read(self) -> list:
        while True:
            version = self._version.value
            if version % 2 == 0:
                data = self._data[:self._length.value]
                if self._version.value == version:
                    return json.loads(data)
            time.sleep(0.0001)
