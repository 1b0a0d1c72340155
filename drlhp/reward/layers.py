"""Layers of the reward networks that PyTorch does not have, shared by the network and its fast forward pass.

Every layer takes an ensemble's ``M`` members side by side: member ``m`` owns a
contiguous slice of the features (or channels), so all members run in one call.
"""
from __future__ import annotations

import math

import torch
from torch import nn


def member_linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """Each member's dense layer on its own slice: ``x`` (B, M*F) -> (B, M*H); ``weight`` (M, H, F)."""
    m, h, f = weight.shape
    return torch.baddbmm(bias.unsqueeze(1), x.view(-1, m, f).transpose(0, 1), weight.transpose(1, 2)) \
        .transpose(0, 1).reshape(-1, m * h)


class MemberLinear(nn.Module):
    """``M`` independent ``nn.Linear(F, H)`` layers on consecutive slices of the features, in one call."""

    def __init__(self, n_members: int, in_features: int, out_features: int) -> None:
        super().__init__()
        bound = 1 / math.sqrt(in_features)  # nn.Linear's default initialisation, per member
        self.weight = nn.Parameter(torch.empty(n_members, out_features, in_features).uniform_(-bound, bound))
        self.bias = nn.Parameter(torch.empty(n_members, out_features).uniform_(-bound, bound))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return member_linear(x, self.weight, self.bias)


class SpatialSoftmax(nn.Module):
    """Each channel's feature map -> where it peaks: the expected (x, y) of a softmax over its positions.

    The keypoint layer of deep spatial autoencoders (Levine et al. 2016, Finn et al.
    2016): a channel that fires on one object becomes that object's coordinates in
    [-1, 1], so the dense layers after it can compute how objects stand relative to
    each other (a distance is two subtractions and a ReLU away) instead of reading
    positions off a flattened map. Input ``(N, M*K, H, W)``; output ``(N, M*2K)``, each
    member's K x-coordinates then its K y-coordinates.

    The logits are divided by ``temperature`` (Levine et al.'s softmax temperature): below 1
    the softmax is sharper, so a small object's few positions outweigh the background from
    the first steps, when the convolutions' outputs still differ only a little.
    """

    grid: torch.Tensor  # a buffer (register_buffer), ``(H*W, 2)``

    def __init__(self, n_members: int, height: int, width: int, temperature: float = 1.0) -> None:
        super().__init__()
        self.n_members, self.temperature = n_members, temperature
        ys, xs = torch.meshgrid(torch.linspace(-1, 1, height), torch.linspace(-1, 1, width), indexing="ij")
        # Derived from the shape, so not saved in checkpoints.
        self.register_buffer("grid", torch.stack([xs.reshape(-1), ys.reshape(-1)], dim=1), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return spatial_softmax(x, self.grid, self.n_members, self.temperature)


#: How far below a map's peak a softmax logit may fall: e^-50 (2e-22) of the peak's weight is nothing to the
#: keypoint, and it keeps the softmax out of float32's denormal range (below e^-87), whose arithmetic is
#: many times slower on x86 CPUs. A trained network's maps get that sharp (the figures: docs/benchmarks.md,
#: "Figures behind the code").
SOFTMAX_LOGIT_FLOOR = 50.0


def peak_softmax(logits: torch.Tensor, dim: int) -> torch.Tensor:
    """``torch.softmax(logits, dim)`` with every logit raised to at least its map's peak minus
    ``SOFTMAX_LOGIT_FLOOR`` (a floor that is not trained through: positions that far below weigh nothing)."""
    floor = logits.detach().amax(dim=dim, keepdim=True) - SOFTMAX_LOGIT_FLOOR
    return torch.softmax(torch.maximum(logits, floor), dim=dim)


def spatial_softmax(x: torch.Tensor, grid: torch.Tensor, n_members: int, temperature: float = 1.0) -> torch.Tensor:
    """``SpatialSoftmax``'s computation: ``x`` (N, M*K, H, W), ``grid`` (H*W, 2) -> (N, M*2K)."""
    n, c, h, w = x.shape
    # (N, H*W, C) is a view of the channels-last maps the network makes: no copy before the softmax.
    attention = peak_softmax(x.permute(0, 2, 3, 1).reshape(n, h * w, c) * (1.0 / temperature), dim=1)
    xy = grid.t() @ attention  # (N, 2, M*K)
    return xy.view(n, 2, n_members, c // n_members).transpose(1, 2).reshape(n, 2 * c)


class FrameNorm(nn.Module):
    """Each frame's channels centred on their own mean (``"centre"``), or also divided by their
    standard deviation (``"standardise"``): a flat background is 0 whatever its brightness.

    No parameters and no statistics kept, so a checkpoint, the trainer and the env side agree by
    construction. Input ``(N, C, H, W)``, any number of channels (an ensemble's repeated ones too).
    """

    def __init__(self, mode: str) -> None:
        super().__init__()
        self.mode = mode

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return frame_norm(x, self.mode)

    def extra_repr(self) -> str:
        return repr(self.mode)


def frame_norm(x: torch.Tensor, mode: str) -> torch.Tensor:
    """``FrameNorm``'s computation: ``x`` (N, C, H, W) per image and channel."""
    centred = x - x.mean(dim=(2, 3), keepdim=True)
    if mode == "centre":
        return centred
    return centred / (centred.std(dim=(2, 3), keepdim=True) + 1e-3)
