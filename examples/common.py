"""What the examples share: their arguments, and the run itself -- a random policy plays
until the reward predictor is ready (or, with ``--unsupervised-steps``, the agent explores first),
then the agent learns from predicted rewards only.

The envs are an SB3 VecEnv of ``--n-envs`` envs; one drlhp pipeline (two background
processes, one database, one reward network) serves them all.

A run lives in its log_dir: drlhp's labels and reward network, the agent (``agent/agent.pt``, every
``--save-every`` agent steps, at the end, and when stopped by SIGTERM) and the learning curve
(``learning_curve.csv``, a row per finished episode). ``--resume --log-dir DIR`` goes on with all of them where
they were."""
from __future__ import annotations

import drlhp.frontends.quiet_gym  # noqa: F401  # isort: skip  (first: SB3, imported below, imports gym)

import argparse
import contextlib
import dataclasses
import json
import os
import shlex
import shutil
import signal
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable

import gymnasium
import numpy as np
import torch
from agent_checkpoint import (
    AgentCheckpointError,
    agent_checkpoint_path,
    kept_agent_path,
    load_agent_state,
    restore_agent,
    save_agent,
)
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.vec_env import VecEnv
from standardised_reward import standardise_rewards

from drlhp import SyntheticTeacher
from drlhp.cli.setting_flags import add_setting_flag
from drlhp.config import PreferenceConfig, setting_field
from drlhp.errors import ConfigError, MissingExtraError, WriteError
from drlhp.learning_curve import LearningCurveWriter, learning_curve_path, next_session
from drlhp.sb3 import (
    HumanPreferencesLogger,
    HumanPreferencesVecEnvWrapper,
    KeepRewardModels,
    NoveltyReplayBuffer,
    RelabelReplayBuffer,
)
from drlhp.storage.files import prepare_log_dir, writing

#: With unsupervised_steps, the off-policy agent's random steps before it learns (PEBBLE's): it learns to explore after.
PEBBLE_RANDOM_STEPS = 1_000


def drlhp_setting(name: str, default: Any = dataclasses.MISSING, also: str = "") -> Any:
    """An example argument that is drlhp's setting ``name``: its flag and help are the declared ones (``also``: what
    else the examples do with it), and so is its default unless ``default`` is given."""
    declared = setting_field(name).default
    return field(default=declared if default is dataclasses.MISSING else default,
                 metadata={"setting": name, "also": also})


@dataclass
class Args:
    total_timesteps: int = field(default=30_000, metadata={"help": "agent steps in total (all envs)"})
    n_envs: int = field(default=8, metadata={"help": "envs stepped together, all feeding one drlhp pipeline"})
    log_dir: str = drlhp_setting("log_dir", also="the examples keep the agent and its learning curve there too")
    resume: bool = drlhp_setting("resume", also="the examples' agent too, from its last save, and its learning curve")
    save_every: int = field(default=10_000, metadata={
        "help": "save the agent every this many agent steps (and at the end; 0: only at the end)"})
    keep_agents: bool = field(default=False, metadata={
        "help": "also keep each saved agent as agent/agent_<agent steps>.pt (policies of every skill the run "
                "passed through, e.g. for benchmarks/experiments/reward_signal.py)"})
    keep_reward_models: int = field(default=0, metadata={
        "help": "also keep the agent's reward model every this many agent steps, as reward_history/step_<agent "
                "steps>.ckpt (drlhp.sb3.KeepRewardModels: what the reward was when a run fell or stalled); 0: none"})
    seed: int = drlhp_setting("seed", 0, also="the examples seed the envs and the agent with it too")
    # drlhp's settings: each flag, help and default as declared (drlhp.config), unless an example says otherwise.
    segment_length: int = drlhp_setting("segment_length")
    clips_span_lives: bool = drlhp_setting("clips_span_lives")
    unsupervised_steps: int = drlhp_setting("unsupervised_steps", also=(
        "the examples' off-policy agent explores then, acting at random for its first "
        f"{PEBBLE_RANDOM_STEPS:,} (PEBBLE's), rather than only at random"))
    n_initial_prefs: int = drlhp_setting("n_initial_prefs")
    label_budget: int | None = drlhp_setting("label_budget", 300)
    label_schedule: str = drlhp_setting("label_schedule")
    pair_selection: str = drlhp_setting("pair_selection")
    ensemble_size: int = drlhp_setting("ensemble_size")
    reward_net_arch: str = drlhp_setting("reward_net_arch")
    reward_predictor_batchnorm: bool = drlhp_setting("reward_predictor_batchnorm")
    reward_predictor_frame_norm: str = drlhp_setting("reward_predictor_frame_norm")
    reward_centre: str = drlhp_setting("reward_centre")
    reward_scale: float = drlhp_setting("reward_scale")
    reward_predictor_weight_average: float | None = drlhp_setting("reward_predictor_weight_average")
    adaptive_l2_factor: float = drlhp_setting("adaptive_l2_factor")
    training_steps_per_label: int | None = drlhp_setting("training_steps_per_label")
    estimate_noise_prob: bool = drlhp_setting("estimate_noise_prob")
    label_filter: float | None = drlhp_setting("label_filter")
    label_flip: float | None = drlhp_setting("label_flip")
    n_initial_training_steps: int = drlhp_setting("n_initial_training_steps")
    web_port: int = drlhp_setting("web_port")
    life_loss_penalty: float = field(default=0.0, metadata={
        "help": "Atari: the synthetic teacher counts each life lost as this many points against the clip (the "
                "agent's score is unchanged); 0: the score alone"})
    teacher_mistake_rate: float = field(default=SyntheticTeacher.mistake_rate, metadata={
        "help": "the synthetic teacher answers this share of the pairs it prefers a clip of the wrong way round "
                "(B-Pref's ordinary labeller: 0.1)"})
    teacher_equal_threshold: float = field(default=SyntheticTeacher.equal_threshold, metadata={
        "help": "the synthetic teacher answers 'equally good' when the clips' true returns differ by at most this"})
    teacher_beta: float = field(default=SyntheticTeacher.beta, metadata={
        "help": "the synthetic teacher's rationality: the clip with the larger true return wins with probability "
                "sigmoid(beta * difference); inf: always"})
    log_every: int = field(default=2_000, metadata={"help": "print progress every this many agent steps"})
    human: bool = field(default=False, metadata={
        "help": "label the clips yourself (window + terminal) instead of synthetically"})
    web: bool = field(default=False, metadata={
        "help": "label in a browser (one or many people; the page's address is printed) instead of synthetically"})
    true_reward: bool = field(default=False, metadata={
        "help": "baseline: train on the env's own reward, without drlhp"})
    standardised_reward: bool = field(default=False, metadata={
        "help": "with --true-reward, for an off-policy agent: the env's reward as drlhp scales its own (centred "
                "by --reward-centre and scaled to --reward-scale over the rewards in the replay buffer), the "
                "control that tells a better reward from a better-scaled one"})
    relabel: bool = field(default=True, metadata={
        "help": "an off-policy agent's replay buffer is relabelled with each newer reward checkpoint "
                "(drlhp.sb3.RelabelReplayBuffer); on-policy agents have none"})
    tensorboard_log: str | None = drlhp_setting("tensorboard_log", also="the examples' agent writes its curves there")


def parse_args(description: str, **defaults) -> Args:
    """``Args`` from the command line; ``defaults`` override the generic defaults for one example."""
    # No abbreviated flags: the resume command printed at the start rewrites --log-dir and --resume by name.
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter,
                                     allow_abbrev=False)
    # Each run gets its own log_dir: drlhp never lets a new run overwrite an earlier run's labels.
    defaults["log_dir"] = os.path.join(defaults.get("log_dir", Args.log_dir), time.strftime("%Y%m%d-%H%M%S"))
    for f in dataclasses.fields(Args):
        default = defaults.get(f.name, f.default)
        if "setting" in f.metadata:
            add_setting_flag(parser, f.name, default, f.metadata["also"])
        elif f.type in (bool, "bool"):
            # A flag on by default for this example can be turned off (--no-...).
            action = argparse.BooleanOptionalAction if default else "store_true"
            parser.add_argument("--" + f.name.replace("_", "-"), action=action, default=default,
                                help=f.metadata["help"])
        else:
            parser.add_argument("--" + f.name.replace("_", "-"), type=type(f.default), default=default,
                                help=f"{f.metadata['help']} (default: {default})")
    args = Args(**vars(parser.parse_args()))
    if args.resume and args.log_dir == defaults["log_dir"]:
        parser.error("--resume needs --log-dir naming the run to continue")
    if args.human and args.web:
        parser.error("choose one of --human (window + terminal) and --web (a browser)")
    if args.save_every < 0:
        parser.error("--save-every must be >= 0")
    if args.life_loss_penalty < 0:
        parser.error("--life-loss-penalty must be >= 0: the points a life lost costs in the teacher's count")
    if args.life_loss_penalty and (args.true_reward or args.human or args.web):
        parser.error("--life-loss-penalty changes what the synthetic teacher counts, not the game's score: a "
                     "true-reward run learns from the score and a person judges a life lost themselves; drop it "
                     "there (benchmarks/experiments/learning_curves.py --baseline reuses a true-reward run of the "
                     "defaults)")
    teacher_flags = changed_teacher_flags(args)
    if teacher_flags and (args.true_reward or args.human or args.web):
        parser.error(f"{', '.join(teacher_flags)}: the synthetic teacher's settings; a true-reward run has no "
                     "teacher and a person is their own: drop them there")
    try:
        teacher(args)
    except ConfigError as e:
        parser.error(f"the synthetic teacher (--teacher-...): {e}")
    if 0 < args.unsupervised_steps <= PEBBLE_RANDOM_STEPS:
        parser.error(f"--unsupervised-steps must be more than the {PEBBLE_RANDOM_STEPS:,} random steps before the "
                     "agent learns, or it never explores (PEBBLE: 10,000 in all)")
    if args.standardised_reward and not args.true_reward:
        parser.error("--standardised-reward is the true-reward run's control (drlhp scales its own reward): add "
                     "--true-reward")
    try:  # every drlhp setting checked now, not after the envs are made (whether log_dir can resume: later)
        PreferenceConfig(**{**wrapper_settings(args), "resume": False})
    except (ConfigError, MissingExtraError) as e:
        parser.error(f"drlhp's settings: {e}")
    return args


class LifeLossPenalty(gymnasium.Wrapper):
    """Each life lost (ALE's ``info["lives"]`` falling) costs the step's reward ``penalty`` points.

    drlhp's synthetic teacher compares clips by the env's reward, so this is what it counts; SB3's ``Monitor``
    sits inside, so the true return recorded stays the game's score. Seaquest's score never counts a life: with
    the score alone the teacher never prefers a clip for staying alive (docs/results.md, "The third game")."""

    def __init__(self, env: gymnasium.Env, penalty: float) -> None:
        super().__init__(env)
        self.penalty = penalty
        self.lives: int | None = None  # unknown after a reset: SB3's FireResetEnv returns no info

    def reset(self, **kwargs):
        observation, info = self.env.reset(**kwargs)
        self.lives = info.get("lives")
        return observation, info

    def step(self, action):
        observation, reward, terminated, truncated, info = self.env.step(action)
        lives = info.get("lives")
        if lives is not None and self.lives is not None and lives < self.lives:
            reward -= self.penalty
        self.lives = lives
        return observation, reward, terminated, truncated, info


def changed_teacher_flags(args: Args) -> list[str]:
    """The --teacher-... flags that make the synthetic teacher other than perfect."""
    perfect = SyntheticTeacher()
    return [f"--teacher-{name.replace('_', '-')}" for name in ("mistake_rate", "equal_threshold", "beta")
            if getattr(args, f"teacher_{name}") != getattr(perfect, name)]


def teacher(args: Args) -> SyntheticTeacher:
    """How the synthetic labels are given: the perfect teacher unless a --teacher-... flag says otherwise."""
    return SyntheticTeacher(beta=args.teacher_beta, mistake_rate=args.teacher_mistake_rate,
                            equal_threshold=args.teacher_equal_threshold)


def train_from_preferences(venv: VecEnv, args: Args, make_agent: Callable[[VecEnv, int], BaseAlgorithm],
                           env_id: str, env_kwargs: dict | None = None) -> None:
    """Wrap ``venv`` (of ``env_id``, made with ``env_kwargs``: kept in the agent checkpoint, so that the run's
    record says which env it was), warm the reward predictor up on a random policy, then train
    ``make_agent(venv, seed)``; with ``--true-reward``, train it on the env's own reward instead."""
    if args.life_loss_penalty and not any(venv.env_is_wrapped(LifeLossPenalty)):
        venv.close()
        print(f"error: --life-loss-penalty: {env_id} as this example makes it has no lives to count (the Atari "
              "examples count them)", file=sys.stderr)
        sys.exit(2)
    try:
        session = start_session(args, env_id, env_kwargs)
    except (AgentCheckpointError, RunDirError, WriteError) as e:
        venv.close()
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
    if session is None:
        venv.close()
        return
    with session.sigterm.installed():
        try:
            if args.true_reward:
                train_on_true_reward(venv, args, make_agent, session)
            else:
                train_on_predicted_reward(venv, args, make_agent, session)
        except WriteError as e:  # a full disk, a directory it may not write: the line says the file and the fix
            venv.close()
            print(f"error: {e}", file=sys.stderr)
            sys.exit(1)


def train_on_true_reward(venv: VecEnv, args: Args, make_agent: Callable[[VecEnv, int], BaseAlgorithm],
                         session: Session) -> None:
    """The baseline: the agent learns from the env's own reward; no drlhp."""
    # As many torch threads as drlhp gives the agent's process (whose other core is its trainer's), so that
    # the two runs compare like with like; more threads than free cores would also burn CPU spinning.
    torch.set_num_threads(PreferenceConfig().torch_threads)
    agent = make_agent(venv, args.seed)
    if args.standardised_reward:
        try:
            standardise_rewards(agent, args.reward_scale, args.reward_centre)
        except ValueError as e:
            venv.close()
            print(f"error: {e}", file=sys.stderr)
            sys.exit(2)
    logger = learn(agent, args, session)
    venv.close()
    print(f"done (true reward, no drlhp): mean true return of the last {len(logger.returns)} episodes "
          f"{mean_or_na(logger.returns)}; logs in {args.log_dir}")


def wrapper_settings(args: Args) -> dict:
    """The drlhp settings of a run with ``args``: what the command line sets, the library's defaults otherwise."""
    return dict(
        {f.name: getattr(args, f.name) for f in dataclasses.fields(Args) if "setting" in f.metadata},
        synthetic_preferences=not (args.human or args.web),
        labelling="web" if args.web else "terminal",
        synthetic_teacher=teacher(args),
        label_schedule_steps=args.total_timesteps,
        log_dir=args.log_dir,
        resume=args.resume,
        tensorboard_log=args.tensorboard_log or None,
        seed=args.seed,
    )


def resolved_drlhp_settings(args: Args) -> dict:
    """drlhp's settings of a run with ``args``, every one resolved (the library's defaults filled in), as
    JSON-able values: what a run record keeps, so that a later change of a default cannot blur what ran."""
    settings = dataclasses.asdict(PreferenceConfig(**wrapper_settings(args)))
    settings.pop("log_dir")
    # Strict JSON has no inf (a perfectly rational teacher's beta): such a float is kept as its name.
    return json.loads(json.dumps(settings, default=str),
                      parse_constant=lambda name: name.lower().replace("infinity", "inf"))


def train_on_predicted_reward(venv: VecEnv, args: Args, make_agent: Callable[[VecEnv, int], BaseAlgorithm],
                              session: Session) -> None:
    """drlhp: the agent learns from the reward predicted by a network trained on labelled pairs of clips."""
    wrapped = HumanPreferencesVecEnvWrapper(venv, **wrapper_settings(args))
    with wrapped:
        # The label schedule's clock counts this process's env steps only: start it where the saved agent was.
        wrapped.pipeline.count_env_steps(session.label_clock_start)
        explore = args.unsupervised_steps > 0
        if wrapped.using_reward_from_predictor:
            random_return = "n/a (no warm-up: resumed)"
            print("the resumed reward predictor is trained: no warm-up", flush=True)
        elif explore:
            random_return = "n/a (the agent explored instead)"
            print(f"the agent explores for {args.unsupervised_steps} steps, then on while {args.n_initial_prefs} "
                  "pairs of its clips are labelled and the reward predictor trained on them", flush=True)
        else:
            random_return = warm_up_reward_predictor(wrapped, args.seed)
        if not explore:
            stats = wrapped.stats()
            print(f"reward predictor ready after {stats.training_steps} training steps on {stats.run_labels} "
                  f"labels; random policy's true return: {random_return}", flush=True)
        agent = make_agent(wrapped, args.seed)
        agent.tensorboard_log = args.tensorboard_log or None  # drlhp's figures join the agent's run there
        relabel = RelabelReplayBuffer() if args.relabel and getattr(agent, "replay_buffer", None) is not None else None
        if explore:
            if relabel is None:
                wrapped.close()
                print("error: --unsupervised-steps: the agent explores from a replay buffer that is relabelled "
                      "when labels come (an off-policy agent such as SAC, without --no-relabel)", file=sys.stderr)
                sys.exit(2)
            explore_first(agent)
        callbacks: list[BaseCallback] = [HumanPreferencesLogger(), *([relabel] if relabel else [])]
        if args.keep_reward_models:
            callbacks.append(KeepRewardModels(args.keep_reward_models))
        started = time.monotonic()
        logger = learn(agent, args, session, wrapped, extra_callbacks=callbacks)
        if relabel is not None:
            print(f"relabelled the replay buffer {relabel.relabellings} times in {relabel.seconds:.0f} s, "
                  f"{relabel.seconds / (time.monotonic() - started):.1%} of this session's learning", flush=True)
        stats = wrapped.stats()
        print(f"done: mean true return of the last {len(logger.returns)} episodes {mean_or_na(logger.returns)} "
              f"(random policy: {random_return}); labels: {stats.run_labels} in all "
              f"({stats.pairs_asked} asked of a budget of {stats.label_budget or 'unlimited'}); "
              f"logs in {args.log_dir}")


# -- one process of a run: where it writes, what it resumes --------------------------------------------------------

class RunDirError(ValueError):
    """The log_dir does not fit the command: resuming what is not there, or starting over an earlier run."""


class Sigterm:
    """SIGTERM (``kill``, a cluster scheduler's notice) stops a run cleanly: while the agent learns, it is saved at
    the next rollout's start (a few seconds on), so that ``--resume`` loses no step, and the run stops there;
    before the agent learns, or at a second SIGTERM, it stops at once. Either way drlhp closes: its processes
    stop and its labels are saved. The process exits with status 143 (128 + SIGTERM), as if killed."""

    EXIT_STATUS = 128 + signal.SIGTERM

    def __init__(self) -> None:
        self.received = False
        self.agent_learning = False

    def __call__(self, signum: int, frame) -> None:
        if self.received or not self.agent_learning:
            raise SystemExit(self.EXIT_STATUS)
        self.received = True

    @contextlib.contextmanager
    def installed(self):
        """This handler for SIGTERM within the block (only the main thread can set one: elsewhere SIGTERM kills
        as before)."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        previous = signal.signal(signal.SIGTERM, self)
        try:
            yield
        finally:
            signal.signal(signal.SIGTERM, previous)


@dataclass
class Session:
    """One process of a run. A run resumed after a kill is a new session of the same run."""
    log_dir: str
    run: str  # "drlhp" or "true_reward"
    number: int  # 0 for a new run, +1 per resume (the learning curve's ``session`` column)
    settings: dict  # what a later resume must share with this one's agent checkpoint
    agent_state: dict | None  # the agent checkpoint to go on from; None: the agent starts afresh
    started: float = field(default_factory=time.monotonic)
    sigterm: Sigterm = field(default_factory=Sigterm)

    @property
    def start_step(self) -> int:
        return self.agent_state["num_timesteps"] if self.agent_state else 0

    @property
    def label_clock_start(self) -> int:
        return self.agent_state.get("label_clock_env_steps", 0) if self.agent_state else 0

    def wall_time(self) -> float:
        """Seconds of the run so far: this session's, plus the earlier ones' up to the agent checkpoint."""
        earlier = self.agent_state.get("wall_time_s", 0.0) if self.agent_state else 0.0
        return earlier + time.monotonic() - self.started


def start_session(args: Args, env_id: str, env_kwargs: dict | None = None) -> Session | None:
    """Check ``args.log_dir`` fits the command, load the agent checkpoint when resuming, say what happens
    and how to go on after a kill; None if a resumed run has nothing left to do."""
    run = "true_reward" if args.true_reward else "drlhp"
    settings = {"env": env_id, "env_kwargs": env_kwargs or {}, "n_envs": args.n_envs, "run": run}
    ckpt = agent_checkpoint_path(args.log_dir)
    if args.resume and not os.path.isdir(args.log_dir):
        raise RunDirError(f"--resume: {args.log_dir} does not exist; name the log_dir of the run to continue")
    prepare_log_dir(args.log_dir)  # one that cannot be written fails before the run says how to go on from it
    if not args.resume:
        for path in (ckpt, learning_curve_path(args.log_dir)):
            if os.path.exists(path):
                raise RunDirError(f"{args.log_dir} holds an earlier run ({path}): continue it with --resume, "
                                  "or use a new --log-dir")
    state = load_agent_state(ckpt, settings) if args.resume and os.path.exists(ckpt) else None
    try:
        number = next_session(args.log_dir, run)
    except ValueError as e:
        raise RunDirError(str(e)) from e
    if state is not None and state["num_timesteps"] >= args.total_timesteps:
        print(f"nothing to do: the agent in {ckpt} already has {state['num_timesteps']} of --total-timesteps "
              f"{args.total_timesteps} steps (pass a larger --total-timesteps to go on)")
        return None
    print(f"{run} run in {args.log_dir} (session {number}); if it stops, go on with:\n"
          f"    {resume_command(args.log_dir)}", flush=True)
    if args.resume and state is None:
        print(f"no agent checkpoint in {args.log_dir} yet (the run stopped before its first one): "
              "the agent starts afresh", flush=True)
    if state is not None:
        print(f"resuming the agent at step {state['num_timesteps']} from {ckpt} ({state['n_updates']} updates, "
              f"{state['wall_time_s']:.0f} s of the run so far)", flush=True)
        if state["total_timesteps"] != args.total_timesteps:
            print(f"the run was for {state['total_timesteps']} agent steps, now for {args.total_timesteps}: "
                  "the learning-rate and clip schedules stretch over the new total", flush=True)
    return Session(args.log_dir, run, number, settings, state)


def resume_command(log_dir: str) -> str:
    """The command that continues this run: this one's own arguments, with ``--resume --log-dir log_dir``."""
    kept, args = [], iter(sys.argv[1:])
    for arg in args:
        if arg == "--log-dir":
            next(args, None)
        elif arg != "--resume" and not arg.startswith("--log-dir="):
            kept.append(arg)
    return shlex.join(["python", sys.argv[0], *kept, "--resume", "--log-dir", log_dir])


def learn(agent: BaseAlgorithm, args: Args, session: Session, wrapped: HumanPreferencesVecEnvWrapper | None = None,
          extra_callbacks: list[BaseCallback] | tuple = ()) -> TrueReturnLogger:
    """Train ``agent`` up to ``args.total_timesteps`` agent steps, from the session's agent checkpoint if any,
    saving it and writing the learning curve as it goes; returns the progress printer (recent returns)."""
    ckpt = agent_checkpoint_path(session.log_dir)
    if session.agent_state is not None:
        restore_agent(agent, session.agent_state, ckpt)

    def save() -> None:
        extra = {"wall_time_s": session.wall_time(), "args": dataclasses.asdict(args)}
        if wrapped is not None:
            extra["drlhp_settings"] = resolved_drlhp_settings(args)
            extra["label_clock_env_steps"] = wrapped.stats().env_steps  # started at label_clock_start
        save_agent(agent, ckpt, args.total_timesteps, session.settings, **extra)
        if args.keep_agents:
            kept = kept_agent_path(session.log_dir, agent.num_timesteps)
            with writing(kept):
                shutil.copyfile(ckpt, kept)

    curve = LearningCurveWriter(session.log_dir, session.run, session.number, session.start_step)
    labels = (lambda: wrapped.stats().run_labels) if wrapped is not None else (lambda: 0)
    logger = TrueReturnLogger(wrapped, args.log_every)
    checkpointer = AgentCheckpointer(save, args.save_every, session.sigterm)
    callbacks = [logger, LearningCurveLogger(curve, labels, session.wall_time), checkpointer, *extra_callbacks]
    session.sigterm.agent_learning = True
    try:
        # reset_num_timesteps=False: SB3 adds num_timesteps back to the steps asked for, so its total (and the
        # schedules' progress, 1 - num_timesteps / total) is the run's, not this session's.
        agent.learn(args.total_timesteps - agent.num_timesteps, callback=callbacks,
                    reset_num_timesteps=session.agent_state is None)
    finally:
        session.sigterm.agent_learning = False
        curve.close()
    if checkpointer.stopped_at is not None:
        print(f"SIGTERM: stopped with the agent saved at step {checkpointer.stopped_at}; go on with:\n"
              f"    {resume_command(session.log_dir)}", flush=True)
        raise SystemExit(Sigterm.EXIT_STATUS)
    return logger


# -- callbacks -----------------------------------------------------------------------------------------------------

def mean_or_na(values) -> str:
    return f"{np.mean(values):.1f}" if len(values) else "n/a (no episode finished)"


def finished_episodes(infos) -> list[dict]:
    """SB3 Monitor's record (``r``: the env's own return, ``l``: length) of each episode that ended this step."""
    return [info["episode"] for info in infos if "episode" in info]


def episode_returns(infos) -> list[float]:
    """True returns of the episodes that ended this step (SB3's Monitor records the env's own reward)."""
    return [episode["r"] for episode in finished_episodes(infos)]


class TrueReturnLogger(BaseCallback):
    """Prints the env's true episode return, whatever reward the agent is trained on."""

    def __init__(self, env, log_every: int) -> None:
        super().__init__()
        self.env, self.log_every = env, log_every
        self.returns: deque[float] = deque(maxlen=20)

    def _on_training_start(self) -> None:
        # A resumed agent starts at its saved step: speed counts this session's steps only.
        self.start, self.start_steps = time.monotonic(), self.num_timesteps
        self._next_log = (self.num_timesteps // self.log_every + 1) * self.log_every

    def _on_step(self) -> bool:
        self.returns.extend(episode_returns(self.locals["infos"]))
        if self.num_timesteps >= self._next_log:
            self._next_log += self.log_every
            mean = f"{np.mean(self.returns):5.1f}" if self.returns else "  n/a"
            sps = (self.num_timesteps - self.start_steps) / (time.monotonic() - self.start)
            line = (f"step {self.num_timesteps:7d} | {sps:4.0f} SPS | "
                    f"true return (last {len(self.returns)} episodes) {mean}")
            if self.env is not None:
                stats = self.env.stats()
                line += (f" | reward: {self.reward_source():9s} | "
                         f"labels {stats.run_labels:5d} | reward-training steps {stats.training_steps:4d}")
            print(line, flush=True)
        return True

    def reward_source(self) -> str:
        """What the agent learns from now."""
        if getattr(getattr(self.model, "replay_buffer", None), "exploring", False):
            return "novelty"
        return "predicted" if self.env.using_reward_from_predictor else "true"


class LearningCurveLogger(BaseCallback):
    """A row of ``learning_curve.csv`` per finished episode: agent steps, true return, labels, wall time."""

    def __init__(self, curve: LearningCurveWriter, labels: Callable[[], int], wall_time: Callable[[], float]) -> None:
        super().__init__()
        self.curve, self.labels, self.wall_time = curve, labels, wall_time

    def _on_step(self) -> bool:
        episodes = finished_episodes(self.locals["infos"])
        for episode in episodes:
            self.curve.add(self.num_timesteps, episode["r"], episode["l"], self.labels(), self.wall_time())
        if episodes:
            self.curve.flush()  # a killed run keeps its rows
        return True


class AgentCheckpointer(BaseCallback):
    """Calls ``save()`` every ``save_every`` agent steps, at the start of a rollout, and at the end of training;
    after a SIGTERM, at the next rollout's start, and then stops training (``stopped_at``: the step saved).

    At a rollout's start the weights hold every update of the steps counted so far (SB3 updates after a
    rollout), so a resumed agent continues exactly from there.
    """

    def __init__(self, save: Callable[[], None], save_every: int, sigterm: Sigterm) -> None:
        super().__init__()
        self.save, self.save_every, self.sigterm = save, save_every, sigterm
        self.stopped_at: int | None = None

    def _on_training_start(self) -> None:
        self._next_save = (self.num_timesteps // self.save_every + 1) * self.save_every if self.save_every else None

    def _on_rollout_start(self) -> None:
        if self.sigterm.received:
            self.save()
            self.stopped_at = self.num_timesteps
        elif self._next_save is not None and self.num_timesteps >= self._next_save:
            self.save()
            self._next_save = (self.num_timesteps // self.save_every + 1) * self.save_every

    def _on_step(self) -> bool:
        # SB3 asks only after the rollout's first env step, which no update uses and the saved agent does not count.
        return self.stopped_at is None

    def _on_training_end(self) -> None:
        if self.stopped_at is None:
            self.save()


def explore_first(agent: BaseAlgorithm) -> None:
    """PEBBLE's start: the agent's replay buffer gives it novelty as its reward for the run's unsupervised_steps
    (``drlhp.sb3.NoveltyReplayBuffer``, in place of the agent's own, still empty), and the agent learns from its
    ``PEBBLE_RANDOM_STEPS``-th step rather than after a longer random start."""
    old = agent.replay_buffer
    agent.replay_buffer = NoveltyReplayBuffer(
        old.buffer_size, old.observation_space, old.action_space, device=old.device, n_envs=old.n_envs,
        optimize_memory_usage=old.optimize_memory_usage, handle_timeout_termination=old.handle_timeout_termination)
    agent.learning_starts = min(agent.learning_starts, PEBBLE_RANDOM_STEPS)


def warm_up_reward_predictor(venv: HumanPreferencesVecEnvWrapper, seed: int) -> str:
    """Act randomly until the initial labels are in, then wait for the reward predictor's first training
    steps (the paper's pre-training); returns the random policy's mean true episode return, as printed."""
    print(f"labelling {venv.config.n_initial_prefs} pairs of clips of a random policy ...", flush=True)
    venv.action_space.seed(seed)
    venv.reset()
    returns: list[float] = []
    while not venv.using_reward_from_predictor and venv.stats().run_labels < venv.config.n_initial_prefs:
        actions = np.array([venv.action_space.sample() for _ in range(venv.num_envs)])
        returns += episode_returns(venv.step(actions)[3])
    print("training the reward predictor on them ...", flush=True)
    venv.wait_for_reward_predictor()
    return f"{np.mean(returns):.1f}" if returns else "n/a (no episode ended in the warm-up)"
