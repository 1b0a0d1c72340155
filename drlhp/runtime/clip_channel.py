"""Moving clips from the env process to the preference interface without pickling.

Pickling a Pong clip through a ``multiprocessing.Queue`` costs the main process
many times what copying it into preallocated shared memory does
(docs/benchmarks.md), plus GIL contention from the queue's feeder thread. So the channel owns
``n_slots`` shared-memory slots: the sender copies a finished clip into a free
slot and sends only ``(slot, clip_id, rewards)``; the receiver copies the frames
out and hands the slot back. A clip may bring what a person is shown of it (the env's
renders): those travel the same way, in slots of their own. When no slot is free the clip is dropped and
counted: ``step()`` never waits for the other process.
"""
from __future__ import annotations

import queue

import numpy as np

from drlhp.clips.clip import Clip
from drlhp.clips.frames import FrameSpec


class ClipChannel:
    """A small queue of clips backed by shared memory; create it before starting the receiver."""

    def __init__(self, ctx, spec: FrameSpec, length: int, n_slots: int, display_spec: FrameSpec | None = None) -> None:
        self.spec, self.display_spec = spec, display_spec
        self.length = length
        self.n_slots = n_slots
        self._shared = ctx.RawArray("B", self._nbytes(spec))
        self._shared_display = None if display_spec is None else ctx.RawArray("B", self._nbytes(display_spec))
        self._ready = ctx.Queue(n_slots)
        self._free = ctx.Queue(n_slots)
        self._slots: np.ndarray | None = None
        self._display_slots: np.ndarray | None = None
        self._free_local = list(range(n_slots))
        self._next_id = 0
        self.n_sent = 0
        self.n_dropped = 0

    def _nbytes(self, spec: FrameSpec) -> int:
        return self.n_slots * self.length * int(np.prod(spec.shape)) * np.dtype(spec.dtype).itemsize

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state["_slots"] = state["_display_slots"] = None  # views of the shared buffers; rebuilt in the receiver
        return state

    def _view(self, shared, spec: FrameSpec) -> np.ndarray:
        return np.frombuffer(shared, dtype=np.dtype(spec.dtype)).reshape(self.n_slots, self.length, *spec.shape)

    @property
    def slots(self) -> np.ndarray:
        if self._slots is None:
            self._slots = self._view(self._shared, self.spec)
        return self._slots

    @property
    def display_slots(self) -> np.ndarray | None:
        if self._display_slots is None and self.display_spec is not None:
            self._display_slots = self._view(self._shared_display, self.display_spec)
        return self._display_slots

    # -- sender (env process) -------------------------------------------------
    def send(self, frames: np.ndarray, rewards: np.ndarray, episode: int = -1, env_index: int = 0,
             display: np.ndarray | None = None) -> bool:
        """Offer a clip (with what a person is shown of it, on a channel made with ``display_spec``); returns False
        (and counts a drop) if the receiver is behind."""
        if not self._free_local:
            try:
                while True:
                    self._free_local.append(self._free.get_nowait())
            except queue.Empty:
                pass
        if not self._free_local:
            self.n_dropped += 1
            return False
        slot = self._free_local.pop()
        self.slots[slot] = frames
        if self.display_slots is not None:
            self.display_slots[slot] = display
        self._ready.put_nowait((slot, self._next_id, rewards.copy(), episode, env_index))
        self._next_id += 1
        self.n_sent += 1
        return True

    # -- receiver (preference-interface process) ------------------------------
    def receive(self, timeout: float) -> Clip | None:
        """The next clip, or None if none arrives within ``timeout`` seconds."""
        try:
            message = self._ready.get(timeout=timeout) if timeout > 0 else self._ready.get_nowait()
        except queue.Empty:
            return None
        slot, clip_id, rewards, episode, env_index = message
        frames = self.slots[slot].copy()
        display = None if self.display_slots is None else self.display_slots[slot].copy()
        self._free.put(slot)
        return Clip(clip_id, frames, rewards, episode, env_index, display)

    def close(self) -> None:
        for q in (self._ready, self._free):
            q.cancel_join_thread()
            q.close()
