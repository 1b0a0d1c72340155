"""What one observation frame looks like, and how the reward network sees it.

The wrapper stores frames exactly as ``obs_transform_func`` returns them (so a
person can be shown them later) and converts them to the network's layout only
when they are fed to the network.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from drlhp.errors import ObservationError

LAYOUTS = ("vector", "HW", "HWC", "CHW", "SHWC")


@dataclass(frozen=True)
class FrameSpec:
    """Shape, dtype and layout of one (transformed) observation frame.

    ``layout`` is one of ``"vector"`` (flat features), ``"HW"`` (grayscale),
    ``"HWC"`` (channels last), ``"CHW"`` (channels first, e.g. the output of
    ``gymnasium.wrappers.FrameStackObservation`` on grayscale frames) or
    ``"SHWC"`` (a stack of channels-last frames, e.g. frame-stacked RGB).
    """

    shape: tuple[int, ...]
    dtype: str
    layout: str

    @property
    def is_image(self) -> bool:
        return self.layout != "vector"

    @property
    def net_input_shape(self) -> tuple[int, ...]:
        """Shape of one frame as the network takes it: (C, H, W) or (features,)."""
        s = self.shape
        if self.layout == "HW":
            return (1, *s)
        if self.layout == "HWC":
            return (s[2], s[0], s[1])
        if self.layout == "SHWC":
            return (s[0] * s[3], s[1], s[2])
        return s  # "vector" and "CHW" are already in the network's layout

    def to_dict(self) -> dict:
        return {"shape": list(self.shape), "dtype": self.dtype, "layout": self.layout}

    @classmethod
    def from_dict(cls, d: dict) -> FrameSpec:
        return cls(tuple(int(x) for x in d["shape"]), str(d["dtype"]), str(d["layout"]))


def infer_frame_spec(frame: object) -> FrameSpec:
    """Work out the layout of ``frame``, or raise ``ObservationError`` saying how to fix it.

    A 3-D array is read as channels-last unless its last axis is longer than its
    first, which is how channels-first frame stacks (4, 84, 84) look.
    """
    fix = (
        "Pass obs_transform_func= to map each observation to an image "
        "(HxW, HxWxC, CxHxW or a stack SxHxWxC) or a flat feature vector."
    )
    if not isinstance(frame, np.ndarray):
        raise ObservationError(
            f"Observations must be NumPy arrays, got {type(frame).__name__}. {fix}"
        )
    if not (np.issubdtype(frame.dtype, np.integer) or np.issubdtype(frame.dtype, np.floating)):
        raise ObservationError(f"Observation dtype {frame.dtype} is not numeric. {fix}")
    if frame.size == 0 or min(frame.shape, default=0) < 1:
        raise ObservationError(f"Observation shape {frame.shape} is empty. {fix}")
    shape = tuple(int(x) for x in frame.shape)
    if frame.ndim == 1:
        layout = "vector"
    elif frame.ndim == 2:
        layout = "HW"
    elif frame.ndim == 3:
        layout = "HWC" if shape[2] <= shape[0] else "CHW"
    elif frame.ndim == 4:
        layout = "SHWC"
    else:
        raise ObservationError(f"Observation shape {frame.shape} is neither an image nor a flat vector. {fix}")
    return FrameSpec(shape, frame.dtype.str, layout)


def check_format(found: str, found_shape: tuple[int, ...], found_dtype, expected: str,
                 expected_shape: tuple[int, ...], expected_dtype, fix: str) -> None:
    """Raise ``ObservationError`` saying both formats and ``fix`` unless the shapes and dtypes agree.

    ``found`` and ``expected`` name the two sides, e.g. "The labels in DIR are of clips" and
    "this run makes clips": each is followed by "of shape ... and dtype ...".
    """
    if tuple(found_shape) != tuple(expected_shape) or np.dtype(found_dtype) != np.dtype(expected_dtype):
        raise ObservationError(f"{found} of shape {tuple(found_shape)} and dtype {np.dtype(found_dtype)}, but "
                               f"{expected} of shape {tuple(expected_shape)} and dtype {np.dtype(expected_dtype)}. "
                               f"{fix}")


def frames_to_net_input(frames: np.ndarray, spec: FrameSpec) -> torch.Tensor:
    """Convert a batch of frames ``(N, *spec.shape)`` to a float tensor for the network.

    Integer pixels are scaled to [0, 1]; images come out (N, C, H, W) in
    channels-last memory order, which is what makes the convolutions fast on CPU.
    """
    if not frames.flags.writeable:  # e.g. a packed clip's frames: torch only reads them, but warns
        frames = frames.copy()
    x = torch.from_numpy(np.ascontiguousarray(frames))
    scale = 1.0 / 255.0 if np.issubdtype(np.dtype(spec.dtype), np.integer) else 1.0
    if spec.layout == "vector":
        return x.float() * scale if scale != 1.0 else x.float()
    n = x.shape[0]
    if spec.layout == "HW":
        x = x.unsqueeze(-1)
    elif spec.layout == "CHW":
        x = x.permute(0, 2, 3, 1)
    elif spec.layout == "SHWC":
        s, h, w, c = spec.shape
        x = x.permute(0, 2, 3, 1, 4).reshape(n, h, w, s * c)
    # x is now (N, H, W, C); the permute below gives a channels-last NCHW view.
    x = x.permute(0, 3, 1, 2).float()
    if scale != 1.0:  # integer pixels: float() made a copy, so scaling in place is safe
        x.mul_(scale)
    return x.contiguous(memory_format=torch.channels_last)
