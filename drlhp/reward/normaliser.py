"""Scaling predicted rewards to zero mean and a fixed standard deviation."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, cast

import numpy as np

#: A member whose raw rewards vary by no more than this (their std) is flat and rewards exactly 0. A network
#: whose leaky-ReLU units have all died varies its output by ~1e-8 (0.01 per layer); a live one varies it by
#: 1e-3 or more. Dividing a flat member's output by its std would turn its rounding noise into rewards of any
#: size, and dividing by a floor still leaves that noise, which differs between CPUs and batch sizes.
MIN_STD = 1e-4


@dataclass(frozen=True)
class RewardNormaliser:
    """Each ensemble member's ``(raw - mean) / std``, averaged over members, times ``scale``.

    ``fit`` computes each member's mean and std; applying never changes them. The
    statistics are fitted by the training process on frames of labelled clips and saved
    inside each checkpoint, so the env process applies exactly what the trainer
    measured. Averaging *normalised* rewards (as the paper does) keeps a member
    whose raw outputs happen to be large from outvoting the others. A flat member
    (std at most :data:`MIN_STD`) is left out of the average: it adds exactly 0, and
    if every member is flat the reward is exactly 0.
    """

    mean: float | tuple[float, ...] = 0.0
    std: float | tuple[float, ...] = 1.0
    scale: float = 0.05
    if TYPE_CHECKING:  # set by __post_init__; for the type checker only, so not dataclass fields at run time
        _weights: np.ndarray = field(init=False)
        _offset: float = field(init=False)

    def __post_init__(self) -> None:
        # One member's statistics may be given as plain floats (and were, in v1 checkpoints).
        mean = tuple(float(v) for v in np.atleast_1d(self.mean))
        std = tuple(float(v) for v in np.atleast_1d(self.std))
        object.__setattr__(self, "mean", mean)
        object.__setattr__(self, "std", std)
        stds = np.array(std)
        live = stds > MIN_STD  # checkpoints written before flat members were left out hold exactly MIN_STD
        weights = np.where(live, self.scale / np.where(live, stds, 1.0), 0.0) / max(1, int(live.sum()))
        object.__setattr__(self, "_weights", weights)
        object.__setattr__(self, "_offset", float(np.dot(weights, mean)))

    @classmethod
    def fit(cls, member_rewards: np.ndarray, scale: float) -> RewardNormaliser:
        """Statistics of ``member_rewards`` ``(N, M)`` (or ``(N,)`` for one member)."""
        raw = np.asarray(member_rewards, dtype=np.float64)
        raw = raw.reshape(len(raw), -1)
        std = raw.std(axis=0) if len(raw) > 1 else np.ones(raw.shape[1])
        mean = raw.mean(axis=0) if len(raw) else np.zeros(raw.shape[1])
        return cls(tuple(mean), tuple(std), scale)

    @property
    def member_weights(self) -> np.ndarray:
        """What each member's raw reward is multiplied by in the normalised reward ``(M,)``."""
        return self._weights

    def __call__(self, member_rewards: np.ndarray) -> np.ndarray:
        """``(N, M)`` raw member rewards -> ``(N,)`` normalised rewards (a scalar for ``(M,)``)."""
        return np.asarray(member_rewards, dtype=np.float64) @ self._weights - self._offset

    def to_dict(self) -> dict:
        # __post_init__ made both tuples.
        return {"mean": list(cast("tuple[float, ...]", self.mean)), "std": list(cast("tuple[float, ...]", self.std)),
                "scale": self.scale}
