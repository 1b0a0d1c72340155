"""The preference interface: recent clips, which pair to ask about and when, the labeller, labels on.

A plain object, without a process of its own (``drlhp.runtime.interface_process`` runs it in one): clips
come in with ``receive``, and each ``step`` asks no more labels than the run's ``LabelSchedule`` allows by
the current env step, whoever answers. Of many random candidate pairs it asks about the one the reward
ensemble disagrees on most (``drlhp.labelling.pair_selection``), or a random one. A labeller answers one
pair at a time (synthetic, window + terminal, yours), or -- the web page -- takes pairs into a pool that
many people work on at once, answers coming back as they are given. Each label is written to the label
journal (``drlhp.labels.journal``) before the next pair is asked, then put on the label stream
(``drlhp.labels.stream``); a clip travels once, compressed, before the first label that uses it.

A labeller may take back its own answers, newest first, back to ``undo_limit`` answers of this
session: the retraction is journaled and sent like a label, the pair no longer counts against the
budget, and it is asked again (a labeller of one pair at a time: at once, then the pair that was on
screen). With ``second_share``, that share of answered pairs also gets a second labeller's answer
(a labeller that ``GivesSecondOpinions``, or the web page's pool); ``agreement`` counts how often
each two labellers agree.
"""
from __future__ import annotations

import logging
import random
from collections import OrderedDict, deque
from dataclasses import dataclass, field

from drlhp.clips.segments import PackedSegment, Segment, pack
from drlhp.errors import ConfigError, NothingToUndo
from drlhp.labelling.answers import Answer, TakeBack
from drlhp.labelling.ledger import AnswerLedger, Recorded
from drlhp.labelling.pair_selection import DEFAULT_N_CANDIDATES, DisagreementScorer
from drlhp.labelling.protocols import (
    UNDO,
    ConcurrentLabeller,
    GivesSecondOpinions,
    Labeller,
    NamesAnswerers,
    ShowsEpisodes,
    TimesAnswers,
)
from drlhp.labelling.schedule import LabelSchedule
from drlhp.labels.agreement import Agreement
from drlhp.labels.journal import JournalWriter
from drlhp.labels.stream import (
    ForgetSegment,
    LabelRecord,
    LabelSink,
    Preference,
    Retraction,
    SecondAnswer,
    SegmentData,
)

log = logging.getLogger("drlhp.interface")

#: Clips of an env's latest episode kept to show a person the whole episode (a labeller with ``show_episode``).
EPISODE_SEGMENTS = 40


@dataclass(frozen=True)
class PrefInterfaceConfig:
    """How the interface asks: the latest ``max_segs`` clips to pair; ``seed`` of its choices; of
    ``n_candidates`` random pairs the one the ensemble disagrees on most (with a scorer); how many pairs may
    have been asked by each env step (``schedule``; the default: as many as the labeller answers); answers each
    labeller may take back (``undo_limit``); the share of answered pairs asked to a second labeller."""

    max_segs: int
    seed: int | None = None
    n_candidates: int = DEFAULT_N_CANDIDATES
    schedule: LabelSchedule = field(default_factory=lambda: LabelSchedule(budget=None))
    undo_limit: int = 0
    second_share: float = 0.0


@dataclass(frozen=True)
class EarlierLabels:
    """A resumed run's labels: ``next_seq`` the run's next label number, ``n_retracted`` of those before it taken
    back, ``agreement`` so far."""

    next_seq: int = 0
    n_retracted: int = 0
    agreement: Agreement | None = None


class PrefInterface:
    """A ring buffer of the latest clips, the pairs already asked about, and who answers.

    ``labeller`` answers; ``out`` takes the label stream (a queue); ``journal``: each label is journaled there
    first; ``scorer``: pairs are picked by the ensemble's disagreement (None: at random); ``earlier``: the labels
    of the run before this session (resumed).
    """

    def __init__(self, config: PrefInterfaceConfig, labeller: Labeller, out: LabelSink,
                 journal: JournalWriter | None = None, scorer: DisagreementScorer | None = None,
                 earlier: EarlierLabels = EarlierLabels()) -> None:
        if config.max_segs < 2:
            raise ConfigError(f"max_segs must be >= 2 to form pairs, got {config.max_segs}")
        self.config = config
        self.labeller = labeller
        self.out = out
        self.max_segs = config.max_segs
        self.journal = journal
        self.next_seq = earlier.next_seq
        # Pairs asked in the run (a skipped one too), not counting labels taken back: what the label budget counts.
        self.n_asked = earlier.next_seq - earlier.n_retracted
        self._retracted_earlier = earlier.n_retracted
        self.n_sent = 0  # labels recorded by this interface
        self.ledger = AnswerLedger(config.undo_limit, earlier.agreement)
        self._again: list[tuple[Segment, Segment]] = []  # pairs to ask before any other, the next on top
        self.scorer, self.n_candidates = scorer, config.n_candidates
        self.schedule = config.schedule
        # What the labeller can do, from the protocols it meets (drlhp.labelling.protocols), found once.
        self._pool = labeller if isinstance(labeller, ConcurrentLabeller) else None
        self.concurrent = self._pool is not None  # pairs on offer, answers as they come (not label(a, b))
        self._watcher = labeller if isinstance(labeller, ShowsEpisodes) else None
        self._timer = labeller if isinstance(labeller, TimesAnswers) else None
        self._names = labeller if isinstance(labeller, NamesAnswerers) else None
        self._seconder = labeller if isinstance(labeller, GivesSecondOpinions) else None
        self.segments: OrderedDict[int, Segment] = OrderedDict()
        # While a person thinks, clips keep arriving; they join the buffer after the answer, so a clip on screen is
        # never forgotten in the middle of its question. Older ones than the buffer holds would be evicted at once.
        self._pending: deque[Segment] = deque(maxlen=config.max_segs)
        self._episodes = EpisodeTracker(EPISODE_SEGMENTS)
        self._owed = 0.0  # pairs it may still ask about, earned by new clips
        self._asked: set[tuple[int, int]] = set()
        self._sent: dict[int, PackedSegment] = {}  # clips the trainer has, packed once for it and the journal
        self._rng = random.Random(config.seed)

    # -- clips in --------------------------------------------------------------------------
    def receive(self, seg: Segment) -> None:
        """A new clip: it joins the buffer at the next ``step``; a labeller that shows episodes is shown each one
        it completes."""
        self._pending.append(seg)
        finished = self._episodes.add(seg)
        if finished and self._watcher is not None:
            self._watcher.show_episode([f for s in finished for f in s.frames])

    def add_segment(self, seg: Segment) -> None:
        """Put a clip in the buffer now, evicting the oldest past ``max_segs``."""
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

    def _take_in_pending(self) -> None:
        for seg in self._pending:
            self.add_segment(seg)
            self._owed += self.labeller.pairs_per_segment or 0
        self._pending.clear()

    # -- asking ------------------------------------------------------------------------------
    def may_ask(self, env_steps: int) -> bool:
        """Whether a labeller of one pair at a time would be asked about a pair now."""
        return self._owed >= 1 and self.n_asked < self.schedule.allowed(env_steps)

    def step(self, env_steps: int) -> None:
        """Take in the clips received; then, as the schedule allows after ``env_steps`` env steps, ask about one
        pair (a labeller of one pair at a time) or keep pairs on offer and record the answers (a concurrent one)."""
        self._take_in_pending()
        if self._pool is not None:
            self._serve(self._pool, env_steps)
            return
        if self.labeller.pairs_per_segment is None:  # as fast as it answers
            self._owed = 1.0
        if not self.may_ask(env_steps):
            return
        pair = self.pick_pair()
        if pair is None:
            self._owed = 0.0
            return
        self._owed -= 1
        self.ask(*pair)

    def _serve(self, labeller: ConcurrentLabeller, env_steps: int) -> None:
        """Keep pairs on offer for the labellers working at once; record their answers as they come."""
        self.record_answers()
        while labeller.wants_pairs() and self.n_asked < self.schedule.allowed(env_steps):
            pair = self.pick_pair()
            if pair is None:
                break
            self.mark_asked(*pair)
            labeller.offer(*pair)
        labeller.set_progress(self.run_labels, self.n_asked, self.ledger.agreement.rows())
        self.refresh_scores(2)

    def record_answers(self) -> None:
        """Record the answers and take-backs a concurrent labeller has collected (journal first), then let each
        browser go on."""
        labeller = self._pool
        if labeller is None:
            return
        for event in labeller.take_answers():
            if not isinstance(event, TakeBack):
                self._record_web_answer(event)
            else:
                taken = event.answer
                self.retract(_web_recorded(taken))
                if taken.first is None:
                    self.mark_asked(taken.a, taken.b)  # the pool hands the pair straight back to them
            labeller.set_progress(self.run_labels, self.n_asked, self.ledger.agreement.rows())
            labeller.acknowledge(event)

    @property
    def run_labels(self) -> int:
        """The run's labels (a resumed run's earlier ones too), not counting those taken back."""
        return self.next_seq - self._retracted_earlier - len(self.ledger.retracted)

    def _record_web_answer(self, answer: Answer) -> None:
        if answer.label is None:
            return
        name = f"web:{answer.labeller}"
        if answer.first is None:
            answer.seq = self.record(answer.a, answer.b, answer.label, name, answer.seconds).seq
        elif answer.first.seq is not None:
            answer.seq = answer.first.seq
            self.record_second(_web_recorded(answer.first), name, answer.label, answer.seconds)

    def refresh_scores(self, limit: int) -> None:
        """Load a newer ensemble checkpoint if there is one; score up to ``limit`` clips with it (idle time's work)."""
        if self.scorer is not None:
            self.scorer.poll()
            self.scorer.refresh(list(self.segments.values()), limit)

    def pick_pair(self) -> tuple[Segment, Segment] | None:
        """The pair to ask about next (never one asked before), or None if there is none.

        Of ``n_candidates`` random pairs, the one the ensemble disagrees on most, once
        there is an ensemble checkpoint; until then, or with random selection, a random pair.
        """
        if self._again:
            return self._again.pop()
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
        """Have the pair labelled, journal the label, send it on; returns the label (None: incomparable, or the
        labeller took back its last answer instead)."""
        self.mark_asked(a, b)
        label = self.labeller.label(a, b)
        if label is UNDO:
            self._unmark_asked(a, b)
            self._again.append((a, b))
            try:
                taken = self.retract_last(self._labeller_name())
            except NothingToUndo as e:
                log.warning("%s; the pair on screen is asked again", e)
                return None
            self._again.append((taken.a, taken.b))
            return None
        if label is not None:
            first = self.record(a, b, label, self._labeller_name(), self._timer.last_seconds if self._timer else None)
            self._maybe_second_opinion(first)
        return label

    def _labeller_name(self) -> str:
        return self._names.last_labeller if self._names is not None else type(self.labeller).__name__

    def _maybe_second_opinion(self, first: Recorded) -> None:
        share = self.config.second_share
        if self._seconder is None or not share or self._rng.random() >= share:
            return
        opinion = self._seconder.second_opinion(first.a, first.b, first.labeller)
        if opinion is not None and opinion[1] is not None:
            self.record_second(first, opinion[0], opinion[1])

    def mark_asked(self, a: Segment, b: Segment) -> None:
        """The pair is being asked: never pick it again; it counts against the label budget."""
        self._asked.add(_key(a.seg_id, b.seg_id))
        self.n_asked += 1

    def _unmark_asked(self, a: Segment, b: Segment) -> None:
        """The pair's answer was taken back: it no longer counts against the budget, and may be asked again."""
        self._asked.discard(_key(a.seg_id, b.seg_id))
        self.n_asked -= 1

    # -- taking back, second opinions --------------------------------------------------------
    def retract_last(self, labeller: str) -> Recorded:
        """Take back ``labeller``'s latest answer of this session (raises ``NothingToUndo`` if none is left)."""
        taken = self.ledger.last(labeller)
        self.retract(taken)
        return taken

    def retract(self, taken: Recorded) -> None:
        """Journal and send the retraction of an answer: a first answer's label leaves the database (and the
        budget); a second answer leaves the label to the first."""
        if self.journal is not None:
            self.journal.retract(taken.seq, taken.labeller, self.next_seq)
        self._put(Retraction(taken.seq, taken.labeller))
        self.ledger.take_back(taken)
        if not taken.second:
            self._unmark_asked(taken.a, taken.b)

    def record_second(self, first: Recorded, labeller: str, label: float, seconds: float | None = None) -> None:
        """Journal and send a second labeller's answer to the pair of ``first``; it counts towards agreement."""
        if not self.ledger.may_second(first):
            return  # the first answer was taken back meanwhile: there is no label to second
        if self.journal is not None:
            self.journal.second_answer(first.seq, labeller, label, seconds, self.next_seq)
        self._put(SecondAnswer(first.seq, labeller, float(label), seconds))
        self.ledger.add_second(first, Recorded(first.seq, first.a, first.b, labeller, float(label), second=True))

    def record(self, a: Segment, b: Segment, label: float, labeller: str, seconds: float | None = None) -> Recorded:
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
        self.n_sent += 1
        for seg in (a, b):  # a clip that left the buffer while its pair was out with a labeller (web)
            if seg.seg_id not in self.segments and self._sent.pop(seg.seg_id, None) is not None:
                self._put(ForgetSegment(seg.seg_id))
        recorded = Recorded(seq, a, b, labeller, float(label))
        self.ledger.remember(recorded)
        return recorded

    def _put(self, record: LabelRecord) -> None:
        # Blocking: the trainer's receiver thread drains this queue continuously.
        self.out.put(record)

    def close(self) -> None:
        """Record the answers that came in as the run was stopping; release the labeller and the journal."""
        try:
            if self.concurrent:
                self.record_answers()
        finally:
            self.labeller.close()
            if self.journal is not None:
                self.journal.close()


def _web_recorded(answer: Answer) -> Recorded:
    """A web answer the interface recorded (its ``seq`` set), as ``retract`` and ``record_second`` take it."""
    assert answer.seq is not None and answer.label is not None
    return Recorded(answer.seq, answer.a, answer.b, f"web:{answer.labeller}", answer.label, answer.first is not None)


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
