"""The run's two background processes -- the reward trainer and (when collecting) the preference interface:
started, watched on every step, asked to save, stopped.

Every worker runs ``_worker_main``: it ignores Ctrl-C and SIGTERM, which a terminal or a job scheduler sends
to the whole process group (the main process decides when to stop: the examples save the agent first), stops by
itself if the main process dies (the trainer saving unsaved labels first; at most ``PARENT_DEATH_GRACE_S``
later it exits regardless), and sends any exception with its traceback on the error queue before exiting.
The main process notices a dead worker through its process sentinel, so a worker killed by a signal is
reported as promptly as one that raised.
"""
from __future__ import annotations

import atexit
import contextlib
import gc
import logging
import multiprocessing
import multiprocessing.connection
import os
import queue
import select
import signal
import sys
import threading
import time
import traceback
import weakref
from collections.abc import Callable
from typing import Any, TypeVar, cast

from drlhp.clips.frames import FrameSpec
from drlhp.config import PreferenceConfig
from drlhp.errors import UsageError, WorkerError, WriteError
from drlhp.runtime.clip_channel import ClipChannel
from drlhp.runtime.interface_process import run_pref_interface
from drlhp.runtime.messages import LabelsSaved, SaveLabels, TrainerFailed, TrainerReady
from drlhp.runtime.settings import InterfaceConfig, TrainerConfig
from drlhp.runtime.shared import SharedStats, StopFlag
from drlhp.runtime.trainer_process import run_reward_trainer

log = logging.getLogger("drlhp")
Reply = TypeVar("Reply", TrainerReady, LabelsSaved)

#: Seconds a worker whose parent died gets to finish (the trainer saves unsaved labels).
PARENT_DEATH_GRACE_S = 30.0
TRAINER, INTERFACE = "reward_trainer", "pref_interface"


class Workers:
    """The background processes of a run with ``config``.

    The shared counters (``stats``) exist before and without the processes, so a pipeline's
    ``stats()`` has the same keys in every mode.
    """

    def __init__(self, config: PreferenceConfig) -> None:
        self.config = config
        # Any: typeshed types get_context(str) as a BaseContext, which declares no Process; every context has one.
        self.ctx: Any = multiprocessing.get_context(config.mp_start_method)
        self.stats = SharedStats(self.ctx)
        self.channel: ClipChannel | None = None  # clips to the interface (collecting only)
        self.labelling_url: str | None = None  # the labelling page's address, token included (labelling="web")
        self.labelling_owner_url: str | None = None  # the run owner's page: who labels, their pace, agreement
        self.closed = True  # until the processes exist, close() has nothing to stop
        self.started = False
        self._procs: dict[str, multiprocessing.process.BaseProcess] = {}
        self._failed = False  # a worker's failure was raised: close() then logs, not raises, what else failed
        # Sentinel -> name of each worker not asked to stop: what check() watches on every step.
        self._watched: dict[int, str] = {}

    def start(self, trainer: TrainerConfig, interface: InterfaceConfig | None, frame_spec: FrameSpec,
              n_slots: int, display_spec: FrameSpec | None = None) -> TrainerReady:
        """Start the trainer (and the interface, given its settings); return once the trainer is ready.
        ``display_spec``: clips bring what a person is shown of them, images of this spec (None: the frames)."""
        c, ctx = self.config, self.ctx
        self.started = True
        # A script that ends without close() (or ``with``) would hang in __del__: close() starts a queue
        # thread, which the interpreter can no longer do by then. So close at exit, before that.
        self._close_at_exit = _close_at_exit(weakref.ref(self))
        atexit.register(self._close_at_exit)
        self.closed = False
        self._errors = ctx.Queue()
        self._label_queue = ctx.Queue(64)
        self._run_start, self._commands, self._replies = ctx.Queue(1), ctx.Queue(), ctx.Queue()
        self._url_queue = ctx.Queue(1)
        self._interface_stop, self._trainer_stop = StopFlag(ctx), StopFlag(ctx)
        web = interface is not None and interface.web is not None
        try:
            self._start(TRAINER, run_reward_trainer, trainer, self._label_queue, self._run_start, self._commands,
                        self._replies, self._trainer_stop, self.stats, stop=self._trainer_stop)
            if interface is not None:
                self.channel = ClipChannel(ctx, frame_spec, c.segment_length, n_slots, display_spec)
                self._start(INTERFACE, run_pref_interface, interface, self.channel, self._label_queue,
                            self._run_start, self._interface_stop, self.stats, self._url_queue if web else None,
                            stop=self._interface_stop)
            # Wait until the trainer holds the log_dir lock and has loaded what the run starts from,
            # so a busy log_dir or a bad file fails here, with its own message.
            ready = self.await_reply(TrainerReady, timeout=120.0)
            if web:  # and until the page is served (a port in use fails here)
                self.labelling_url, self.labelling_owner_url = self._await_queue(self._url_queue, INTERFACE,
                                                                                 timeout=60.0)
                print(f"drlhp: label at {self.labelling_url}\ndrlhp: the run owner's page (who labels, agreement; "
                      f"keep it to yourself) at {self.labelling_owner_url}", file=sys.stderr, flush=True)
        except BaseException:
            with contextlib.suppress(WorkerError):  # the error being raised says what went wrong
                self.close()
            raise
        return ready

    def _start(self, name: str, target: Callable, *args, stop: StopFlag) -> None:
        """Run ``target(*args)`` in a new process; ``stop`` is set if this process dies."""
        proc = self.ctx.Process(target=_worker_main, args=(name, target, args, self._errors, self.config.log_level,
                                                           stop), name=f"drlhp-{name}", daemon=True)
        proc.start()
        self._procs[name] = proc
        self._watched[proc.sentinel] = name

    # -- commands ----------------------------------------------------------------------------
    def save_prefs(self, directory: str, timeout: float) -> LabelsSaved:
        """Have the trainer write ``train.pkl.gz`` and ``val.pkl.gz`` into ``directory``."""
        if self.closed:
            raise UsageError("save_prefs() needs a running wrapper with collect_prefs=True or prefs_dir=.")
        self._commands.put(SaveLabels(directory))
        return self.await_reply(LabelsSaved, timeout)

    def await_reply(self, expected: type[Reply], timeout: float) -> Reply:
        """The trainer's next reply, checking all the while that the workers are alive."""
        reply = self._await_queue(self._replies, TRAINER, timeout)
        if isinstance(reply, TrainerFailed):
            raise reply.error
        if not isinstance(reply, expected):
            raise WorkerError(f"drlhp's {TRAINER} process replied {reply!r}, not a {expected.__name__}")
        return reply

    def _await_queue(self, q, sender: str, timeout: float) -> Any:
        """The next item on ``q``, checking all the while that the workers are alive."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.check()
            try:
                return q.get(timeout=0.1)
            except queue.Empty:
                continue
        raise TimeoutError(f"drlhp's {sender} process did not answer within {timeout} s")

    # -- watching ----------------------------------------------------------------------------
    @property
    def processes(self) -> dict:
        """The processes by name (``reward_trainer``, ``pref_interface``); empty if none."""
        return dict(self._procs)

    def check(self) -> None:
        """Raise ``WorkerError`` if a worker has died without being asked to stop.

        Runs on every env step: one ``select`` on the cached sentinels, where
        ``multiprocessing.connection.wait`` would build a selector per call (docs/benchmarks.md).
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

    def _failure(self, name: str) -> WorkerError | WriteError:
        proc = self._procs[name]
        proc.join(1)
        self._watched.pop(proc.sentinel, None)  # report each death once
        self._failed = True
        try:
            return _reported_error(*self._errors.get(timeout=1.0))
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

    # -- stopping ------------------------------------------------------------------------------
    def close(self) -> None:
        """Stop the processes, letting the trainer save unsaved labels. Idempotent."""
        if self.closed:
            return
        self.closed = True
        already_failed = self._failed
        atexit.unregister(self._close_at_exit)
        unreported: WorkerError | WriteError | None = None
        try:
            self.check()  # a worker that died since the last step(): report it here, once
        except (WorkerError, WriteError) as e:
            unreported = e
        # Interface first, so every label it made is in the trainer's queue before the trainer stops.
        self._interface_stop.set()
        self._stop(INTERFACE, timeout=5.0)
        try:
            self._label_queue.put(None, timeout=1.0)  # in case the interface died before saying so
        except queue.Full:
            pass
        self._trainer_stop.set()
        self._stop(TRAINER, timeout=self.config.close_timeout)
        error = self._pending_error()
        for name in self._procs:
            self._stop(name, 0)
        for q in (self._errors, self._label_queue, self._run_start, self._commands, self._replies, self._url_queue):
            q.cancel_join_thread()
            q.close()
        if self.channel is not None:
            self.channel.close()
        first = unreported or (None if already_failed else error)
        if error is not None and error is not first:
            # A full disk fails both processes: the run's failure is one error, the others go to the log.
            log.warning("besides the failure reported: %s", error)
        if first is not None:
            raise first

    def _stop(self, name: str, timeout: float) -> None:
        """Wait up to ``timeout`` s for a worker that was asked to stop; then kill it (it ignores SIGTERM)."""
        proc = self._procs.get(name)
        if proc is None:
            return
        self._watched.pop(proc.sentinel, None)
        proc.join(timeout)
        if proc.is_alive():
            log.warning("drlhp %s process did not stop within %.0f s; killing it", name, timeout)
            proc.kill()
            proc.join(2)

    def _pending_error(self) -> WorkerError | WriteError | None:
        try:
            return _reported_error(*self._errors.get_nowait())
        except queue.Empty:
            return None

    def __del__(self) -> None:
        # A safety net only: call close() (or use ``with``) to save labels reliably.
        if not getattr(self, "closed", True):
            try:
                self.close()
            except Exception:
                pass


def _reported_error(who: str, traceback_text: str, write_error: str | None) -> WorkerError | WriteError:
    """The error a worker sent, for the main process: a write the OS refused in one line (the worker logged its
    traceback), anything else with its traceback."""
    if write_error is not None:
        return WriteError(f"drlhp's {who} process stopped: {write_error}")
    return WorkerError(f"drlhp's {who} process failed:\n{traceback_text}")


def _close_at_exit(workers: weakref.ref) -> Callable[[], None]:
    """An exit handler that closes the workers if they are still running (it holds no reference to them)."""
    def close() -> None:
        w = workers()
        if w is not None:
            w.close()
    return close


# -- inside a worker process ------------------------------------------------------------------
def _worker_main(name: str, target: Callable, args: tuple, error_queue, log_level: int, stop: StopFlag) -> None:
    for stop_signal in (signal.SIGINT, signal.SIGTERM):
        signal.signal(stop_signal, signal.SIG_IGN)
    logging.basicConfig(level=log_level, format=f"%(asctime)s drlhp[{name}] %(levelname)s %(message)s")
    logging.getLogger("drlhp").setLevel(log_level)
    _stop_when_parent_dies(stop)
    try:
        target(*args)
    except BaseException as e:
        write_error = str(e) if isinstance(e, WriteError) else None
        if write_error is not None:  # the main process raises it in one line; the details go to the log here
            logging.getLogger("drlhp").error("%s", write_error, exc_info=True)
        error_queue.put((name, traceback.format_exc(), write_error))
        error_queue.close()
        error_queue.join_thread()
        raise SystemExit(1) from None
    finally:
        # The interpreter's teardown then skips the garbage collector's passes over torch's objects: about
        # 0.3-0.6 s of every worker's exit, which close() waits for (and the log_dir lock is held until the
        # trainer has exited). Teardown still runs in full otherwise: atexit handlers, module cleanup, flushes.
        gc.freeze()


def _stop_when_parent_dies(stop: StopFlag) -> None:
    parent = multiprocessing.parent_process()
    if parent is None:
        return

    def watch() -> None:
        multiprocessing.connection.wait([parent.sentinel])
        stop.set()  # stop as if close() had been called ...
        time.sleep(PARENT_DEATH_GRACE_S)  # ... but never outlive the parent for long
        os._exit(1)

    threading.Thread(target=watch, name="drlhp-parent-watch", daemon=True).start()
