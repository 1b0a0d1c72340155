"""Starting, watching and stopping drlhp's two background processes.

The picture of what flows between them is in ``drlhp.runtime.pipeline``, which owns
them; this module is how any one of them is run.

Every worker runs ``_worker_main``: it ignores Ctrl-C (the main process decides
when to stop), stops by itself if the main process dies (the trainer saving
unsaved labels first; at most ``PARENT_DEATH_GRACE_S`` later it exits regardless), and sends any exception
with its traceback on the error queue before exiting. The main process notices a
dead worker through its process sentinel, so a worker killed by a signal is
reported as promptly as one that raised.
"""
from __future__ import annotations

import logging
import multiprocessing
import multiprocessing.connection
import os
import queue
import select
import signal
import threading
import time
import traceback
from typing import Callable, cast

from drlhp.errors import WorkerError

log = logging.getLogger("drlhp")


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
    """Counters the processes update and the main process reads without locking."""

    def __init__(self, ctx) -> None:
        self.env_steps = ctx.RawValue("q", 0)  # steps of all envs in this session: the label schedule's clock
        self.segments_received = ctx.RawValue("q", 0)
        self.labels_asked = ctx.RawValue("q", 0)  # pairs the run asked about (answered or skipped)
        self.labels_sent = ctx.RawValue("q", 0)  # labels answered in this session
        self.prefs_received = ctx.RawValue("q", 0)  # labels the trainer received in this session
        self.run_labels = ctx.RawValue("q", 0)  # labels of the run: a resumed run's earlier ones too
        self.training_steps = ctx.RawValue("q", 0)
        self.db_bytes = ctx.RawValue("q", 0)  # clip data the trainer's database holds in memory
        self.labels_in_snapshot = ctx.RawValue("q", 0)  # the run's labels in log_dir's train/val files

    def as_dict(self) -> dict:
        return {k: v.value for k, v in vars(self).items()}


#: Seconds a worker whose parent died gets to finish (the trainer saves unsaved labels).
PARENT_DEATH_GRACE_S = 30.0


def _stop_when_parent_dies(stop_event) -> None:
    parent = multiprocessing.parent_process()
    if parent is None:
        return

    def watch() -> None:
        multiprocessing.connection.wait([parent.sentinel])
        if stop_event is not None:
            stop_event.set()  # stop as if close() had been called ...
            time.sleep(PARENT_DEATH_GRACE_S)  # ... but never outlive the parent for long
        os._exit(1)

    threading.Thread(target=watch, name="drlhp-parent-watch", daemon=True).start()


def _worker_main(name: str, target: Callable, args: tuple, error_queue, log_level: int, stop_event) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    logging.basicConfig(level=log_level, format=f"%(asctime)s drlhp[{name}] %(levelname)s %(message)s")
    logging.getLogger("drlhp").setLevel(log_level)
    _stop_when_parent_dies(stop_event)
    try:
        target(*args)
    except BaseException:
        error_queue.put((name, traceback.format_exc()))
        error_queue.close()
        error_queue.join_thread()
        raise SystemExit(1) from None


class Workers:
    """The background processes of one wrapper, started with an explicit context."""

    def __init__(self, ctx, log_level: int) -> None:
        self.ctx = ctx
        self.log_level = log_level
        self.errors = ctx.Queue()
        self.procs: dict[str, multiprocessing.process.BaseProcess] = {}
        # Sentinel -> name of each worker not asked to stop: what check() watches on every step.
        self._watched: dict[int, str] = {}

    def start(self, name: str, target: Callable, *args, stop_event=None) -> None:
        """Run ``target(*args)`` in a new process; ``stop_event`` is set if this process dies."""
        proc = self.ctx.Process(target=_worker_main, args=(name, target, args, self.errors, self.log_level, stop_event),
                                name=f"drlhp-{name}", daemon=True)
        proc.start()
        self.procs[name] = proc
        self._watched[proc.sentinel] = name

    def check(self) -> None:
        """Raise ``WorkerError`` if a worker has died without being asked to stop.

        Runs on every env step: one ``select`` on the cached sentinels (~1 us;
        ``multiprocessing.connection.wait`` builds a selector per call, ~17 us).
        """
        if not self._watched:
            return
        if os.name == "posix":
            ready = select.select(list(self._watched), [], [], 0)[0]
        else:  # sentinels are handles, not file descriptors
            # wait() returns those of the objects given that are ready: here sentinels (ints).
            ready = cast("list[int]", multiprocessing.connection.wait(list(self._watched), timeout=0))
        if ready:
            raise self._failure(self._watched[ready[0]])

    def _unwatch(self, name: str) -> None:
        self._watched.pop(self.procs[name].sentinel, None)

    def _failure(self, name: str) -> WorkerError:
        proc = self.procs[name]
        proc.join(1)
        self._unwatch(name)  # report each death once
        try:
            who, tb = self.errors.get(timeout=1.0)
            return WorkerError(f"drlhp's {who} process failed:\n{tb}")
        except queue.Empty:
            code = proc.exitcode
            how = (f"was killed by signal {signal.Signals(-code).name}" if code is not None and code < 0
                   else f"exited with code {code}")
            if code == 1:  # Python's exit code for an exception before drlhp's code ran
                hint = ("before it could start drlhp's code. With the 'spawn' and 'forkserver' start methods the "
                        "child re-imports your script: put the code that creates the wrapper under "
                        "`if __name__ == \"__main__\":` (see the worker's traceback above in stderr).")
            else:
                hint = ("(out of memory? killed by hand?). The labels made so far are in log_dir's label journal "
                        "(unless autosave_prefs=False): start again with resume=True to go on from them.")
            return WorkerError(f"drlhp's {name} process {how} without reporting an error {hint}")

    def stop(self, name: str, timeout: float) -> None:
        """Wait up to ``timeout`` s for a worker that was asked to stop; then terminate, then kill."""
        proc = self.procs.get(name)
        if proc is None:
            return
        self._unwatch(name)
        proc.join(timeout)
        if proc.is_alive():
            log.warning("drlhp %s process did not stop within %.0f s; terminating it", name, timeout)
            proc.terminate()
            proc.join(2)
        if proc.is_alive():
            proc.kill()
            proc.join(2)

    def pending_error(self) -> str | None:
        try:
            who, tb = self.errors.get_nowait()
            return f"drlhp's {who} process failed:\n{tb}"
        except queue.Empty:
            return None

    def close(self) -> None:
        for name in list(self.procs):
            self.stop(name, 0)
        self.errors.cancel_join_thread()
        self.errors.close()
