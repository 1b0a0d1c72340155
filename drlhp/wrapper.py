"""``HumanPreferencesEnvWrapper``: Deep RL from Human Preferences as a gymnasium wrapper."""
from __future__ import annotations

import logging
import multiprocessing
import os
import queue
import time
from typing import Any, Callable, Optional

import gymnasium
import numpy as np
import torch

from drlhp.frames import infer_frame_spec
from drlhp.labellers import Labeller
from drlhp.messages import SavePrefs
from drlhp.pref_interface import InterfaceConfig, run_pref_interface
from drlhp.processes import SharedStats, WorkerError, Workers
from drlhp.reward_predictor import (CHECKPOINT_DIRNAME, CHECKPOINT_FILENAME, NetConfig, RewardPredictor,
                                    checkpoint_path)
from drlhp.segment_channel import SegmentChannel
from drlhp.segments import SegmentBuilder
from drlhp.trainer_process import TrainerConfig, run_reward_trainer

log = logging.getLogger("drlhp")

#: ``info`` key holding the environment's own reward of every step.
TRUE_REWARD_KEY = "drlhp_true_reward"
#: ``info`` key holding the predicted, normalised reward (present while it is returned).
PREDICTED_REWARD_KEY = "drlhp_predicted_reward"


class HumanPreferencesEnvWrapper(gymnasium.Wrapper, gymnasium.utils.RecordConstructorArgs):
    """Returns a reward learned from preferences over pairs of clips of the agent's behaviour.

    Args:
        env: any gymnasium env whose observations are images (HxW, HxWxC, CxHxW,
            or a stack SxHxWxC), or become images or flat vectors through
            ``obs_transform_func``.
        segment_length: frames per clip shown for a preference (25 frames: 1-2 s of Atari).
        synthetic_preferences: label pairs from the env's true reward (the clip with the
            larger true return wins, equal returns are "equally good").
            ``False`` asks a person: the two clips loop side by side in a window while
            the terminal asks L / R / E (Enter: can't compare). Needs a display.
        collect_prefs: start the preference interface and gather labels.
        train_reward: train the reward predictor (on collected and/or loaded labels).
        log_dir: where checkpoints (``reward_predictor_checkpoints/reward_predictor.ckpt``),
            ``train.pkl.gz`` / ``val.pkl.gz`` and ``reward_training_metrics.csv`` go.
        prefs_dir: a directory with ``train.pkl.gz`` / ``val.pkl.gz`` to start from.
        pretrained_reward_predictor_dir: a checkpoint directory (or file) to predict
            rewards with from the first step (and to continue training, with ``train_reward``).
        obs_transform_func: maps each observation to the frame stored and rewarded
            (e.g. ``lambda obs: obs["pixels"]``); called in this process only.
        n_initial_prefs: labels in the training set before reward training starts.
        n_initial_training_steps: reward-training steps before the predicted reward is returned.
        max_prefs_in_db: labels kept for training + validation; oldest evicted first.
        val_fraction: share of labels held out for validation (0.2: every fifth).
        reward_predictor_ckpt_interval: write a checkpoint every this many training steps.
        reward_predictor_lr: Adam learning rate of the reward network.
        reward_predictor_batch_size: labelled pairs per training step.
        reward_predictor_dropout: dropout probability after every hidden layer.
        reward_predictor_batchnorm: add batch normalisation after every hidden layer.
        reward_predictor_weight_decay: L2 penalty (Adam weight decay).
        noise_prob: assumed probability that a label is a uniformly random answer
            (Christiano et al. use 0.1); 0 is the plain Bradley-Terry model.
        reward_scale: standard deviation of the returned predicted reward (mean 0).
            0.05, the paper's Atari value, keeps per-step rewards near the scale of
            clipped Atari rewards summed over a clip.
        labeller: your own labeller (see ``drlhp.labellers.Labeller``) instead of the
            built-in ones; it must be picklable, as it runs in the interface process.
        display_zoom: whole-number zoom of the clips shown to a person (None: ~336 px tall).
        display_fps: frame rate of the clips shown to a person.
        human_terminal: the terminal where a person types answers: the controlling
            terminal by default; name another (e.g. a tmux pane's ``/dev/pts/N``) when
            the program runs without one.
        prefs_autosave_interval: save unsaved labels into ``log_dir`` at most every this
            many seconds (None: every 30 s with a person labelling, never for synthetic labels).
        max_segs: recent segments the preference interface picks pairs from.
        synthetic_prefs_per_segment: synthetic labels asked per new segment.
        segment_queue_size: segments in flight to the interface; when full, new ones are
            dropped (counted in ``stats()``) rather than slowing ``step()``.
        seed: seeds pair picking, the train/val sampling and the reward network init.
        mp_start_method: ``"spawn"`` (default), ``"forkserver"`` or ``"fork"``.
        torch_threads: torch threads of *this* process (the reward forward pass and
            also your RL code's torch); ``None`` leaves torch's setting alone.
        trainer_torch_threads: torch threads of the reward-training process.
            With 2 cores, 1 + 1 keeps the RL process and the trainer off each other's core.
        autosave_prefs: on ``close()``, save labels that arrived since the last
            ``save_prefs()`` into ``log_dir`` (so closing never loses labels).
        ckpt_poll_interval: seconds between cheap checks for a newer checkpoint.
        close_timeout: seconds ``close()`` waits for the trainer to save and exit before
            terminating it.
        log_level: logging level of drlhp's processes.
    """

    def __init__(
        self,
        env: gymnasium.Env,
        segment_length: int = 25,
        synthetic_preferences: bool = True,
        collect_prefs: bool = True,
        train_reward: bool = True,
        log_dir: str = "drlhp_logs",
        prefs_dir: Optional[str] = None,
        pretrained_reward_predictor_dir: Optional[str] = None,
        obs_transform_func: Optional[Callable[[Any], np.ndarray]] = None,
        n_initial_prefs: int = 40,
        n_initial_training_steps: int = 50,
        max_prefs_in_db: int = 3000,
        val_fraction: float = 0.2,
        reward_predictor_ckpt_interval: int = 100,
        reward_predictor_lr: float = 3e-4,
        reward_predictor_batch_size: int = 16,
        reward_predictor_dropout: float = 0.5,
        reward_predictor_batchnorm: bool = False,
        reward_predictor_weight_decay: float = 0.0,
        noise_prob: float = 0.0,
        reward_scale: float = 0.05,
        labeller: Optional[Labeller] = None,
        display_zoom: Optional[int] = None,
        display_fps: float = 20.0,
        human_terminal: str = "/dev/tty",
        prefs_autosave_interval: Optional[float] = None,
        max_segs: int = 200,
        synthetic_prefs_per_segment: float = 1.0,
        segment_queue_size: int = 8,
        seed: Optional[int] = None,
        mp_start_method: str = "spawn",
        torch_threads: Optional[int] = 1,
        trainer_torch_threads: Optional[int] = 1,
        autosave_prefs: bool = True,
        ckpt_poll_interval: float = 1.0,
        close_timeout: float = 10.0,
        log_level: int = logging.INFO,
    ) -> None:
        gymnasium.utils.RecordConstructorArgs.__init__(self, **{k: v for k, v in locals().items() if k not in ("self", "env", "__class__")})
        gymnasium.Wrapper.__init__(self, env)
        self._closed = True  # until the processes exist, close() has nothing to stop
        _check_args(locals())
        self._transform = obs_transform_func or (lambda obs: obs)
        self.frame_spec = infer_frame_spec(self._transform(env.observation_space.sample()))
        human = None
        if not synthetic_preferences and collect_prefs and labeller is None:
            human = _human_config(self.frame_spec, display_zoom, display_fps, human_terminal, log_dir)
        if prefs_autosave_interval is None and human is not None:
            prefs_autosave_interval = 30.0
        self.log_dir = log_dir
        self.segment_length = segment_length
        self.n_initial_training_steps = n_initial_training_steps
        self.close_timeout = close_timeout
        self._ckpt_poll_interval = ckpt_poll_interval
        self._ckpt_path = os.path.join(log_dir, CHECKPOINT_DIRNAME, CHECKPOINT_FILENAME)
        # A checkpoint already in log_dir is from an earlier run: only load ones this run writes.
        self._ckpt_seen: Optional[tuple] = _file_version(self._ckpt_path)
        self._next_ckpt_poll = 0.0
        self._user_choice: Optional[bool] = None  # explicit switch_to_*() wins over the automatic switch
        self._predictor: Optional[RewardPredictor] = None
        if torch_threads:
            torch.set_num_threads(torch_threads)
        if seed is not None:
            torch.manual_seed(seed)

        pretrained_ckpt = None
        if pretrained_reward_predictor_dir:
            pretrained_ckpt = checkpoint_path(pretrained_reward_predictor_dir)
            self._predictor = RewardPredictor.load(pretrained_ckpt)
            if self._predictor.config.frame_spec != self.frame_spec:
                raise ValueError(
                    f"The pretrained reward predictor expects frames {self._predictor.config.frame_spec}, "
                    f"but this env gives {self.frame_spec}. Use the same env and obs_transform_func it was trained with."
                )
            self._user_choice = True

        self._builder = SegmentBuilder(self.frame_spec, segment_length) if collect_prefs else None
        self._episode, self._episode_steps = 0, 0
        self._workers: Optional[Workers] = None
        self._channel: Optional[SegmentChannel] = None
        if not (collect_prefs or train_reward):
            return

        ctx = multiprocessing.get_context(mp_start_method)
        self._stats = SharedStats(ctx)
        self._workers = Workers(ctx, log_level)
        self._closed = False
        self._pref_queue = ctx.Queue(64)
        self._commands, self._replies = ctx.Queue(), ctx.Queue()
        self._interface_stop, self._trainer_stop = ctx.Event(), ctx.Event()
        trainer_config = TrainerConfig(
            net=NetConfig(self.frame_spec, reward_predictor_dropout, reward_predictor_batchnorm),
            log_dir=log_dir, collect_prefs=collect_prefs, train_reward=train_reward, prefs_dir=prefs_dir,
            pretrained_ckpt=pretrained_ckpt, max_prefs_in_db=max_prefs_in_db, val_fraction=val_fraction,
            n_initial_prefs=n_initial_prefs, n_initial_training_steps=n_initial_training_steps,
            ckpt_interval=reward_predictor_ckpt_interval, batch_size=reward_predictor_batch_size,
            lr=reward_predictor_lr, noise_prob=noise_prob, weight_decay=reward_predictor_weight_decay,
            reward_scale=reward_scale, torch_threads=trainer_torch_threads, seed=seed, autosave_prefs=autosave_prefs,
            autosave_interval=prefs_autosave_interval,
        )
        try:
            self._workers.start("reward_trainer", run_reward_trainer, trainer_config, self._pref_queue,
                                self._commands, self._replies, self._trainer_stop, self._stats,
                                stop_event=self._trainer_stop)
            if collect_prefs:
                self._channel = SegmentChannel(ctx, self.frame_spec, segment_length, segment_queue_size)
                interface_config = InterfaceConfig(max_segs, seed, labeller, synthetic_prefs_per_segment, human)
                self._workers.start("pref_interface", run_pref_interface, interface_config, self._channel,
                                    self._pref_queue, self._interface_stop, self._stats,
                                    stop_event=self._interface_stop)
            # Wait until the trainer has loaded prefs_dir / the pretrained checkpoint, so
            # a bad file fails here, with its own message, rather than on a later step.
            self._await_reply("ready", timeout=120.0)
        except BaseException:
            self.close()
            raise

    # -- gymnasium API ----------------------------------------------------------
    def reset(self, *, seed: Optional[int] = None, options: Optional[dict] = None):
        self._check_workers()
        self._end_episode()
        return self.env.reset(seed=seed, options=options)

    def step(self, action):
        self._check_workers()
        obs, reward, terminated, truncated, info = self.env.step(action)
        frame = self._transform(obs)
        if self._builder is not None:
            self._episode_steps += 1
            segment = self._builder.add(frame, float(reward))
            if segment is not None:
                self._channel.send(*segment, self._episode)
            if terminated or truncated:
                self._end_episode()
        info = dict(info)
        info[TRUE_REWARD_KEY] = reward
        self._maybe_reload_predictor()
        if self.using_reward_from_predictor:
            reward = self._predictor.reward(frame)
            info[PREDICTED_REWARD_KEY] = reward
        return obs, reward, terminated, truncated, info

    def _end_episode(self) -> None:
        # Called at the end of an episode and again by the reset() that follows: count it once.
        if self._builder is not None and self._episode_steps:
            self._builder.end_episode()
            self._episode, self._episode_steps = self._episode + 1, 0

    # -- which reward ------------------------------------------------------------
    @property
    def using_reward_from_predictor(self) -> bool:
        """True while ``step()`` returns the predicted, normalised reward."""
        if self._predictor is None:
            return False
        if self._user_choice is not None:
            return self._user_choice
        return self._predictor.training_step >= self.n_initial_training_steps

    def switch_to_true_reward(self) -> None:
        """Return the environment's reward from now on (until ``switch_to_predicted_reward()``)."""
        self._user_choice = False

    def switch_to_predicted_reward(self) -> None:
        """Return the predicted reward from now on; needs a checkpoint to exist."""
        self._next_ckpt_poll = 0.0
        self._maybe_reload_predictor()
        if self._predictor is None:
            raise RuntimeError(
                f"No reward predictor yet: no checkpoint at {self._ckpt_path}. Wait until the trainer "
                "has written one (stats()['training_steps']), or pass pretrained_reward_predictor_dir=."
            )
        self._user_choice = True

    def _maybe_reload_predictor(self) -> None:
        now = time.monotonic()
        if now < self._next_ckpt_poll or self._workers is None:
            return
        self._next_ckpt_poll = now + self._ckpt_poll_interval
        version = _file_version(self._ckpt_path)
        if version is not None and version != self._ckpt_seen:
            self._predictor = RewardPredictor.load(self._ckpt_path)
            self._ckpt_seen = version

    # -- preferences ---------------------------------------------------------------
    def save_prefs(self, timeout: float = 120.0) -> list[str]:
        """Write ``train.pkl.gz`` and ``val.pkl.gz`` into ``log_dir`` (atomically); returns their paths."""
        if self._closed or self._workers is None:
            raise RuntimeError("save_prefs() needs a running wrapper with collect_prefs=True or prefs_dir=.")
        self._commands.put(SavePrefs(self.log_dir))
        result = self._await_reply("ok", timeout)
        log.info("saved %d training and %d validation preferences to %s", result["n_train"], result["n_val"], self.log_dir)
        return result["paths"]

    def _await_reply(self, expected: str, timeout: float) -> Any:
        """The trainer's next reply, checking all the while that the workers are alive."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self._check_workers()
            try:
                status, result = self._replies.get(timeout=0.1)
            except queue.Empty:
                continue
            if status != expected:
                raise WorkerError(f"drlhp's reward_trainer process reported an error:\n{result}")
            return result
        raise TimeoutError(f"drlhp's reward_trainer process did not answer within {timeout} s")

    def stats(self) -> dict:
        """Counters: segments sent/dropped, labels, preferences received, reward-training steps."""
        out = {"segments_sent": 0, "segments_dropped": 0}
        if self._channel is not None:
            out.update(segments_sent=self._channel.n_sent, segments_dropped=self._channel.n_dropped)
        if self._workers is not None:
            out.update(self._stats.as_dict())
        out["predictor_training_step"] = self._predictor.training_step if self._predictor else None
        return out

    # -- lifecycle -------------------------------------------------------------------
    def _check_workers(self) -> None:
        if not self._closed:
            self._workers.check()

    def close(self) -> None:
        """Stop the processes (letting the trainer save unsaved labels), then close the env. Idempotent."""
        if not self._closed:
            self._closed = True
            self._shutdown_workers()
        super().close()

    def _shutdown_workers(self) -> None:
        workers = self._workers
        # Interface first, so every label it made is in the trainer's queue before the trainer stops.
        self._interface_stop.set()
        workers.stop("pref_interface", timeout=5.0)
        try:
            self._pref_queue.put(None, timeout=1.0)  # in case the interface died before saying so
        except queue.Full:
            pass
        self._trainer_stop.set()
        workers.stop("reward_trainer", timeout=self.close_timeout)
        error = workers.pending_error()
        workers.close()
        for q in (self._pref_queue, self._commands, self._replies):
            q.cancel_join_thread()
            q.close()
        if self._channel is not None:
            self._channel.close()
        if error:
            raise WorkerError(error)

    def __enter__(self) -> "HumanPreferencesEnvWrapper":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self) -> None:
        # A safety net only: call close() (or use ``with``) to save labels reliably.
        if not getattr(self, "_closed", True):
            try:
                self.close()
            except Exception:
                pass


def _file_version(path: str) -> Optional[tuple]:
    """What changes when a file is replaced (one stat call), or None if there is no file."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return st.st_mtime_ns, st.st_size, st.st_ino


def _check_args(a: dict) -> None:
    def need(cond: bool, msg: str) -> None:
        if not cond:
            raise ValueError(msg)

    need(a["segment_length"] >= 1, f"segment_length must be >= 1, got {a['segment_length']}")
    need(0.0 <= a["val_fraction"] < 1.0, f"val_fraction must be in [0, 1), got {a['val_fraction']}")
    need(0.0 <= a["noise_prob"] < 1.0, f"noise_prob must be in [0, 1), got {a['noise_prob']}")
    need(0.0 <= a["reward_predictor_dropout"] < 1.0, "reward_predictor_dropout must be in [0, 1)")
    need(a["reward_scale"] > 0, f"reward_scale must be > 0, got {a['reward_scale']}")
    for name in ("n_initial_prefs", "n_initial_training_steps"):
        need(a[name] >= 0, f"{name} must be >= 0, got {a[name]}")
    for name in ("max_prefs_in_db", "reward_predictor_ckpt_interval", "reward_predictor_batch_size", "segment_queue_size"):
        need(a[name] >= 1, f"{name} must be >= 1, got {a[name]}")
    need(a["max_segs"] >= 2, f"max_segs must be >= 2 (a pair needs two segments), got {a['max_segs']}")
    need(a["mp_start_method"] in multiprocessing.get_all_start_methods(),
         f"mp_start_method {a['mp_start_method']!r} is not available here; use one of {multiprocessing.get_all_start_methods()}")
    if a["prefs_dir"] is not None:
        need(os.path.isdir(a["prefs_dir"]), f"prefs_dir {a['prefs_dir']!r} is not a directory; point it at the "
             "log_dir where save_prefs() wrote train.pkl.gz and val.pkl.gz")
    if a["pretrained_reward_predictor_dir"] is not None:
        ckpt = checkpoint_path(a["pretrained_reward_predictor_dir"])
        need(os.path.isfile(ckpt), f"pretrained_reward_predictor_dir: no checkpoint at {ckpt!r}; point it at "
             "<log_dir>/reward_predictor_checkpoints of a previous run")
    need(a["collect_prefs"] or not a["train_reward"] or a["prefs_dir"] is not None,
         "train_reward=True with collect_prefs=False has nothing to train on: pass prefs_dir= (saved preferences)")


def _human_config(spec, zoom, fps, terminal, log_dir):
    """Check that a person can be shown clips and asked here; raise a clear error if not."""
    from drlhp.display import display_problem
    from drlhp.human_labeller import HumanConfig, import_cv2_gui
    from drlhp.terminal import terminal_problem

    if not spec.is_image:
        raise ValueError("Human preferences need image observations to show; pass obs_transform_func= "
                         "returning an image (HxW, HxWxC, CxHxW or SxHxWxC)")
    problem = display_problem()
    if problem:
        raise RuntimeError(
            f"Human preferences show clips in a window, but {problem}. Run on a desktop, with ssh -X, "
            "or under a virtual display (Xvfb :99 & export DISPLAY=:99) and view it with a VNC client; "
            "or collect with synthetic_preferences=True.")
    problem = terminal_problem(terminal)
    if problem:
        raise RuntimeError(
            f"Human preferences are typed in a terminal, but {problem}. Start the program from a terminal "
            "(a shell or tmux; stdin may be redirected), or pass human_terminal='/dev/pts/N' naming the "
            "terminal to ask in (`tty` prints a terminal's name).")
    import_cv2_gui()
    if fps <= 0 or (zoom is not None and zoom < 1):
        raise ValueError(f"display_fps must be > 0 and display_zoom >= 1, got {fps}, {zoom}")
    return HumanConfig(spec, zoom, fps, terminal, os.path.join(log_dir, "human_labels.csv"))

