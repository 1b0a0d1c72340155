"""Scaling predicted rewards to zero mean and a fixed standard deviation."""
from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np


@dataclass(frozen=True)
class RewardNormaliser:
    """``(raw - mean) / std * scale``; ``fit`` computes mean and std, applying never changes them.

    The statistics are fitted by the training process on recent frames and saved
    inside each checkpoint, so the env process applies exactly what the trainer
    measured (the env process never updates them itself).
    """

    mean: float = 0.0
    std: float = 1.0
    scale: float = 0.05

    @classmethod
    def fit(cls, raw_rewards: np.ndarray, scale: float) -> "RewardNormaliser":
        raw = np.asarray(raw_rewards, dtype=np.float64)
        std = float(raw.std()) if raw.size > 1 else 1.0
        return cls(float(raw.mean()) if raw.size else 0.0, std if std > 1e-8 else 1.0, scale)

    def __call__(self, raw: np.ndarray | float) -> np.ndarray | float:
        return (raw - self.mean) / self.std * self.scale

    def to_dict(self) -> dict:
        return asdict(self)
