"""Moving clips from the env process to the preference interface without pickling.

Pickling a Pong clip through a ``multiprocessing.Queue`` costs the main process
many times what copying it into preallocated shared memory does
(docs/benchmarks.md), plus GIL contention from the queue's feeder thread. So the channel owns
``n_slots`` shared-memory slots: the sender copies a finished clip into a free
slot and sends only ``(slot, clip_id, rewards)``; the receiver copies the frames
out and hands the slot back. When no slot is free the clip is dropped and
counted: ``step()`` never waits for the other process.
"""
from __future__ import annotations

import queue

import numpy as np

from drlhp.clips.clip import Clip
from drlhp.clips.frames import FrameSpec


class ClipChannel:
    """A small queue of clips backed by shared memory; create it before starting the receiver."""

    def __init__(self, ctx, spec: FrameSpec, length: int, n_slots: int) -> None:
        self.spec = spec
        self.length = length
        self.n_slots = n_slots
        slot_shape = (length, *spec.shape)
        nbytes = n_slots * int(np.prod(slot_shape)) * np.dtype(spec.dtype).itemsize
        self._shared = ctx.RawArray("B", nbytes)
        self._ready = ctx.Queue(n_slots)
        self._free = ctx.Queue(n_slots)
        self._slots: np.ndarray | None = None
        self._free_local = list(range(n_slots))
        self._next_id = 0
        self.n_sent = 0
        self.n_dropped = 0

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state["_slots"] = None  # a view of the shared buffer; rebuilt in the receiver
        return state

    @property
    def slots(self) -> np.ndarray:
        if self._slots is None:
            self._slots = np.frombuffer(self._shared, dtype=np.dtype(self.spec.dtype)).reshape(
                self.n_slots, self.length, *self.spec.shape
            )
        return self._slots

    # -- sender (env process) -------------------------------------------------
    def send(self, frames: np.ndarray, rewards: np.ndarray, episode: int = -1, env_index: int = 0) -> bool:
        """Offer a clip; returns False (and counts a drop) if the receiver is behind."""
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
        self._free.put(slot)
        return Clip(clip_id, frames, rewards, episode, env_index)

    def close(self) -> None:
        for q in (self._ready, self._free):
            q.cancel_join_thread()
            q.close()
