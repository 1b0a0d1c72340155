"""The pairs out with web labellers: who holds which, timeouts, answers counted once, second opinions, undo.

Shared by the preference interface's main thread (which offers pairs and records
answers) and the web server's thread (which hands pairs out and takes answers),
so every method takes the one lock. An answer is acknowledged to the browser only
once the interface has journaled it: ``answer`` returns an ``Answer`` whose future the
interface completes after the label is on disk; a take-back (``take_back``) likewise.

Second opinions: with ``second_opinion_share`` > 0, that share of first answers, given while
another labeller is active, keeps its pair in the pool for someone else; their answer
is the pair's second (``Answer.first`` names the one it seconds).

Undo: each labeller may take back their own answers, newest first, back to
``undo_limit``. The pair goes back to them at once, to answer again.
"""
from __future__ import annotations

import random
import statistics
import threading
import time
from collections import OrderedDict, deque
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Callable, Literal

from drlhp.clips.clip import Clip
from drlhp.errors import ConfigError
from drlhp.labelling.answers import DEFAULT_UNDO_LIMIT, Answer, Event, TakeBack

#: A labeller counts as active (and is kept a spare pair) this long after their last request.
ACTIVE_SECONDS = 60.0
#: Answered pair ids remembered to recognise an answer (or a take-back) sent twice.
MAX_REMEMBERED_ANSWERS = 100_000
#: Pairs waiting for a second opinion at most; past it the oldest goes unseconded (nobody else is answering).
MAX_AWAITING_SECOND = 20
#: Answers a labeller's pace (median seconds per answer) is taken over.
PACE_WINDOW = 20


@dataclass
class OutPair:
    """A pair offered to the web labellers."""

    pair_id: int
    a: Clip
    b: Clip
    holder: str | None = None  # who it is handed to now
    handed_at: float = 0.0  # when, by the pool's clock
    first: Answer | None = None  # waiting for a second opinion: the first answer (someone else must give it)


@dataclass(frozen=True)
class Given:
    """What is kept of an answer that can no longer be taken back: enough to recognise it sent again, without
    its clips (an hour of Atari answers would hold gigabytes of frames)."""

    labeller: str
    label: float | None
    done: Future


#: ``take_back``'s verdicts besides "new" and "duplicate": each is a different reply to the browser.
Refusal = Literal["nothing", "not_last", "too_old", "not_yours", "unknown"]


class PairPool:
    """Pairs offered and not yet answered; each is handed to one labeller at a time.

    A pair handed out and not answered within ``timeout`` seconds goes back to the
    pool for someone else; the first answer to arrive counts, and the same answer
    sent again gets the first one's acknowledgement without being counted twice.
    """

    def __init__(self, timeout: float, clock: Callable[[], float] = time.monotonic,
                 undo_limit: int = DEFAULT_UNDO_LIMIT,
                 second_opinion_share: float = 0.0, seed: int | None = None) -> None:
        if timeout <= 0:
            raise ConfigError(f"timeout must be > 0, got {timeout}")
        self.timeout, self.clock = timeout, clock
        self.undo_limit, self.second_opinion_share = undo_limit, second_opinion_share
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._next_id = 1  # people see these numbers
        self._out: OrderedDict[int, OutPair] = OrderedDict()  # offered, unanswered; oldest first
        self._answered: dict[int, list[Answer | Given]] = {}  # pair id -> its answers (a second opinion makes two)
        self._taken_back: dict[tuple[int, str], TakeBack] = {}
        self._remembered: deque[tuple[int, str]] = deque()
        self._new_events: list[Event] = []
        self._last_seen: dict[str, float] = {}
        self._counts: dict[str, int] = {}
        self._undoable: dict[str, deque[Answer]] = {}
        self._seconds: dict[str, deque[float]] = {}

    def offer(self, a: Clip, b: Clip) -> int:
        with self._lock:
            return self._add(a, b)

    def _add(self, a: Clip, b: Clip, holder: str | None = None, first: Answer | None = None) -> int:
        pair_id, self._next_id = self._next_id, self._next_id + 1
        self._out[pair_id] = OutPair(pair_id, a, b, holder, self.clock() if holder else 0.0, first)
        return pair_id

    def wants_pairs(self) -> bool:
        """Whether the pool has fewer free new pairs than the labellers active now, plus one spare."""
        with self._lock:
            now = self.clock()
            free = sum(p.first is None and self._is_free(p, now) for p in self._out.values())
            return free < self._n_active(now) + 1

    def next_for(self, name: str) -> OutPair | None:
        """The pair ``name`` should answer now: the one they hold, else one waiting for a second opinion that
        someone else answered first, else a free one; None if none."""
        with self._lock:
            now = self.clock()
            self._last_seen[name] = now
            held = next((p for p in self._out.values() if p.holder == name and not self._expired(p, now)), None)
            if held is not None:
                return held
            free = [p for p in self._out.values() if self._is_free(p, now)
                    and (p.first is None or p.first.labeller != name)]
            seconds = [p for p in free if p.first is not None]
            for pair in seconds[:1] or free[:1]:
                pair.holder, pair.handed_at = name, now
                return pair
        return None

    def answer(self, pair_id: int, label: float | None, name: str) -> tuple[str, Answer | Given | None]:
        """Take ``name``'s answer: ``("new", answer)``, ``("duplicate", earlier answer)`` or ``("unknown", None)``.

        A pair that was never handed out is unknown: answers are to pairs a labeller was shown.
        """
        with self._lock:
            answers = self._answered.get(pair_id, [])
            own = next((x for x in answers if x.labeller == name), None)
            if own is not None:
                return "duplicate", own
            pair = self._out.get(pair_id)
            if pair is None or pair.holder is None:
                return ("duplicate", answers[0]) if answers else ("unknown", None)
            del self._out[pair_id]
            now = self.clock()
            seconds = now - pair.handed_at if pair.holder == name else None
            answer = Answer(pair.a, pair.b, label, name, seconds, pair_id, first=pair.first)
            self._answered.setdefault(pair_id, []).append(answer)
            self._remember((pair_id, name))
            self._new_events.append(answer)
            self._last_seen[name] = now
            if label is not None:
                self._counts[name] = self._counts.get(name, 0) + 1
                if seconds is not None:
                    self._seconds.setdefault(name, deque(maxlen=PACE_WINDOW)).append(seconds)
                if pair.first is None and self._ask_second(name, now):
                    self._out[pair_id] = OutPair(pair_id, pair.a, pair.b, first=answer)
        return "new", answer

    def _ask_second(self, name: str, now: float) -> bool:
        """Whether the pair ``name`` just answered goes to a second labeller too (while someone else is active)."""
        others = any(now - t < ACTIVE_SECONDS for who, t in self._last_seen.items() if who != name)
        if not (self.second_opinion_share and others and self._rng.random() < self.second_opinion_share):
            return False
        awaiting = [p for p in self._out.values() if p.first is not None and p.holder is None]
        for stale in awaiting[:max(0, len(awaiting) + 1 - MAX_AWAITING_SECOND)]:
            del self._out[stale.pair_id]
        return True

    def recorded(self, answer: Answer) -> None:
        """The interface recorded ``answer`` (its ``seq`` is set): its labeller may now take it back, back to
        ``undo_limit`` answers; older ones are remembered without their clips."""
        with self._lock:
            if answer.label is None or answer.seq is None or not self.undo_limit:
                self._keep_without_clips(answer)
                return
            stack = self._undoable.setdefault(answer.labeller, deque())
            stack.append(answer)
            if len(stack) > self.undo_limit:
                self._keep_without_clips(stack.popleft())

    def _keep_without_clips(self, answer: Answer) -> None:
        answers = self._answered.get(answer.pair_id, [])
        for i, kept in enumerate(answers):
            if kept is answer:
                answers[i] = Given(answer.labeller, answer.label, answer.done)

    def take_back(self, pair_id: int, name: str) -> tuple[str, TakeBack | None]:
        """``name`` takes back their latest answer, to pair ``pair_id``: ``("new", event)`` (the pair is handed
        back to them at once), ``("duplicate", event)`` (sent twice), or a ``Refusal`` and None."""
        with self._lock:
            earlier = self._taken_back.get((pair_id, name))
            if earlier is not None:
                return "duplicate", earlier
            stack = self._undoable.get(name) or deque()
            if not stack:
                return "nothing", None
            if stack[-1].pair_id == pair_id:
                return "new", self._take_back(stack.pop())
            answers = self._answered.get(pair_id, [])
            if any(x.pair_id == pair_id for x in stack):
                return "not_last", None
            if any(x.labeller == name for x in answers):
                return "too_old", None
            return ("not_yours", None) if answers else ("unknown", None)

    def _take_back(self, answer: Answer) -> TakeBack:
        name, pair_id = answer.labeller, answer.pair_id
        event = TakeBack(answer)
        self._taken_back[(pair_id, name)] = event
        self._remember((pair_id, name))
        answers = self._answered.get(pair_id, [])
        if answer in answers:
            answers.remove(answer)
        self._counts[name] -= 1
        if answer.first is None:
            self._out.pop(pair_id, None)  # no second opinion of an answer taken back
            again = self._add(answer.a, answer.b, holder=name)  # a new id: a late answer to the old one is refused
        else:
            again = pair_id
            self._out[pair_id] = OutPair(pair_id, answer.a, answer.b, name, self.clock(), answer.first)
        self._out.move_to_end(again, last=False)  # theirs before the pair they held: they answer it next
        self._new_events.append(event)
        return event

    def take_answers(self) -> list[Event]:
        """Answers and take-backs since the last call, oldest first, for the interface to record."""
        with self._lock:
            events, self._new_events = self._new_events, []
            return events

    def undoable(self, name: str) -> int | None:
        """The pair id of ``name``'s answer they may take back now (their latest), or None."""
        with self._lock:
            stack = self._undoable.get(name)
            return stack[-1].pair_id if stack else None

    def count(self, name: str) -> int:
        """Labels ``name`` gave (skips and answers taken back not counted)."""
        with self._lock:
            return self._counts.get(name, 0)

    def pace(self, name: str) -> float | None:
        """``name``'s median seconds per answer over their last ``PACE_WINDOW`` (None: none timed yet)."""
        with self._lock:
            seconds = self._seconds.get(name)
            return statistics.median(seconds) if seconds else None

    def labellers(self) -> list[dict]:
        """Everyone who asked for a pair: name, labels, pace, seconds since they were last seen."""
        with self._lock:
            now = self.clock()
            names = sorted(self._last_seen)
        return [{"name": n, "labels": self.count(n), "pace": self.pace(n), "idle": round(now - self._last_seen[n], 1)}
                for n in names]

    def clip(self, clip_id: int) -> Clip | None:
        """The clip of that id if a pair out with the labellers shows it (only those are served), else None."""
        with self._lock:
            for p in self._out.values():
                for clip in (p.a, p.b):
                    if clip.clip_id == clip_id:
                        return clip
        return None

    def fail_waiting(self, why: str) -> None:
        """Answers not yet recorded will not be (the interface is stopping): tell their browsers."""
        for event in self.take_answers():
            if not event.done.done():
                event.done.set_exception(RuntimeError(why))

    def _remember(self, key: tuple[int, str]) -> None:
        self._remembered.append(key)
        while len(self._remembered) > MAX_REMEMBERED_ANSWERS:
            pair_id, name = self._remembered.popleft()
            self._taken_back.pop((pair_id, name), None)
            answers = self._answered.get(pair_id)
            if answers is not None:
                answers[:] = [x for x in answers if x.labeller != name]
                if not answers:
                    del self._answered[pair_id]

    def _n_active(self, now: float) -> int:
        return sum(now - t < ACTIVE_SECONDS for t in self._last_seen.values())

    def _is_free(self, pair: OutPair, now: float) -> bool:
        return pair.holder is None or self._expired(pair, now)

    def _expired(self, pair: OutPair, now: float) -> bool:
        return pair.holder is not None and now - pair.handed_at > self.timeout
