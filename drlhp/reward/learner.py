"""A reward network learning from labelled pairs, N steps at a time: the network, its optimiser, adaptive L2,
the normaliser fitted at each checkpoint, and the checkpoints themselves.

It trains on whatever databases it is handed and knows nothing of where they come from: the reward-training
process hands it the run's labels as they grow (``drlhp.runtime.trainer_process``), ``drlhp train-reward``
a saved database (``drlhp.cli.offline``). Checkpoints go to ``<log_dir>/reward_predictor_checkpoints/``:
the network with its normaliser (what every process loads to reward steps) and Adam's state (so a resumed
run trains on as if never stopped).
"""
from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterator
from contextlib import nullcontext
from dataclasses import asdict, dataclass

import numpy as np

from drlhp.errors import NoLabelsError
from drlhp.label_store.database import PrefDB
from drlhp.reward.augment import Augmentation
from drlhp.reward.bootstrap import member_batches
from drlhp.reward.label_noise import LabelFilter, estimate_noise_prob, label_probabilities
from drlhp.reward.normaliser import DEFAULT_REWARD_CENTRE, MIN_STD, RewardCentre, RewardNormaliser, centre_gap
from drlhp.reward.optimiser import RewardOptimiser, adapted_l2
from drlhp.reward.predictor import NetConfig, RewardPredictor, check_checkpoint_frames
from drlhp.reward.torch_setup import torch_device
from drlhp.reward.weight_average import WeightAverage
from drlhp.storage.layout import LogDir

log = logging.getLogger("drlhp.learner")

#: An L2 penalty this large (500x the default start) is the likeliest reason a network's output goes flat.
LARGE_L2 = 0.05


@dataclass(frozen=True)
class LearnerConfig:
    """How a reward network is trained (each from the run's ``drlhp.PreferenceConfig``; see ``drlhp.runtime.settings``).

    ``n_initial_training_steps``: a checkpoint at this step too (the step from which the run's predicted reward is
    used). ``device``: a torch device, or ``"auto"``.
    """

    net: NetConfig
    lr: float
    batch_size: int
    noise_prob: float
    weight_decay: float
    adaptive_l2: bool
    adaptive_l2_factor: float
    augmentation: Augmentation
    reward_scale: float
    reward_centre: RewardCentre
    ckpt_interval: int
    n_initial_training_steps: int
    seed: int | None
    device: str
    weight_average: float | None  # the decay of the weights' average that checkpoints hold (None: the weights)
    estimate_noise_prob: bool  # refit noise_prob to the validation labels at each checkpoint (label_noise)
    label_filter: float | None  # leave out training pairs whose label the network finds less likely than this
    label_flip: float | None  # flip the labels of training pairs the network finds less likely than this
    n_val_pairs: int = 128  # validation pairs scored at each checkpoint
    n_normaliser_clips: int = 512  # clips the normaliser is fitted on (fit_normaliser)


@dataclass(frozen=True)
class Evaluation:
    """How the network does at a checkpoint: its losses and accuracies, the L2 penalty it trains on from here,
    and the pairs trained per second since the last checkpoint."""

    training_step: int
    n_train_labels: int
    n_val_labels: int
    train_loss: float  # the mean over the training steps since the last checkpoint
    train_accuracy: float
    val_loss: float  # nan without validation pairs
    val_accuracy: float
    l2_coefficient: float
    pairs_per_second: float
    raw_reward_centre: float  # the normaliser's (the raw reward it maps to 0), averaged over the members
    raw_reward_std: float
    centre_gap: float  # the members' mean (mean - median) / std of the raw reward (normaliser.centre_gap)
    noise_prob: float = float("nan")  # the share of random answers the loss assumes from here
    pairs_left_out: int = 0  # training pairs the label filter leaves out from here
    pairs_flipped: int = 0  # training pairs trained on with the label flipped from here


class Learner:
    """Trains a reward network (ensemble) in ``log_dir``: ``train(n_steps, train_db, val_db)``.

    It starts from the run's own checkpoint when ``resume`` finds one (with its optimiser state), else from
    ``pretrained_ckpt`` (a checkpoint file), else from a new network.
    """

    def __init__(self, config: LearnerConfig, log_dir: str, pretrained_ckpt: str | None = None,
                 resume: bool = False) -> None:
        self.config = config
        self.files = LogDir(log_dir)
        self.rng = np.random.default_rng(config.seed)
        self.average = WeightAverage(config.weight_average) if config.weight_average is not None else None
        self.optimiser = self._load(pretrained_ckpt, resume)
        self.ckpt_step = self.step  # the step of the last checkpoint (or of the one started from)
        # The last validation accuracy measured and its step, for a checkpoint not scored itself (the one at close).
        self._last_val: tuple[float | None, int | None] = (None, None)
        self._recent: dict[str, list[float]] = {"loss": [], "accuracy": []}
        self._pairs_trained = 0
        self._rate_clock = time.monotonic()
        self._warned_flat = False
        self._centre_gaps = np.full(1, np.nan)  # of the last normaliser fitted
        self.label_filter = LabelFilter(config.label_filter, config.label_flip) \
            if config.label_filter is not None or config.label_flip is not None else None

    def _load(self, pretrained_ckpt: str | None, resume: bool) -> RewardOptimiser:
        c = self.config
        own = resume and os.path.exists(self.files.checkpoint)
        ckpt = self.files.checkpoint if own else pretrained_ckpt
        predictor = RewardPredictor.load(ckpt) if ckpt else RewardPredictor(c.net)
        check_checkpoint_frames(predictor, c.net.frame_spec, ckpt)
        predictor.to(torch_device(c.device))
        if own and self.average is not None:
            self.average.restart_from(predictor.net)  # the checkpoint holds the average; load_state the weights
        optimiser = RewardOptimiser(predictor, c.lr, c.noise_prob, c.weight_decay, augmentation=c.augmentation,
                                    seed=c.seed)
        if own and optimiser.load_state(self.files.trainer_state):
            log.info("resumed the reward network at training step %d, with its optimiser state",
                     predictor.training_step)
        return optimiser

    @property
    def predictor(self) -> RewardPredictor:
        """The network being trained, with the normaliser of the last checkpoint."""
        return self.optimiser.predictor

    @property
    def step(self) -> int:
        """Training steps the network has taken (those of the checkpoint it started from included)."""
        return self.optimiser.predictor.training_step

    # -- training --------------------------------------------------------------------------
    def train(self, n_steps: int, train_db: PrefDB, val_db: PrefDB,
              on_step: Callable[[int], None] | None = None) -> list[Evaluation]:
        """``n_steps`` gradient steps on ``train_db``'s pairs, with a checkpoint (evaluated on ``val_db``) at each
        step that is due one: every ``ckpt_interval`` steps, and at ``n_initial_training_steps``. Returns their
        evaluations.

        ``on_step(step)`` is called after each gradient step, before its checkpoint.
        """
        if len(train_db) == 0:
            raise NoLabelsError("no training pairs to train the reward network on")
        c, evaluations = self.config, []
        for _ in range(n_steps):
            idx = self._batch_indices(train_db)
            frames_a, frames_b, labels = _by_member(train_db, idx)
            if self.label_filter is not None:
                labels = self.label_filter.as_trained(train_db, idx, labels)
            loss, acc = self.optimiser.train_step(frames_a, frames_b, labels, self._unlabelled(train_db))
            self._recent["loss"].append(loss)
            self._recent["accuracy"].append(acc)
            self._pairs_trained += c.batch_size
            if self.average is not None:
                self.average.update(self.predictor.net, self.step)
            if on_step is not None:
                on_step(self.step)
            if self.step % c.ckpt_interval == 0 or self.step == c.n_initial_training_steps:
                evaluations.append(self.checkpoint(train_db, val_db))
        return evaluations

    def _batch_indices(self, db: PrefDB) -> np.ndarray:
        """Each member's batch ``(M, batch)`` of indices into ``db``: of the pairs the label filter trusts, if any
        (all if it trusts none)."""
        c = self.config
        trusted = self.label_filter.trusted(db) if self.label_filter is not None else None
        if trusted is None or not 0 < len(trusted) < len(db):
            return member_batches(db.prefs, self.optimiser.n_members, c.batch_size, self.rng, c.seed or 0)
        pairs = [db.prefs[i] for i in trusted]
        return trusted[member_batches(pairs, self.optimiser.n_members, c.batch_size, self.rng, c.seed or 0)]

    def _unlabelled(self, db: PrefDB) -> tuple[np.ndarray, np.ndarray] | None:
        """For pseudo-labels: each member's new pairings of the training clips, ``(M, batch, length, ...)`` each."""
        if self.config.augmentation.pseudo_label_threshold is None:
            return None
        clips = list(db.segments.values())
        pick = self.rng.integers(0, len(clips), size=(self.optimiser.n_members, self.config.batch_size, 2))
        unpacked = {i: clips[i].frames for i in np.unique(pick)}
        frames = np.stack([unpacked[i] for i in pick.ravel()]).reshape(*pick.shape, *unpacked[pick.flat[0]].shape)
        return frames[:, :, 0], frames[:, :, 1]

    # -- checkpoints ---------------------------------------------------------------------------
    @property
    def checkpointed(self) -> bool:
        """Whether the checkpoint on disk holds the network as it is now."""
        return self.ckpt_step == self.step

    def checkpoint(self, train_db: PrefDB, val_db: PrefDB, evaluate: bool = True) -> Evaluation:
        """Fit the normaliser on clips of ``train_db``, write the checkpoint and the optimiser state;
        then, unless ``evaluate`` is False, score the network on ``val_db`` and adapt the L2 penalty.

        With a weight average, the checkpoint holds the average, and it is the average that is scored; the optimiser
        state holds the weights as trained, which a resumed run trains on."""
        self.optimiser.save_state(self.files.trainer_state)
        self.ckpt_step = self.step
        val_loss = val_acc = float("nan")
        with self.average.applied(self.predictor.net) if self.average is not None else nullcontext():
            self._fit_normaliser(train_db)
            if evaluate and len(val_db):  # scored before it is written: the file says how it did
                val_loss, val_acc = self.optimiser.evaluate(self._batches(val_db))
                if self.config.adaptive_l2:
                    # Keep validation loss 1.1-1.5x training loss (both without dropout) by scaling the L2 penalty.
                    train_loss, _ = self.optimiser.evaluate(self._batches(train_db))
                    self.optimiser.weight_decay = adapted_l2(self.optimiser.weight_decay, val_loss, train_loss,
                                                               self.config.adaptive_l2_factor)
            if not np.isnan(val_acc):
                self._last_val = (float(val_acc), self.step)
            self.predictor.provenance = self._provenance(train_db, val_db)
            self.predictor.save(self.files.checkpoint)
            self._judge_labels(train_db, val_db)
        now, normaliser = time.monotonic(), self.predictor.normaliser
        evaluation = Evaluation(
            self.step, len(train_db), len(val_db), float(np.mean(self._recent["loss"] or [np.nan])),
            _mean_ignoring_nan(self._recent["accuracy"]), val_loss, val_acc, self.optimiser.weight_decay,
            self._pairs_trained / max(now - self._rate_clock, 1e-9), float(np.mean(normaliser.centre)),
            float(np.mean(normaliser.std)), float(np.mean(self._centre_gaps)), self.optimiser.noise_prob,
            self.label_filter.n_left_out if self.label_filter is not None else 0,
            self.label_filter.n_flipped if self.label_filter is not None else 0)
        self._recent = {"loss": [], "accuracy": []}
        self._pairs_trained, self._rate_clock = 0, now
        return evaluation

    def _provenance(self, train_db: PrefDB, val_db: PrefDB) -> dict:
        """What the checkpoint says it was trained on and with (``RewardPredictor.provenance``)."""
        settings = asdict(self.config)
        del settings["net"]  # the checkpoint's net_config
        val_accuracy, val_step = self._last_val
        return {"train_labels": len(train_db), "val_labels": len(val_db), "val_accuracy": val_accuracy,
                "val_accuracy_step": val_step, "settings": settings}

    def _judge_labels(self, train_db: PrefDB, val_db: PrefDB) -> None:
        """The label-noise levers at a checkpoint, judged by the network it holds: the share of random answers the
        validation labels suggest, and which training pairs to leave out (``drlhp.reward.label_noise``)."""
        if self.config.estimate_noise_prob and len(val_db):
            self.optimiser.noise_prob = estimate_noise_prob(
                *label_probabilities(self.optimiser.pair_returns, val_db), floor=self.config.noise_prob)
        if self.label_filter is not None:
            self.label_filter.judge(label_probabilities(self.optimiser.pair_returns, train_db)[0], train_db)

    def _fit_normaliser(self, db: PrefDB) -> None:
        """A fixed centre (0) and std over frames of the labelled clips, so the agent's reward keeps its scale as the
        network changes."""
        self.predictor.normaliser, self._centre_gaps = fit_normaliser(
            self.predictor, db, self.config.n_normaliser_clips, self.config.reward_scale, self.rng,
            self.config.reward_centre)
        self._warn_if_flat(np.array(self.predictor.normaliser.std))

    def _warn_if_flat(self, member_stds: np.ndarray) -> None:
        """Say so (once) when a member's output hardly varies over the labelled clips: it rewards nothing; with the
        likeliest cause for this network."""
        if self._warned_flat or member_stds.min() >= MIN_STD:
            return
        self._warned_flat = True
        l2 = self.optimiser.weight_decay
        if l2 >= LARGE_L2:
            # Seen on HalfCheetah's MLP on its first 74 labels: six times the penalty reached 0.44-0.67 and the output
            # went flat; flat, the train and validation losses are equal, so adaptive L2 lowered it and it recovered.
            advice = ("the L2 penalty has grown large: on few labels adaptive_l2 can raise it until the output goes "
                      "flat, then lowers it again, so this usually passes within a few thousand steps; if it lasts, "
                      "set adaptive_l2=False or ask more labels before training starts (n_initial_prefs)")
        elif self.predictor.config.frame_spec.is_image:
            advice = ("its units have probably died: on frames with a large flat background (Atari) keep "
                      "reward_predictor_frame_norm='centre' (the default) or try reward_predictor_batchnorm=True")
        else:
            advice = "its units have probably died: try a lower reward_predictor_lr"
        log.warning("the reward network's output hardly varies over the labelled clips (std %.1g at training step %d, "
                    "L2 penalty %.2g), so while it does it adds nothing to the agent's reward (0 if no ensemble member "
                    "varies), and the trainer's train loss reads 0.693 (ln 2). Likely cause: %s.",
                    member_stds.min(), self.step, l2, advice)

    def _batches(self, db: PrefDB) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """``n_val_pairs`` random pairs of ``db``, unpacked a training batch at a time (bounded memory)."""
        n, size = self.config.n_val_pairs, self.config.batch_size
        idx = self.rng.integers(0, len(db), size=n) if len(db) > n else np.arange(len(db))
        for i in range(0, len(idx), size):
            yield db.batch(idx[i:i + size])


def fit_normaliser(predictor: RewardPredictor, db: PrefDB, n_clips: int, scale: float, rng: np.random.Generator,
                   centre: RewardCentre = DEFAULT_REWARD_CENTRE) -> tuple[RewardNormaliser, np.ndarray]:
    """The normaliser of ``predictor``'s rewards on every frame of ``n_clips`` random clips of ``db``, and each
    member's :func:`~drlhp.reward.normaliser.centre_gap` there (where its mean lies against its median).

    Why so many clips: fitted on a few dozen, the normaliser alone moved the agent's discounted return on Pong at
    every checkpoint by more than the training steps between checkpoints did; on hundreds, far less
    (``benchmarks/experiments/reward_signal.py switch``; the figures are in docs/history.md, "How far the reward jumps
    at each checkpoint").
    """
    raw = sample_member_rewards(predictor, db, n_clips, rng)
    return RewardNormaliser.fit(raw, scale, centre), centre_gap(raw)


def sample_member_rewards(predictor: RewardPredictor, db: PrefDB, n_clips: int,
                          rng: np.random.Generator) -> np.ndarray:
    """Each member's raw reward ``(N, M)`` on every frame of ``n_clips`` random clips of ``db`` (all if fewer)."""
    clips = list(db.segments.values())
    pick = rng.choice(len(clips), min(len(clips), n_clips), replace=False)
    lengths = [clips[i].packed_frames[1][0] for i in pick]
    # Clips unpacked a forward pass at a time: the frames of all 512 Atari clips would take 360 MB at once, and
    # more clips than a pass takes would only be more frames unpacked at once; the rewards go into one array made
    # first, as in member_rewards (docs/benchmarks.md, "Memory").
    chunk = max(1, predictor.forward_batch // max(lengths, default=1))
    rewards, start = np.empty((sum(lengths), predictor.n_members)), 0
    for j in range(0, len(pick), chunk):
        frames = np.concatenate([clips[i].frames for i in pick[j:j + chunk]])
        rewards[start:start + len(frames)] = predictor.member_rewards(frames)
        start += len(frames)
    return rewards


def _by_member(db: PrefDB, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The pairs ``idx`` ``(M, batch)`` of ``db``: frames ``(M, batch, length, ...)`` of each side and labels."""
    frames_a, frames_b, labels = db.batch(idx.ravel())
    shape = idx.shape
    return frames_a.reshape(*shape, *frames_a.shape[1:]), frames_b.reshape(*shape, *frames_b.shape[1:]), \
        labels.reshape(shape)


def _mean_ignoring_nan(values: list[float]) -> float:
    """Batches of only tie labels have no accuracy (NaN); average the others."""
    kept = [v for v in values if not np.isnan(v)]
    return float(np.mean(kept)) if kept else float("nan")
