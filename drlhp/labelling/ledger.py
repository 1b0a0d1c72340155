"""The preference interface's bookkeeping of undo and second opinions: which answers each labeller may still take
back, which pairs were answered twice and how often their labellers agreed, which labels were taken back.

It decides nothing about the journal or the label stream: ``PrefInterface`` journals and sends each answer and
retraction, and tells the ledger.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from drlhp.clips.clip import Clip
from drlhp.errors import NothingToUndo
from drlhp.label_store.agreement import Agreement


@dataclass(frozen=True)
class Recorded:
    """An answer this session recorded, as its labeller may take it back: the first answer of the run's
    ``seq``-th label, or (``second``) a second labeller's answer to it."""

    seq: int
    a: Clip
    b: Clip
    labeller: str
    label: float
    second: bool = False


class AnswerLedger:
    """Each labeller's latest ``undo_limit`` answers of this session (0: none can be taken back), the pairs
    answered twice, and ``agreement`` (the run's so far, when resumed)."""

    def __init__(self, undo_limit: int = 0, agreement: Agreement | None = None) -> None:
        self.undo_limit = undo_limit
        self.agreement = agreement if agreement is not None else Agreement()
        self.n_retracted = 0  # answers taken back in this session (second answers too)
        self.n_second = 0  # second answers recorded in this session
        self.retracted: set[int] = set()  # labels (first answers) taken back in this session, by seq
        self._history: dict[str, deque[Recorded]] = {}  # each labeller's answers they may take back, newest last
        # This session's pairs answered twice, by seq: (first labeller, label, second labeller, label).
        self._twice: dict[int, tuple[str, float, str, float]] = {}

    def remember(self, answer: Recorded) -> None:
        """An answer was recorded: its labeller may take it back (while it is among their latest)."""
        if self.undo_limit:
            self._history.setdefault(answer.labeller, deque(maxlen=self.undo_limit)).append(answer)

    def last(self, labeller: str) -> Recorded:
        """``labeller``'s latest answer they may still take back, no longer theirs to take back; raises
        ``NothingToUndo`` if none is left."""
        history = self._history.get(labeller)
        if not history:
            raise NothingToUndo(f"{labeller} has no answer left to take back (the last {self.undo_limit} answers of "
                                "this session can be)")
        return history.pop()

    def may_second(self, first: Recorded) -> bool:
        """Whether ``first``'s label still stands, to be answered a second time."""
        return first.seq not in self.retracted

    def add_second(self, first: Recorded, second: Recorded) -> None:
        """A second labeller answered ``first``'s pair: it counts towards agreement, and may be taken back."""
        self.remember(second)
        self._twice[first.seq] = (first.labeller, first.label, second.labeller, second.label)
        self.agreement.add(*self._twice[first.seq])
        self.n_second += 1

    def take_back(self, answer: Recorded) -> None:
        """``answer`` was taken back: the pair's agreement no longer counts; a first answer's label is gone."""
        self.n_retracted += 1
        twice = self._twice.pop(answer.seq, None)
        if twice is not None:
            self.agreement.remove(*twice)
        if not answer.second:
            self.retracted.add(answer.seq)
