"""The reward network's old import path (the original drlhp's name), kept so old imports still work.

Everything is defined in ``drlhp.reward.predictor``, but for the checkpoint's place in a log_dir:
``drlhp.storage.layout``.
"""
from drlhp.reward.predictor import (
    ARCHS,
    CHECKPOINT_FORMAT,
    CONV_LAYERS,
    DEFAULT_ARCH,
    DEFAULT_ENSEMBLE_SIZE,
    DEFAULT_KEYPOINT_TEMPERATURE,
    KEYPOINT_CHANNELS,
    KEYPOINT_LAYERS,
    MIN_UNPADDED_SIDE,
    OLD_CHECKPOINT_FORMATS,
    CheckpointFormatError,
    MemberLinear,
    NetConfig,
    RewardPredictor,
    SpatialSoftmax,
    build_reward_net,
    member_input,
    members_input,
    preference_accuracy,
    preference_loss,
    segment_returns,
)
from drlhp.storage.layout import CHECKPOINT_DIRNAME, CHECKPOINT_FILENAME, checkpoint_path

__all__ = [
    "ARCHS", "CHECKPOINT_DIRNAME", "CHECKPOINT_FILENAME", "CHECKPOINT_FORMAT", "CONV_LAYERS", "DEFAULT_ARCH",
    "DEFAULT_ENSEMBLE_SIZE", "DEFAULT_KEYPOINT_TEMPERATURE", "KEYPOINT_CHANNELS", "KEYPOINT_LAYERS",
    "MIN_UNPADDED_SIDE", "OLD_CHECKPOINT_FORMATS", "CheckpointFormatError", "MemberLinear", "NetConfig",
    "RewardPredictor", "SpatialSoftmax", "build_reward_net", "checkpoint_path", "member_input", "members_input",
    "preference_accuracy", "preference_loss", "segment_returns",
]
