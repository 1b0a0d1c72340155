"""The stream of labels from the preference interface to the label store: a clip, a label, a clip forgotten, a
label taken back, a second labeller's answer.

The interface writes these records to whatever it is given to ``put`` them on (the reward-training process's
queue in a run, a plain ``queue.Queue`` in a test); ``LabelStore.add`` reads them in the same order.
"""
from __future__ import annotations

from typing import NamedTuple, Protocol, Union

from drlhp.clips.clip import PackedClip


class ClipData(NamedTuple):
    """A clip, compressed, sent once, before the first label that uses it."""

    clip: PackedClip


class ForgetClip(NamedTuple):
    """The interface will not label this clip again: the store may let it go once no pair holds it."""

    clip_id: int


class Preference(NamedTuple):
    """``label`` is the probability that clip a is preferred to clip b.

    1.0: a is better ("L"), 0.0: b is better ("R"), 0.5: equally good ("E").
    """

    clip_id_a: int
    clip_id_b: int
    label: float
    seq: int  # the label's number in the run (0, 1, ...): decides train or validation, orders the journal
    labeller: str = ""  # who answered: a labeller's class name, or "web:<name>" a person typed in the browser
    seconds: float | None = None  # how long the answer took (None: not timed)


class Retraction(NamedTuple):
    """A labeller takes back their answer to the run's ``seq``-th label. If ``labeller`` gave the label
    (its first answer), the label leaves the database; if ``labeller`` gave its second answer, only that
    second answer goes and the label is the first answer again."""

    seq: int
    labeller: str


class SecondAnswer(NamedTuple):
    """A second labeller's answer to the pair of the run's ``seq``-th label (the pair then trains on
    ``drlhp.label_store.agreement.combined_label`` of the two answers)."""

    seq: int
    labeller: str
    label: float  # 1.0, 0.0 or 0.5
    seconds: float | None = None


LabelRecord = Union[ClipData, ForgetClip, Preference, Retraction, SecondAnswer]


class LabelSink(Protocol):
    """Where the interface puts its records: a queue (``put`` blocks while it is full, so none is dropped)."""

    def put(self, record: LabelRecord) -> None: ...
