"""The preference pipeline behind every drlhp front-end, for any number of envs: clips in, rewards out.

One pipeline serves all N envs of a vector env: two processes, one database, one reward network,
one window and one prompt for a person, whatever N is. The front-ends only translate their env
API's conventions (autoreset, terminal observations, info formats) into ``step()`` calls on this
class. Each step's clips are cut per env (``drlhp.clips.cutting``) and go to the preference
interface through shared memory (``drlhp.runtime.clip_channel``); ``drlhp.runtime.workers``
starts, watches and stops the two processes. Between steps a cheap check notices each new
checkpoint; the N frames of a step go through the reward network in one batch. The picture of
the whole: docs/architecture.md.
"""
from __future__ import annotations

import logging
import math
import time
from collections.abc import Sequence

import numpy as np

from drlhp.clips.cutting import EpisodeClips
from drlhp.clips.frames import FrameSpec
from drlhp.config import PreferenceConfig
from drlhp.errors import ConfigError, UsageError
from drlhp.labelling.display import require_images
from drlhp.labelling.human import check_can_ask
from drlhp.labelling.schedule import labels_remaining
from drlhp.reward.predictor import RewardPredictor, check_checkpoint_frames
from drlhp.reward.torch_setup import set_up_torch
from drlhp.runtime.clip_channel import ClipChannel
from drlhp.runtime.contract import Pipeline
from drlhp.runtime.settings import human_config, interface_config, trainer_config, web_config
from drlhp.runtime.stats import PipelineStats
from drlhp.runtime.workers import Workers
from drlhp.storage.checkpoint_watch import CheckpointWatch
from drlhp.storage.files import prepare_log_dir
from drlhp.storage.layout import LogDir, checkpoint_path

log = logging.getLogger("drlhp")


class PreferencePipeline(Pipeline):
    """Clips of ``n_envs`` envs in, predicted rewards out; owns the two background processes.

    Args:
        config: the run's settings.
        frame_spec: what one env's frame (after ``obs_transform_func``) looks like.
        n_envs: how many envs step together (1 for a plain gymnasium env).
        display_spec: what a person is shown of each step instead of its frame, when ``step`` brings it (the
            env's renders: RGB images of this spec); None: the frames.
    """

    def __init__(self, config: PreferenceConfig, frame_spec: FrameSpec, n_envs: int = 1,
                 display_spec: FrameSpec | None = None) -> None:
        if n_envs < 1:
            raise ConfigError(f"n_envs must be >= 1, got {n_envs}")
        if config.collect_prefs or config.train_reward:
            prepare_log_dir(config.log_dir)  # a log_dir the run cannot write fails here, before any work
        self._workers = Workers(config)
        self._stats = self._workers.stats  # on the step path without a lookup
        self.config, self.frame_spec, self.n_envs = config, frame_spec, n_envs
        self.display_spec = display_spec if config.collect_prefs else None
        shown_spec = display_spec or frame_spec
        human = web = None
        if config.human_labelling:
            check_can_ask(shown_spec, config.human_terminal)
            human = human_config(config, shown_spec)
        if config.web_labelling:
            require_images(shown_spec, "Labelling in a browser")
            web = web_config(config, shown_spec)
        self.labelling_url: str | None = None  # the labelling page's address, token included (labelling="web")
        self.labelling_owner_url: str | None = None  # the run owner's page (who labels, agreement), its own token
        self._ckpt_path = LogDir(config.log_dir).checkpoint
        # A checkpoint already in log_dir is from an earlier run: only load ones this run writes
        # (or, resuming, the run's own).
        self._ckpt_watch = CheckpointWatch(self._ckpt_path, config.ckpt_poll_interval, skip_existing=not config.resume)
        self._user_choice: bool | None = None  # explicit switch_to_*() wins over the automatic switch
        self._predictor: RewardPredictor | None = None
        set_up_torch(config.torch_threads, config.seed)

        pretrained_ckpt = None
        if config.pretrained_reward_predictor_dir:
            pretrained_ckpt = checkpoint_path(config.pretrained_reward_predictor_dir)
            self._predictor = RewardPredictor.load(pretrained_ckpt)
            check_checkpoint_frames(self._predictor, frame_spec, pretrained_ckpt)
            self._user_choice = True

        # Episode ids are unique across envs, so the interface can tell episodes apart.
        self.episode_clips = (EpisodeClips(frame_spec, config.segment_length, n_envs, self.display_spec)
                              if config.collect_prefs else None)
        self._channel: ClipChannel | None = None  # the workers', on the step path without a lookup
        if config.collect_prefs or config.train_reward:
            self._start_workers(pretrained_ckpt, human, web)
        if config.resume:
            self.poll_predictor()

    def _start_workers(self, pretrained_ckpt: str | None, human, web) -> None:
        """Start the trainer (and the interface, when collecting); return once the trainer is ready."""
        c = self.config
        interface = None
        if c.collect_prefs:
            # The ensemble that judges pairs: the one being trained, else the pretrained one (if any).
            selection_ckpt = self._ckpt_path if c.train_reward else pretrained_ckpt
            interface = interface_config(c, human, web, selection_ckpt)
        n_slots = c.segment_queue_size or max(8, 2 * self.n_envs)
        ready = self._workers.start(trainer_config(c, self.frame_spec, pretrained_ckpt), interface, self.frame_spec,
                                    n_slots, self.display_spec)
        self._channel, self.labelling_url = self._workers.channel, self._workers.labelling_url
        self.labelling_owner_url = self._workers.labelling_owner_url
        if c.resume:
            log.info("resumed the run in %s: %d labels (%d training, %d validation), reward network at step %d",
                     c.log_dir, ready.n_labels, ready.n_train, ready.n_val, ready.training_step)

    # -- the per-step path ------------------------------------------------------
    def step(self, frames: np.ndarray, true_rewards: Sequence[float], recorded: Sequence[bool] | None = None,
             episode_ends: Sequence[bool] | None = None, display: np.ndarray | None = None) -> np.ndarray | None:
        """Take one step of every env; returns their normalised predicted rewards, or None.

        Args:
            frames: ``(n_envs, *frame_shape)``: each env's frame after this step (for an
                env whose episode just ended, its last frame, not the next episode's first).
            true_rewards: each env's own reward of this step.
            recorded: which envs made a real transition (None: all). A vector env's
                autoreset step is not one: it enters no clip.
            episode_ends: which envs' episodes ended with this step (None: none).
            display: ``(n_envs, *display_spec.shape)``: what a person is shown of each env's step (a pipeline
                made with ``display_spec`` only; see ``wants_display``).

        Returns ``(n_envs,)`` float rewards from one batched forward pass while
        ``using_reward_from_predictor``, else None (use the env's own reward).
        """
        self._workers.check()
        self._stats.env_steps.value += self.n_envs if recorded is None else sum(recorded)
        if self.episode_clips is not None:
            for clip in self.episode_clips.add(frames, true_rewards, recorded, episode_ends, display):
                assert self._channel is not None  # collecting clips: _start_workers made the channel
                self._channel.send(clip.frames, clip.rewards, clip.episode, clip.env_index, clip.display)
        if time.monotonic() >= self._ckpt_watch.next_check:  # between checks: one clock read, no call
            self.poll_predictor()
        if self.using_reward_from_predictor:
            assert self._predictor is not None  # using_reward_from_predictor: there is one
            return self._predictor.rewards(frames)
        return None

    def add_clip(self, frames: np.ndarray, rewards: np.ndarray, episode: int, source: int) -> bool:
        """Enter a clip cut elsewhere (by a remote env runner); False if dropped because the interface is behind.

        ``episode`` must be unique across the run's envs; ``source`` names the env the clip came from.
        """
        self.check_workers()
        if self._channel is None:
            raise UsageError("add_clip() needs collect_prefs=True")
        return self._channel.send(frames, rewards, episode, source)

    def count_env_steps(self, n: int) -> None:
        """Steps taken by envs elsewhere: the label schedule's clock counts them as its own."""
        self._stats.env_steps.value += n

    # -- which reward ------------------------------------------------------------
    @property
    def using_reward_from_predictor(self) -> bool:
        """True while ``step()`` returns the predicted, normalised reward."""
        if self._predictor is None:
            return False
        if self._user_choice is not None:
            return self._user_choice
        return self._predictor.training_step >= self.config.n_initial_training_steps

    def switch_to_true_reward(self) -> None:
        """Return the environment's reward from now on (until ``switch_to_predicted_reward()``)."""
        self._user_choice = False

    def switch_to_predicted_reward(self) -> None:
        """Return the predicted reward from now on; needs a checkpoint to exist."""
        self.poll_predictor(now=True)
        if self._predictor is None:
            raise UsageError(
                f"No reward predictor yet: no checkpoint at {self._ckpt_path}. Wait until the trainer "
                "has written one (stats().training_steps), or pass pretrained_reward_predictor_dir=."
            )
        self._user_choice = True

    def wait_for_reward_predictor(self, timeout: float | None = None) -> None:
        """Block, without stepping the envs, until ``using_reward_from_predictor`` (the paper's pre-training).

        Call it once the initial labels are in (``stats().run_labels >= n_initial_prefs``):
        training needs them, and no new clips come while this waits. Raises ``TimeoutError``
        after ``timeout`` seconds (None: no limit), ``WorkerError`` if a worker fails.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            self.check_workers()
            self.poll_predictor(now=True)
            if self.using_reward_from_predictor:
                return
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(f"the reward predictor was not ready within {timeout} s: "
                                   f"{self.stats().training_steps} of {self.config.n_initial_training_steps} "
                                   "training steps done")
            time.sleep(0.05)  # the trainer writes a file: nothing to wait on but the file itself

    def poll_predictor(self, now: bool = False) -> bool:
        """Load a newer checkpoint if there is one (checked at most every ``ckpt_poll_interval``, unless ``now``);
        True if loaded."""
        if not self._workers.started:
            return False
        predictor = self._ckpt_watch.poll(RewardPredictor.load, now)
        if predictor is None:
            return False
        self._predictor = predictor
        return True

    @property
    def predictor(self) -> RewardPredictor | None:
        """The reward predictor last loaded (None before the first checkpoint)."""
        return self._predictor

    # -- preferences ---------------------------------------------------------------
    def save_prefs(self, timeout: float = 120.0) -> list[str]:
        """Write ``train.pkl.gz`` and ``val.pkl.gz`` into ``log_dir`` (atomically); returns their paths."""
        saved = self._workers.save_prefs(self.config.log_dir, timeout)
        log.info("saved %d training and %d validation preferences to %s", saved.n_train, saved.n_val,
                 self.config.log_dir)
        return saved.paths

    def stats(self) -> PipelineStats:
        """Counters: clips sent/dropped, labels, preferences received, reward-training steps."""
        shared = self._stats.as_dict()
        agreement = shared.pop("agreement")
        n_twice = sum(row[2] for row in agreement)
        budget = self.config.label_budget
        return PipelineStats(
            n_envs=self.n_envs,
            clips_sent=self._channel.n_sent if self._channel is not None else 0,
            clips_dropped=self._channel.n_dropped if self._channel is not None else 0,
            tail_frames_dropped=self.episode_clips.n_tail_frames_dropped if self.episode_clips is not None else 0,
            predictor_training_step=self._predictor.training_step if self._predictor else None,
            label_budget=budget, labels_remaining=labels_remaining(budget, shared["pairs_asked"]),
            pairs_answered_twice=n_twice,
            label_agreement=sum(row[3] for row in agreement) / n_twice if n_twice else math.nan,
            agreement=tuple(agreement), **shared)

    # -- lifecycle -------------------------------------------------------------------
    @property
    def processes(self) -> dict:
        """The background processes by name (``reward_trainer``, ``pref_interface``); empty if none."""
        return self._workers.processes

    def check_workers(self) -> None:
        """Raise ``WorkerError`` (``WriteError``: a write the OS refused) if a background process has failed."""
        self._workers.check()

    def close(self) -> None:
        """Stop the processes, letting the trainer save unsaved labels. Idempotent."""
        self._workers.close()

