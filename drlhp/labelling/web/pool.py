"""The pairs out with web labellers: who holds which, timeouts, and answers counted once.

Shared by the preference interface's main thread (which offers pairs and records
answers) and the web server's thread (which hands pairs out and takes answers),
so every method takes the one lock. An answer is acknowledged to the browser only
once the interface has journaled it: ``answer`` returns a future the interface
completes after the label is on disk.
"""
from __future__ import annotations

import threading
import time
from collections import OrderedDict, deque
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Callable

from drlhp.clips.segments import Segment
from drlhp.errors import ConfigError

#: A labeller counts as active (and is kept a spare pair) this long after their last request.
ACTIVE_SECONDS = 60.0
#: Answered pair ids remembered to recognise an answer sent twice.
MAX_REMEMBERED_ANSWERS = 100_000


@dataclass
class OutPair:
    """A pair offered to the web labellers."""

    pair_id: int
    a: Segment
    b: Segment
    holder: str | None = None  # who it is handed to now
    handed_at: float = 0.0  # when, by the pool's clock


@dataclass
class Answer:
    """A labeller's answer, waiting for the interface to record it."""

    a: Segment
    b: Segment
    label: float | None  # None: "can't tell" (nothing is recorded)
    labeller: str
    seconds: float | None  # from handing the pair to this labeller to the answer (None: it was not theirs)
    pair_id: int
    done: Future = field(default_factory=Future)  # set once the label is journaled (or the pair skipped)


class PairPool:
    """Pairs offered and not yet answered; each is handed to one labeller at a time.

    A pair handed out and not answered within ``timeout`` seconds goes back to the
    pool for someone else; the first answer to arrive counts, and the same answer
    sent again gets the first one's acknowledgement without being counted twice.
    """

    def __init__(self, timeout: float, clock: Callable[[], float] = time.monotonic) -> None:
        if timeout <= 0:
            raise ConfigError(f"timeout must be > 0, got {timeout}")
        self.timeout, self.clock = timeout, clock
        self._lock = threading.Lock()
        self._next_id = 1  # people see these numbers
        self._out: OrderedDict[int, OutPair] = OrderedDict()  # offered, unanswered; oldest first
        self._answered: dict[int, Answer] = {}
        self._answered_order: deque[int] = deque()
        self._new_answers: list[Answer] = []
        self._last_seen: dict[str, float] = {}
        self._counts: dict[str, int] = {}

    def offer(self, a: Segment, b: Segment) -> int:
        with self._lock:
            pair_id, self._next_id = self._next_id, self._next_id + 1
            self._out[pair_id] = OutPair(pair_id, a, b)
            return pair_id

    def wants_pairs(self) -> bool:
        """Whether the pool has fewer free pairs than the labellers active now, plus one spare."""
        with self._lock:
            now = self.clock()
            active = sum(now - t < ACTIVE_SECONDS for t in self._last_seen.values())
            free = sum(self._is_free(p, now) for p in self._out.values())
            return free < active + 1

    def next_for(self, name: str) -> OutPair | None:
        """The pair ``name`` should answer now: the one they hold, or a free one handed to them; None if none."""
        with self._lock:
            now = self.clock()
            self._last_seen[name] = now
            held = next((p for p in self._out.values() if p.holder == name and not self._expired(p, now)), None)
            if held is not None:
                return held
            for pair in self._out.values():
                if self._is_free(pair, now):
                    pair.holder, pair.handed_at = name, now
                    return pair
        return None

    def answer(self, pair_id: int, label: float | None, name: str) -> tuple[str, Answer | None]:
        """Take ``name``'s answer: ``("new", answer)``, ``("duplicate", first answer)`` or ``("unknown", None)``.

        A pair that was never handed out is unknown: answers are to pairs a labeller was shown.
        """
        with self._lock:
            if pair_id in self._answered:
                return "duplicate", self._answered[pair_id]
            pair = self._out.get(pair_id)
            if pair is None or pair.holder is None:
                return "unknown", None
            del self._out[pair_id]
            seconds = self.clock() - pair.handed_at if pair.holder == name else None
            answer = Answer(pair.a, pair.b, label, name, seconds, pair_id)
            self._answered[pair_id] = answer
            self._answered_order.append(pair_id)
            while len(self._answered_order) > MAX_REMEMBERED_ANSWERS:
                del self._answered[self._answered_order.popleft()]
            self._new_answers.append(answer)
            if label is not None:
                self._counts[name] = self._counts.get(name, 0) + 1
            self._last_seen[name] = self.clock()
        return "new", answer

    def take_answers(self) -> list[Answer]:
        """Answers since the last call, oldest first, for the interface to record."""
        with self._lock:
            answers, self._new_answers = self._new_answers, []
            return answers

    def count(self, name: str) -> int:
        """Labels ``name`` gave (skips not counted)."""
        with self._lock:
            return self._counts.get(name, 0)

    def clip(self, seg_id: int) -> Segment | None:
        """The clip of that id if a pair out with the labellers shows it (only those are served), else None."""
        with self._lock:
            for p in self._out.values():
                for seg in (p.a, p.b):
                    if seg.seg_id == seg_id:
                        return seg
        return None

    def fail_waiting(self, why: str) -> None:
        """Answers not yet recorded will not be (the interface is stopping): tell their browsers."""
        for answer in self.take_answers():
            if not answer.done.done():
                answer.done.set_exception(RuntimeError(why))

    def _is_free(self, pair: OutPair, now: float) -> bool:
        return pair.holder is None or self._expired(pair, now)

    def _expired(self, pair: OutPair, now: float) -> bool:
        return pair.holder is not None and now - pair.handed_at > self.timeout
