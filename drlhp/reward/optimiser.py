"""One optimisation step, and one evaluation, of a reward network (ensemble) on labelled pairs."""
from __future__ import annotations

import os
import warnings
from collections.abc import Iterable, Iterator

import numpy as np
import torch
import torch.nn.functional as F

from drlhp.clips.frames import frames_to_net_input
from drlhp.errors import CheckpointFormatError, ConfigError
from drlhp.reward.augment import NO_AUGMENTATION, Augmentation, random_shift, temporal_crop
from drlhp.reward.predictor import (
    FORWARD_INPUT_BYTES,
    RewardPredictor,
    _why_unreadable,  # the checkpoint's wording, for the file beside it
    clip_returns,
    frame_input_bytes,
    member_input,
    members_input,
    preference_accuracy,
    preference_loss,
)
from drlhp.storage.files import atomic_write

#: The paper's band for validation loss / training loss, which adaptive L2 steers into.
L2_BAND = (1.1, 1.5)
#: Adaptive L2 stays within these bounds: it never switches the penalty off, nor lets it swamp the loss.
L2_LIMITS = (1e-7, 1.0)


def adapted_l2(coefficient: float, val_loss: float, train_loss: float, factor: float) -> float:
    """The L2 coefficient for the next stretch of training: ``factor`` times up when validation loss runs away from
    training loss (overfitting), down when they are too close (underfitting)."""
    ratio = val_loss / max(train_loss, 1e-8)
    if ratio > L2_BAND[1]:
        coefficient *= factor
    elif ratio < L2_BAND[0]:
        coefficient /= factor
    return min(max(coefficient, L2_LIMITS[0]), L2_LIMITS[1])


def pseudo_labels(return_diff: torch.Tensor, threshold: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Which pairs are sure enough, and their labels: ``return_diff`` (R_a - R_b) -> (mask, 1.0 where a is
    preferred else 0.0, for the masked pairs only). Sure: Bradley-Terry's P(a preferred) or P(b preferred)
    is at least ``threshold``."""
    p_a = torch.sigmoid(return_diff)
    sure = torch.maximum(p_a, 1 - p_a) >= threshold
    return sure, (p_a[sure] > 0.5).to(return_diff.dtype)


FRAMES_PASS_PAIRS = 4  # pairs per pass for one network (below)


def _overall_accuracy(scores: Iterable[tuple[float, int]]) -> float:
    """The accuracy over all pairs of several passes, from each pass's ``preference_accuracy``.

    A step or an evaluation keeps each pass's score, not its returns: a small tensor kept from pass to pass
    sits among the passes' large freed buffers, and the allocator then takes fresh memory for the next ones
    (a validation grew the trainer by 100-200 MiB; docs/benchmarks.md, "Memory").
    """
    scores = list(scores)
    strict = sum(k for _, k in scores)
    return sum(accuracy * k for accuracy, k in scores if k) / strict if strict else float("nan")


class RewardOptimiser:
    """Adam on the Bradley-Terry loss, summed over the ensemble's members.

    A training batch gives each member its own pairs (its bootstrap sample):
    frames ``(M, batch, length, *frame_shape)``, labels ``(M, batch)``.
    ``augmentation`` varies the clips of each step (not those of ``evaluate``).

    A batch goes through the network ``pairs_per_pass`` pairs at a time, gradients
    summed over the passes: the same step as one pass (but for batchnorm statistics,
    which then come from one pass's frames), with a fraction of the memory and no
    slower. An ensemble's members share a pass (as channels), so by default a pass
    takes 4 // M pairs of each member, and fewer where their frames would take more
    than ``FORWARD_INPUT_BYTES`` (2 Pong pairs), which keeps the trainer's memory and
    step time down (docs/benchmarks.md, "Memory").
    """

    def __init__(self, predictor: RewardPredictor, lr: float = 3e-4, noise_prob: float = 0.0,
                 weight_decay: float = 0.0, pairs_per_pass: int | None = None,
                 augmentation: Augmentation = NO_AUGMENTATION, seed: int | None = None) -> None:
        if not 0.0 <= noise_prob < 1.0:
            raise ConfigError(f"noise_prob must be in [0, 1), got {noise_prob}")
        self.predictor = predictor
        self.noise_prob = noise_prob
        self.augmentation = augmentation
        self.rng = np.random.default_rng(seed)
        self.generator = torch.Generator().manual_seed(int(self.rng.integers(2 ** 62)))
        #: Share of the last step's unlabelled pairs confident enough to be pseudo-labelled (nan: none given).
        self.pseudo_label_fraction = float("nan")
        self.pairs_per_pass = pairs_per_pass  # None: as many as fit (``_passes``)
        self._frame_bytes = frame_input_bytes(predictor.config.frame_spec)
        self._lr, self._weight_decay = lr, weight_decay
        self._optimizer: torch.optim.Adam | None = None

    @property
    def optimizer(self) -> torch.optim.Adam:
        """Adam, made at its first use: making an optimiser imports ``torch._dynamo`` (about as long as importing
        torch), which a trainer that never trains -- a run that only collects labels -- need not wait for."""
        if self._optimizer is None:
            self._optimizer = torch.optim.Adam(self.predictor.net.parameters(), lr=self._lr,
                                               weight_decay=self._weight_decay)
        return self._optimizer

    @property
    def weight_decay(self) -> float:
        """The L2 penalty's coefficient (adaptive L2 changes it between steps; a resumed run's comes with Adam's
        state)."""
        if self._optimizer is None:
            return self._weight_decay
        return self._optimizer.param_groups[0]["weight_decay"]

    @weight_decay.setter
    def weight_decay(self, value: float) -> None:
        self._weight_decay = value
        if self._optimizer is not None:
            for group in self._optimizer.param_groups:
                group["weight_decay"] = value

    @property
    def n_members(self) -> int:
        return self.predictor.n_members

    def _member_returns(self, frames_a: np.ndarray, frames_b: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
        """Each member's returns ``(M, n)`` of its own pairs: frames ``(M, n, length, ...)``, shifted when training."""
        m, n = frames_a.shape[:2]
        both = np.concatenate([frames_a, frames_b], axis=1).reshape(-1, *frames_a.shape[3:])
        x = frames_to_net_input(both, self.predictor.config.frame_spec).to(self.predictor.device)
        if self.augmentation.shift and x.dim() == 4:
            x = random_shift(x, frames_a.shape[2], self.augmentation.shift, self.generator)
        returns = clip_returns(self.predictor.net, members_input(x.view(m, -1, *x.shape[1:])), 2 * n)
        return returns[:n].T, returns[n:].T

    def _shared_returns(self, frames_a: np.ndarray, frames_b: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
        """Every member's returns ``(n, M)`` of the same pairs: frames ``(n, length, ...)``."""
        n = len(frames_a)
        both = np.concatenate([frames_a, frames_b]).reshape(-1, *frames_a.shape[2:])
        x = member_input(frames_to_net_input(both, self.predictor.config.frame_spec).to(self.predictor.device),
                         self.n_members)
        returns = clip_returns(self.predictor.net, x, 2 * n)
        return returns[:n], returns[n:]

    def _passes(self, n: int, clip_length: int) -> Iterator[slice]:
        """The pairs of each pass over ``n`` pairs of clips of ``clip_length`` frames."""
        per_pass = self.pairs_per_pass
        if per_pass is None:
            # Each member's frames ride in the same pass (as channels): a pass's frames are as for one network.
            m = self.n_members
            pair_bytes = 2 * clip_length * m * self._frame_bytes
            per_pass = max(1, min(FRAMES_PASS_PAIRS // m, FORWARD_INPUT_BYTES // pair_bytes))
        return (slice(i, i + per_pass) for i in range(0, n, per_pass))

    def _crop(self, frames_a: np.ndarray, frames_b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if self.augmentation.crop_min_length is None:
            return frames_a, frames_b
        return temporal_crop(frames_a, frames_b, self.augmentation.crop_min_length, self.rng)

    def train_step(self, frames_a: np.ndarray, frames_b: np.ndarray, labels: np.ndarray,
                   unlabelled: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[float, float]:
        """One gradient step; returns (loss, accuracy on this batch), both the members' mean, on the labelled pairs.

        ``frames_*`` ``(M, batch, length, *frame_shape)`` and ``labels`` ``(M, batch)``; with
        one member, ``(batch, length, ...)`` and ``(batch,)`` will do. ``unlabelled``: pairs of
        clips ``(M, n, length, ...)`` for pseudo-labels, used when the augmentation asks for them.
        """
        if labels.ndim == 1:
            frames_a, frames_b, labels = frames_a[None], frames_b[None], labels[None]
        self.predictor.net.train()
        self.optimizer.zero_grad(set_to_none=True)
        frames_a, frames_b = self._crop(frames_a, frames_b)
        n, loss, scores = labels.shape[1], 0.0, []
        for part in self._passes(n, frames_a.shape[2]):
            ra, rb = self._member_returns(frames_a[:, part], frames_b[:, part])
            # Summed over members (each learns at full strength from its own pairs), a mean over pairs.
            part_labels = torch.from_numpy(labels[:, part]).to(self.predictor.device)
            part_loss = preference_loss(ra, rb, part_labels, self.noise_prob) * (self.n_members * ra.shape[1] / n)
            part_loss.backward()
            loss += part_loss.item() / self.n_members
            scores.append(preference_accuracy(ra.detach().flatten(), rb.detach().flatten(), part_labels.flatten()))
        if unlabelled is not None and self.augmentation.pseudo_label_threshold is not None:
            self._pseudo_label_gradients(*unlabelled)
        self.optimizer.step()
        self.predictor.training_step += 1
        return loss, _overall_accuracy(scores)

    def _pseudo_label_gradients(self, frames_a: np.ndarray, frames_b: np.ndarray) -> None:
        """SURF's semi-supervised term: on unlabelled pairs ``(M, n, length, ...)``, each member learns the side
        it already prefers with confidence >= the threshold; less confident pairs add nothing."""
        threshold = self.augmentation.pseudo_label_threshold
        assert threshold is not None  # train_step calls this only with a threshold
        frames_a, frames_b = self._crop(frames_a, frames_b)
        n, confident = frames_a.shape[1], 0
        for part in self._passes(n, frames_a.shape[2]):
            ra, rb = self._member_returns(frames_a[:, part], frames_b[:, part])
            diff = ra - rb
            sure, labels = pseudo_labels(diff.detach(), threshold)
            confident += int(sure.sum())
            if sure.any():
                pseudo = F.binary_cross_entropy_with_logits(diff[sure], labels, reduction="sum")
                (pseudo * self.augmentation.pseudo_label_weight / n).backward()
        self.pseudo_label_fraction = confident / max(1, frames_a.shape[0] * n)

    @torch.inference_mode()
    def pair_returns(self, frames_a: np.ndarray, frames_b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Every member's returns ``(n, M)`` of each side of the pairs ``(n, length, ...)``, without dropout."""
        self.predictor.net.eval()
        sides = [tuple(r.cpu().numpy() for r in self._shared_returns(frames_a[part], frames_b[part]))
                 for part in self._passes(len(frames_a), frames_a.shape[1])]
        return (np.concatenate([a for a, _ in sides]).astype(np.float64),
                np.concatenate([b for _, b in sides]).astype(np.float64))

    @torch.inference_mode()
    def evaluate(self, batches: Iterable[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> tuple[float, float]:
        """(loss, accuracy) over all pairs of ``batches`` (frames_a, frames_b, labels), without dropout or gradient.

        The loss is the members' mean; the accuracy is the ensemble's, judged on the
        return the agent is rewarded with (the members' normalised rewards, averaged).
        Pass the pairs a batch at a time (a generator): a validation set of Pong pairs
        unpacked at once takes gigabytes (docs/benchmarks.md, "Memory").
        """
        self.predictor.net.eval()
        weights = torch.tensor(self.predictor.normaliser.member_weights, dtype=torch.float32)
        loss_sum, n, scores = 0.0, 0, []
        for frames_a, frames_b, labels in batches:
            for part in self._passes(len(labels), frames_a.shape[1]):
                ra, rb = (r.cpu() for r in self._shared_returns(frames_a[part], frames_b[part]))  # (n, M) each
                target = torch.from_numpy(labels[part])
                loss_sum += float(preference_loss(ra, rb, target[:, None].expand_as(ra), self.noise_prob)) * len(target)
                n += len(target)
                scores.append(preference_accuracy(ra @ weights, rb @ weights, target))
        return (loss_sum / n if n else float("nan")), _overall_accuracy(scores)

    # -- resuming ----------------------------------------------------------------------
    def save_state(self, path: str) -> None:
        """Write the optimiser's state (Adam's moments) and the weights as trained (a checkpoint may hold their
        average instead), so a resumed run trains on as if never stopped."""
        with atomic_write(path) as f:
            torch.save({"training_step": self.predictor.training_step, "optimizer": self.optimizer.state_dict(),
                        "weights": self.predictor.net.state_dict()}, f)

    def load_state(self, path: str) -> bool:
        """Restore ``save_state``'s optimiser state if it belongs to the current network; returns whether it did.

        Never executes code from the file; one that is not an optimiser state raises ``CheckpointFormatError``."""
        if not os.path.exists(path):
            return False
        try:
            with warnings.catch_warnings():  # torch's notes on a foreign file's pickle protocol: the error says it
                warnings.simplefilter("ignore")
                state = torch.load(path, map_location="cpu", weights_only=True)
            if not isinstance(state, dict):
                raise ValueError(f"it holds a {type(state).__name__}, not a dict")
            if state.get("training_step") != self.predictor.training_step or "weights" not in state:
                return False  # written at another checkpoint than the one loaded, or by an earlier drlhp: start afresh
            self.optimizer.load_state_dict(state["optimizer"])
            self.predictor.net.load_state_dict(state["weights"])
        except Exception as e:  # torch raises many types for a corrupt or foreign file; its own message runs to many
            # lines and suggests weights_only=False, i.e. running the file's code: not repeated here.
            raise CheckpointFormatError(
                f"{path} is not a valid drlhp optimiser state: {_why_unreadable(e)}. Move it away to resume with a "
                "fresh optimiser (the reward network is in the checkpoint beside it)") from e
        return True
