"""The reward network's eval-mode forward pass as a short list of plain tensor calls.

The env process runs this on every step, for one frame (or one per env), so the
cost of a call matters more than its arithmetic. ``inference_ops`` turns the
network into calls that share its parameters (a trainer updating the network in
place is seen at once) and gives the same output as ``net.eval()``:

- no module dispatch and no no-op dropouts (docs/benchmarks.md, "Figures behind the code");
- every member sees the same frame, so the first layer is one ordinary
  convolution (or dense layer) with all members' filters, not a grouped one on M
  copies of the input;
- for one frame (the single-env wrapper's step), an ensemble's stride-1
  convolutions on small maps (the paper's layers 3 and 4: 9×9 and 7×7 for Pong)
  are one gather of every member's input patches and one batched matrix product:
  at batch 1 PyTorch's grouped convolution costs several times a plain one at these
  sizes, the gather less (docs/label-efficiency.md). Activations then stay member-major
  ``(M, C, N*H*W)`` through the dense layers. For a batch of frames (one per env of
  a vector env) the gathered patches grow with the batch and the grouped
  convolution is faster again, so ``one_frame`` chooses.
"""
from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Callable, cast

import torch
import torch.nn.functional as F
from torch import nn

from drlhp.reward.layers import (
    FrameNorm,
    MemberLinear,
    SpatialSoftmax,
    frame_norm,
    member_linear,
    peak_softmax,
    spatial_softmax,
)

# Gathering patches beats a grouped convolution on small maps only (at batch 1: see
# benchmarks/speed/ensemble_forward.py): the gathered patches grow with the map, the call overhead does not.
# The Atari network's 9x9 and 7x7 maps gain; the keypoint network's 16x16 maps (64x64 frames) lose.
MAX_GATHER_MAP = 12 * 12

Op = Callable[[torch.Tensor], torch.Tensor]


class MemberMajorConv:
    """A grouped stride-1 convolution as gather + batched matmul; member-major output ``(M, C_out, N*H*W)``.

    ``x`` is either a channels-last ``(N, M*C, H, W)`` tensor (the layer before was a
    convolution) or the member-major output of another ``MemberMajorConv``. The gather
    indices depend on the batch size, so they are built once per size.
    """

    def __init__(self, conv: nn.Conv2d, in_hw: tuple[int, int], member_major_input: bool) -> None:
        self.m = conv.groups
        self.c_out, self.c_in, self.k, _ = conv.weight.shape
        self.c_out //= self.m
        self.pad = cast("tuple[int, ...]", conv.padding)[0]  # numbers: build_reward_net gives no padding="same"
        self.h, self.w = in_hw
        self.out_h, self.out_w = self.h + 2 * self.pad - self.k + 1, self.w + 2 * self.pad - self.k + 1
        self.member_major_input = member_major_input
        # A view of the weights (training in place shows at once), its columns in storage order:
        # (ky, kx, c_in) for channels-last weights (build_reward_net's), else (c_in, ky, kx).
        self.kernel_last = not conv.weight.is_contiguous()
        weight = conv.weight.permute(0, 2, 3, 1) if self.kernel_last else conv.weight
        self.weight = weight.view(self.m, self.c_out, -1)
        assert conv.bias is not None  # build_reward_net's convolutions have biases
        self.bias = conv.bias.view(self.m, self.c_out, 1)
        self._index: dict[int, torch.Tensor] = {}

    def _build_index(self, n: int) -> torch.Tensor:
        """Flat positions of each member's patches, ``(M, K, N*L)`` (K in the weights' order); padding: past the end."""
        m, c, k, p = self.m, self.c_in, self.k, self.pad
        ar = torch.arange
        y = ar(self.out_h).view(-1, 1) + ar(k).view(1, -1) - p  # (out_h, k)
        x = ar(self.out_w).view(-1, 1) + ar(k).view(1, -1) - p
        # Broadcast to (M, C_in, ky, kx, N, out_h, out_w).
        yy = y.t().view(1, 1, k, 1, 1, -1, 1)
        xx = x.t().view(1, 1, 1, k, 1, 1, -1)
        mm = ar(m).view(-1, 1, 1, 1, 1, 1, 1)
        cc = ar(c).view(1, -1, 1, 1, 1, 1, 1)
        nn_ = ar(n).view(1, 1, 1, 1, -1, 1, 1)
        hw = self.h * self.w
        if self.member_major_input:  # (M, C, N, H, W)
            flat = (((mm * c + cc) * n + nn_) * self.h + yy) * self.w + xx
        else:  # channels-last (N, H, W, M*C)
            flat = (nn_ * hw + yy * self.w + xx) * (m * c) + mm * c + cc
        outside = (yy < 0) | (yy >= self.h) | (xx < 0) | (xx >= self.w)
        flat = torch.where(outside, n * m * c * hw, flat)
        if self.kernel_last:
            flat = flat.permute(0, 2, 3, 1, 4, 5, 6)
        return flat.reshape(-1).to(self.weight.device)

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        n = x.shape[2] // (self.h * self.w) if self.member_major_input else x.shape[0]
        index = self._index.get(n)
        if index is None:
            index = self._index[n] = self._build_index(n)
        flat = x.permute(0, 2, 3, 1).reshape(-1) if not self.member_major_input else x.reshape(-1)
        if self.pad:
            flat = torch.cat((flat, flat.new_zeros(1)))
        patches = flat.index_select(0, index).view(self.m, self.c_in * self.k * self.k, -1)
        return torch.baddbmm(self.bias, self.weight, patches)


def _member_major_flatten(m: int, hw: int) -> Op:
    """``(M, C, N*H*W)`` -> ``(M, N, C*H*W)``: each member's features in ``nn.Flatten``'s order."""
    def flatten(x: torch.Tensor) -> torch.Tensor:
        c = x.shape[1]
        return x.view(m, c, -1, hw).transpose(1, 2).reshape(m, -1, c * hw)
    return flatten


def _member_major_linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """``(M, N, F)`` -> ``(M, N, H)`` with each member's ``weight`` ``(H, F)``."""
    return torch.baddbmm(bias.unsqueeze(1), x, weight.transpose(1, 2))


def _member_major_spatial_softmax(x: torch.Tensor, grid: torch.Tensor, temperature: float) -> torch.Tensor:
    """``spatial_softmax`` on ``(M, K, N*H*W)`` -> ``(M, N, 2K)``: each member's K x-coordinates, then K y's."""
    m, k = x.shape[:2]
    xy = peak_softmax(x.view(m, k, -1, grid.shape[0]) / temperature, dim=-1) @ grid  # (M, K, N, 2)
    return xy.permute(0, 2, 3, 1).reshape(m, -1, 2 * k)


def _members_last(x: torch.Tensor) -> torch.Tensor:
    """``(M, N, 1)`` -> ``(N, M)``, the layout of the grouped network's output."""
    return x.squeeze(2).t()


def inference_ops(net: nn.Module, in_shape: Sequence[int], one_frame: bool = False) -> list[Op]:
    """The eval-mode ``net`` (built by ``build_reward_net`` for frames of ``in_shape``) as calls taking
    ``frames_to_net_input(frames)`` and returning each member's reward ``(N, M)``; with ``one_frame``,
    the calls fastest for N = 1 (they work for any N)."""
    modules = [m for m in net.modules() if not isinstance(m, (nn.Sequential, nn.Dropout, nn.Identity))]
    convs = [m for m in modules if isinstance(m, nn.Conv2d)]
    batchnorm = any(isinstance(m, nn.BatchNorm2d) for m in modules)
    gather = one_frame and bool(convs) and convs[0].groups > 1 and not batchnorm
    ops: list[Op] = []
    hw = cast("tuple[int, int]", tuple(in_shape[1:]))  # (H, W) of images (C, H, W); used only for images
    member_major = False
    weighted = False  # a layer with weights seen: the input is no longer the plain frames
    for m in modules:
        first = not weighted
        weighted = weighted or isinstance(m, (nn.Conv2d, MemberLinear))
        if isinstance(m, nn.Conv2d):
            out_hw = _conv_out_hw(m, hw)
            if gather and m.stride == (1, 1) and out_hw[0] * out_hw[1] <= MAX_GATHER_MAP:
                ops.append(MemberMajorConv(m, hw, member_major))
                member_major = True
            elif member_major:
                raise ValueError("a strided convolution after a small one: not a network build_reward_net makes")
            else:
                ops.append(partial(F.conv2d, weight=m.weight, bias=m.bias, stride=m.stride, padding=m.padding,
                                   groups=1 if first else m.groups))
            hw = out_hw
        elif isinstance(m, MemberLinear):
            if member_major:
                ops.append(partial(_member_major_linear, weight=m.weight, bias=m.bias))
            elif first:
                ops.append(partial(F.linear, weight=m.weight.flatten(0, 1), bias=m.bias.flatten()))
            else:
                ops.append(partial(member_linear, weight=m.weight, bias=m.bias))
        elif isinstance(m, nn.LeakyReLU):
            ops.append(partial(F.leaky_relu, negative_slope=m.negative_slope, inplace=True))
        elif isinstance(m, nn.Flatten):
            ops.append(_member_major_flatten(convs[0].groups, hw[0] * hw[1]) if member_major
                       else partial(torch.flatten, start_dim=1))
        elif isinstance(m, SpatialSoftmax):
            ops.append(partial(_member_major_spatial_softmax, grid=m.grid, temperature=m.temperature) if member_major
                       else partial(spatial_softmax, grid=m.grid, n_members=m.n_members, temperature=m.temperature))
        elif isinstance(m, FrameNorm):
            ops.append(partial(frame_norm, mode=m.mode))
        elif isinstance(m, (nn.BatchNorm1d, nn.BatchNorm2d)):
            ops.append(m.eval())
        else:
            raise TypeError(f"no inference op for {type(m).__name__}")
    if member_major:
        ops.append(_members_last)
    return ops


def _conv_out_hw(conv: nn.Conv2d, hw: tuple[int, int]) -> tuple[int, int]:
    padding = cast("tuple[int, int]", conv.padding)  # numbers: build_reward_net gives no padding="same"
    return cast("tuple[int, int]", tuple((s + 2 * p - k) // st + 1
                                         for s, p, k, st in zip(hw, padding, conv.kernel_size, conv.stride)))
