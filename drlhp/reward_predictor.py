"""The reward network, its preference loss, and its checkpoints.

The network maps one frame to one scalar; a segment's predicted return is the
sum over its frames, and P(a preferred to b) follows Bradley-Terry:
``sigmoid(R_a - R_b)``, optionally mixed with a probability ``noise_prob`` that
the labeller answered uniformly at random (Christiano et al. 2017 use 0.1).
"""
from __future__ import annotations

import math
import os
from dataclasses import asdict, dataclass
from functools import partial
from typing import Callable, List, Optional

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from drlhp.files import atomic_write
from drlhp.frames import FrameSpec, frames_to_net_input
from drlhp.normaliser import RewardNormaliser

CHECKPOINT_DIRNAME = "reward_predictor_checkpoints"
CHECKPOINT_FILENAME = "reward_predictor.ckpt"
CHECKPOINT_FORMAT = "drlhp-reward-predictor-v1"

# The Atari network of Christiano et al. 2017 (appendix A.2): (kernel, stride) per layer.
CONV_LAYERS = ((7, 3), (5, 2), (3, 1), (3, 1))
# Smallest side for which those layers fit unpadded; smaller images use "same" padding.
MIN_UNPADDED_SIDE = 43


@dataclass(frozen=True)
class NetConfig:
    """Everything needed to rebuild a reward network (stored in each checkpoint)."""

    frame_spec: FrameSpec
    dropout: float = 0.5
    batchnorm: bool = False
    hidden: int = 64

    def to_dict(self) -> dict:
        d = asdict(self)
        d["frame_spec"] = self.frame_spec.to_dict()
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "NetConfig":
        return cls(FrameSpec.from_dict(d["frame_spec"]), float(d["dropout"]), bool(d["batchnorm"]), int(d["hidden"]))


def build_reward_net(config: NetConfig) -> nn.Module:
    """A per-frame reward network: the paper's CNN for images, an MLP for flat vectors."""
    in_shape = config.frame_spec.net_input_shape
    layers: list[nn.Module] = []
    if config.frame_spec.is_image:
        channels, h, w = in_shape
        pad_same = min(h, w) < MIN_UNPADDED_SIDE
        for kernel, stride in CONV_LAYERS:
            layers.append(nn.Conv2d(channels, 16, kernel, stride, padding=kernel // 2 if pad_same else 0))
            if config.batchnorm:
                layers.append(nn.BatchNorm2d(16))
            layers += [nn.LeakyReLU(0.01), nn.Dropout(config.dropout)]
            channels = 16
        layers.append(nn.Flatten())
    else:
        layers += [nn.Linear(in_shape[0], config.hidden), nn.LeakyReLU(0.01), nn.Dropout(config.dropout)]
    body = nn.Sequential(*layers)
    with torch.no_grad():
        n_features = body(torch.zeros(1, *in_shape)).shape[1]
    head = [nn.Linear(n_features, config.hidden)]
    if config.batchnorm:
        head.append(nn.BatchNorm1d(config.hidden))
    head += [nn.LeakyReLU(0.01), nn.Dropout(config.dropout), nn.Linear(config.hidden, 1)]
    return nn.Sequential(body, *head).to(memory_format=torch.channels_last)


def inference_ops(net: nn.Module) -> List[Callable[[torch.Tensor], torch.Tensor]]:
    """The eval-mode network as a list of plain function calls.

    Calling these in turn gives the same output as ``net.eval()(x)`` without
    PyTorch's per-module dispatch or the no-op dropouts: about a quarter less
    time for the env process's batch-1 forward pass on every step. The calls
    share ``net``'s parameters.
    """
    ops: List[Callable] = []
    for m in net.modules():
        if isinstance(m, nn.Conv2d):
            ops.append(partial(F.conv2d, weight=m.weight, bias=m.bias, stride=m.stride, padding=m.padding))
        elif isinstance(m, nn.Linear):
            ops.append(partial(F.linear, weight=m.weight, bias=m.bias))
        elif isinstance(m, nn.LeakyReLU):
            ops.append(partial(F.leaky_relu, negative_slope=m.negative_slope))
        elif isinstance(m, nn.Flatten):
            ops.append(partial(torch.flatten, start_dim=1))
        elif isinstance(m, (nn.BatchNorm1d, nn.BatchNorm2d)):
            ops.append(m.eval())
        elif not isinstance(m, (nn.Sequential, nn.Dropout)):
            raise TypeError(f"no inference op for {type(m).__name__}")
    return ops


def segment_returns(net: nn.Module, frames: torch.Tensor, n_segments: int) -> torch.Tensor:
    """Sum of per-frame rewards: ``frames`` is (n_segments * length, ...) -> (n_segments,)."""
    return net(frames).view(n_segments, -1).sum(dim=1)


def preference_loss(returns_a: torch.Tensor, returns_b: torch.Tensor, labels: torch.Tensor,
                    noise_prob: float = 0.0) -> torch.Tensor:
    """Mean Bradley-Terry cross-entropy; ``labels`` = P(a preferred), ties are 0.5."""
    diff = returns_a - returns_b
    if noise_prob == 0.0:
        return F.binary_cross_entropy_with_logits(diff, labels)
    # log(noise/2 + (1-noise) * sigmoid(d)), computed in log space so it never underflows.
    log_half_noise = math.log(noise_prob / 2)
    log_p_a = torch.logaddexp(torch.full_like(diff, log_half_noise), math.log1p(-noise_prob) + F.logsigmoid(diff))
    log_p_b = torch.logaddexp(torch.full_like(diff, log_half_noise), math.log1p(-noise_prob) + F.logsigmoid(-diff))
    return -(labels * log_p_a + (1 - labels) * log_p_b).mean()


def preference_accuracy(returns_a: torch.Tensor, returns_b: torch.Tensor, labels: torch.Tensor) -> tuple[float, int]:
    """Accuracy on the strict labels only, and how many of them there were.

    A tie label ("equally good") has no right side to pick, so ties are left out
    rather than counted as a win for either side; a predicted exact tie on a
    strict label earns half. Returns ``(nan, 0)`` when every label is a tie.
    """
    strict = labels != 0.5
    n = int(strict.sum())
    if n == 0:
        return float("nan"), 0
    predicted = torch.sign(returns_a - returns_b)[strict]
    wanted = torch.where(labels[strict] > 0.5, 1.0, -1.0)
    score = torch.where(predicted == 0, 0.5, (predicted == wanted).float())
    return float(score.mean()), n


class RewardPredictor:
    """A reward network plus its normaliser, as used by the env process to reward each step."""

    def __init__(self, config: NetConfig, net: Optional[nn.Module] = None,
                 normaliser: Optional[RewardNormaliser] = None, training_step: int = 0) -> None:
        self.config = config
        self.net = net if net is not None else build_reward_net(config)
        self.normaliser = normaliser or RewardNormaliser()
        self.training_step = training_step
        self._ops = inference_ops(self.net)

    @torch.inference_mode()
    def raw_rewards(self, frames: np.ndarray, batch_size: int = 200) -> np.ndarray:
        """Unnormalised per-frame rewards of ``frames`` (N, *frame_shape), eval mode."""
        if self.net.training:  # eval() walks every module: ~0.15 ms, too slow for every step
            self.net.eval()
        out = [self.net(frames_to_net_input(frames[i:i + batch_size], self.config.frame_spec)).view(-1)
               for i in range(0, len(frames), batch_size)]
        return torch.cat(out).numpy().astype(np.float64) if out else np.zeros(0)

    def rewards(self, frames: np.ndarray) -> np.ndarray:
        """Normalised rewards ``(N,)`` of ``frames`` ``(N, *frame_shape)`` in one forward pass.

        The env process's per-step call (N = the number of envs): kept lean. For the
        few values of one step, plain float arithmetic beats NumPy's per-call overhead.
        """
        with torch.inference_mode():
            x = frames_to_net_input(frames, self.config.frame_spec)
            for op in self._ops:
                x = op(x)
        return np.array([self.normaliser(r) for r in x.view(-1).tolist()])

    def reward(self, frame: np.ndarray) -> float:
        """The normalised reward of a single frame."""
        return float(self.rewards(frame[None])[0])

    def save(self, path: str) -> None:
        """Atomically write weights, normaliser and network config (loadable with weights_only=True)."""
        state = {
            "format": CHECKPOINT_FORMAT,
            "net_config": self.config.to_dict(),
            "state_dict": self.net.state_dict(),
            "normaliser": self.normaliser.to_dict(),
            "training_step": self.training_step,
        }
        with atomic_write(path) as f:
            torch.save(state, f)

    @classmethod
    def load(cls, path: str) -> "RewardPredictor":
        """Load a checkpoint written by ``save``; never executes code from the file."""
        try:
            state = torch.load(path, map_location="cpu", weights_only=True)
            if not isinstance(state, dict) or state.get("format") != CHECKPOINT_FORMAT:
                raise ValueError("not a drlhp reward-predictor checkpoint")
            config = NetConfig.from_dict(state["net_config"])
            net = build_reward_net(config)
            net.load_state_dict(state["state_dict"])
            return cls(config, net, RewardNormaliser(**state["normaliser"]), int(state["training_step"]))
        except FileNotFoundError:
            raise
        except Exception as e:  # torch raises many types for a corrupt or foreign file
            raise ValueError(
                f"Cannot load reward predictor checkpoint {path}: {type(e).__name__}: {e}. "
                "Use a reward_predictor.ckpt written by drlhp's reward-training process."
            ) from e


def checkpoint_path(directory: str) -> str:
    """The checkpoint file inside ``directory`` (a log_dir's checkpoint folder), or ``directory`` if it is a file."""
    return directory if os.path.isfile(directory) else os.path.join(directory, CHECKPOINT_FILENAME)
