"""The reward network (an ensemble of members), its preference loss, and its checkpoints.

Each member maps one frame to one scalar; a segment's predicted return is the
sum over its frames, and P(a preferred to b) follows Bradley-Terry:
``sigmoid(R_a - R_b)``, optionally mixed with a probability ``noise_prob`` that
the labeller answered uniformly at random (Christiano et al. 2017 use 0.1).

The members of an ensemble (the paper uses 3) are one network with grouped
layers: member ``m`` owns channel group ``m`` of every convolution and slice
``m`` of every dense layer, so all members run in one call of each layer: the
env process's batch-1 forward pass (``drlhp.reward.inference``) costs little more than one
member's (``benchmarks/speed/ensemble_forward.py``, docs/benchmarks.md), where separate networks
would cost M times the per-layer call overhead that dominates small batches.
"""
from __future__ import annotations

import hashlib
import io
import json
import math
import pickle
import warnings
from dataclasses import asdict, dataclass, fields
from typing import BinaryIO, Literal, cast, get_args

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from drlhp.clips.frames import FrameSpec, check_format, frames_to_net_input
from drlhp.errors import LAST_TO_CONVERT, CheckpointFormatError, ConfigError, MissingFileError, ObservationError
from drlhp.reward.inference import inference_ops
from drlhp.reward.layers import FrameNorm, MemberLinear, SpatialSoftmax
from drlhp.reward.normaliser import RewardNormaliser
from drlhp.storage.files import atomic_write
from drlhp.storage.layout import checkpoint_path
from drlhp.version import __version__

CHECKPOINT_FORMAT = "drlhp-reward-predictor-v2"

#: The image networks (``NetConfig.arch``): ``"atari"``, the CNN of Christiano et al. 2017 (appendix A.2),
#: and ``"keypoints"``, convolutions ending in a spatial softmax (``drlhp.reward.layers.SpatialSoftmax``).
RewardNetArch = Literal["atari", "keypoints"]
ARCHS: tuple[RewardNetArch, ...] = get_args(RewardNetArch)
#: The network images get unless asked otherwise: the keypoint network learns relational rewards the Atari
#: network does not, position rewards as well, and on Pong (with batchnorm) reaches a higher accuracy in the
#: same training steps with less noise in its reward (docs/history.md, "The reward signal, measured offline";
#: docs/label-efficiency.md).
DEFAULT_ARCH: RewardNetArch = "keypoints"
#: What image frames go through before the first convolution (``drlhp.reward.layers.FrameNorm``): each frame's
#: channels centred on their mean (``"centre"``), also scaled to unit deviation (``"standardise"``), or as they
#: are (``"none"``).
FrameNormMode = Literal["centre", "standardise", "none"]
FRAME_NORMS: tuple[FrameNormMode, ...] = get_args(FrameNormMode)
#: Centred frames: on Pong the keypoint network without batchnorm then learns what it could not (Pong's flat
#: grey background killed its units) and carries far less noise than with batchnorm, and on MovingDot it
#: learns as before (docs/history.md, "Centred frames").
DEFAULT_FRAME_NORM: FrameNormMode = "centre"
# The Atari network of Christiano et al. 2017 (appendix A.2): (kernel, stride) per layer.
CONV_LAYERS = ((7, 3), (5, 2), (3, 1), (3, 1))
# Smallest side for which those layers fit unpadded; smaller images use "same" padding.
MIN_UNPADDED_SIDE = 43
# The keypoint network: (kernel, stride, padding) per layer; the last layer's channels are the keypoints.
KEYPOINT_LAYERS = ((8, 4, 2), (3, 1, 1), (3, 1, 1))
KEYPOINT_CHANNELS = 16
#: The keypoint network's softmax temperature (``SpatialSoftmax``): 0.1 finds the objects in far fewer
#: training steps than 1.0 (docs/label-efficiency.md).
DEFAULT_KEYPOINT_TEMPERATURE = 0.1
#: Reward networks in an ensemble by default. Christiano et al. 2017 use 3; here 3 learned no faster than 1 on any
#: task measured (MovingDot, Pong offline) at three times a training step's work (docs/history.md, "Defaults").
DEFAULT_ENSEMBLE_SIZE = 1
#: Dropout probability after each hidden layer by default (the keypoint network: its dense layers only).
DEFAULT_DROPOUT = 0.2
#: Frames a forward pass over many takes at most (``RewardPredictor.member_rewards``, the trainer's passes)...
FORWARD_BATCH = 200
#: ...and no more than keep its input (float32) within this many bytes: 111 Pong frames (84x84x4), 200 MovingDot
#: frames. What a pass holds grows with its input: passes of 200 Pong frames took the reward trainer past its memory
#: aim, and passes of half that size are no slower (docs/benchmarks.md, "Memory").
FORWARD_INPUT_BYTES = 12 * 2**20


@dataclass(frozen=True)
class NetConfig:
    """Everything needed to rebuild a reward network (stored in each checkpoint)."""

    frame_spec: FrameSpec
    dropout: float = DEFAULT_DROPOUT
    batchnorm: bool = False
    hidden: int = 64
    n_members: int = 1
    arch: RewardNetArch = DEFAULT_ARCH  # images only
    keypoint_temperature: float = DEFAULT_KEYPOINT_TEMPERATURE  # the keypoint network only
    frame_norm: FrameNormMode = DEFAULT_FRAME_NORM  # images only

    def __post_init__(self) -> None:
        if self.arch not in ARCHS:
            raise ConfigError(f"reward network arch must be one of {ARCHS}, got {self.arch!r}")
        if self.frame_norm not in FRAME_NORMS:
            raise ConfigError(f"frame_norm must be one of {FRAME_NORMS}, got {self.frame_norm!r}")
        if not self.keypoint_temperature > 0:
            raise ConfigError(f"keypoint_temperature must be > 0, got {self.keypoint_temperature}")

    def to_dict(self) -> dict:
        d = asdict(self)
        d["frame_spec"] = self.frame_spec.to_dict()
        return d

    @classmethod
    def from_dict(cls, d: dict) -> NetConfig:
        # A file's words: __post_init__ checks them.
        return cls(FrameSpec.from_dict(d["frame_spec"]), float(d["dropout"]), bool(d["batchnorm"]), int(d["hidden"]),
                   int(d["n_members"]), cast(RewardNetArch, str(d["arch"])), float(d["keypoint_temperature"]),
                   cast(FrameNormMode, str(d["frame_norm"])))


def build_reward_net(config: NetConfig) -> nn.Module:
    """Per-frame reward networks, one per member: for images the network ``config.arch`` names, for
    flat vectors an MLP.

    Input ``(B, M*C, H, W)`` (member ``m`` sees channels ``m*C:(m+1)*C``) or ``(B, M*D)``;
    output ``(B, M)``. ``member_input`` makes that input from ordinary frames.
    """
    m = config.n_members
    in_shape = config.frame_spec.net_input_shape
    layers: list[nn.Module]
    if not config.frame_spec.is_image:
        layers = [MemberLinear(m, in_shape[0], config.hidden), *_activation(config)]
    elif config.arch == "keypoints":
        layers = _keypoint_body(config, in_shape)
    else:
        layers = _atari_body(config, in_shape)
    if config.frame_spec.is_image and config.frame_norm != "none":
        layers = [FrameNorm(config.frame_norm), *layers]
    body = nn.Sequential(*layers)
    with torch.no_grad():
        n_features = body(member_input(torch.zeros(1, *in_shape), m)).shape[1] // m
    head: list[nn.Module] = [MemberLinear(m, n_features, config.hidden)]
    if config.batchnorm:
        head.append(nn.BatchNorm1d(config.hidden * m))
    head += _activation(config)
    if config.frame_spec.is_image and config.arch == "keypoints":
        # Two dense layers: a distance between keypoints is a difference, then a ReLU, then a sum.
        head += [MemberLinear(m, config.hidden, config.hidden), *_activation(config)]
    head.append(MemberLinear(m, config.hidden, 1))
    # Module.to(memory_format=...) is documented and works; torch's overloads of ``to`` leave it out.
    return nn.Sequential(body, *head).to(memory_format=torch.channels_last)  # type: ignore[call-overload]


def _activation(config: NetConfig) -> list[nn.Module]:
    return [nn.LeakyReLU(0.01), nn.Dropout(config.dropout)]


def _atari_body(config: NetConfig, in_shape: tuple) -> list[nn.Module]:
    m, (channels, h, w) = config.n_members, in_shape
    pad_same = min(h, w) < MIN_UNPADDED_SIDE
    layers: list[nn.Module] = []
    for kernel, stride in CONV_LAYERS:
        layers.append(nn.Conv2d(channels * m, 16 * m, kernel, stride, padding=kernel // 2 if pad_same else 0,
                                groups=m))
        if config.batchnorm:
            layers.append(nn.BatchNorm2d(16 * m))
        layers += _activation(config)
        channels = 16
    return layers + [nn.Flatten()]


def _keypoint_body(config: NetConfig, in_shape: tuple) -> list[nn.Module]:
    """Convolutions that keep a map of a quarter of the frame's side, then each channel's keypoint.

    No activation before the softmax: the last convolution's outputs are the softmax's logits.
    No dropout in the convolutions, only in the dense head: on CPU drawing a mask for every
    position of every map was a large share of a training step, and accuracy per step was the
    same without it (docs/label-efficiency.md). An ``nn.Identity`` holds dropout's place, so the
    layers keep the indices of checkpoints saved when the convolutions had dropout.
    """
    m, (channels, h, w) = config.n_members, in_shape
    layers: list[nn.Module] = []
    for i, (kernel, stride, padding) in enumerate(KEYPOINT_LAYERS):
        layers.append(nn.Conv2d(channels * m, KEYPOINT_CHANNELS * m, kernel, stride, padding, groups=m))
        h, w = (h + 2 * padding - kernel) // stride + 1, (w + 2 * padding - kernel) // stride + 1
        channels = KEYPOINT_CHANNELS
        if i < len(KEYPOINT_LAYERS) - 1:
            if config.batchnorm:
                layers.append(nn.BatchNorm2d(KEYPOINT_CHANNELS * m))
            layers += [nn.LeakyReLU(0.01), nn.Identity()]
    if min(h, w) < 1:
        raise ObservationError(f"frames of {in_shape[1:]} pixels are too small for the keypoint network; "
                               "use arch='atari'")
    return layers + [SpatialSoftmax(m, h, w, config.keypoint_temperature)]


def frame_input_bytes(spec: FrameSpec) -> int:
    """Bytes of one frame as the network takes it (float32)."""
    return 4 * math.prod(spec.net_input_shape)


def member_input(x: torch.Tensor, n_members: int) -> torch.Tensor:
    """The same net input for every member: ``(N, C, ...)`` -> ``(N, M*C, ...)``."""
    return x if n_members == 1 else _channels_last(x.repeat(1, n_members, *([1] * (x.dim() - 2))))


def members_input(x: torch.Tensor) -> torch.Tensor:
    """Each member its own net input: ``(M, N, C, ...)`` -> ``(N, M*C, ...)``."""
    m, n = x.shape[:2]
    return x[0] if m == 1 else _channels_last(x.transpose(0, 1).reshape(n, m * x.shape[2], *x.shape[3:]))


def _channels_last(x: torch.Tensor) -> torch.Tensor:
    return x.contiguous(memory_format=torch.channels_last) if x.dim() == 4 else x


def clip_returns(net: nn.Module, frames: torch.Tensor, n_clips: int) -> torch.Tensor:
    """Each member's sum of per-frame rewards: net input of (n_clips * length) frames -> (n_clips, M)."""
    out = net(frames)
    return out.view(n_clips, -1, out.shape[-1]).sum(dim=1)


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
    """A reward network (ensemble) plus its normaliser, as used by the env process to reward each step.

    Its checkpoint is a file to reuse anywhere (``load``, ``drlhp.PredictedRewardWrapper``): the weights, the
    normaliser, the frames it takes (``config.frame_spec``) and ``provenance``, what it was trained on.
    """

    def __init__(self, config: NetConfig, net: nn.Module | None = None,
                 normaliser: RewardNormaliser | None = None, training_step: int = 0,
                 provenance: dict | None = None) -> None:
        self.config = config
        #: What the network was trained on and with, as its checkpoint keeps it (``{}`` where nothing says): the
        #: ``drlhp_version`` that wrote it, its ``train_labels`` and ``val_labels``, the training ``settings``, and
        #: ``val_accuracy``, the last validation accuracy measured, at training step ``val_accuracy_step`` (this
        #: checkpoint's own ``training_step``, except at a run's close, which writes without scoring; None before
        #: any), as the learner writes them at each checkpoint.
        self.provenance = dict(provenance or {})
        self.net = net if net is not None else build_reward_net(config)
        self.normaliser = normaliser or RewardNormaliser((0.0,) * config.n_members, (1.0,) * config.n_members)
        self.training_step = training_step
        #: Frames per forward pass of ``member_rewards``: ``FORWARD_BATCH``, fewer for large frames.
        self.forward_batch = max(1, min(FORWARD_BATCH, FORWARD_INPUT_BYTES // frame_input_bytes(config.frame_spec)))
        self.device = torch.device("cpu")  # where the network is (see ``to``)
        self._off_cpu = False
        self._build_ops()

    def _build_ops(self) -> None:
        self._ops = inference_ops(self.net, self.config.frame_spec.net_input_shape)
        self._ops_one_frame = inference_ops(self.net, self.config.frame_spec.net_input_shape, one_frame=True)

    def to(self, device: torch.device | str) -> RewardPredictor:
        """Move the network to ``device`` (a GPU to train on, say); rewards still come back as NumPy arrays."""
        self.device = torch.device(device)
        self._off_cpu = self.device.type != "cpu"
        self.net.to(self.device)
        self._build_ops()  # the fast path holds views of the weights and buffers that moving replaced
        return self

    @property
    def n_members(self) -> int:
        """Networks in the ensemble."""
        return self.config.n_members

    def _forward(self, frames: np.ndarray) -> torch.Tensor:
        if self.net.training:  # the trainer's steps leave batchnorm in training mode; eval() walks every module
            self.net.eval()
        x = frames_to_net_input(frames, self.config.frame_spec)
        if self._off_cpu:
            x = x.to(self.device)
        for op in self._ops_one_frame if len(frames) == 1 else self._ops:
            x = op(x)
        return x.cpu() if self._off_cpu else x

    @torch.inference_mode()
    def member_rewards(self, frames: np.ndarray, batch_size: int | None = None) -> np.ndarray:
        """Each member's unnormalised per-frame rewards ``(N, M)`` of ``frames`` ``(N, *frame_shape)``, eval mode,
        ``batch_size`` frames a pass (None: ``forward_batch``)."""
        batch_size = batch_size or self.forward_batch
        # One array made before the passes, not each pass's output kept: kept, those would sit among the passes' large
        # freed buffers and make the allocator take fresh memory for the next ones (docs/benchmarks.md, "Memory").
        rewards = np.empty((len(frames), self.n_members))
        for i in range(0, len(frames), batch_size):
            rewards[i:i + batch_size] = self._forward(frames[i:i + batch_size]).numpy()
        return rewards

    def raw_rewards(self, frames: np.ndarray, batch_size: int | None = None) -> np.ndarray:
        """Unnormalised per-frame rewards ``(N,)``: the members' mean."""
        return self.member_rewards(frames, batch_size).mean(axis=1)

    def normalised_rewards(self, frames: np.ndarray, batch_size: int | None = None) -> np.ndarray:
        """What the agent gets for each of many frames ``(N,)``, in batches as ``member_rewards`` takes them."""
        return self.normaliser(self.member_rewards(frames, batch_size))

    def rewards(self, frames: np.ndarray) -> np.ndarray:
        """Normalised rewards ``(N,)`` of ``frames`` ``(N, *frame_shape)`` in one forward pass (N = the number of envs).

        The env process's per-step call: kept lean (no module dispatch, no batching).
        """
        with torch.inference_mode():
            return self.normaliser(self._forward(frames).numpy())

    def reward(self, frame: np.ndarray) -> float:
        """The normalised reward of a single frame."""
        return float(self.rewards(frame[None])[0])

    def _state(self) -> dict:
        state = {
            "format": CHECKPOINT_FORMAT,
            "net_config": self.config.to_dict(),
            "state_dict": self.net.state_dict(),
            "normaliser": self.normaliser.to_dict(),
            "training_step": self.training_step,
            "provenance": {**self.provenance, "drlhp_version": __version__},
        }
        return {**state, "digest": _digest(state)}

    def save(self, path: str) -> None:
        """Atomically write weights, normaliser and network config (loadable with weights_only=True)."""
        with atomic_write(path) as f:
            torch.save(self._state(), f)

    def to_bytes(self) -> bytes:
        """The checkpoint ``save`` writes, in memory (what a cluster's object store carries)."""
        buffer = io.BytesIO()
        torch.save(self._state(), buffer)
        return buffer.getvalue()

    @classmethod
    def from_bytes(cls, data: bytes) -> RewardPredictor:
        """A predictor from ``to_bytes()``'s output; never executes code from it."""
        return cls.load(io.BytesIO(data))

    @classmethod
    def load(cls, path: str | BinaryIO) -> RewardPredictor:
        """Load a checkpoint written by ``save`` (a path or a binary file); never executes code from it."""
        try:
            with warnings.catch_warnings():  # torch's notes on a foreign file's pickle protocol: the error says it
                warnings.simplefilter("ignore")
                state = torch.load(path, map_location="cpu", weights_only=True)
            if not isinstance(state, dict) or not str(state.get("format", "")).startswith("drlhp-reward-predictor-"):
                raise ValueError("not a drlhp reward-predictor checkpoint")
            _refuse_earlier_forms(path, state)
            if "digest" in state and state["digest"] != _digest(state):  # a checkpoint before digests has none
                raise CheckpointFormatError(
                    f"{path} is not the reward-predictor checkpoint drlhp wrote: its contents do not match the digest "
                    "it was written with (changed or damaged since). Use an intact copy, or train it again.")
            config = NetConfig.from_dict(state["net_config"])
            net = build_reward_net(config)
            net.load_state_dict(state["state_dict"])
            return cls(config, net, RewardNormaliser.from_dict(state["normaliser"]), int(state["training_step"]),
                       dict(state.get("provenance") or {}))  # {}: a checkpoint written before drlhp kept it
        except CheckpointFormatError:
            raise
        except FileNotFoundError as e:
            raise MissingFileError(f"no checkpoint at {path}: pass the reward_predictor.ckpt of a run that trained "
                                   "one") from e
        except Exception as e:  # torch raises many types for a corrupt or foreign file
            raise CheckpointFormatError(
                f"{path} is not a valid drlhp reward-predictor checkpoint: {_why_unreadable(e)}. "
                "Use a reward_predictor.ckpt written by drlhp's reward-training process.") from e


def _digest(state: dict) -> str:
    """SHA-256 of a checkpoint's contents, its ``digest`` left out: every tensor's bytes and every other field.
    torch's loader reads a changed tensor without complaint; this is what tells."""
    h = hashlib.sha256()
    h.update(json.dumps({k: v for k, v in state.items() if k not in ("state_dict", "digest")}, sort_keys=True,
                        default=repr).encode())
    for name, tensor in sorted(state["state_dict"].items()):
        h.update(name.encode())
        h.update(tensor.detach().cpu().contiguous().view(torch.uint8).numpy().tobytes() if tensor.numel() else b"")
    return h.hexdigest()


def _refuse_earlier_forms(path: str | BinaryIO, state: dict) -> None:
    """Raise ``CheckpointFormatError`` for a checkpoint an earlier, unreleased drlhp wrote, saying how to convert it."""
    fields_held = state.get("net_config", {})
    missing = [f.name for f in fields(NetConfig) if f.name not in fields_held]
    if state["format"] == CHECKPOINT_FORMAT and not missing:
        return
    raise CheckpointFormatError(
        f"{path} is a reward-predictor checkpoint of an earlier, unreleased drlhp ({state['format']}"
        f"{', without ' + ', '.join(missing) if missing else ''}), which this drlhp does not read. Convert it once "
        f"with drlhp at commit {LAST_TO_CONVERT}, the last to read it: "
        f"`RewardPredictor.load(path).save(path)`; or train the reward predictor again.")


def _why_unreadable(e: Exception) -> str:
    """What is wrong with a checkpoint file, in one line (torch's own messages run to many)."""
    if isinstance(e, pickle.UnpicklingError) and "weights_only" in str(e):
        return ("it holds Python objects, not only tensors (a pickle, or a checkpoint of another program); "
                "not loaded, because loading it could run code from it")
    first_line = str(e).strip().splitlines()[0] if str(e).strip() else ""
    return f"{type(e).__name__}: {first_line[:200]}"


def reward_model_for(model: str | RewardPredictor, frame_spec: FrameSpec) -> RewardPredictor:
    """``model`` (a checkpoint, the folder holding it, or a loaded ``RewardPredictor``) loaded without running code
    from it, and checked to take frames of ``frame_spec`` (``ObservationError`` otherwise, naming both)."""
    if isinstance(model, RewardPredictor):
        check_checkpoint_frames(model, frame_spec, None)
        return model
    path = checkpoint_path(model)
    predictor = RewardPredictor.load(path)
    check_checkpoint_frames(predictor, frame_spec, path)
    return predictor


def check_checkpoint_frames(predictor: RewardPredictor, frame_spec: FrameSpec, ckpt: str | None) -> None:
    """Raise ``ObservationError`` unless the network of checkpoint ``ckpt`` takes this env's frames."""
    spec = predictor.config.frame_spec
    check_format(f"The reward network of checkpoint {ckpt} takes frames", spec.shape, spec.dtype,
                 "this env gives frames", frame_spec.shape, frame_spec.dtype,
                 "Use the env and obs_transform_func it was trained with.")
