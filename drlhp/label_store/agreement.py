"""Pairs two labellers answered: the label they train on, and how often each two labellers agree.

A share of pairs goes to a second labeller. Both answers are kept with who gave them
(``PrefDB``'s ``labellers`` / ``first_labels`` and ``second_labellers`` / ``second_labels``);
the pair trains on ``combined_label``. ``Agreement`` counts, per two labellers, the pairs
both answered and those they answered alike: a share far below 1 says the labellers read
the task differently (or one of them is not paying attention).
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol


def combined_label(first: float, second: float) -> float:
    """The training label of a pair two labellers answered: their answer if they agree, else 0.5 (a tie)."""
    return float(first) if first == second else 0.5


class AnsweredPairs(Protocol):
    """A database's per-pair answers, as ``PrefDB`` holds them (named here so this module needs no PrefDB)."""

    @property
    def labellers(self) -> Sequence[str]: ...
    @property
    def first_labels(self) -> Sequence[float]: ...
    @property
    def second_labellers(self) -> Sequence[str]: ...
    @property
    def second_labels(self) -> Sequence[float]: ...


@dataclass
class Agreement:
    """Pairs two labellers both answered, per labeller pair (names sorted, so (a, b) and (b, a) are one).

    ``counts[(a, b)]`` is ``[pairs both answered, pairs they gave the same answer]``; "the same" means
    exactly equal labels (L/L, R/R, E/E). A plain dataclass of builtins: it pickles (``RunStart`` carries it).
    """

    counts: dict[tuple[str, str], list[int]] = field(default_factory=dict)

    @staticmethod
    def _key(a: str, b: str) -> tuple[str, str]:
        return (a, b) if a <= b else (b, a)

    def add(self, labeller_a: str, label_a: float, labeller_b: str, label_b: float) -> None:
        """Count one pair ``labeller_a`` answered ``label_a`` and ``labeller_b`` answered ``label_b``."""
        n = self.counts.setdefault(self._key(labeller_a, labeller_b), [0, 0])
        n[0] += 1
        n[1] += label_a == label_b

    def remove(self, labeller_a: str, label_a: float, labeller_b: str, label_b: float) -> None:
        """Uncount a pair ``add`` counted (a retracted second answer no longer counts)."""
        key = self._key(labeller_a, labeller_b)
        n = self.counts[key]
        n[0] -= 1
        n[1] -= label_a == label_b
        if n[0] == 0:
            del self.counts[key]  # a labeller pair with no pair left is not reported

    def rate(self, a: str | None = None, b: str | None = None) -> float:
        """The share of pairs answered alike (nan: none): by labellers ``a`` and ``b``; with ``a`` only, by ``a``
        and anyone; with no names, over all labeller pairs."""
        if a is not None and b is not None:
            chosen: Iterable[list[int]] = [self.counts.get(self._key(a, b), [0, 0])]
        elif a is not None or b is not None:
            chosen = [n for key, n in self.counts.items() if (a or b) in key]
        else:
            chosen = self.counts.values()
        total = same = 0
        for n in chosen:
            total, same = total + n[0], same + n[1]
        return same / total if total else math.nan

    @property
    def n_pairs(self) -> int:
        """Pairs answered twice, all labeller pairs."""
        return sum(n for n, _ in self.counts.values())

    def rows(self) -> list[tuple[str, str, int, int, float]]:
        """``(a, b, pairs both answered, pairs answered alike, rate)`` per labeller pair, sorted by names."""
        return [(a, b, n, same, same / n) for (a, b), (n, same) in sorted(self.counts.items())]

    @classmethod
    def total(cls, *parts: Agreement) -> Agreement:
        """The counts of ``parts`` together (e.g. a run's training and validation databases)."""
        out = cls()
        for part in parts:
            for key, (n, same) in part.counts.items():
                counts = out.counts.setdefault(key, [0, 0])
                counts[0] += n
                counts[1] += same
        return out

    @classmethod
    def of(cls, *dbs: AnsweredPairs) -> Agreement:
        """Counted from the second answers the databases (``PrefDB``) hold."""
        out = cls()
        for db in dbs:
            for first_by, first, second_by, second in zip(db.labellers, db.first_labels, db.second_labellers,
                                                          db.second_labels):
                if second_by:
                    out.add(first_by, first, second_by, second)
        return out
