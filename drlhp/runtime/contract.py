"""What a front-end drives: the contract that the local pipeline (``drlhp.runtime.pipeline.PreferencePipeline``,
two processes on this machine) and a Ray env runner's link to a preference service
(``drlhp.cluster.runner_pipeline.RunnerPipeline``) both keep, so that the same front-ends serve either.

A front-end is given a pipeline factory (``n_envs -> Pipeline``) or builds the local pipeline from its settings.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Callable

import numpy as np

from drlhp.clips.cutting import EpisodeClips
from drlhp.clips.frames import FrameSpec
from drlhp.config import PreferenceConfig
from drlhp.reward.predictor import RewardPredictor
from drlhp.runtime.stats import PipelineStats


class Pipeline(ABC):
    """Clips of ``n_envs`` envs in, predicted rewards out."""

    config: PreferenceConfig
    frame_spec: FrameSpec
    n_envs: int
    labelling_url: str | None  # the labelling page's address, token included (labelling="web"), else None
    labelling_owner_url: str | None  # the run owner's page, its own token (labelling="web"), else None
    episode_clips: EpisodeClips | None  # each env's unfinished clip; None: no clips are collected
    display_spec: FrameSpec | None  # what a person is shown of a step, which ``step`` then takes; None: the frames

    @abstractmethod
    def step(self, frames: np.ndarray, true_rewards: Sequence[float], recorded: Sequence[bool] | None = None,
             episode_ends: Sequence[bool] | None = None, display: np.ndarray | None = None) -> np.ndarray | None:
        """Take one step of every env; the ``(n_envs,)`` rewards to return, or None (the env's own)."""

    def end_episode(self, env_index: int) -> None:
        """Env ``env_index``'s episode ended (or it was reset): its unfinished clip is dropped."""
        if self.episode_clips is not None:
            self.episode_clips.end_episode(env_index)

    def end_all_episodes(self) -> None:
        """Every env's episode ended (or all were reset)."""
        for i in range(self.n_envs):
            self.end_episode(i)

    @abstractmethod
    def count_env_steps(self, n: int) -> None:
        """``n`` env steps taken elsewhere (a resumed run's before its agent checkpoint): the label schedule's clock
        counts them as its own."""

    @property
    @abstractmethod
    def predictor(self) -> RewardPredictor | None:
        """The reward predictor the predicted rewards come from (None before the first); each checkpoint loaded is a
        new object."""

    @property
    @abstractmethod
    def using_reward_from_predictor(self) -> bool:
        """True while ``step()`` returns the predicted, normalised reward."""

    @abstractmethod
    def switch_to_true_reward(self) -> None:
        """Return the environment's reward from now on."""

    @abstractmethod
    def switch_to_predicted_reward(self) -> None:
        """Return the predicted reward from now on."""

    @abstractmethod
    def wait_for_reward_predictor(self, timeout: float | None = None) -> None:
        """Block until the predicted reward is returned."""

    @abstractmethod
    def save_prefs(self, timeout: float = 120.0) -> list[str]:
        """Write the labels to the log_dir; returns the files' paths."""

    @abstractmethod
    def stats(self) -> PipelineStats:
        """The pipeline's counters."""

    @abstractmethod
    def check_workers(self) -> None:
        """Raise a worker's failure here, in the caller's process."""

    @abstractmethod
    def close(self) -> None:
        """Stop; idempotent."""


#: How a front-end gets a pipeline other than the local one: called with the number of envs it steps.
PipelineFactory = Callable[[int], Pipeline]
