"""Scaling predicted rewards to a fixed standard deviation around a centre (their mean, their median, or the lower)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, cast

import numpy as np

#: A member whose raw rewards vary by no more than this (their std) is flat and rewards exactly 0. A network
#: whose leaky-ReLU units have all died varies its output by ~1e-8 (0.01 per layer); a live one varies it by
#: 1e-3 or more. Dividing a flat member's output by its std would turn its rounding noise into rewards of any
#: size, and dividing by a floor still leaves that noise, which differs between CPUs and batch sizes.
MIN_STD = 1e-4

#: What raw reward becomes 0: the mean over the labelled frames (the paper), their median (an ordinary frame), or
#: the lower of the two (an ordinary frame never earns below 0, so ending an episode sooner never pays by itself).
RewardCentre = Literal["mean", "median", "lower"]
REWARD_CENTRES: tuple[RewardCentre, ...] = ("mean", "median", "lower")
DEFAULT_REWARD_CENTRE: RewardCentre = "lower"


def centre_gap(member_rewards: np.ndarray) -> np.ndarray:
    """Each member's (mean - median) / std of ``member_rewards`` ``(N, M)``: how much a mean-centred reward charges
    (above 0) or pays (below 0) the typical frame, in standard deviations; 0 for a flat member."""
    raw = np.asarray(member_rewards, dtype=np.float64).reshape(len(member_rewards), -1)
    std = raw.std(axis=0)
    return np.where(std > MIN_STD, (raw.mean(axis=0) - np.median(raw, axis=0)) / np.where(std > 0, std, 1.0), 0.0)


@dataclass(frozen=True)
class RewardNormaliser:
    """Each ensemble member's ``(raw - centre) / std``, averaged over members, times ``scale``.

    ``fit`` computes each member's centre and std; applying never changes them. The
    statistics are fitted by the training process on frames of labelled clips and saved
    inside each checkpoint, so the env process applies exactly what the trainer
    measured. Averaging *normalised* rewards (as the paper does) keeps a member
    whose raw outputs happen to be large from outvoting the others. A flat member
    (std at most :data:`MIN_STD`) is left out of the average: it adds exactly 0, and
    if every member is flat the reward is exactly 0.
    """

    centre: float | tuple[float, ...] = 0.0
    std: float | tuple[float, ...] = 1.0
    scale: float = 0.05
    if TYPE_CHECKING:  # set by __post_init__; for the type checker only, so not dataclass fields at run time
        _weights: np.ndarray = field(init=False)
        _offset: float = field(init=False)

    def __post_init__(self) -> None:
        # One member's statistics may be given as plain floats.
        centre = tuple(float(v) for v in np.atleast_1d(self.centre))
        std = tuple(float(v) for v in np.atleast_1d(self.std))
        object.__setattr__(self, "centre", centre)
        object.__setattr__(self, "std", std)
        stds = np.array(std)
        live = stds > MIN_STD  # checkpoints written before flat members were left out hold exactly MIN_STD
        weights = np.where(live, self.scale / np.where(live, stds, 1.0), 0.0) / max(1, int(live.sum()))
        object.__setattr__(self, "_weights", weights)
        object.__setattr__(self, "_offset", float(np.dot(weights, centre)))

    @classmethod
    def fit(cls, member_rewards: np.ndarray, scale: float,
            centre: RewardCentre = DEFAULT_REWARD_CENTRE) -> RewardNormaliser:
        """Statistics of ``member_rewards`` ``(N, M)`` (or ``(N,)`` for one member), centred on their ``centre``."""
        raw = np.asarray(member_rewards, dtype=np.float64)
        raw = raw.reshape(len(raw), -1)
        std = raw.std(axis=0) if len(raw) > 1 else np.ones(raw.shape[1])
        if not len(raw):
            middle = np.zeros(raw.shape[1])
        elif centre == "lower":
            middle = np.minimum(raw.mean(axis=0), np.median(raw, axis=0))
        else:
            middle = (np.median if centre == "median" else np.mean)(raw, axis=0)
        return cls(tuple(middle), tuple(std), scale)

    @classmethod
    def from_dict(cls, state: dict) -> RewardNormaliser:
        """The normaliser ``to_dict`` wrote; checkpoints before the median option called the centre "mean"."""
        state = dict(state)
        if "mean" in state:
            state["centre"] = state.pop("mean")
        return cls(**state)

    @property
    def member_weights(self) -> np.ndarray:
        """What each member's raw reward is multiplied by in the normalised reward ``(M,)``."""
        return self._weights

    def __call__(self, member_rewards: np.ndarray) -> np.ndarray:
        """``(N, M)`` raw member rewards -> ``(N,)`` normalised rewards (a scalar for ``(M,)``)."""
        return np.asarray(member_rewards, dtype=np.float64) @ self._weights - self._offset

    def to_dict(self) -> dict:
        # __post_init__ made both tuples.
        return {"centre": list(cast("tuple[float, ...]", self.centre)),
                "std": list(cast("tuple[float, ...]", self.std)), "scale": self.scale}
