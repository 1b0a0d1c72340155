"""The preference interface: who answers, when, and about which pair; the answers on.

A plain object, without a process of its own (``drlhp.runtime.interface_process`` runs it in one): clips
come in with ``receive``, and each ``step`` asks no more labels than the run's ``LabelSchedule`` allows by
the current env step, whoever answers. Which pair is asked is ``drlhp.labelling.pair_choice``'s job (of many
random candidate pairs, the one the reward ensemble disagrees on most, or a random one); recording each answer,
``drlhp.labelling.recorder``'s (journaled before the next pair is asked, then on the label stream, a clip
travelling once, compressed, before the first label that uses it). A labeller answers one
pair at a time (synthetic, window + terminal, yours), or -- the web page -- takes pairs into a pool that
many people work on at once, answers coming back as they are given.

A labeller may take back its own answers, newest first, back to ``undo_limit`` answers of this
session: the retraction is journaled and sent like a label, the pair no longer counts against the
budget, and it is asked again (a labeller of one pair at a time: at once, then the pair that was on
screen). With ``second_opinion_share``, that share of answered pairs also gets a second labeller's answer
(a labeller that ``GivesSecondOpinions``, or the web page's pool); ``agreement`` counts how often
each two labellers agree.
"""
from __future__ import annotations

import logging
import random
from collections import deque
from dataclasses import dataclass, field

from drlhp.clips.clip import Clip
from drlhp.errors import NothingToUndo
from drlhp.label_store.journal import JournalWriter
from drlhp.label_store.stream import LabelSink
from drlhp.labelling.answers import Answer, TakeBack
from drlhp.labelling.ledger import Recorded
from drlhp.labelling.pair_choice import PairChooser
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
from drlhp.labelling.recorder import AnswerRecorder, EarlierLabels
from drlhp.labelling.schedule import LabelSchedule

log = logging.getLogger("drlhp.interface")

#: Clips of an env's latest episode kept to show a person the whole episode (a labeller with ``show_episode``).
EPISODE_CLIPS = 40


@dataclass(frozen=True)
class PrefInterfaceConfig:
    """How the interface asks: the latest ``max_segs`` clips to pair; ``seed`` of its choices; of
    ``n_candidate_pairs`` random pairs the one the ensemble disagrees on most (with a scorer) or, with ``coverage``,
    the one farthest from the clips asked about before; how many pairs may have been asked by each env step
    (``schedule``; the default: as many as the labeller answers); answers each labeller may take back
    (``undo_limit``); the share of answered pairs asked to a second labeller."""

    max_segs: int
    seed: int | None = None
    n_candidate_pairs: int = DEFAULT_N_CANDIDATES
    schedule: LabelSchedule = field(default_factory=lambda: LabelSchedule(budget=None))
    undo_limit: int = 0
    second_opinion_share: float = 0.0
    coverage: bool = False


class PrefInterface:
    """Who answers, when, and about which pair: the labeller, the label schedule and the clips coming in; which pair
    is asked is ``chooser``'s job (``drlhp.labelling.pair_choice``), recording the answers ``recorder``'s
    (``drlhp.labelling.recorder``).

    ``labeller`` answers; ``out`` takes the label stream (a queue); ``journal``: each label is journaled there
    first; ``scorer``: pairs are picked by the ensemble's disagreement (None: at random); ``earlier``: the labels
    of the run before this session (resumed).
    """

    def __init__(self, config: PrefInterfaceConfig, labeller: Labeller, out: LabelSink,
                 journal: JournalWriter | None = None, scorer: DisagreementScorer | None = None,
                 earlier: EarlierLabels | None = None) -> None:
        earlier = earlier or EarlierLabels()
        self.config, self.labeller, self.schedule = config, labeller, config.schedule
        self.chooser = PairChooser(config.max_segs, config.seed, config.n_candidate_pairs, scorer, config.coverage)
        self.recorder = AnswerRecorder(out, journal, config.undo_limit, earlier)
        # Pairs asked in the run (a skipped one too), not counting labels taken back: what the label budget counts.
        self.n_asked = earlier.next_seq - earlier.n_retracted
        # What the labeller can do, from the protocols it meets (drlhp.labelling.protocols), found once.
        self._pool = labeller if isinstance(labeller, ConcurrentLabeller) else None
        self.concurrent = self._pool is not None  # pairs on offer, answers as they come (not label(a, b))
        self._watcher = labeller if isinstance(labeller, ShowsEpisodes) else None
        self._timer = labeller if isinstance(labeller, TimesAnswers) else None
        self._names = labeller if isinstance(labeller, NamesAnswerers) else None
        self._seconder = labeller if isinstance(labeller, GivesSecondOpinions) else None
        # While a person thinks, clips keep arriving; they join the buffer after the answer, so a clip on screen is
        # never forgotten in the middle of its question. Older ones than the buffer holds would be evicted at once.
        self._pending: deque[Clip] = deque(maxlen=config.max_segs)
        self._episodes = EpisodeTracker(EPISODE_CLIPS)
        self._owed = 0.0  # pairs it may still ask about, earned by new clips
        self._rng = random.Random(config.seed)  # which answered pairs get a second opinion

    # -- clips in --------------------------------------------------------------------------
    def receive(self, clip: Clip) -> None:
        """A new clip: it joins the buffer at the next ``step``; a labeller that shows episodes is shown each one
        it completes."""
        self._pending.append(clip)
        finished = self._episodes.add(clip)
        if finished and self._watcher is not None:
            self._watcher.show_episode([f for s in finished for f in s.shown])

    def add_clip(self, clip: Clip) -> None:
        """Put a clip in the buffer now; the trainer may let go of those it evicts."""
        for clip_id in self.chooser.add(clip):
            self.recorder.forget(clip_id)

    def _take_in_pending(self) -> None:
        for clip in self._pending:
            self.add_clip(clip)
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
        pair = self.chooser.pick()
        if pair is None:
            self._owed = 0.0
            return
        self._owed -= 1
        self.ask(*pair)

    def _serve(self, labeller: ConcurrentLabeller, env_steps: int) -> None:
        """Keep pairs on offer for the labellers working at once; record their answers as they come."""
        self.record_answers()
        while labeller.wants_pairs() and self.n_asked < self.schedule.allowed(env_steps):
            pair = self.chooser.pick()
            if pair is None:
                break
            self.mark_asked(*pair)
            labeller.offer(*pair)
        labeller.set_progress(self.recorder.run_labels, self.n_asked, self.recorder.ledger.agreement.rows())
        self.chooser.refresh_scores(2)

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
            labeller.set_progress(self.recorder.run_labels, self.n_asked, self.recorder.ledger.agreement.rows())
            labeller.acknowledge(event)

    def _record_web_answer(self, answer: Answer) -> None:
        if answer.label is None:
            return
        name = f"web:{answer.labeller}"
        if answer.first is None:
            answer.seq = self.record(answer.a, answer.b, answer.label, name, answer.seconds).seq
        elif answer.first.seq is not None:
            answer.seq = answer.first.seq
            self.recorder.record_second(_web_recorded(answer.first), name, answer.label, answer.seconds)

    def ask(self, a: Clip, b: Clip) -> float | None:
        """Have the pair labelled, journal the label, send it on; returns the label (None: incomparable, or the
        labeller took back its last answer instead)."""
        self.mark_asked(a, b)
        label = self.labeller.label(a, b)
        if label is UNDO:
            self._unmark_asked(a, b)
            self.chooser.ask_again(a, b)
            try:
                taken = self.retract_last(self._labeller_name())
            except NothingToUndo as e:
                log.warning("%s; the pair on screen is asked again", e)
                return None
            self.chooser.ask_again(taken.a, taken.b)
            return None
        if label is not None:
            first = self.record(a, b, label, self._labeller_name(), self._timer.last_seconds if self._timer else None)
            self._maybe_second_opinion(first)
        return label

    def _labeller_name(self) -> str:
        return self._names.last_labeller if self._names is not None else type(self.labeller).__name__

    def _maybe_second_opinion(self, first: Recorded) -> None:
        share = self.config.second_opinion_share
        if self._seconder is None or not share or self._rng.random() >= share:
            return
        opinion = self._seconder.second_opinion(first.a, first.b, first.labeller)
        if opinion is not None and opinion[1] is not None:
            self.recorder.record_second(first, opinion[0], opinion[1])

    def mark_asked(self, a: Clip, b: Clip) -> None:
        """The pair is being asked: never pick it again; it counts against the label budget."""
        self.chooser.mark_asked(a, b)
        self.n_asked += 1

    def _unmark_asked(self, a: Clip, b: Clip) -> None:
        """The pair's answer was taken back: it no longer counts against the budget, and may be asked again."""
        self.chooser.unmark_asked(a, b)
        self.n_asked -= 1

    # -- recording ---------------------------------------------------------------------------
    def record(self, a: Clip, b: Clip, label: float, labeller: str, seconds: float | None = None) -> Recorded:
        """Journal a label and send it on (``AnswerRecorder.record``); a clip that left the buffer while its pair was
        out with a labeller (web) is forgotten then."""
        recorded = self.recorder.record(a, b, label, labeller, seconds)
        for clip in (a, b):
            if clip.clip_id not in self.chooser.clips:
                self.recorder.forget(clip.clip_id)
        return recorded

    def retract_last(self, labeller: str) -> Recorded:
        """Take back ``labeller``'s latest answer of this session (raises ``NothingToUndo`` if none is left)."""
        taken = self.recorder.ledger.last(labeller)
        self.retract(taken)
        return taken

    def retract(self, taken: Recorded) -> None:
        """Take back an answer (``AnswerRecorder.retract``); a first answer's pair leaves the budget too."""
        self.recorder.retract(taken)
        if not taken.second:
            self._unmark_asked(taken.a, taken.b)

    def close(self) -> None:
        """Record the answers that came in as the run was stopping; release the labeller and the journal."""
        try:
            if self.concurrent:
                self.record_answers()
        finally:
            self.labeller.close()
            self.recorder.close()


def _web_recorded(answer: Answer) -> Recorded:
    """A web answer the interface recorded (its ``seq`` set), as ``retract`` and ``record_second`` take it."""
    assert answer.seq is not None and answer.label is not None
    return Recorded(answer.seq, answer.a, answer.b, f"web:{answer.labeller}", answer.label, answer.first is not None)


class EpisodeTracker:
    """Collects the (latest ``max_clips``) clips of each env's current episode.

    ``add`` hands back an env's episode once the first clip of its next episode
    arrives: clips of several envs interleave, so each env is followed apart.
    """

    def __init__(self, max_clips: int) -> None:
        self.max_clips = max_clips
        self.current: dict[int, deque[Clip]] = {}

    def add(self, clip: Clip) -> list[Clip] | None:
        current = self.current.setdefault(clip.env_index, deque(maxlen=self.max_clips))
        finished = None
        if current and clip.episode != current[-1].episode:
            finished = list(current)
            current.clear()
        current.append(clip)
        return finished
