"""One optimisation step, and one evaluation, of a reward network on labelled pairs."""
from __future__ import annotations

import os
from typing import Tuple

import numpy as np
import torch

from drlhp.files import atomic_write
from drlhp.frames import frames_to_net_input
from drlhp.reward_predictor import RewardPredictor, preference_accuracy, preference_loss, segment_returns


class RewardTrainer:
    """Adam on the Bradley-Terry loss; frames arrive as ``(batch, length, *frame_shape)`` arrays."""

    def __init__(self, predictor: RewardPredictor, lr: float = 3e-4, noise_prob: float = 0.0,
                 weight_decay: float = 0.0) -> None:
        if not 0.0 <= noise_prob < 1.0:
            raise ValueError(f"noise_prob must be in [0, 1), got {noise_prob}")
        self.predictor = predictor
        self.noise_prob = noise_prob
        self.optimizer = torch.optim.Adam(predictor.net.parameters(), lr=lr, weight_decay=weight_decay)

    def _returns(self, frames_a: np.ndarray, frames_b: np.ndarray) -> Tuple[torch.Tensor, torch.Tensor]:
        n = len(frames_a)
        both = np.concatenate([frames_a, frames_b]).reshape(-1, *frames_a.shape[2:])
        returns = segment_returns(self.predictor.net, frames_to_net_input(both, self.predictor.config.frame_spec), 2 * n)
        return returns[:n], returns[n:]

    def train_step(self, frames_a: np.ndarray, frames_b: np.ndarray, labels: np.ndarray) -> Tuple[float, float]:
        """One gradient step; returns (loss, accuracy on this batch)."""
        self.predictor.net.train()
        ra, rb = self._returns(frames_a, frames_b)
        target = torch.from_numpy(labels)
        loss = preference_loss(ra, rb, target, self.noise_prob)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.optimizer.step()
        self.predictor.training_step += 1
        return loss.item(), preference_accuracy(ra.detach(), rb.detach(), target)[0]

    @torch.inference_mode()
    def evaluate(self, frames_a: np.ndarray, frames_b: np.ndarray, labels: np.ndarray) -> Tuple[float, float]:
        """(loss, accuracy) without dropout or gradient."""
        self.predictor.net.eval()
        ra, rb = self._returns(frames_a, frames_b)
        target = torch.from_numpy(labels)
        return float(preference_loss(ra, rb, target, self.noise_prob)), preference_accuracy(ra, rb, target)[0]

    # -- resuming ----------------------------------------------------------------------
    def save_state(self, path: str) -> None:
        """Write the optimiser's state (Adam's moments), so a resumed run trains on as if never stopped."""
        with atomic_write(path) as f:
            torch.save({"training_step": self.predictor.training_step, "optimizer": self.optimizer.state_dict()}, f)

    def load_state(self, path: str) -> bool:
        """Restore ``save_state``'s optimiser state if it belongs to the current network; returns whether it did."""
        if not os.path.exists(path):
            return False
        state = torch.load(path, map_location="cpu", weights_only=True)
        if state.get("training_step") != self.predictor.training_step:
            return False  # written at another checkpoint than the one loaded: start Adam afresh
        self.optimizer.load_state_dict(state["optimizer"])
        return True
