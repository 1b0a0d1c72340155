"""Recording answers: each on disk before anything else happens, then on the label stream to the trainer.

A label is journaled (``drlhp.label_store.journal``), then put on the label stream (``drlhp.label_store.stream``),
a clip travelling once, packed, before the first label that uses it and forgotten once it can be paired no more.
Answers taken back and second answers go the same way; the ledger (``drlhp.labelling.ledger``) keeps what each
labeller may take back and how often two labellers agree.
"""
from __future__ import annotations

from dataclasses import dataclass

from drlhp.clips.clip import Clip, PackedClip, pack
from drlhp.label_store.agreement import Agreement
from drlhp.label_store.journal import JournalWriter
from drlhp.label_store.stream import (
    ClipData,
    ForgetClip,
    LabelRecord,
    LabelSink,
    Preference,
    Retraction,
    SecondAnswer,
)
from drlhp.labelling.ledger import AnswerLedger, Recorded


@dataclass(frozen=True)
class EarlierLabels:
    """A resumed run's labels: ``next_seq`` the run's next label number, ``n_retracted`` of those before it taken
    back, ``agreement`` so far."""

    next_seq: int = 0
    n_retracted: int = 0
    agreement: Agreement | None = None


class AnswerRecorder:
    """Journals answers into ``journal`` (None: none) and sends them on ``out``; ``undo_limit``: the answers of this
    session each labeller may take back; ``earlier``: the run's labels before this session."""

    def __init__(self, out: LabelSink, journal: JournalWriter | None, undo_limit: int,
                 earlier: EarlierLabels = EarlierLabels()) -> None:
        self.out, self.journal = out, journal
        self.next_seq = earlier.next_seq
        self.n_sent = 0  # labels recorded in this session
        self.ledger = AnswerLedger(undo_limit, earlier.agreement)
        self._retracted_earlier = earlier.n_retracted
        self._sent: dict[int, PackedClip] = {}  # clips the trainer has, packed once for it and the journal

    @property
    def run_labels(self) -> int:
        """The run's labels (a resumed run's earlier ones too), not counting those taken back."""
        return self.next_seq - self._retracted_earlier - len(self.ledger.retracted)

    def record(self, a: Clip, b: Clip, label: float, labeller: str, seconds: float | None = None) -> Recorded:
        """Journal a label (on disk before anything else happens), then send it and any new clip on."""
        new = [clip for clip in (a, b) if clip.clip_id not in self._sent]
        for clip in new:
            self._sent[clip.clip_id] = pack(clip)
        seq, self.next_seq = self.next_seq, self.next_seq + 1
        if self.journal is not None:
            self.journal.append(seq, self._sent[a.clip_id], self._sent[b.clip_id], label, labeller, seconds)
        for clip in new:
            self._put(ClipData(self._sent[clip.clip_id]))
        self._put(Preference(a.clip_id, b.clip_id, float(label), seq, labeller, seconds))
        self.n_sent += 1
        recorded = Recorded(seq, a, b, labeller, float(label))
        self.ledger.remember(recorded)
        return recorded

    def forget(self, clip_id: int) -> None:
        """The clip can be paired no more: the trainer may let it go once no label of its uses it."""
        if self._sent.pop(clip_id, None) is not None:
            self._put(ForgetClip(clip_id))

    def retract(self, taken: Recorded) -> None:
        """Journal and send the retraction of an answer: a first answer's label leaves the database; a second answer
        leaves the label to the first."""
        if self.journal is not None:
            self.journal.retract(taken.seq, taken.labeller, self.next_seq)
        self._put(Retraction(taken.seq, taken.labeller))
        self.ledger.take_back(taken)

    def record_second(self, first: Recorded, labeller: str, label: float, seconds: float | None = None) -> None:
        """Journal and send a second labeller's answer to the pair of ``first``; it counts towards agreement."""
        if not self.ledger.may_second(first):
            return  # the first answer was taken back meanwhile: there is no label to second
        if self.journal is not None:
            self.journal.second_answer(first.seq, labeller, label, seconds, self.next_seq)
        self._put(SecondAnswer(first.seq, labeller, float(label), seconds))
        self.ledger.add_second(first, Recorded(first.seq, first.a, first.b, labeller, float(label), second=True))

    def _put(self, record: LabelRecord) -> None:
        # Blocking: the trainer's receiver thread drains this queue continuously.
        self.out.put(record)

    def close(self) -> None:
        if self.journal is not None:
            self.journal.close()
