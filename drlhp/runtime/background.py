"""The two background processes of one pipeline: started, watched, asked to save, stopped.

``PreferencePipeline`` (``drlhp.runtime.pipeline``) streams clips and serves rewards;
this is its other job: the preference-interface and reward-training processes, the queues
between them, and their lifecycle. How any one worker process runs: ``drlhp.runtime.workers``.
"""
from __future__ import annotations

import atexit
import contextlib
import logging
import multiprocessing
import queue
import sys
import time
import weakref
from collections.abc import Callable
from typing import Any, TypeVar

from drlhp.clips.frames import FrameSpec
from drlhp.config import PreferenceConfig
from drlhp.labelling.interface import InterfaceConfig, run_pref_interface
from drlhp.reward.training_loop import TrainerConfig, run_reward_trainer
from drlhp.runtime.messages import PrefsSaved, SavePrefs, TrainerFailed, TrainerReady
from drlhp.runtime.segment_channel import SegmentChannel
from drlhp.runtime.workers import SharedStats, StopFlag, WorkerError, Workers

log = logging.getLogger("drlhp")
Reply = TypeVar("Reply", TrainerReady, PrefsSaved)


class BackgroundProcesses:
    """The reward trainer and (when collecting) the preference interface of a run with ``config``.

    The shared counters (``stats``) exist before and without the processes, so a pipeline's
    ``stats()`` has the same keys in every mode.
    """

    def __init__(self, config: PreferenceConfig) -> None:
        self.config = config
        self.ctx = multiprocessing.get_context(config.mp_start_method)
        self.stats = SharedStats(self.ctx)
        self.channel: SegmentChannel | None = None  # clips to the interface (collecting only)
        self.labelling_url: str | None = None  # the labelling page's address, token included (labelling="web")
        self.closed = True  # until the processes exist, close() has nothing to stop
        self._workers: Workers | None = None

    @property
    def started(self) -> bool:
        return self._workers is not None

    def start(self, trainer_config: TrainerConfig, interface_config: InterfaceConfig | None, frame_spec: FrameSpec,
              n_slots: int) -> TrainerReady:
        """Start the trainer (and the interface, given its settings); return once the trainer is ready."""
        c, ctx = self.config, self.ctx
        self._workers = Workers(ctx, c.log_level)
        # A script that ends without close() (or ``with``) would hang in __del__: close() starts a queue
        # thread, which the interpreter can no longer do by then. So close at exit, before that.
        self._close_at_exit = _close_at_exit(weakref.ref(self))
        atexit.register(self._close_at_exit)
        self.closed = False
        self._pref_queue = ctx.Queue(64)
        self._run_start, self._commands, self._replies = ctx.Queue(1), ctx.Queue(), ctx.Queue()
        self._url_queue = ctx.Queue(1)
        self._interface_stop, self._trainer_stop = StopFlag(ctx), StopFlag(ctx)
        web = interface_config is not None and interface_config.web is not None
        try:
            self._workers.start("reward_trainer", run_reward_trainer, trainer_config, self._pref_queue,
                                self._run_start, self._commands, self._replies, self._trainer_stop, self.stats,
                                stop_event=self._trainer_stop)
            if interface_config is not None:
                self.channel = SegmentChannel(ctx, frame_spec, c.segment_length, n_slots)
                self._workers.start("pref_interface", run_pref_interface, interface_config, self.channel,
                                    self._pref_queue, self._run_start, self._interface_stop, self.stats,
                                    self._url_queue if web else None, stop_event=self._interface_stop)
            # Wait until the trainer holds the log_dir lock and has loaded what the run starts from,
            # so a busy log_dir or a bad file fails here, with its own message.
            ready = self.await_reply(TrainerReady, timeout=120.0)
            if web:  # and until the page is served (a port in use fails here)
                self.labelling_url = self._await_queue(self._url_queue, "pref_interface", timeout=60.0)
                print(f"drlhp: label at {self.labelling_url}", file=sys.stderr, flush=True)
        except BaseException:
            with contextlib.suppress(WorkerError):  # the error being raised says what went wrong
                self.close()
            raise
        return ready

    def save_prefs(self, directory: str, timeout: float) -> PrefsSaved:
        """Have the trainer write ``train.pkl.gz`` and ``val.pkl.gz`` into ``directory``."""
        if self.closed:
            raise RuntimeError("save_prefs() needs a running wrapper with collect_prefs=True or prefs_dir=.")
        self._commands.put(SavePrefs(directory))
        return self.await_reply(PrefsSaved, timeout)

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

    def await_reply(self, expected: type[Reply], timeout: float) -> Reply:
        """The trainer's next reply, checking all the while that the workers are alive."""
        reply = self._await_queue(self._replies, "reward_trainer", timeout)
        if isinstance(reply, TrainerFailed):
            raise reply.error
        if not isinstance(reply, expected):
            raise WorkerError(f"drlhp's reward_trainer process replied {reply!r}, not a {expected.__name__}")
        return reply

    @property
    def processes(self) -> dict:
        """The processes by name (``reward_trainer``, ``pref_interface``); empty if none."""
        return dict(self._workers.procs) if self._workers is not None else {}

    def check(self) -> None:
        """Raise ``WorkerError`` if a process has failed."""
        if not self.closed:
            assert self._workers is not None  # not closed: start() made them
            self._workers.check()

    def close(self) -> None:
        """Stop the processes, letting the trainer save unsaved labels. Idempotent."""
        if self.closed:
            return
        self.closed = True
        atexit.unregister(self._close_at_exit)
        workers = self._workers
        assert workers is not None  # it was not closed: start() made them
        unreported: WorkerError | None = None
        try:
            workers.check()  # a worker that died since the last step(): report it here, once
        except WorkerError as e:
            unreported = e
        # Interface first, so every label it made is in the trainer's queue before the trainer stops.
        self._interface_stop.set()
        workers.stop("pref_interface", timeout=5.0)
        try:
            self._pref_queue.put(None, timeout=1.0)  # in case the interface died before saying so
        except queue.Full:
            pass
        self._trainer_stop.set()
        workers.stop("reward_trainer", timeout=self.config.close_timeout)
        error = workers.pending_error()
        workers.close()
        for q in (self._pref_queue, self._run_start, self._commands, self._replies, self._url_queue):
            q.cancel_join_thread()
            q.close()
        if self.channel is not None:
            self.channel.close()
        if unreported is not None:
            raise unreported
        if error:
            raise WorkerError(error)

    def __del__(self) -> None:
        # A safety net only: call close() (or use ``with``) to save labels reliably.
        if not getattr(self, "closed", True):
            try:
                self.close()
            except Exception:
                pass


def _close_at_exit(processes: weakref.ref) -> Callable[[], None]:
    """An exit handler that closes the processes if they are still running (it holds no reference to them)."""
    def close() -> None:
        p = processes()
        if p is not None:
            p.close()
    return close
