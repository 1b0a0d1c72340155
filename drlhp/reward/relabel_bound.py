"""The bound on relabelling a replay buffer, shared by SB3's callback and RLlib's relabeller: after a relabelling
that took ``t`` seconds, the next waits until ``t * (1 - share) / share`` seconds have passed, so relabelling takes
at most ``share`` of the run's wall time."""
from __future__ import annotations

import time

from drlhp.errors import ConfigError

#: Relabelling takes at most this share of the run's wall time by default (``max_time_share``).
DEFAULT_MAX_TIME_SHARE = 0.1


def check_max_time_share(share: float) -> float:
    if not 0 < share <= 1:
        raise ConfigError(f"max_time_share must be in (0, 1], got {share}")
    return share


def next_allowed(took: float, share: float) -> float:
    """The monotonic time before which no relabelling starts, after one that took ``took`` seconds ended now."""
    return time.monotonic() + took * (1 - share) / share
