"""How many labels a run may have asked for by a given env step.

A run asks an initial batch (the labels reward training starts from) as soon as
there are clips, then the rest of its budget at a rate that falls as the agent
learns: Christiano et al. 2017 ask at a rate proportional to ``T0 / (T + T0)``
after ``T`` env steps; imitation offers ``constant``, ``hyperbolic`` (``1 / (1 + t)``)
and ``inverse_quadratic`` (``1 / (1 + t^2)``) in the fraction ``t`` of the run.
Here ``t = T / T0``, with ``T0`` the horizon unless set: ``hyperbolic`` with
the horizon as ``T0`` is imitation's, with a ``T0`` of your choosing the paper's.
The budget is spent by the horizon; the labels allowed are the rate's integral. A run with
``unsupervised_steps`` asks nothing before then (its agent explores, PEBBLE's pre-training), and
its schedule runs from there to the horizon.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Literal, get_args

from drlhp.errors import ConfigError

#: The integral from 0 to t of each rate, in units of T0.
#: How the rate of asking falls (``PreferenceConfig.label_schedule``).
ScheduleKind = Literal["constant", "hyperbolic", "inverse_quadratic"]
_RATE_INTEGRALS: dict[ScheduleKind, Callable[[float], float]] = {
    "constant": lambda t: t,
    "hyperbolic": math.log1p,
    "inverse_quadratic": math.atan,
}
SCHEDULES: tuple[ScheduleKind, ...] = get_args(ScheduleKind)
#: Labels at an even rate, so that they come from the agents of the whole run: on Pong, whose agent loses every
#: point for its first few hundred thousand steps, the same run reached 1.15 of the true reward's pace at an even
#: rate and 0.53 on the hyperbolic schedule (docs/history.md, "Defaults").
DEFAULT_LABEL_SCHEDULE: ScheduleKind = "constant"


@dataclass(frozen=True)
class LabelSchedule:
    """``allowed(env_steps)``: the labels a run may have asked for by then.

    Attributes:
        budget: labels in all (None: no limit; labels are then asked as fast as clips come).
        initial: labels asked at once, before any rate applies (counted in the budget).
        kind: one of ``SCHEDULES``.
        horizon: env steps (all envs together) by which the budget is spent.
        t0: env steps over which the rate falls (the paper's T0); None: ``horizon`` less ``unsupervised_steps``.
        unsupervised_steps: env steps before the first label (the initial batch is asked then).
    """

    budget: int | None
    initial: int = 0
    kind: ScheduleKind = DEFAULT_LABEL_SCHEDULE
    horizon: int = 1_000_000
    t0: int | None = None
    unsupervised_steps: int = 0

    def __post_init__(self) -> None:
        if self.kind not in _RATE_INTEGRALS:
            raise ConfigError(f"label_schedule must be one of {SCHEDULES}, got {self.kind!r}")
        if self.budget is not None and not 0 <= self.initial <= self.budget:
            raise ConfigError(f"the initial labels (n_initial_prefs={self.initial}) must fit in the label budget "
                             f"({self.budget}); raise label_budget or lower n_initial_prefs")
        if self.horizon < 1 or (self.t0 is not None and self.t0 < 1):
            raise ConfigError(f"label_schedule_steps and label_schedule_t0 must be >= 1, got {self.horizon}, {self.t0}")
        if not 0 <= self.unsupervised_steps < self.horizon:
            raise ConfigError(f"unsupervised_steps must be >= 0 and below label_schedule_steps ({self.horizon}), so "
                              f"that labels come before the run ends; got {self.unsupervised_steps}")

    def allowed(self, env_steps: int) -> float:
        """Labels that may have been asked after ``env_steps`` env steps (``inf`` without a budget)."""
        if env_steps < self.unsupervised_steps:
            return 0
        if self.budget is None:
            return math.inf
        span = self.horizon - self.unsupervised_steps
        integral, t0 = _RATE_INTEGRALS[self.kind], self.t0 or span
        done = integral(min(env_steps - self.unsupervised_steps, span) / t0) / integral(span / t0)
        return self.initial + math.floor((self.budget - self.initial) * done + 1e-9)


def labels_remaining(budget: int | None, asked: int) -> int | None:
    """What is left of a label ``budget`` once ``asked`` pairs were asked (a skipped pair counts); None: no budget."""
    return None if budget is None else max(0, budget - asked)
