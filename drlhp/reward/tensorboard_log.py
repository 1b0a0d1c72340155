"""Reward-training scalars for TensorBoard (optional: ``pip install "drlhp[tensorboard]"``).

Each run writes to a new ``<tensorboard_log>/drlhp_reward_<N>`` (as SB3 numbers
``PPO_<N>``), so ``tensorboard --logdir <tensorboard_log>`` shows the reward model
beside the agent's runs and two runs never share a curve.
"""
from __future__ import annotations

import os
import re

from drlhp.errors import MissingExtraError

RUN_PREFIX = "drlhp_reward_"


def require_tensorboard() -> None:
    """Raise a clear ImportError when TensorBoard's writer is missing."""
    try:
        import tensorboard  # noqa: F401
    except ImportError as e:
        raise MissingExtraError('tensorboard_log= writes TensorBoard files: pip install "drlhp[tensorboard]"') from e


def next_run_dir(root: str) -> str:
    os.makedirs(root, exist_ok=True)
    taken = [int(m.group(1)) for f in os.listdir(root) if (m := re.fullmatch(RUN_PREFIX + r"(\d+)", f))]
    return os.path.join(root, f"{RUN_PREFIX}{max(taken, default=0) + 1}")


class ScalarLog:
    """``add(step, {"reward/val_accuracy": 0.9, ...})`` -> one TensorBoard scalar each."""

    def __init__(self, root: str) -> None:
        require_tensorboard()
        from torch.utils.tensorboard import SummaryWriter

        self.path = next_run_dir(root)
        self._writer = SummaryWriter(self.path)

    def add(self, step: int, scalars: dict) -> None:
        for tag, value in scalars.items():
            self._writer.add_scalar(tag, value, step)
        self._writer.flush()

    def close(self) -> None:
        self._writer.close()
