"""The settings every drlhp front-end takes: one frozen dataclass, declared once, checked once.

``HumanPreferencesEnvWrapper``, ``HumanPreferencesVectorWrapper`` and
``drlhp.sb3.HumanPreferencesVecEnvWrapper`` all accept these as flat keyword
arguments (or a ready ``config=PreferenceConfig(...)``), so a setting has one
name, one default and one check whatever the front-end. Each field is declared
with its section and its help text: the settings page (docs/settings.md), the
``drlhp`` command's flags and the examples' flags are derived from them
(``drlhp.cli.setting_flags``), and each background process's settings in one
place (``drlhp.runtime.settings``).
"""
from __future__ import annotations

import dataclasses
import logging
import multiprocessing
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Callable, Literal, get_args

import numpy as np

from drlhp.errors import ConfigError, MissingExtraError, UnknownSettingError
from drlhp.label_store.database import DEFAULT_VAL_FRACTION
from drlhp.labelling.answers import DEFAULT_UNDO_LIMIT
from drlhp.labelling.pair_selection import DEFAULT_N_CANDIDATES, SELECTIONS, PairSelection
from drlhp.labelling.protocols import DEFAULT_PAIRS_PER_SEGMENT, GivesSecondOpinions, Labeller, SyntheticTeacher
from drlhp.labelling.schedule import DEFAULT_LABEL_SCHEDULE, LabelSchedule, ScheduleKind
from drlhp.labelling.terminal import CONTROLLING_TERMINAL
from drlhp.reward.augment import Augmentation
from drlhp.reward.label_noise import LabelFilter
from drlhp.reward.normaliser import DEFAULT_REWARD_CENTRE, REWARD_CENTRES, RewardCentre
from drlhp.reward.predictor import (
    ARCHS,
    DEFAULT_ARCH,
    DEFAULT_DROPOUT,
    DEFAULT_ENSEMBLE_SIZE,
    DEFAULT_FRAME_NORM,
    FRAME_NORMS,
    FrameNormMode,
    RewardNetArch,
)
from drlhp.reward.tensorboard_log import require_tensorboard
from drlhp.reward.torch_setup import check_device_name
from drlhp.storage.checkpoint_watch import DEFAULT_POLL_INTERVAL
from drlhp.storage.layout import checkpoint_path
from drlhp.storage.run_dir import can_resume

#: How people label (``PreferenceConfig.labelling``).
Labelling = Literal["terminal", "web"]
LABELLING: tuple[Labelling, ...] = get_args(Labelling)
#: What a person is shown of each step (``PreferenceConfig.display_frames``).
DisplayFrames = Literal["auto", "observations", "render"]
DISPLAY_FRAMES: tuple[DisplayFrames, ...] = get_args(DisplayFrames)


@dataclass(frozen=True)
class Section:
    """A group of ``PreferenceConfig``'s settings: calling it declares one setting of the group, with its default
    and its help text (Markdown: ``code`` and [links](page.md#anchor) to the docs; ``drlhp.cli.setting_flags``
    shows it as plain text)."""

    title: str
    about: str

    def __call__(self, default: Any, help: str) -> Any:
        return dataclasses.field(default=default, metadata={"section": self, "help": help})


CLIPS = Section("Clips and pairs", "what is asked, how often, and from which clips")
LABELLERS = Section("Labellers", "who answers: the synthetic teacher, a person at the terminal, people in a browser")
REWARD_MODEL = Section("Reward model", "the network, how it trains on the labels, and the reward it returns")
STORAGE = Section("Storage", "where a run keeps its labels and checkpoints, and what it starts from")
PROCESSES = Section("Processes", "what runs, and how the background processes run")
SECTIONS = (CLIPS, LABELLERS, REWARD_MODEL, STORAGE, PROCESSES)


@dataclass(frozen=True)
class PreferenceConfig:
    """Settings of a drlhp run, in five sections: clips and pairs, labellers, reward model, storage, processes.

    Pass them as flat keyword arguments (``HumanPreferencesEnvWrapper(env, segment_length=50)``); each one's default
    and meaning are on the settings page (docs/settings.md), which is generated from the declarations below, and
    ``drlhp.config.setting_help(name)`` returns it.
    """

    # Clips and pairs
    segment_length: int = CLIPS(25, (
        "frames per clip (25: 1-2 s of Atari). A clip never spans two episodes: at an episode's end an unfinished "
        "clip is dropped, so every clip has this length"))
    n_initial_prefs: int = CLIPS(40, (
        "labels before reward training starts: the initial batch, asked as soon as there are clips (after "
        "`unsupervised_steps`; part of `label_budget`)"))
    unsupervised_steps: int = CLIPS(0, (
        "env steps (all envs together) before the first label: the agent explores first, rewarded for reaching "
        "observations unlike those it has seen (PEBBLE's unsupervised pre-training, Lee et al. 2021), so that the "
        "initial labels compare clips of varied behaviour rather than of a random policy. That reward is the "
        "agent's side (`drlhp.sb3.NoveltyReplayBuffer` for SB3's off-policy agents): the wrapper returns, as "
        "before any checkpoint, the env's own. 0: labels from the first clips"))
    label_budget: int | None = CLIPS(1000, (
        "labels the run may ask for in all, skipped pairs included; a synthetic run keeps to the same budget and "
        "schedule as a person would. None: no limit (synthetic labels then come `synthetic_prefs_per_segment` per "
        "clip)"))
    label_schedule: ScheduleKind = CLIPS(DEFAULT_LABEL_SCHEDULE, (
        "how the asking rate falls after the initial batch: `constant` (an even rate: labels from the agents of the"
        " whole run), `hyperbolic` (∝ T0/(T+T0) after T env steps, the paper's; with the default T0, 58 % of the "
        "labels come in the first half of the run) or `inverse_quadratic`; why: [Defaults](history.md#defaults)"))
    label_schedule_steps: int = CLIPS(1_000_000, (
        "env steps (all envs together) by which the budget is spent: set it to your agent's `total_timesteps`"))
    label_schedule_t0: int | None = CLIPS(None, (
        "the schedule's T0 in env steps (None: `label_schedule_steps` less `unsupervised_steps`)"))
    pair_selection: PairSelection = CLIPS("random", (
        "`random`: a random pair of recent clips; `disagreement` (the paper's): of `n_candidate_pairs` random "
        "pairs, the one the reward ensemble's members disagree on most (needs `ensemble_size` >= 2; random until "
        "the first checkpoint); `coverage` (B-Pref's k-center): of `n_candidate_pairs` random pairs, the one whose "
        "clips lie farthest from the clips asked about before (in their observations' mean and std; no reward "
        "model needed)"))
    n_candidate_pairs: int = CLIPS(DEFAULT_N_CANDIDATES, (
        "candidate pairs scored per question with `pair_selection` `disagreement` or `coverage`"))
    max_segs: int = CLIPS(200, "recent clips the interface pairs from (memory: `max_segs` × `segment_length` frames)")
    synthetic_prefs_per_segment: float = CLIPS(DEFAULT_PAIRS_PER_SEGMENT, (
        "synthetic labels asked per new clip when `label_budget` is None"))
    segment_queue_size: int | None = CLIPS(None, (
        "clips in flight to the interface; when full, new ones are dropped (counted in `stats()`), never waited "
        "for. None: 8, or twice the number of envs if more"))
    clips_span_lives: bool = CLIPS(False, (
        "an SB3 `VecEnv` that ends an episode at each life lost (SB3's Atari recipe): a clip ends only where the game "
        "ends, which SB3's `Monitor` marks (`info[\"episode\"]`), so clips hold the deaths a teacher should see. "
        "Without it almost none do ([Examples](examples.md)); the agent's episodes are unchanged. Needs `Monitor` "
        "inside the wrapper that ends a life, as `make_atari_env` and `make_vec_env` put it; the SB3 front-end only"))

    # Labellers
    synthetic_preferences: bool = LABELLERS(True, (
        "label from the env's reward, as `synthetic_teacher` says. False: people label, as `labelling` says"))
    synthetic_teacher: SyntheticTeacher = LABELLERS(SyntheticTeacher(), (
        "how synthetic labels are given: `drlhp.SyntheticTeacher(beta, gamma, mistake_rate, skip_threshold, "
        "equal_threshold)`; the default is always right: the clip with the larger true return wins, equal returns "
        "are equally good"))
    synthetic_teachers: Mapping[str, SyntheticTeacher] | None = LABELLERS(None, (
        "several simulated people (name -> `SyntheticTeacher`) instead: they answer in turn, each label recorded as"
        " `synthetic:<name>`; with `second_opinion_share`, another of them answers a pair too"))
    labeller: Labeller | None = LABELLERS(None, (
        "your own labeller (`drlhp.labellers.Labeller`: `label(a, b)` -> 1, 0, 0.5 or None) instead of the built-in"
        " ones; it must pickle, as it runs in the interface process"))
    labelling: Labelling = LABELLERS("terminal", (
        "with `synthetic_preferences=False`: `terminal` (the two clips loop in a window while the terminal asks L /"
        " R / E; one person, needs a display) or `web` (a page at `web_host`:`web_port`, for one or many people; "
        "see [Labelling](labelling.md#in-a-browser))"))
    labelling_instructions: str | None = LABELLERS(None, (
        "the task in words, shown above every pair (page and terminal) and recorded with the labels "
        "([Labelling](labelling.md#the-task-in-words))"))
    undo_limit: int = LABELLERS(DEFAULT_UNDO_LIMIT, (
        "answers each labeller may take back with U, newest first, of this session: the label leaves the database, "
        "the budget gets it back and the pair is asked again; 0: no undo "
        "([Labelling](labelling.md#taking-an-answer-back))"))
    second_opinion_share: float = LABELLERS(0.0, (
        "share of answered pairs also asked to a second labeller (web, or `synthetic_teachers`); the training label"
        " is their answer when they agree, else 0.5; agreement is reported and a second answer does not count "
        "against the budget ([Labelling](labelling.md#several-labellers-second-opinions-and-agreement))"))
    web_host: str = LABELLERS("127.0.0.1", (
        "the page's address: this machine only (reach it from a laptop with `ssh -L`); serving other hosts is your "
        "explicit choice (e.g. `0.0.0.0`)"))
    web_port: int = LABELLERS(8765, "the page's port; 0: any free port")
    web_pair_timeout: float = LABELLERS(120.0, (
        "seconds a pair handed to one labeller waits for their answer before it goes to someone else"))
    display_frames: DisplayFrames = LABELLERS("auto", (
        "what a person is shown of each step: `observations` (the frames the reward network sees), `render` (the "
        "env's `render()`, fitted into 160 px: make the env with `render_mode=\"rgb_array\"`; a MuJoCo body, or "
        "Atari in colour beside the network's grey frames) or `auto`: `render` where the frames are flat vectors "
        "and the env renders, else `observations`"))
    display_zoom: int | None = LABELLERS(None, (
        "whole-number zoom of the clips shown to a person (None: about 336 px tall)"))
    display_fps: float = LABELLERS(20.0, "frame rate of the clips shown to a person")
    human_terminal: str = LABELLERS(CONTROLLING_TERMINAL, (
        "the terminal where a person types answers: the program's controlling terminal by default; name another "
        "(e.g. a tmux pane's `/dev/pts/N`) when the program runs without one"))

    # Reward model
    n_initial_training_steps: int = REWARD_MODEL(50, (
        "training steps before the predicted reward is returned (a checkpoint is written at that step)"))
    training_steps_per_label: int | None = REWARD_MODEL(None, (
        "the trainer pauses once it has taken this many training steps for each label of the run (the pause falls "
        "on a checkpoint) and goes on as labels come: the reward holds still between labels, and its core is the "
        "agent's meanwhile ([Training steps per label](reward-model.md#training-steps-per-label)). None: it trains "
        "without pause, as in Christiano et al."))
    reward_predictor_ckpt_interval: int = REWARD_MODEL(100, (
        "training steps between checkpoints (and validation and a metrics row)"))
    reward_predictor_lr: float = REWARD_MODEL(1e-3, "Adam's learning rate")
    reward_predictor_batch_size: int = REWARD_MODEL(8, "labelled pairs per training step (per ensemble member)")
    reward_net_arch: RewardNetArch = REWARD_MODEL(DEFAULT_ARCH, (
        "the reward network for image frames: `atari` (the CNN of Christiano et al. 2017) or `keypoints` "
        "(convolutions ending in a spatial softmax that turns each channel into an object's coordinates: learns "
        "relational rewards from few labels). Flat vector frames always get an MLP; a pretrained or resumed network"
        " keeps its own ([The reward model](reward-model.md))"))
    ensemble_size: int = REWARD_MODEL(DEFAULT_ENSEMBLE_SIZE, (
        "reward networks, each trained on its own bootstrap resample of the labels; the reward is the mean of their"
        " normalised rewards (the paper: 3; why 1: [Defaults](history.md#defaults))"))
    reward_predictor_dropout: float = REWARD_MODEL(DEFAULT_DROPOUT, (
        "dropout after every hidden layer (the keypoint network: its dense layers only)"))
    reward_predictor_batchnorm: bool = REWARD_MODEL(False, (
        "batch normalisation after every hidden layer (Christiano et al.'s Atari setting); not needed with centred "
        "frames ([Centred frames](history.md#centred-frames))"))
    reward_predictor_frame_norm: FrameNormMode = REWARD_MODEL(DEFAULT_FRAME_NORM, (
        "what image frames go through before the network: `centre` (each frame's channels minus their own mean, so "
        "a flat background is 0 whatever its brightness), `standardise` (also divided by their standard deviation) "
        "or `none`; checkpoints from before it load as `none`"))
    reward_predictor_device: str = REWARD_MODEL("cpu", (
        "the torch device the network trains on: `cpu`, `auto` (CUDA where torch finds it) or a device such as "
        "`cuda:1`; every process loads the checkpoints on the CPU, so env steps never wait on a GPU"))
    reward_predictor_weight_decay: float = REWARD_MODEL(1e-4, (
        "L2 penalty (Adam's weight decay); with `adaptive_l2`, its starting value"))
    adaptive_l2: bool = REWARD_MODEL(True, (
        "at each checkpoint, scale the L2 penalty by `adaptive_l2_factor` up or down to keep the validation loss "
        "1.1-1.5 × the training loss (the paper's rule against overfitting few labels)"))
    adaptive_l2_factor: float = REWARD_MODEL(1.5, (
        "what `adaptive_l2` scales the L2 penalty by at a checkpoint; nearer 1, the penalty, and with it the "
        "reward, moves less from one checkpoint to the next where a few validation labels make the loss ratio "
        "swing ([The reward between labels](reward-model.md#the-reward-between-labels))"))
    reward_predictor_weight_average: float | None = REWARD_MODEL(0.99, (
        "checkpoints hold an exponential moving average of the weights with this decay (0.99: about the last 100 "
        "training steps), a steadier network than the last step's; None: the weights as trained ([Weight "
        "average](reward-model.md#weight-average))"))
    augment_shift: int = REWARD_MODEL(0, (
        "while training, shift each labelled clip by up to this many pixels (edges repeated, the same shift for all"
        " its frames), as DrQ / RAD do; 0: off"))
    temporal_crop_min_length: int | None = REWARD_MODEL(None, (
        "while training, cut each batch's clips to one random length of at least this many frames, each at its own "
        "start, as SURF does; None: off"))
    pseudo_label_threshold: float | None = REWARD_MODEL(None, (
        "SURF's semi-supervised term: also train on new pairings of the labelled clips, labelled with the network's"
        " own preference where it is at least this sure (e.g. 0.95); recomputed every step, never stored; None: off"))
    noise_prob: float = REWARD_MODEL(0.1, (
        "assumed probability that a label is a uniformly random answer (the paper's 0.1); bounds the loss of a "
        "confidently wrong prediction. 0: plain Bradley-Terry"))
    estimate_noise_prob: bool = REWARD_MODEL(False, (
        "refit `noise_prob` at each checkpoint to the validation labels (maximum likelihood under the network's "
        "predictions), never below `noise_prob`: a labeller who errs more is trusted less ([Labels that are "
        "sometimes wrong](reward-model.md#labels-that-are-sometimes-wrong))"))
    label_filter: float | None = REWARD_MODEL(None, (
        "at each checkpoint the network judges every training pair, and one whose label it gives a probability "
        "below this (e.g. 0.1) is left out until a later checkpoint trusts it again (RIME's trusted samples, Cheng "
        "et al. 2024, simplified); None: every label is trained on"))
    label_flip: float | None = REWARD_MODEL(None, (
        "at each checkpoint the network judges every training pair, and one whose label it gives a probability "
        "below this (e.g. 0.02: it is 98 % sure of the other answer) is trained on with the label flipped until a "
        "later checkpoint judges it otherwise (RIME's label flipping, Cheng et al. 2024); below `label_filter` if "
        "both are set. None: no label is flipped"))
    reward_scale: float = REWARD_MODEL(0.05, (
        "standard deviation of the returned reward; 0.05, the paper's Atari value, keeps per-step rewards near the "
        "scale of clipped Atari rewards summed over a clip"))
    reward_centre: RewardCentre = REWARD_MODEL(DEFAULT_REWARD_CENTRE, (
        "which predicted reward becomes 0 over the labelled frames: `mean` (the paper), `median` (a typical frame "
        "earns 0) or `lower`, the lower of the two, so a typical frame never costs (the median on Breakout, the "
        "mean on Pong); see [Normalisation](reward-model.md#normalisation)"))

    # Storage
    log_dir: str = STORAGE("drlhp_logs", (
        "the run's checkpoints (`reward_predictor_checkpoints/`), `train.pkl.gz` / `val.pkl.gz`, `label_journal/` "
        "and `reward_training_metrics.csv`. One run at a time (locked), never overwritten by a new run: see "
        "`resume`"))
    resume: bool = STORAGE(False, (
        "continue the run in `log_dir` where it stopped (closed, killed or crashed): its labels, reward network, "
        "optimiser, normaliser and numbering; what `log_dir` lacks comes from `prefs_dir` / "
        "`pretrained_reward_predictor_dir` as in a new run"))
    prefs_dir: str | None = STORAGE(None, "a directory with `train.pkl.gz` and `val.pkl.gz` to start from")
    pretrained_reward_predictor_dir: str | None = STORAGE(None, (
        "a checkpoint directory (or `.ckpt` file) to reward with from the first step (and to go on training, with "
        "`train_reward`)"))
    max_prefs_in_db: int = STORAGE(3000, "labels kept for training and validation; the oldest go first")
    val_fraction: float = STORAGE(DEFAULT_VAL_FRACTION, (
        "share of labels held out for validation (0.2: exactly every fifth)"))
    autosave_prefs: bool = STORAGE(True, (
        "journal each label before the next pair is asked, and save a snapshot on `close()`; False: labels reach "
        "disk only through `save_prefs()`"))
    prefs_autosave_interval: float | None = STORAGE(None, (
        "also rewrite the label snapshot every this many seconds (None: only once the journal holds as many labels "
        "as the snapshot, on `save_prefs()` and on `close()`)"))
    tensorboard_log: str | None = STORAGE(None, (
        "write the reward model's scalars at each checkpoint to a new TensorBoard run "
        "`<tensorboard_log>/drlhp_reward_<N>`; give SB3 the same directory to see them beside the agent (needs "
        "`drlhp[tensorboard]`)"))

    # Processes
    collect_prefs: bool = PROCESSES(True, "run the preference interface and gather labels")
    train_reward: bool = PROCESSES(True, "train the reward predictor (on collected and/or loaded labels)")
    obs_transform_func: Callable[[Any], np.ndarray] | None = PROCESSES(None, (
        "maps one env's observation to the frame stored and rewarded (e.g. `lambda obs: obs[\"pixels\"]`); called in "
        "your process only, on each sub-env's observation"))
    seed: int | None = PROCESSES(None, (
        "seeds pair picking, the train/validation split and the network's initial weights"))
    mp_start_method: str = PROCESSES("spawn", "`spawn`, `forkserver` or `fork`")
    torch_threads: int | None = PROCESSES(1, (
        "torch threads of *your* process (the reward forward pass, and your RL code's torch); None leaves torch's "
        "setting alone"))
    trainer_torch_threads: int | None = PROCESSES(1, (
        "torch threads of the trainer process. On 2 cores, 1 + 1 keeps the RL process and the trainer off each "
        "other's core"))
    ckpt_poll_interval: float = PROCESSES(DEFAULT_POLL_INTERVAL, (
        "seconds between cheap checks (one `stat`) for a newer checkpoint, by the env process and the interface"))
    close_timeout: float = PROCESSES(10.0, "seconds `close()` waits for the trainer to save and exit before killing it")
    log_level: int = PROCESSES(logging.INFO, "logging level of drlhp's processes")

    def __post_init__(self) -> None:
        check_config(self)

    @property
    def schedule(self) -> LabelSchedule:
        """How many labels the run may have asked for by each env step (from the label_* settings)."""
        return LabelSchedule(self.label_budget, self.n_initial_prefs, self.label_schedule, self.label_schedule_steps,
                             self.label_schedule_t0, self.unsupervised_steps)

    @property
    def augmentation(self) -> Augmentation:
        """How training clips are varied (from augment_shift, temporal_crop_min_length, pseudo_label_threshold)."""
        return Augmentation(self.augment_shift, self.temporal_crop_min_length, self.pseudo_label_threshold)

    @property
    def human_labelling(self) -> bool:
        """True when a person answers through the built-in window + terminal."""
        return self.people_label and self.labelling == "terminal"

    @property
    def web_labelling(self) -> bool:
        """True when people answer on the web page."""
        return self.people_label and self.labelling == "web"

    @property
    def people_label(self) -> bool:
        """True when people answer, through the terminal or the page (not synthetic, not your own labeller)."""
        return not self.synthetic_preferences and self.collect_prefs and self.labeller is None

    @classmethod
    def from_kwargs(cls, config: PreferenceConfig | None, kwargs: dict) -> PreferenceConfig:
        """``config`` (or the defaults) with ``kwargs`` applied; an unknown name gets a clear error."""
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(kwargs) - names)
        if unknown:
            raise UnknownSettingError(f"unknown drlhp argument(s) {unknown}; the arguments are the fields of "
                                      f"drlhp.PreferenceConfig: {sorted(names)}")
        return dataclasses.replace(config, **kwargs) if config is not None else cls(**kwargs)


def setting_field(name: str) -> dataclasses.Field:
    """The declaration of ``PreferenceConfig``'s setting ``name`` (its default, section and help)."""
    for f in dataclasses.fields(PreferenceConfig):
        if f.name == name:
            return f
    raise UnknownSettingError(f"{name!r} is not a drlhp setting (a field of drlhp.PreferenceConfig)")


def setting_help(name: str) -> str:
    """What the setting ``name`` means, as declared (Markdown)."""
    return setting_field(name).metadata["help"]


def check_config(c: PreferenceConfig) -> None:
    """Raise ``ConfigError`` naming the first setting of ``c`` out of range or at odds with another, and the fix."""
    def need(cond: bool, msg: str) -> None:
        if not cond:
            raise ConfigError(msg)

    need(c.segment_length >= 1, f"segment_length must be >= 1, got {c.segment_length}")
    need(0.0 <= c.val_fraction < 1.0, f"val_fraction must be in [0, 1), got {c.val_fraction}")
    need(0.0 <= c.noise_prob < 1.0, f"noise_prob must be in [0, 1), got {c.noise_prob}")
    need(0.0 <= c.reward_predictor_dropout < 1.0, "reward_predictor_dropout must be in [0, 1)")
    need(c.reward_scale > 0, f"reward_scale must be > 0, got {c.reward_scale}")
    for name in ("n_initial_prefs", "n_initial_training_steps"):
        need(getattr(c, name) >= 0, f"{name} must be >= 0, got {getattr(c, name)}")
    for name in ("max_prefs_in_db", "reward_predictor_ckpt_interval", "reward_predictor_batch_size", "ensemble_size"):
        need(getattr(c, name) >= 1, f"{name} must be >= 1, got {getattr(c, name)}")
    per_label = c.training_steps_per_label
    need(per_label is None or per_label * max(c.n_initial_prefs, 1) >= max(c.n_initial_training_steps, 1),
         f"training_steps_per_label={per_label} would pause the trainer on the n_initial_prefs={c.n_initial_prefs} "
         f"first labels before the n_initial_training_steps={c.n_initial_training_steps} the predicted reward "
         f"starts after: raise it to at least "
         f"{-(-max(c.n_initial_training_steps, 1) // max(c.n_initial_prefs, 1))}, or pass None to train without pause")
    need(c.label_budget is None or c.label_budget >= 1, f"label_budget must be >= 1 (or None), got {c.label_budget}")
    _ = c.schedule, c.augmentation, LabelFilter(c.label_filter, c.label_flip)  # building them checks their settings
    need(c.reward_centre in REWARD_CENTRES, f"reward_centre must be one of {REWARD_CENTRES}, got {c.reward_centre!r}")
    need(c.reward_predictor_frame_norm in FRAME_NORMS,
         f"reward_predictor_frame_norm must be one of {FRAME_NORMS}, got {c.reward_predictor_frame_norm!r}")
    need(c.reward_net_arch in ARCHS, f"reward_net_arch must be one of {ARCHS}, got {c.reward_net_arch!r}")
    need(c.pair_selection in SELECTIONS, f"pair_selection must be one of {SELECTIONS}, got {c.pair_selection!r}")
    need(c.n_candidate_pairs >= 1, f"n_candidate_pairs must be >= 1, got {c.n_candidate_pairs}")
    need(c.reward_predictor_weight_decay >= 0, "reward_predictor_weight_decay must be >= 0")
    need(c.reward_predictor_weight_average is None or 0 < c.reward_predictor_weight_average < 1,
         f"reward_predictor_weight_average is the decay of the weights' moving average: in (0, 1) (e.g. 0.99), "
         f"or None for the weights as trained; got {c.reward_predictor_weight_average}")
    check_device_name(c.reward_predictor_device)
    need(c.adaptive_l2_factor > 1, "adaptive_l2_factor must be > 1 (1.5: the default; 1 would never change the "
         "penalty: pass adaptive_l2=False for that)")
    need(not c.adaptive_l2 or c.reward_predictor_weight_decay > 0, "adaptive_l2 scales reward_predictor_weight_decay "
         "up and down, so it must start above 0 (e.g. 1e-4), or pass adaptive_l2=False")
    need(c.segment_queue_size is None or c.segment_queue_size >= 1,
         f"segment_queue_size must be >= 1 (or None), got {c.segment_queue_size}")
    need(c.max_segs >= 2, f"max_segs must be >= 2 (a pair needs two segments), got {c.max_segs}")
    need(c.mp_start_method in multiprocessing.get_all_start_methods(),
         f"mp_start_method {c.mp_start_method!r} is not available here; use one of "
         f"{multiprocessing.get_all_start_methods()}")
    if c.prefs_dir is not None:
        need(os.path.isdir(c.prefs_dir), f"prefs_dir {c.prefs_dir!r} is not a directory; point it at the "
             "log_dir where save_prefs() wrote train.pkl.gz and val.pkl.gz")
    if c.pretrained_reward_predictor_dir is not None:
        ckpt = checkpoint_path(c.pretrained_reward_predictor_dir)
        need(os.path.isfile(ckpt), f"pretrained_reward_predictor_dir: no checkpoint at {ckpt!r}; point it at "
             "<log_dir>/reward_predictor_checkpoints of a previous run")
    if c.tensorboard_log is not None:
        require_tensorboard()
    if c.resume:
        need(c.collect_prefs or c.train_reward, "resume=True continues collecting or training; with neither, "
             "pass pretrained_reward_predictor_dir=<log_dir>/reward_predictor_checkpoints to use its reward network")
        need(can_resume(c.log_dir), f"resume=True, but log_dir {c.log_dir!r} holds no labels and no reward-network "
             "checkpoint to resume; check the path, or start a new run without resume=True")
    need(c.collect_prefs or not c.train_reward or c.prefs_dir is not None or c.resume,
         "train_reward=True with collect_prefs=False has nothing to train on: pass prefs_dir= (saved preferences)")
    need(c.labelling in LABELLING, f"labelling must be one of {LABELLING}, got {c.labelling!r}")
    need(c.display_frames in DISPLAY_FRAMES, f"display_frames must be one of {DISPLAY_FRAMES}, got "
         f"{c.display_frames!r}")
    need(c.labelling == "terminal" or not c.synthetic_preferences,
         f"labelling={c.labelling!r} is how people label, but synthetic_preferences=True labels without them; "
         "pass synthetic_preferences=False as well")
    need(0 <= c.web_port <= 65535, f"web_port must be a port number (0: any free port), got {c.web_port}")
    need(c.web_pair_timeout > 0, f"web_pair_timeout must be > 0 seconds, got {c.web_pair_timeout}")
    if c.web_labelling:
        _require_web()
    if c.people_label and (c.display_fps <= 0 or (c.display_zoom is not None and c.display_zoom < 1)):
        raise ConfigError(f"display_fps must be > 0 and display_zoom >= 1, got {c.display_fps}, {c.display_zoom}")
    _check_labellers(c, need)


#: The longest task description shown above the pairs (a paragraph; longer belongs in a document people read first).
MAX_INSTRUCTIONS_CHARS = 2000


def _check_labellers(c: PreferenceConfig, need: Callable[[bool, str], None]) -> None:
    """Undo, the task in words, second opinions and simulated teachers."""
    need(isinstance(c.undo_limit, int) and c.undo_limit >= 0, f"undo_limit must be a whole number >= 0, got "
         f"{c.undo_limit!r}")
    text = c.labelling_instructions
    need(text is None or (isinstance(text, str) and 0 < len(text.strip()) <= MAX_INSTRUCTIONS_CHARS),
         f"labelling_instructions must be text of 1-{MAX_INSTRUCTIONS_CHARS} characters (or None), got {text!r:.80}")
    teachers = c.synthetic_teachers
    if teachers is not None:
        need(isinstance(teachers, Mapping) and len(teachers) >= 1 and all(
            isinstance(name, str) and name.strip() and isinstance(t, SyntheticTeacher) for name, t in teachers.items()),
            "synthetic_teachers must map names to drlhp.SyntheticTeacher, e.g. {'careful': SyntheticTeacher(), "
            "'hasty': SyntheticTeacher(mistake_rate=0.2)}")
        need(c.synthetic_preferences and c.labeller is None, "synthetic_teachers label in place of people: pass "
             "synthetic_preferences=True and no labeller=")
    share = c.second_opinion_share
    need(0.0 <= share <= 1.0, f"second_opinion_share must be in [0, 1], got {share}")
    if share > 0:
        several_teachers = c.synthetic_preferences and c.labeller is None and teachers is not None and len(teachers) > 1
        own_seconder = c.labeller is not None and isinstance(c.labeller, GivesSecondOpinions)
        need(c.web_labelling or several_teachers or own_seconder,
             "second_opinion_share asks a second labeller, so it needs several: labelling='web' (people in their "
             "browsers), synthetic_teachers= naming two or more teachers, or a labeller= that gives second opinions")


def _require_web() -> None:
    try:
        import aiohttp  # noqa: F401
        import PIL  # noqa: F401
    except ImportError as e:
        raise MissingExtraError('labelling="web" serves a page with aiohttp and Pillow: '
                                'pip install "drlhp[web]"') from e
