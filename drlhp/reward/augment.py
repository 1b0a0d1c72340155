"""Augmentations of labelled clips while the reward network trains (never of what the agent is rewarded on).

Both keep a pair's label true for the rewards drlhp learns:

- ``temporal_crop`` (SURF, Park et al. 2022): each clip of a batch is cut to a
  random window of the same length, at its own random start. Fewer frames per
  step also make a step cheaper.
- ``random_shift`` (DrQ, Kostrikov et al. 2020; RAD, Laskin et al. 2020): each clip
  is moved by a random whole number of pixels (edges repeated), the same shift
  for all its frames, so where objects stand relative to each other is unchanged.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from drlhp.errors import ConfigError


@dataclass(frozen=True)
class Augmentation:
    """What varies the labelled clips each training step (the functions below), and SURF's pseudo-labels.

    ``shift``: random shifts of up to this many pixels (0: off). ``crop_min_length``:
    temporal crops to at least this many frames (None: off). ``pseudo_label_threshold``:
    train on unlabelled pairs whose predicted preference is at least this sure (SURF's
    tau; None: off), with weight ``pseudo_label_weight``; the labels are the network's
    own, recomputed every step, and never stored.
    """

    shift: int = 0
    crop_min_length: int | None = None
    pseudo_label_threshold: float | None = None
    pseudo_label_weight: float = 1.0

    def __post_init__(self) -> None:
        if self.shift < 0:
            raise ConfigError(f"augment_shift must be >= 0 pixels, got {self.shift}")
        if self.crop_min_length is not None and self.crop_min_length < 1:
            raise ConfigError(f"temporal_crop_min_length must be >= 1 frame (or None), got {self.crop_min_length}")
        if self.pseudo_label_threshold is not None and not 0.5 < self.pseudo_label_threshold < 1:
            raise ConfigError("pseudo_label_threshold is the confidence a pseudo-label needs: in (0.5, 1), or None; "
                             f"got {self.pseudo_label_threshold}")


#: Training on the clips as they are.
NO_AUGMENTATION = Augmentation()

def temporal_crop(frames_a: np.ndarray, frames_b: np.ndarray, min_length: int,
                  rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Pairs of clips ``(M, n, L, *frame)`` cut to one random length in ``[min_length, L]``, each clip at
    its own random start."""
    m, n, full = frames_a.shape[:3]
    length = int(rng.integers(min(min_length, full), full + 1))
    if length == full:
        return frames_a, frames_b
    window = np.arange(length)
    member, pair = np.arange(m)[:, None, None], np.arange(n)[None, :, None]

    def crop(frames: np.ndarray) -> np.ndarray:
        starts = rng.integers(0, full - length + 1, size=(m, n, 1))
        return frames[member, pair, starts + window]

    return crop(frames_a), crop(frames_b)


def random_shift(x: torch.Tensor, clip_length: int, pad: int, generator: torch.Generator) -> torch.Tensor:
    """Net input ``(n_clips * clip_length, C, H, W)``, each clip's frames shifted by one random offset of
    up to ``pad`` pixels in each direction."""
    if pad == 0:
        return x
    n, _, h, w = x.shape
    padded = F.pad(x, (pad,) * 4, mode="replicate")
    offsets = torch.randint(0, 2 * pad + 1, (n // clip_length, 2), generator=generator)
    out = torch.empty_like(x)
    for clip, (dy, dx) in enumerate(offsets.tolist()):
        frames = slice(clip * clip_length, (clip + 1) * clip_length)
        out[frames] = padded[frames, :, dy:dy + h, dx:dx + w]
    return out
