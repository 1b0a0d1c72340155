"""A person's answer to a pair (a ``Choice``) and the label it means: the one map the terminal, the web page and
``drlhp show-prefs`` share; and the answers and take-backs a concurrent labeller (the web page) hands the
preference interface to record.

A label is P(the left clip is better): 1.0, 0.0 or 0.5; a skipped pair (the clips cannot be
compared) has no label and is not stored.
"""
from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass, field
from enum import Enum
from typing import Union

from drlhp.clips.clip import Clip
from drlhp.errors import InvalidAnswer

#: Answers each labeller may take back, newest first.
DEFAULT_UNDO_LIMIT = 10


class Choice(str, Enum):
    """What a person answers to a pair; the value is what the web page sends (a ``str``, so it travels as JSON)."""

    LEFT = "L"
    RIGHT = "R"
    EQUAL = "E"
    SKIP = "skip"

    @property
    def label(self) -> float | None:
        """The label this answer gives (None: skipped, nothing is stored)."""
        return LABELS[self]


#: The answers' values, as the web page sends them.
CHOICE_VALUES = frozenset(answer.value for answer in Choice)
#: Each answer's label, P(left clip is better); None: no label.
LABELS: dict[Choice, float | None] = {Choice.LEFT: 1.0, Choice.RIGHT: 0.0, Choice.EQUAL: 0.5, Choice.SKIP: None}
#: Each stored label in words.
LABEL_NAMES: dict[float, str] = {1.0: "LEFT better", 0.0: "RIGHT better", 0.5: "equally good"}
#: What may be typed in a terminal (any case) for each answer; an empty line skips.
TYPED: dict[str, Choice] = {"l": Choice.LEFT, "left": Choice.LEFT, "r": Choice.RIGHT, "right": Choice.RIGHT,
                            "e": Choice.EQUAL, "equal": Choice.EQUAL, "": Choice.SKIP}


def parse_typed(text: str) -> Choice:
    """The answer a person typed (L / R / E / left / right / equal in any case, or nothing: skip).

    Raises ``InvalidAnswer`` for anything else."""
    word = text.strip().lower()
    if word not in TYPED:
        raise InvalidAnswer(word)
    return TYPED[word]


@dataclass(eq=False)
class Answer:
    """A labeller's answer, waiting for the interface to record it."""

    a: Clip
    b: Clip
    label: float | None  # None: "can't tell" (nothing is recorded)
    labeller: str
    seconds: float | None  # from handing the pair to this labeller to the answer (None: it was not theirs)
    pair_id: int
    first: Answer | None = None  # a second opinion: the answer it seconds
    seq: int | None = None  # the run's label number, set by the interface once recorded (a second: the first's)
    done: Future = field(default_factory=Future)  # set once the label is journaled (or the pair skipped)


@dataclass(eq=False)
class TakeBack:
    """A labeller takes back ``answer`` (theirs, recorded); the interface retracts it, then completes ``done``."""

    answer: Answer
    done: Future = field(default_factory=Future)


#: What a concurrent labeller hands the interface: an answer to record, or one to take back.
Event = Union[Answer, TakeBack]
