"""drlhp: Deep Reinforcement Learning from Human Preferences (Christiano et al., 2017).

``from drlhp import HumanPreferencesEnvWrapper`` wraps a gymnasium env with pixel
observations so that any RL algorithm learns from preferences over clips;
``HumanPreferencesVectorWrapper`` (gymnasium) and ``drlhp.sb3.HumanPreferencesVecEnvWrapper``
(Stable-Baselines3) do the same for many envs stepping together, with one pipeline.
The bundled envs ``"drlhp/MovingDot-v0"`` and ``"drlhp/MovingDotRandomTarget-v0"`` are registered on import.
"""
import gymnasium

from drlhp.config import PreferenceConfig
from drlhp.datasets.replay_env import DatasetReplayEnv
from drlhp.datasets.writing import relabel_dataset
from drlhp.errors import (
    CheckpointFormatError,
    ConfigError,
    DatasetFormatError,
    DrlhpError,
    FileFormatError,
    InvalidAnswer,
    LogDirHasLabelsError,
    LogDirInUseError,
    MissingExtraError,
    MissingFileError,
    NoDisplayError,
    NoLabelsError,
    NothingToUndo,
    ObservationError,
    PrefDBFormatError,
    UnknownSettingError,
    UsageError,
    WorkerError,
    WriteError,
)
from drlhp.frontends.base import PREDICTED_REWARD_KEY, TRUE_REWARD_KEY
from drlhp.frontends.env_wrapper import HumanPreferencesEnvWrapper
from drlhp.frontends.predicted_reward import PredictedRewardWrapper
from drlhp.frontends.vector import HumanPreferencesVectorWrapper
from drlhp.label_store.database import PrefBuffer, PrefDB
from drlhp.labelling.protocols import SyntheticTeacher
from drlhp.reward.predictor import RewardPredictor
from drlhp.runtime.pipeline import PreferencePipeline
from drlhp.runtime.stats import PipelineStats
from drlhp.version import __version__ as __version__  # the one place it is set

if "drlhp/MovingDot-v0" not in gymnasium.registry:
    gymnasium.register("drlhp/MovingDot-v0", entry_point="drlhp.envs.moving_dot:MovingDotEnv")
    # The target in a random cell each episode: a reward that depends on two objects' relative position.
    gymnasium.register("drlhp/MovingDotRandomTarget-v0", entry_point="drlhp.envs.moving_dot:MovingDotEnv",
                       kwargs={"random_target": True})

__all__ = [
    "HumanPreferencesEnvWrapper", "HumanPreferencesVectorWrapper", "PreferenceConfig", "PreferencePipeline",
    "PipelineStats", "RewardPredictor", "PredictedRewardWrapper", "SyntheticTeacher", "PrefDB", "PrefBuffer",
    "TRUE_REWARD_KEY", "PREDICTED_REWARD_KEY", "DatasetReplayEnv", "relabel_dataset",
    # the errors (drlhp.errors), DrlhpError the root of them all
    "DrlhpError", "ConfigError", "UnknownSettingError", "MissingExtraError", "NoDisplayError", "ObservationError",
    "UsageError", "MissingFileError", "NoLabelsError", "FileFormatError", "PrefDBFormatError",
    "CheckpointFormatError", "WorkerError", "LogDirInUseError", "LogDirHasLabelsError", "InvalidAnswer",
    "NothingToUndo", "WriteError", "DatasetFormatError",
]
