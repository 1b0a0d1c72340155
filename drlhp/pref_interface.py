"""The preference interface: keeps recent segments, picks pairs, has them labelled.

Runs in its own process (``run_pref_interface``). Labels go to the trainer
process on a bounded queue with blocking puts, so a label is never dropped;
segment frames travel once, before the first label that uses them.
"""
from __future__ import annotations

import logging
import queue
import random
from collections import OrderedDict
from dataclasses import dataclass
from typing import Optional, Tuple

from drlhp.labellers import Labeller, SyntheticLabeller
from drlhp.messages import ForgetSegment, Preference, SegmentData
from drlhp.segment_channel import SegmentChannel
from drlhp.segments import Segment

log = logging.getLogger("drlhp.pref_interface")


@dataclass(frozen=True)
class InterfaceConfig:
    """Settings of the preference-interface process."""

    max_segs: int = 200
    seed: Optional[int] = None
    labeller: Optional[Labeller] = None  # None: SyntheticLabeller(pairs_per_segment)
    pairs_per_segment: float = 1.0


class PrefInterface:
    """A ring buffer of the latest ``max_segs`` segments and the pairs already asked about."""

    def __init__(self, labeller: Labeller, out_queue, max_segs: int, seed: Optional[int] = None) -> None:
        if max_segs < 2:
            raise ValueError(f"max_segs must be >= 2 to form pairs, got {max_segs}")
        self.labeller = labeller
        self.out_queue = out_queue
        self.max_segs = max_segs
        self.segments: "OrderedDict[int, Segment]" = OrderedDict()
        self._asked: set[Tuple[int, int]] = set()
        self._sent: set[int] = set()
        self._rng = random.Random(seed)
        self.n_labels = 0

    def add_segment(self, seg: Segment) -> None:
        self.segments[seg.seg_id] = seg
        while len(self.segments) > self.max_segs:
            old_id, _ = self.segments.popitem(last=False)
            if old_id in self._sent:
                self._sent.discard(old_id)
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
        """Have the pair labelled and send the label on; returns the label (None: incomparable)."""
        self._asked.add(_key(a.seg_id, b.seg_id))
        label = self.labeller.label(a, b)
        if label is None:
            return None
        for seg in (a, b):
            if seg.seg_id not in self._sent:
                self._put(SegmentData(seg.seg_id, seg.frames, seg.rewards))
                self._sent.add(seg.seg_id)
        self._put(Preference(a.seg_id, b.seg_id, float(label)))
        self.n_labels += 1
        return label

    def _put(self, msg) -> None:
        # Blocking: the trainer's receiver thread drains this queue continuously.
        self.out_queue.put(msg)


def _key(a: int, b: int) -> Tuple[int, int]:
    return (a, b) if a < b else (b, a)


def run_pref_interface(config: InterfaceConfig, channel: SegmentChannel, pref_queue, stop_event, stats) -> None:
    """Process main: receive segments, ask for labels, until ``stop_event`` is set."""
    labeller = config.labeller or SyntheticLabeller(config.pairs_per_segment)
    interface = PrefInterface(labeller, pref_queue, config.max_segs, config.seed)
    owed = 0.0  # pairs we may still ask about, earned by new segments
    try:
        while not stop_event.is_set():
            # Wait for a segment only when there is nothing to label right now.
            seg = channel.receive(timeout=0.0 if owed >= 1 else 0.1)
            while seg is not None:
                interface.add_segment(seg)
                stats.segments_received.value += 1
                owed += labeller.pairs_per_segment if labeller.pairs_per_segment else 0
                seg = channel.receive(timeout=0.0)
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
        pref_queue.put(None)
