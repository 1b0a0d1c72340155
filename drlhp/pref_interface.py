"""The preference interface: keeps recent segments, picks pairs, has them labelled.

Runs in its own process (``run_pref_interface``). Each label is written to the
label journal (``drlhp.label_journal``) before the next pair is asked, then goes
to the trainer process on a bounded queue with blocking puts, so a label is
never dropped; a clip travels once, compressed, before the first label that uses it.
"""
from __future__ import annotations

import logging
import queue
import random
from collections import OrderedDict, deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, Dict, List, Optional, Tuple

from drlhp.label_journal import JournalWriter
from drlhp.labellers import Labeller, SyntheticLabeller
from drlhp.messages import ForgetSegment, Preference, RunStart, SegmentData
from drlhp.segment_channel import SegmentChannel
from drlhp.segments import PackedSegment, Segment, pack

if TYPE_CHECKING:
    from drlhp.human_labeller import HumanConfig

log = logging.getLogger("drlhp.pref_interface")


@dataclass(frozen=True)
class InterfaceConfig:
    """Settings of the preference-interface process."""

    max_segs: int = 200
    seed: Optional[int] = None
    labeller: Optional[Labeller] = None  # None: synthetic, or human with ``human`` set
    pairs_per_segment: float = 1.0
    human: Optional["HumanConfig"] = None
    max_episode_segments: int = 40  # how much of the last episode is kept to show a person
    journal_log_dir: Optional[str] = None  # keep a label journal in this log_dir (None: no journal)


class PrefInterface:
    """A ring buffer of the latest ``max_segs`` segments and the pairs already asked about."""

    def __init__(self, labeller: Labeller, out_queue, max_segs: int, seed: Optional[int] = None,
                 journal: Optional[JournalWriter] = None, next_seq: int = 0) -> None:
        if max_segs < 2:
            raise ValueError(f"max_segs must be >= 2 to form pairs, got {max_segs}")
        self.labeller = labeller
        self.out_queue = out_queue
        self.max_segs = max_segs
        self.journal = journal
        self.next_seq = next_seq
        self.segments: "OrderedDict[int, Segment]" = OrderedDict()
        self._asked: set[Tuple[int, int]] = set()
        self._sent: Dict[int, PackedSegment] = {}  # clips the trainer has, packed once for it and the journal
        self._rng = random.Random(seed)

    def add_segment(self, seg: Segment) -> None:
        self.segments[seg.seg_id] = seg
        while len(self.segments) > self.max_segs:
            old_id, _ = self.segments.popitem(last=False)
            if self._sent.pop(old_id, None) is not None:
                self._put(ForgetSegment(old_id))
        if len(self._asked) > 4 * self.max_segs:
            oldest = next(iter(self.segments))
            self._asked = {p for p in self._asked if p[0] >= oldest}

    def pick_pair(self) -> Optional[Tuple[Segment, Segment]]:
        """A random pair of distinct segments not asked about before, or None if there is none."""
        ids = list(self.segments)
        n = len(ids)
        if n < 2:
            return None
        for _ in range(16):
            a, b = self._rng.sample(ids, 2)
            if _key(a, b) not in self._asked:
                return self.segments[a], self.segments[b]
        unasked = [(a, b) for i, a in enumerate(ids) for b in ids[i + 1:] if _key(a, b) not in self._asked]
        if not unasked:
            return None
        a, b = self._rng.choice(unasked)
        return self.segments[a], self.segments[b]

    def ask(self, a: Segment, b: Segment) -> Optional[float]:
        """Have the pair labelled, journal the label, send it on; returns the label (None: incomparable)."""
        self._asked.add(_key(a.seg_id, b.seg_id))
        label = self.labeller.label(a, b)
        if label is None:
            return None
        new = [seg for seg in (a, b) if seg.seg_id not in self._sent]
        for seg in new:
            self._sent[seg.seg_id] = pack(seg)
        seq, self.next_seq = self.next_seq, self.next_seq + 1
        if self.journal is not None:  # on disk before anything else happens: the next pair waits for this
            self.journal.append(seq, self._sent[a.seg_id], self._sent[b.seg_id], label, type(self.labeller).__name__)
        for seg in new:
            self._put(SegmentData(self._sent[seg.seg_id]))
        self._put(Preference(a.seg_id, b.seg_id, float(label), seq))
        return label

    def _put(self, msg) -> None:
        # Blocking: the trainer's receiver thread drains this queue continuously.
        self.out_queue.put(msg)


def _key(a: int, b: int) -> Tuple[int, int]:
    return (a, b) if a < b else (b, a)


class EpisodeTracker:
    """Collects the (latest ``max_segments``) segments of each env's current episode.

    ``add`` hands back an env's episode once the first segment of its next episode
    arrives: segments of several envs interleave, so each env is followed apart.
    """

    def __init__(self, max_segments: int) -> None:
        self.max_segments = max_segments
        self.current: Dict[int, "deque[Segment]"] = {}

    def add(self, seg: Segment) -> Optional[List[Segment]]:
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
    if config.human is not None:
        from drlhp.human_labeller import HumanLabeller

        return HumanLabeller(config.human, stop_event, idle)
    return SyntheticLabeller(config.pairs_per_segment)


def _await_run_start(run_start, stop_event) -> Optional[RunStart]:
    """The trainer's numbering for this run (sent once it has loaded earlier labels), or None if stopped first."""
    while not stop_event.is_set():
        try:
            return run_start.get(timeout=0.1)
        except queue.Empty:
            pass
    return None


def run_pref_interface(config: InterfaceConfig, channel: SegmentChannel, pref_queue, run_start, stop_event,
                       stats) -> None:
    """Process main: receive segments, ask for labels, until ``stop_event`` is set."""
    # While a person thinks, the labeller keeps the channel drained (so no clip is
    # dropped); the segments join the buffer after the answer, so a clip on screen
    # is never forgotten in the middle of its question. Older ones than the buffer
    # holds would be evicted at once, so they are not kept.
    pending: "deque[Segment]" = deque(maxlen=config.max_segs)
    episodes = EpisodeTracker(config.max_episode_segments)
    labeller: Labeller

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

    start = _await_run_start(run_start, stop_event)
    if start is None:
        pref_queue.put(None)
        return
    labeller = _make_labeller(config, stop_event, idle=lambda: receive(0.0))
    journal = None
    if config.journal_log_dir is not None:
        journal = JournalWriter(config.journal_log_dir, lambda: stats.labels_in_snapshot.value)
    interface = PrefInterface(labeller, pref_queue, config.max_segs, config.seed, journal, start.next_seq)
    owed = 0.0  # pairs we may still ask about, earned by new segments
    try:
        while not stop_event.is_set():
            # Wait for a segment only when there is nothing to label right now.
            receive(timeout=0.0 if owed >= 1 else 0.1)
            for seg in pending:
                interface.add_segment(seg)
                owed += labeller.pairs_per_segment or 0
            pending.clear()
            if labeller.pairs_per_segment is None:
                owed = 1.0
            if owed < 1:
                continue
            pair = interface.pick_pair()
            if pair is None:
                owed = 0.0
                continue
            owed -= 1
            if interface.ask(*pair) is not None:
                stats.labels_sent.value += 1
    finally:
        labeller.close()
        if journal is not None:
            journal.close()
        pref_queue.put(None)
