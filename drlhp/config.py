"""The settings every drlhp front-end takes: one frozen dataclass, validated once.

``HumanPreferencesEnvWrapper``, ``HumanPreferencesVectorWrapper`` and
``drlhp.sb3.HumanPreferencesVecEnvWrapper`` all accept these as keyword
arguments (or a ready ``config=PreferenceConfig(...)``), so a setting has one
name, one default and one check whatever the front-end. Each background process's
settings are derived from them in one place (``drlhp.runtime.settings``).
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
from drlhp.labelling.answers import DEFAULT_UNDO_LIMIT
from drlhp.labelling.pair_selection import DEFAULT_N_CANDIDATES, SELECTIONS, PairSelection
from drlhp.labelling.protocols import DEFAULT_PAIRS_PER_SEGMENT, GivesSecondOpinions, Labeller, SyntheticTeacher
from drlhp.labelling.schedule import DEFAULT_LABEL_SCHEDULE, LabelSchedule, ScheduleKind
from drlhp.labelling.terminal import CONTROLLING_TERMINAL
from drlhp.labels.database import DEFAULT_VAL_FRACTION
from drlhp.reward.augment import Augmentation
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


@dataclass(frozen=True)
class PreferenceConfig:
    """Settings of a drlhp run.

    Attributes:
        segment_length: frames per clip shown for a preference (25 frames: 1-2 s of Atari).
        synthetic_preferences: label pairs from the env's true reward (the clip with the
            larger true return wins, equal returns are "equally good").
            ``False`` asks people, as ``labelling`` says.
        labelling: how people label when ``synthetic_preferences=False``: ``"terminal"``: the
            two clips loop side by side in a window while the terminal asks L / R / E (Enter:
            can't compare; needs a display); ``"web"``: a web page served at ``web_host``:``web_port``
            (the address, with its token, is printed and in ``labelling_url``), for one or many
            people at once, in their browsers.
        web_host: the address the page is served on: ``127.0.0.1`` (this machine only; reach it
            from a laptop with ``ssh -L``) unless you choose to serve other hosts.
        web_port: the page's port; 0: any free port.
        web_pair_timeout: seconds a pair handed to one labeller waits for their answer before
            it is handed to someone else.
        collect_prefs: start the preference interface and gather labels.
        train_reward: train the reward predictor (on collected and/or loaded labels).
        log_dir: where checkpoints (``reward_predictor_checkpoints/reward_predictor.ckpt``),
            ``train.pkl.gz`` / ``val.pkl.gz``, the label journal and ``reward_training_metrics.csv``
            go. One run at a time: a second run on a ``log_dir`` in use raises
            ``drlhp.LogDirInUseError``; a new run that would collect into a ``log_dir`` holding
            an earlier run's labels raises ``drlhp.LogDirHasLabelsError`` (see ``resume``).
        resume: continue the run in ``log_dir`` where it stopped (closed, killed or crashed):
            its labels (snapshot + journal), reward network, optimiser state, normaliser and
            numbering. Where ``log_dir`` has no labels (or no checkpoint) of its own, they come
            from ``prefs_dir`` (or ``pretrained_reward_predictor_dir``) as in a new run.
        prefs_dir: a directory with ``train.pkl.gz`` / ``val.pkl.gz`` to start from.
        pretrained_reward_predictor_dir: a checkpoint directory (or file) to predict
            rewards with from the first step (and to continue training, with ``train_reward``).
        obs_transform_func: maps one env's observation to the frame stored and rewarded
            (e.g. ``lambda obs: obs["pixels"]``); called in this process only. Vector
            front-ends call it on each sub-env's observation, never on the batch.
        n_initial_prefs: labels before reward training starts: the initial batch, asked as
            soon as there are clips (part of ``label_budget``).
        label_budget: labels the run may ask for in all, a skipped pair included (None: no
            limit, and synthetic labels come ``synthetic_prefs_per_segment`` per clip).
            A synthetic run keeps to the same budget and schedule as a person would.
        label_schedule: how the rate of asking falls after the initial batch: ``"constant"`` (an even
            rate, so labels come from the agents of the whole run), ``"hyperbolic"`` (rate ∝ T0 / (T + T0)
            after T env steps, as in the paper; with the default T0, 58 % of the labels come in the first
            half of the run) or ``"inverse_quadratic"``.
            ``stats()`` reports ``labels_asked``, ``labels_sent`` (answered) and ``labels_remaining``.
        label_schedule_steps: env steps (all envs together) by which the budget is spent;
            set it to your agent's ``total_timesteps``.
        label_schedule_t0: the schedule's T0 in env steps (None: ``label_schedule_steps``).
        pair_selection: ``"random"``: a random pair of recent clips; ``"disagreement"`` (the
            paper's): of ``n_candidate_pairs`` random pairs, ask about the one the reward ensemble's
            members disagree on most (needs ``ensemble_size`` >= 2; random until the first checkpoint).
        n_candidate_pairs: candidate pairs per question for ``pair_selection="disagreement"``.
        synthetic_teacher: how synthetic labels are given (``drlhp.SyntheticTeacher``:
            rationality, myopia, mistakes, skipping, ties); the default is always right.
        synthetic_teachers: several simulated people instead (name -> ``SyntheticTeacher``): they
            answer pairs in turn, each label recorded as ``synthetic:<name>``; with
            ``second_opinion_share`` another of them answers a pair too (e.g. to see what agreement
            two teachers of known mistake rates reach).
        labelling_instructions: the task in words ("prefer the clip where the car overtakes more"),
            shown above every pair on the page and in the terminal, and recorded with the labels
            (``drlhp show-prefs`` prints it).
        undo_limit: answers each labeller may take back (U), newest first, back to this many of
            their answers of this session; the label leaves the database, the budget gets it back,
            and the pair is asked again. 0: no undo.
        second_opinion_share: the share of answered pairs also asked to a second labeller (web: while
            someone else is labelling; synthetic: with ``synthetic_teachers``). Both answers are kept
            with their labeller; the pair's training label is their answer when they agree, else 0.5
            (equally good). ``stats()``, the metrics CSV and the owner's page report how often each
            two labellers agree. A second answer does not count against ``label_budget``.
        n_initial_training_steps: reward-training steps before the predicted reward is returned.
        max_prefs_in_db: labels kept for training + validation; oldest evicted first.
        val_fraction: share of labels held out for validation (0.2: every fifth).
        reward_predictor_ckpt_interval: write a checkpoint every this many training steps.
        reward_predictor_lr: Adam learning rate of the reward network.
        reward_predictor_batch_size: labelled pairs per training step.
        reward_predictor_dropout: dropout probability after every hidden layer (the keypoint network:
            its dense layers only).
        reward_predictor_batchnorm: add batch normalisation after every hidden layer (Christiano et
            al.'s Atari setting). With centred frames (``reward_predictor_frame_norm``) Pong learns
            without it; on MovingDot it costs accuracy.
        reward_predictor_frame_norm: what image frames go through before the network: ``"centre"``
            (the default: each frame's channels minus their mean, so a flat background is 0 whatever
            its brightness: Pong's grey one killed the network's units without batchnorm),
            ``"standardise"`` (also divided by their standard deviation) or ``"none"``.
        reward_predictor_device: the torch device the reward network trains on: ``"cpu"``,
            ``"auto"`` (CUDA where torch finds it, else the CPU) or a device such as ``"cuda:1"``.
            Every process loads its checkpoints on the CPU, so the env steps never wait on a GPU.
        reward_net_arch: the reward network for image frames: ``"atari"``, the CNN of Christiano et
            al. 2017; or ``"keypoints"`` (the default), convolutions ending in a spatial softmax that turns each
            channel into an object's coordinates, so rewards that depend on where objects stand
            relative to each other are learned from few labels (give it a few hundred training
            steps before the agent relies on it). Flat vector frames always get an MLP. A pretrained
            or resumed network keeps the architecture it was saved with.
        augment_shift: while training, shift each labelled clip by up to this many pixels (edges
            repeated; the same shift for all its frames), as DrQ / RAD do. 0: off.
        temporal_crop_min_length: while training, cut each clip of a batch to one random length of
            at least this many frames, each at its own start, as SURF does. None: off.
        pseudo_label_threshold: SURF's semi-supervised term: also train on new pairings of the
            database's clips, labelled with the network's own preference where it is at least this
            sure (e.g. 0.95). These labels are recomputed every step and never stored. None: off.
        reward_predictor_weight_average: checkpoints hold an exponential moving average of the
            weights with this decay (0.99: about the last 100 training steps), a steadier network
            than the last step's weights; None: the weights as trained.
        reward_predictor_weight_decay: L2 penalty (Adam weight decay); with ``adaptive_l2``,
            its starting value.
        adaptive_l2: adjust the L2 penalty at each checkpoint so the validation loss stays
            1.1-1.5 times the training loss (the paper's rule against overfitting few labels).
        ensemble_size: reward networks trained side by side, each on its own bootstrap resample
            of the labels (the paper: 3, with ``pair_selection="disagreement"``); the reward is the
            mean of their normalised rewards. 1 (the default): a single network.
        noise_prob: assumed probability that a label is a uniformly random answer
            (Christiano et al. use 0.1); 0 is the plain Bradley-Terry model.
        estimate_noise_prob: refit that probability at each checkpoint to the validation labels
            (maximum likelihood under the network's predictions), never below ``noise_prob``: a
            labeller who errs more is trusted less (``drlhp.reward.label_noise``).
        label_filter: at each checkpoint the network judges every training pair, and a pair whose
            label it gives a probability below this (e.g. 0.1) is left out of training until a
            later checkpoint trusts it again (RIME's trusted samples, Cheng et al. 2024,
            simplified). None: every label is trained on.
        reward_scale: standard deviation of the returned predicted reward.
            0.05, the paper's Atari value, keeps per-step rewards near the scale of
            clipped Atari rewards summed over a clip.
        reward_centre: which predicted reward becomes 0, over the frames of the labelled clips:
            ``"mean"`` (the paper: the reward has mean 0) or ``"median"`` (a typical frame earns 0,
            as in a game whose score rarely moves). Where rare frames earn much more than the
            rest (points in Breakout), the mean lies above the typical frame, so mean-centring
            makes a typical frame cost reward, and an agent whose episode ends at a lost life is
            paid to end it sooner; the median keeps a longer life from costing. ``"lower"`` (the
            default): the lower of the two, so a typical frame never costs; it takes the median on
            Breakout and the mean on Pong (docs/history.md, "Defaults").
        labeller: your own labeller (see ``drlhp.labellers.Labeller``) instead of the
            built-in ones; it must be picklable, as it runs in the interface process.
        display_zoom: whole-number zoom of the clips shown to a person (None: ~336 px tall).
        display_fps: frame rate of the clips shown to a person.
        human_terminal: the terminal where a person types answers: the controlling
            terminal by default; name another (e.g. a tmux pane's ``/dev/pts/N``) when
            the program runs without one.
        prefs_autosave_interval: also rewrite the label snapshot in ``log_dir`` every this many
            seconds. None (the default): each label is journaled as it comes anyway, and the
            snapshot is rewritten once the labels since the last one are as many as the older ones.
        max_segs: recent segments the preference interface picks pairs from.
        synthetic_prefs_per_segment: synthetic labels asked per new segment.
        segment_queue_size: segments in flight to the interface; when full, new ones are
            dropped (counted in ``stats()``) rather than slowing ``step()``. None: 8, or twice
            the number of envs if more (envs in lock-step finish their clips in the same step).
        seed: seeds pair picking, the train/val sampling and the reward network init.
        mp_start_method: ``"spawn"`` (default), ``"forkserver"`` or ``"fork"``.
        torch_threads: torch threads of *this* process (the reward forward pass and
            also your RL code's torch); ``None`` leaves torch's setting alone.
        trainer_torch_threads: torch threads of the reward-training process.
            With 2 cores, 1 + 1 keeps the RL process and the trainer off each other's core.
        autosave_prefs: keep labels safe in ``log_dir`` without being asked: journal each
            label before the next pair is asked, and save a snapshot on ``close()``. False:
            labels reach disk only through ``save_prefs()``.
        ckpt_poll_interval: seconds between cheap checks for a newer checkpoint (env process and interface).
        close_timeout: seconds ``close()`` waits for the trainer to save and exit before
            killing it.
        log_level: logging level of drlhp's processes.
        tensorboard_log: write the reward model's scalars (train/val loss and accuracy, labels,
            pairs/s, the raw reward's centre and std) at each checkpoint to a new run
            ``<tensorboard_log>/drlhp_reward_<N>``; give SB3 the same ``tensorboard_log`` to see
            them beside the agent. Needs ``pip install "drlhp[tensorboard]"``.
    """

    segment_length: int = 25
    synthetic_preferences: bool = True
    labelling: Labelling = "terminal"
    web_host: str = "127.0.0.1"
    web_port: int = 8765
    web_pair_timeout: float = 120.0
    collect_prefs: bool = True
    train_reward: bool = True
    log_dir: str = "drlhp_logs"
    resume: bool = False
    prefs_dir: str | None = None
    pretrained_reward_predictor_dir: str | None = None
    obs_transform_func: Callable[[Any], np.ndarray] | None = None
    n_initial_prefs: int = 40
    label_budget: int | None = 1000
    label_schedule: ScheduleKind = DEFAULT_LABEL_SCHEDULE
    label_schedule_steps: int = 1_000_000
    label_schedule_t0: int | None = None
    pair_selection: PairSelection = "random"
    n_candidate_pairs: int = DEFAULT_N_CANDIDATES
    synthetic_teacher: SyntheticTeacher = SyntheticTeacher()
    synthetic_teachers: Mapping[str, SyntheticTeacher] | None = None
    labelling_instructions: str | None = None
    undo_limit: int = DEFAULT_UNDO_LIMIT
    second_opinion_share: float = 0.0
    n_initial_training_steps: int = 50
    max_prefs_in_db: int = 3000
    val_fraction: float = DEFAULT_VAL_FRACTION
    reward_predictor_ckpt_interval: int = 100
    reward_predictor_lr: float = 1e-3
    reward_predictor_batch_size: int = 8
    reward_predictor_dropout: float = DEFAULT_DROPOUT
    reward_predictor_batchnorm: bool = False
    reward_predictor_frame_norm: FrameNormMode = DEFAULT_FRAME_NORM
    reward_predictor_device: str = "cpu"
    reward_net_arch: RewardNetArch = DEFAULT_ARCH
    augment_shift: int = 0
    temporal_crop_min_length: int | None = None
    pseudo_label_threshold: float | None = None
    reward_predictor_weight_decay: float = 1e-4
    reward_predictor_weight_average: float | None = 0.99
    adaptive_l2: bool = True
    ensemble_size: int = DEFAULT_ENSEMBLE_SIZE
    noise_prob: float = 0.1
    estimate_noise_prob: bool = False
    label_filter: float | None = None
    reward_scale: float = 0.05
    reward_centre: RewardCentre = DEFAULT_REWARD_CENTRE
    labeller: Labeller | None = None
    display_zoom: int | None = None
    display_fps: float = 20.0
    human_terminal: str = CONTROLLING_TERMINAL
    prefs_autosave_interval: float | None = None
    max_segs: int = 200
    synthetic_prefs_per_segment: float = DEFAULT_PAIRS_PER_SEGMENT
    segment_queue_size: int | None = None
    seed: int | None = None
    mp_start_method: str = "spawn"
    torch_threads: int | None = 1
    trainer_torch_threads: int | None = 1
    autosave_prefs: bool = True
    ckpt_poll_interval: float = DEFAULT_POLL_INTERVAL
    close_timeout: float = 10.0
    log_level: int = logging.INFO
    tensorboard_log: str | None = None

    def __post_init__(self) -> None:
        _check(self)

    @property
    def schedule(self) -> LabelSchedule:
        """How many labels the run may have asked for by each env step (from the label_* settings)."""
        return LabelSchedule(self.label_budget, self.n_initial_prefs, self.label_schedule, self.label_schedule_steps,
                             self.label_schedule_t0)

    @property
    def augmentation(self) -> Augmentation:
        """How training clips are varied (from augment_shift, temporal_crop_min_length, pseudo_label_threshold)."""
        return Augmentation(self.augment_shift, self.temporal_crop_min_length, self.pseudo_label_threshold)

    @property
    def human_labelling(self) -> bool:
        """True when a person answers through the built-in window + terminal."""
        return self._people_label and self.labelling == "terminal"

    @property
    def web_labelling(self) -> bool:
        """True when people answer on the web page."""
        return self._people_label and self.labelling == "web"

    @property
    def _people_label(self) -> bool:
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


def _check(c: PreferenceConfig) -> None:
    def need(cond: bool, msg: str) -> None:
        if not cond:
            raise ConfigError(msg)

    need(c.segment_length >= 1, f"segment_length must be >= 1, got {c.segment_length}")
    need(0.0 <= c.val_fraction < 1.0, f"val_fraction must be in [0, 1), got {c.val_fraction}")
    need(0.0 <= c.noise_prob < 1.0, f"noise_prob must be in [0, 1), got {c.noise_prob}")
    need(c.label_filter is None or 0.0 < c.label_filter < 0.5,
         f"label_filter must be in (0, 0.5), the probability below which a label is left out (e.g. 0.1), or None "
         f"to train on every label; got {c.label_filter}")
    need(0.0 <= c.reward_predictor_dropout < 1.0, "reward_predictor_dropout must be in [0, 1)")
    need(c.reward_scale > 0, f"reward_scale must be > 0, got {c.reward_scale}")
    for name in ("n_initial_prefs", "n_initial_training_steps"):
        need(getattr(c, name) >= 0, f"{name} must be >= 0, got {getattr(c, name)}")
    for name in ("max_prefs_in_db", "reward_predictor_ckpt_interval", "reward_predictor_batch_size", "ensemble_size"):
        need(getattr(c, name) >= 1, f"{name} must be >= 1, got {getattr(c, name)}")
    need(c.label_budget is None or c.label_budget >= 1, f"label_budget must be >= 1 (or None), got {c.label_budget}")
    _ = c.schedule, c.augmentation  # building them checks their settings
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
    need(c.labelling == "terminal" or not c.synthetic_preferences,
         f"labelling={c.labelling!r} is how people label, but synthetic_preferences=True labels without them; "
         "pass synthetic_preferences=False as well")
    need(0 <= c.web_port <= 65535, f"web_port must be a port number (0: any free port), got {c.web_port}")
    need(c.web_pair_timeout > 0, f"web_pair_timeout must be > 0 seconds, got {c.web_pair_timeout}")
    if c.web_labelling:
        _require_web()
    if c._people_label and (c.display_fps <= 0 or (c.display_zoom is not None and c.display_zoom < 1)):
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
