"""The preference interface: keeps recent segments, picks pairs, has them labelled.

Runs in its own process (``run_pref_interface``). It asks no more labels than the
run's ``LabelSchedule`` allows by the current env step, whoever answers; of many
random candidate pairs it asks about the one the reward ensemble disagrees on
most (``drlhp.labelling.pair_selection``), or a random one. A labeller answers one pair at a
time (synthetic, window + terminal, yours), or -- the web page -- takes pairs into a
pool that many people work on at once, answers coming back as they are given
(``serve_concurrently``). Each label is written to the
label journal (``drlhp.labels.journal``) before the next pair is asked, then goes
to the trainer process on a bounded queue with blocking puts, so a label is
never dropped; a clip travels once, compressed, before the first label that uses it.
"""
from __future__ import annotations

import logging
import queue
import random
from collections import OrderedDict, deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, cast

from drlhp.clips.segments import PackedSegment, Segment, pack
from drlhp.config import PreferenceConfig, worker_settings
from drlhp.labelling.labellers import Labeller, SyntheticLabeller, SyntheticTeacher
from drlhp.labelling.pair_selection import DisagreementScorer
from drlhp.labelling.schedule import LabelSchedule
from drlhp.labels.journal import JournalWriter
from drlhp.reward.torch_setup import set_up_torch
from drlhp.runtime.messages import ForgetSegment, Preference, RunStart, SegmentData
from drlhp.runtime.segment_channel import SegmentChannel

if TYPE_CHECKING:
    from drlhp.labelling.human import HumanConfig
    from drlhp.labelling.web.labeller import WebConfig
    from drlhp.labelling.web.pool import Answer

log = logging.getLogger("drlhp.pref_interface")


class _ConcurrentLabeller(Labeller, Protocol):
    """A labeller with ``concurrent = True`` (the web page's): it takes pairs on offer and answers them as people do."""

    def offer(self, a: Segment, b: Segment) -> None: ...

    def wants_pairs(self) -> bool: ...

    def take_answers(self) -> list[Answer]: ...

    def set_progress(self, run_labels: int, asked: int) -> None: ...

    def acknowledge(self, answer: Answer) -> None: ...


@dataclass(frozen=True)
class InterfaceConfig:
    """Settings of the preference-interface process."""

    max_segs: int = 200
    seed: int | None = None
    labeller: Labeller | None = None  # None: synthetic, or human with ``human`` set
    pairs_per_segment: float = 1.0
    human: HumanConfig | None = None
    web: WebConfig | None = None  # people label in their browsers (the page's address goes to ``url_queue``)
    max_episode_segments: int = 40  # how much of the last episode is kept to show a person
    journal_log_dir: str | None = None  # keep a label journal in this log_dir (None: no journal)
    schedule: LabelSchedule = LabelSchedule(budget=None)
    teacher: SyntheticTeacher = SyntheticTeacher()
    selection_ckpt: str | None = None  # pick pairs by the disagreement of this checkpoint's ensemble (None: random)
    n_candidate_pairs: int = 64

    @classmethod
    def from_preference_config(cls, config: PreferenceConfig, human: HumanConfig | None, web: WebConfig | None,
                               selection_ckpt: str | None) -> InterfaceConfig:
        """The interface's settings in a run with ``config``; ``selection_ckpt``: the ensemble that would judge
        pairs (used only with ``pair_selection="disagreement"``)."""
        if config.pair_selection != "disagreement":
            selection_ckpt = None
        return worker_settings(cls, config, _INTERFACE_SETTINGS, human=human, web=web,
                               journal_log_dir=config.log_dir if config.autosave_prefs else None,
                               selection_ckpt=selection_ckpt)


#: ``InterfaceConfig``'s fields named otherwise in ``PreferenceConfig`` (the others have the same name there).
_INTERFACE_SETTINGS = {"pairs_per_segment": "synthetic_prefs_per_segment", "teacher": "synthetic_teacher"}


class PrefInterface:
    """A ring buffer of the latest ``max_segs`` segments and the pairs already asked about."""

    def __init__(self, labeller: Labeller, out_queue, max_segs: int, seed: int | None = None,
                 journal: JournalWriter | None = None, next_seq: int = 0,
                 scorer: DisagreementScorer | None = None, n_candidates: int = 64) -> None:
        if max_segs < 2:
            raise ValueError(f"max_segs must be >= 2 to form pairs, got {max_segs}")
        self.labeller = labeller
        self.out_queue = out_queue
        self.max_segs = max_segs
        self.journal = journal
        self.next_seq = next_seq
        self.n_asked = next_seq  # pairs asked in the run (a skipped one too): what the label budget counts
        self.scorer, self.n_candidates = scorer, n_candidates
        self.segments: OrderedDict[int, Segment] = OrderedDict()
        self._asked: set[tuple[int, int]] = set()
        self._sent: dict[int, PackedSegment] = {}  # clips the trainer has, packed once for it and the journal
        self._rng = random.Random(seed)

    def add_segment(self, seg: Segment) -> None:
        self.segments[seg.seg_id] = seg
        while len(self.segments) > self.max_segs:
            old_id, _ = self.segments.popitem(last=False)
            if self.scorer is not None:
                self.scorer.forget(old_id)
            if self._sent.pop(old_id, None) is not None:
                self._put(ForgetSegment(old_id))
        if len(self._asked) > 4 * self.max_segs:
            oldest = next(iter(self.segments))
            self._asked = {p for p in self._asked if p[0] >= oldest}

    def pick_pair(self) -> tuple[Segment, Segment] | None:
        """The pair to ask about next (never one asked before), or None if there is none.

        Of ``n_candidates`` random pairs, the one the ensemble disagrees on most, once
        there is an ensemble checkpoint; until then, or with random selection, a random pair.
        """
        candidates = self.candidate_pairs(self.n_candidates if self.scorer is not None else 1)
        if self.scorer is not None and candidates:
            self.scorer.poll()
            self.scorer.refresh(list(self.segments.values()), self.scorer.max_new_per_pick)
            return self.scorer.most_disagreed(candidates) or candidates[0]
        return candidates[0] if candidates else None

    def candidate_pairs(self, n: int) -> list[tuple[Segment, Segment]]:
        """Up to ``n`` distinct random pairs of distinct segments not asked about before."""
        ids = list(self.segments)
        if len(ids) < 2:
            return []
        keys: set[tuple[int, int]] = set()
        for _ in range(4 * n):
            key = _key(*self._rng.sample(ids, 2))
            if key not in self._asked:
                keys.add(key)
                if len(keys) == n:
                    break
        if not keys:  # nearly every pair was asked: look at them all
            unasked = [(a, b) for i, a in enumerate(ids) for b in ids[i + 1:] if _key(a, b) not in self._asked]
            keys = set(self._rng.sample(unasked, min(n, len(unasked))))
        return [(self.segments[a], self.segments[b]) for a, b in keys]

    def ask(self, a: Segment, b: Segment) -> float | None:
        """Have the pair labelled, journal the label, send it on; returns the label (None: incomparable)."""
        self.mark_asked(a, b)
        label = self.labeller.label(a, b)
        if label is not None:
            self.record(a, b, label, type(self.labeller).__name__, getattr(self.labeller, "last_seconds", None))
        return label

    def mark_asked(self, a: Segment, b: Segment) -> None:
        """The pair is being asked: never pick it again; it counts against the label budget."""
        self._asked.add(_key(a.seg_id, b.seg_id))
        self.n_asked += 1

    def record(self, a: Segment, b: Segment, label: float, labeller: str, seconds: float | None = None) -> None:
        """Journal a label (on disk before anything else happens), then send it and any new clip on."""
        new = [seg for seg in (a, b) if seg.seg_id not in self._sent]
        for seg in new:
            self._sent[seg.seg_id] = pack(seg)
        seq, self.next_seq = self.next_seq, self.next_seq + 1
        if self.journal is not None:
            self.journal.append(seq, self._sent[a.seg_id], self._sent[b.seg_id], label, labeller, seconds)
        for seg in new:
            self._put(SegmentData(self._sent[seg.seg_id]))
        self._put(Preference(a.seg_id, b.seg_id, float(label), seq, labeller, seconds))
        for seg in (a, b):  # a clip that left the buffer while its pair was out with a labeller (web)
            if seg.seg_id not in self.segments and self._sent.pop(seg.seg_id, None) is not None:
                self._put(ForgetSegment(seg.seg_id))

    def _put(self, msg) -> None:
        # Blocking: the trainer's receiver thread drains this queue continuously.
        self.out_queue.put(msg)


def _key(a: int, b: int) -> tuple[int, int]:
    return (a, b) if a < b else (b, a)


class EpisodeTracker:
    """Collects the (latest ``max_segments``) segments of each env's current episode.

    ``add`` hands back an env's episode once the first segment of its next episode
    arrives: segments of several envs interleave, so each env is followed apart.
    """

    def __init__(self, max_segments: int) -> None:
        self.max_segments = max_segments
        self.current: dict[int, deque[Segment]] = {}

    def add(self, seg: Segment) -> list[Segment] | None:
        current = self.current.setdefault(seg.env_index, deque(maxlen=self.max_segments))
        finished = None
        if current and seg.episode != current[-1].episode:
            finished = list(current)
            current.clear()
        current.append(seg)
        return finished


def _make_labeller(config: InterfaceConfig, stop_event, idle) -> Labeller:
    if config.labeller is not None:
        return config.labeller
    if config.web is not None:
        from drlhp.labelling.web.labeller import WebLabeller

        return WebLabeller(config.web)
    if config.human is not None:
        from drlhp.labelling.human import HumanLabeller

        return HumanLabeller(config.human, stop_event, idle)
    return SyntheticLabeller(config.pairs_per_segment, config.teacher, config.seed)


def _await_run_start(run_start, stop_event) -> RunStart | None:
    """The trainer's numbering for this run (sent once it has loaded earlier labels), or None if stopped first."""
    while not stop_event.is_set():
        try:
            return run_start.get(timeout=0.1)
        except queue.Empty:
            pass
    return None


def run_pref_interface(config: InterfaceConfig, channel: SegmentChannel, pref_queue, run_start, stop_event,
                       stats, url_queue=None) -> None:
    """Process main: receive segments, ask for labels, until ``stop_event`` is set."""
    # While a person thinks, the labeller keeps the channel drained (so no clip is
    # dropped); the segments join the buffer after the answer, so a clip on screen
    # is never forgotten in the middle of its question. Older ones than the buffer
    # holds would be evicted at once, so they are not kept.
    pending: deque[Segment] = deque(maxlen=config.max_segs)
    episodes = EpisodeTracker(config.max_episode_segments)
    labeller: Labeller
    start = _await_run_start(run_start, stop_event)
    if start is None:
        pref_queue.put(None)
        return

    def receive(timeout: float) -> None:
        seg = channel.receive(timeout)
        while seg is not None:
            seg.seg_id += start.first_seg_id
            pending.append(seg)
            stats.segments_received.value += 1
            finished = episodes.add(seg)
            if finished and hasattr(labeller, "show_episode"):
                labeller.show_episode([f for s in finished for f in s.frames])
            seg = channel.receive(0.0)

    def idle() -> None:  # while a person thinks: take clips in, and score clips for the next pick
        receive(0.0)
        if scorer is not None:
            scorer.poll()
            scorer.refresh(list(interface.segments.values()), 2)

    scorer = None
    if config.selection_ckpt is not None:
        set_up_torch(1)  # the interface's core is shared with the env process
        scorer = DisagreementScorer(config.selection_ckpt)
    labeller = _make_labeller(config, stop_event, idle=idle)
    if url_queue is not None:
        url_queue.put(getattr(labeller, "url", None))
    journal = None
    if config.journal_log_dir is not None:
        journal = JournalWriter(config.journal_log_dir, lambda: stats.labels_in_snapshot.value)
    interface = PrefInterface(labeller, pref_queue, config.max_segs, config.seed, journal, start.next_seq,
                              scorer, config.n_candidate_pairs)
    stats.labels_asked.value = interface.n_asked
    owed = 0.0  # pairs we may still ask about, earned by new segments

    def may_ask() -> bool:
        return owed >= 1 and interface.n_asked < config.schedule.allowed(stats.env_steps.value)

    def take_in_segments() -> None:
        nonlocal owed
        for seg in pending:
            interface.add_segment(seg)
            owed += labeller.pairs_per_segment or 0
        pending.clear()

    def record_answers() -> None:
        concurrent = cast(_ConcurrentLabeller, labeller)  # only serve_concurrently's labeller gives answers
        for answer in concurrent.take_answers():
            if answer.label is not None:
                interface.record(answer.a, answer.b, answer.label, f"web:{answer.labeller}", answer.seconds)
                stats.labels_sent.value += 1
            concurrent.set_progress(interface.next_seq, interface.n_asked)
            concurrent.acknowledge(answer)

    def serve_concurrently() -> None:
        """Keep pairs on offer for the labellers working at once; record their answers as they come."""
        concurrent = cast(_ConcurrentLabeller, labeller)  # called only when labeller.concurrent is true
        while not stop_event.is_set():
            receive(timeout=0.01)  # the wait: an answer waits at most this long to be journaled
            take_in_segments()
            record_answers()
            while concurrent.wants_pairs() and interface.n_asked < config.schedule.allowed(stats.env_steps.value):
                pair = interface.pick_pair()
                if pair is None:
                    break
                interface.mark_asked(*pair)
                concurrent.offer(*pair)
                stats.labels_asked.value = interface.n_asked
            concurrent.set_progress(interface.next_seq, interface.n_asked)
            if scorer is not None:
                scorer.poll()
                scorer.refresh(list(interface.segments.values()), 2)
        record_answers()  # those that came in as we were stopping

    try:
        if getattr(labeller, "concurrent", False):
            serve_concurrently()
        while not stop_event.is_set():
            # Wait for a segment only when there is nothing to label right now.
            receive(timeout=0.0 if may_ask() else 0.1)
            take_in_segments()
            if labeller.pairs_per_segment is None:
                owed = 1.0
            if not may_ask():
                continue
            pair = interface.pick_pair()
            if pair is None:
                owed = 0.0
                continue
            owed -= 1
            label = interface.ask(*pair)
            stats.labels_asked.value = interface.n_asked
            if label is not None:
                stats.labels_sent.value += 1
    finally:
        labeller.close()
        if journal is not None:
            journal.close()
        pref_queue.put(None)
