"""Who answers "which of these two clips is better?".

A labeller returns the probability that clip ``a`` is preferred: 1.0 (a is
better), 0.0 (b is better), 0.5 (equally good), or ``None`` when the pair is
incomparable (nothing is recorded). What else a labeller can do is declared by the
protocols below, and the preference interface asks a labeller only what its protocols
say it does (``isinstance`` against them, once): ``ShowsEpisodes`` (shown whole episodes
between questions, as a person in a window is), ``TimesAnswers`` (reports how long each
answer took), ``NamesAnswerers`` (several people or teachers answer: says whose the last answer
was), ``GivesSecondOpinions`` (can have a second of them answer a pair), ``ConcurrentLabeller``
(takes pairs on offer and answers as people do, the web page) and ``ServesPage`` (has an address to
print). A labeller of your own needs only ``Labeller``'s three members; its ``label`` may also
return ``UNDO`` to take back its last answer.
"""
from __future__ import annotations

import itertools
import math
import random
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np

from drlhp.clips.clip import Clip
from drlhp.errors import ConfigError

if TYPE_CHECKING:
    from drlhp.labelling.answers import Event


class Undo(Enum):
    """What ``Labeller.label`` returns to take back the labeller's last answer instead of answering this pair."""

    UNDO = "undo"


#: Returned by ``label(a, b)``: "take back my last answer". The interface retracts it (the label leaves the
#: database, the budget gets it back) and asks that pair again, then the pair that was on screen.
UNDO = Undo.UNDO


@runtime_checkable
class Labeller(Protocol):
    """What the preference interface asks for a label: pass your own as ``labeller=``.

    It runs in the interface process, so it must pickle (a module-level class). Its
    ``pairs_per_segment`` says how many pairs to ask about per newly arrived clip;
    ``None`` asks as fast as it answers (a person is slower than clips arrive).
    """

    pairs_per_segment: float | None

    def label(self, a: Clip, b: Clip) -> float | Undo | None:
        """The label of one pair: 1.0 if clip ``a`` is better, 0.0 if ``b`` is, 0.5 if they are
        equally good, or None when they cannot be compared (not stored; it still counts as asked);
        or ``UNDO`` to take back this labeller's last answer (the pair is asked again later)."""
        ...

    def close(self) -> None:
        """Release what the labeller holds (a window, a terminal); called once, when the run stops."""
        ...


@runtime_checkable
class ShowsEpisodes(Protocol):
    """A labeller that shows a person each whole episode as it ends (context for the clips they judge)."""

    def show_episode(self, frames: list[np.ndarray]) -> None:
        """Show an env's episode that just ended (its latest clips' frames, in order); must not block long."""
        ...


@runtime_checkable
class TimesAnswers(Protocol):
    """A labeller that says how long its last answer took; the interface journals it with the label."""

    last_seconds: float | None  # seconds from showing the pair to the answer (None: not measured)


@runtime_checkable
class NamesAnswerers(Protocol):
    """A labeller behind which several people (or simulated teachers) answer: it says whose the last answer was."""

    last_labeller: str  # recorded with the label, e.g. "synthetic:careful"


@runtime_checkable
class GivesSecondOpinions(Protocol):
    """A labeller that can have a second person answer a pair someone else answered (``second_opinion_share``)."""

    def second_opinion(self, a: Clip, b: Clip, first_labeller: str) -> tuple[str, float | None] | None:
        """(who, their label) from someone other than ``first_labeller``, or None if there is nobody else."""
        ...


@runtime_checkable
class ConcurrentLabeller(Labeller, Protocol):
    """A labeller many people work through at once (the web page): instead of ``label(a, b)`` it takes pairs on
    offer and gives answers as they come; the interface acknowledges each once it is journaled."""

    def offer(self, a: Clip, b: Clip) -> None:
        """Put a pair on offer."""
        ...

    def wants_pairs(self) -> bool:
        """Whether it would take another pair on offer now."""
        ...

    def take_answers(self) -> list[Event]:
        """The answers (a skipped pair's label is None) and take-backs given since the last call, oldest first."""
        ...

    def set_progress(self, run_labels: int, asked: int, agreement: list | None = None) -> None:
        """The run's labels so far, pairs asked and agreement rows (``Agreement.rows()``), to show people."""
        ...

    def acknowledge(self, event: Event) -> None:
        """``event`` is journaled: its sender may be told it is safe."""
        ...


@runtime_checkable
class ServesPage(Protocol):
    """A labeller people reach at an address (the web page); the run prints it and offers it as ``labelling_url``."""

    url: str  # the page's address, its token included
    owner_url: str  # the run owner's page (who labels, agreement), its own token included


#: Who a synthetic label is recorded as given by (one teacher); several teachers: ``synthetic:<name>``.
SYNTHETIC_LABELLER = "SyntheticLabeller"


@dataclass(frozen=True)
class SyntheticTeacher:
    """How a simulated person answers, after the B-Pref teachers (Lee et al. 2021).

    The defaults are a perfect teacher: the clip with the larger true return wins,
    exactly equal returns are "equally good".

    Attributes:
        beta: rationality. ``inf``: always the better clip; finite: clip a wins with
            probability ``sigmoid(beta * (R_a - R_b))`` (Bradley-Terry), so close calls are noisy.
        gamma: myopia. Step t of a clip of length L counts ``gamma ** (L - 1 - t)``: below 1,
            the end of a clip weighs more than its start.
        mistake_rate: probability of giving the opposite answer to a strict preference.
        skip_threshold: skip (answer nothing) when both clips' returns are below this:
            neither shows anything worth judging. None: never skip.
        equal_threshold: "equally good" when the returns differ by at most this.
    """

    beta: float = math.inf
    gamma: float = 1.0
    mistake_rate: float = 0.0
    skip_threshold: float | None = None
    equal_threshold: float = 0.0

    def __post_init__(self) -> None:
        if not self.beta > 0:
            raise ConfigError(f"beta must be > 0 (inf: a perfectly rational teacher), got {self.beta}")
        if not 0.0 < self.gamma <= 1.0:
            raise ConfigError(f"gamma must be in (0, 1], got {self.gamma}")
        if not 0.0 <= self.mistake_rate <= 1.0:
            raise ConfigError(f"mistake_rate must be in [0, 1], got {self.mistake_rate}")
        if self.equal_threshold < 0:
            raise ConfigError(f"equal_threshold must be >= 0, got {self.equal_threshold}")

    def judged_return(self, rewards: np.ndarray) -> float:
        """The return as this teacher perceives it (later steps weigh more when ``gamma`` < 1)."""
        if self.gamma == 1.0:
            return float(np.sum(rewards))
        return float(np.dot(rewards, self.gamma ** np.arange(len(rewards) - 1, -1, -1)))

    def answer(self, rewards_a: np.ndarray, rewards_b: np.ndarray, rng: random.Random) -> float | None:
        """P(a preferred) as a label (1, 0 or 0.5), or None to skip the pair."""
        ra, rb = self.judged_return(rewards_a), self.judged_return(rewards_b)
        if self.skip_threshold is not None and max(ra, rb) < self.skip_threshold:
            return None
        if abs(ra - rb) <= self.equal_threshold:
            return 0.5
        if math.isinf(self.beta):
            label = 1.0 if ra > rb else 0.0
        else:
            label = 1.0 if rng.random() < 1.0 / (1.0 + math.exp(-self.beta * (ra - rb))) else 0.0
        return 1.0 - label if rng.random() < self.mistake_rate else label


#: Pairs asked per new clip when labels come from the true reward.
DEFAULT_PAIRS_PER_SEGMENT = 1.0


class SyntheticLabeller:
    """Labels pairs from the env's true rewards, the way ``teacher`` would (default: perfectly).

    ``teachers`` (name -> teacher) models several people instead: they answer pairs in turn, each label
    recorded as ``synthetic:<name>``, and ``second_opinion`` has another of them answer a pair too.
    """

    def __init__(self, pairs_per_segment: float = DEFAULT_PAIRS_PER_SEGMENT,
                 teacher: SyntheticTeacher = SyntheticTeacher(), seed: int | None = None,
                 teachers: Mapping[str, SyntheticTeacher] | None = None) -> None:
        if pairs_per_segment <= 0:
            raise ConfigError(f"pairs_per_segment must be > 0, got {pairs_per_segment}")
        if teachers is not None and not teachers:
            raise ConfigError("teachers must name at least one SyntheticTeacher (or pass None for one teacher)")
        self.pairs_per_segment: float | None = pairs_per_segment
        self.teacher = teacher
        self.teachers = {f"synthetic:{name}": t for name, t in teachers.items()} if teachers else None
        self._turns = itertools.cycle(self.teachers or ())
        self.last_labeller = SYNTHETIC_LABELLER
        self._rng = random.Random(seed)

    def label(self, a: Clip, b: Clip) -> float | None:
        teacher = self.teacher
        if self.teachers is not None:
            self.last_labeller = next(self._turns)
            teacher = self.teachers[self.last_labeller]
        return teacher.answer(a.rewards, b.rewards, self._rng)

    def second_opinion(self, a: Clip, b: Clip, first_labeller: str) -> tuple[str, float | None] | None:
        others = [name for name in self.teachers or () if name != first_labeller]
        if not others:
            return None
        name = self._rng.choice(others)
        return name, self.teachers[name].answer(a.rewards, b.rewards, self._rng)  # type: ignore[index]

    def close(self) -> None:
        pass
