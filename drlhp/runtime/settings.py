"""Each worker's settings, derived from the run's ``PreferenceConfig`` in one place.

The engines take settings types of their own (``LearnerConfig``, ``LabelStoreConfig``, ``HumanConfig``,
``WebConfig``) and never import ``PreferenceConfig``; these functions fill them in, each field once, from
the setting that names it. None of these types restates a default of ``PreferenceConfig``: a field they
share has no default there, so a setting reaches its engine from one place or fails to construct.

A setting keeps its name from the keyword to the engine (tests/test_config.py holds it). The flat keyword may carry
a prefix that the engine's type already says (``web_port`` is ``WebConfig.port``, ``reward_predictor_lr`` is
``LearnerConfig.lr``): ``FLAT_PREFIXES``. The seed's words in the package's vocabulary, and the one setting whose
name is a checkpoint's key, are mapped once: ``ENGINE_NAMES``.
"""
from __future__ import annotations

import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from drlhp.clips.frames import FrameSpec
from drlhp.config import PreferenceConfig
from drlhp.label_store.store import LabelStoreConfig
from drlhp.labelling.human import HumanConfig
from drlhp.labelling.pair_selection import PairSelection
from drlhp.labelling.protocols import Labeller, SyntheticTeacher
from drlhp.labelling.schedule import LabelSchedule
from drlhp.reward.learner import LearnerConfig
from drlhp.reward.predictor import NetConfig
from drlhp.storage.layout import LogDir

if TYPE_CHECKING:  # its module imports aiohttp, installed only to label in a browser (drlhp[web])
    from drlhp.labelling.web.labeller import WebConfig


#: Prefixes a flat keyword needs and its engine's type already says.
FLAT_PREFIXES = ("reward_predictor_", "reward_net_", "web_", "display_", "human_", "labelling_")

#: Settings whose engines call them otherwise: the seed's words (kept at the public face) in the package's
#: vocabulary, and ``ensemble_size``, which checkpoints hold as their network's ``n_members``.
ENGINE_NAMES = {"max_prefs_in_db": "max_labels", "collect_prefs": "collecting", "segment_length": "clip_length",
                "prefs_autosave_interval": "snapshot_interval", "synthetic_prefs_per_segment": "pairs_per_segment",
                "ensemble_size": "n_members"}


@dataclass(frozen=True)
class TrainerConfig:
    """Settings of the reward-training process: its engines' and how it runs them."""

    learner: LearnerConfig
    labels: LabelStoreConfig
    log_dir: str
    train_reward: bool
    n_initial_prefs: int  # labels held before training starts
    training_steps_per_label: int | None  # the trainer pauses at this many steps per label (None: never)
    pretrained_ckpt: str | None
    resume: bool
    trainer_torch_threads: int | None
    seed: int | None
    tensorboard_log: str | None
    label_budget: int | None  # only reported (the interface keeps to it); None also when not collecting

    @property
    def collect_prefs(self) -> bool:
        """Whether labels arrive from a preference interface."""
        return self.labels.collecting


@dataclass(frozen=True)
class InterfaceConfig:
    """Settings of the preference-interface process."""

    max_segs: int
    seed: int | None
    labeller: Labeller | None  # None: synthetic, or people with ``human`` or ``web`` set
    pairs_per_segment: float
    synthetic_teacher: SyntheticTeacher
    human: HumanConfig | None
    web: WebConfig | None  # people label in their browsers (the page's address goes to the main process)
    journal_log_dir: str | None  # keep a label journal in this log_dir (None: no journal)
    schedule: LabelSchedule
    pair_selection: PairSelection
    selection_ckpt: str | None  # with "disagreement": the checkpoint whose ensemble judges pairs
    ckpt_poll_interval: float  # seconds between checks for a newer checkpoint to judge pairs with
    n_candidate_pairs: int
    synthetic_teachers: Mapping[str, SyntheticTeacher] | None  # several simulated people instead of one
    instructions: str | None  # the task in words, journaled with the labels
    val_fraction: float  # the run's validation split, journaled (a run without a snapshot yet still says it)
    undo_limit: int
    second_opinion_share: float


def net_config(config: PreferenceConfig, frame_spec: FrameSpec) -> NetConfig:
    """The reward network a run with ``config`` builds for frames of ``frame_spec``."""
    return NetConfig(frame_spec, dropout=config.reward_predictor_dropout, batchnorm=config.reward_predictor_batchnorm,
                     n_members=config.ensemble_size, arch=config.reward_net_arch,
                     frame_norm=config.reward_predictor_frame_norm)


def learner_config(config: PreferenceConfig, frame_spec: FrameSpec) -> LearnerConfig:
    """How a run with ``config`` trains its reward network."""
    return LearnerConfig(
        net=net_config(config, frame_spec), lr=config.reward_predictor_lr,
        batch_size=config.reward_predictor_batch_size, noise_prob=config.noise_prob,
        weight_decay=config.reward_predictor_weight_decay, adaptive_l2=config.adaptive_l2,
        adaptive_l2_factor=config.adaptive_l2_factor,
        augmentation=config.augmentation, reward_scale=config.reward_scale, reward_centre=config.reward_centre,
        ckpt_interval=config.reward_predictor_ckpt_interval, n_initial_training_steps=config.n_initial_training_steps,
        seed=config.seed, device=config.reward_predictor_device, weight_average=config.reward_predictor_weight_average,
        estimate_noise_prob=config.estimate_noise_prob, label_filter=config.label_filter,
        label_flip=config.label_flip)


def label_store_config(config: PreferenceConfig, frame_spec: FrameSpec) -> LabelStoreConfig:
    """Where a run with ``config`` keeps its labels, and which it starts from."""
    return LabelStoreConfig(
        log_dir=config.log_dir, prefs_dir=config.prefs_dir, resume=config.resume, max_labels=config.max_prefs_in_db,
        val_fraction=config.val_fraction, collecting=config.collect_prefs,
        journaling=config.collect_prefs and config.autosave_prefs, snapshot_interval=config.prefs_autosave_interval,
        frame_spec=frame_spec, clip_length=config.segment_length if config.collect_prefs else None,
        instructions=config.labelling_instructions)


def trainer_config(config: PreferenceConfig, frame_spec: FrameSpec, pretrained_ckpt: str | None) -> TrainerConfig:
    """The reward-training process's settings in a run with ``config`` on frames of ``frame_spec``."""
    return TrainerConfig(
        learner=learner_config(config, frame_spec), labels=label_store_config(config, frame_spec),
        log_dir=config.log_dir, train_reward=config.train_reward, n_initial_prefs=config.n_initial_prefs,
        training_steps_per_label=config.training_steps_per_label,
        pretrained_ckpt=pretrained_ckpt, resume=config.resume, trainer_torch_threads=config.trainer_torch_threads,
        seed=config.seed, tensorboard_log=config.tensorboard_log,
        label_budget=config.label_budget if config.collect_prefs else None)


def interface_config(config: PreferenceConfig, human: HumanConfig | None, web: WebConfig | None,
                     selection_ckpt: str | None) -> InterfaceConfig:
    """The preference interface's settings in a run with ``config``; ``selection_ckpt``: the ensemble that would
    judge pairs (used only with ``pair_selection="disagreement"``)."""
    return InterfaceConfig(
        max_segs=config.max_segs, seed=config.seed, labeller=config.labeller,
        pairs_per_segment=config.synthetic_prefs_per_segment, synthetic_teacher=config.synthetic_teacher, human=human,
        web=web,
        journal_log_dir=config.log_dir if config.autosave_prefs else None, schedule=config.schedule,
        pair_selection=config.pair_selection,
        selection_ckpt=selection_ckpt if config.pair_selection == "disagreement" else None,
        ckpt_poll_interval=config.ckpt_poll_interval,
        n_candidate_pairs=config.n_candidate_pairs, synthetic_teachers=config.synthetic_teachers,
        instructions=config.labelling_instructions, val_fraction=config.val_fraction, undo_limit=config.undo_limit,
        second_opinion_share=config.second_opinion_share)


def human_config(config: PreferenceConfig, frame_spec: FrameSpec) -> HumanConfig:
    """How a person is shown the clips of a run with ``config`` (``check_can_ask`` says whether they can be)."""
    return HumanConfig(frame_spec, zoom=config.display_zoom, fps=config.display_fps, terminal=config.human_terminal,
                       log_path=LogDir(config.log_dir).human_labels, instructions=config.labelling_instructions,
                       undo_limit=config.undo_limit)


def web_config(config: PreferenceConfig, frame_spec: FrameSpec) -> WebConfig:
    """Where and how the page of a run with ``config`` shows clips, with a new random token for this run."""
    from drlhp.labelling.web.labeller import WebConfig

    return WebConfig(frame_spec, token=secrets.token_urlsafe(24), owner_token=secrets.token_urlsafe(24),
                     host=config.web_host, port=config.web_port, zoom=config.display_zoom, fps=config.display_fps,
                     pair_timeout=config.web_pair_timeout, label_budget=config.label_budget,
                     log_path=LogDir(config.log_dir).human_labels, instructions=config.labelling_instructions,
                     undo_limit=config.undo_limit, second_opinion_share=config.second_opinion_share, seed=config.seed)
