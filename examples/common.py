"""What the examples share: their arguments, and the run itself -- a random policy plays
until the reward predictor is ready, then the agent learns from predicted rewards only.

The envs are an SB3 VecEnv of ``--n-envs`` envs; one drlhp pipeline (two background
processes, one database, one reward network) serves them all."""
from __future__ import annotations

import argparse
import dataclasses
import os
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.vec_env import VecEnv

from drlhp.sb3 import HumanPreferencesLogger, HumanPreferencesVecEnvWrapper


@dataclass
class Args:
    total_timesteps: int = field(default=30_000, metadata={"help": "agent steps in total (all envs)"})
    n_envs: int = field(default=8, metadata={"help": "envs stepped together, all feeding one drlhp pipeline"})
    log_dir: str = field(default="drlhp_logs", metadata={"help": "the run's checkpoints, labels and metrics"})
    resume: bool = field(default=False, metadata={
        "help": "continue the run in --log-dir: its labels and reward network (the agent starts afresh)"})
    seed: int = field(default=0, metadata={"help": "seed of the envs, the agent and drlhp"})
    segment_length: int = field(default=25, metadata={"help": "frames per clip compared"})
    n_initial_prefs: int = field(default=40, metadata={"help": "labels before reward training starts"})
    label_budget: int = field(default=300, metadata={"help": "labels the run may ask for in all (0: no limit)"})
    label_schedule: str = field(default="hyperbolic", metadata={
        "help": "how the rate of asking falls over the run: hyperbolic, inverse_quadratic or constant"})
    pair_selection: str = field(default="disagreement", metadata={
        "help": "disagreement (of the reward ensemble) or random"})
    ensemble_size: int = field(default=3, metadata={"help": "reward networks in the ensemble"})
    n_initial_training_steps: int = field(default=50, metadata={"help": "reward-training steps before the agent gets the predicted reward"})
    log_every: int = field(default=2_000, metadata={"help": "print progress every this many agent steps"})
    human: bool = field(default=False, metadata={"help": "label the clips yourself (window + terminal) instead of synthetically"})
    web: bool = field(default=False, metadata={
        "help": "label in a browser (one or many people; the page's address is printed) instead of synthetically"})
    web_port: int = field(default=8765, metadata={"help": "the labelling page's port with --web (0: any free port)"})
    true_reward: bool = field(default=False, metadata={"help": "baseline: train on the env's own reward, without drlhp"})
    tensorboard_log: str = field(default="", metadata={
        "help": "TensorBoard directory for the agent's and the reward model's curves (needs drlhp[tensorboard])"})


def parse_args(description: str, **defaults) -> Args:
    """``Args`` from the command line; ``defaults`` override the generic defaults for one example."""
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    # Each run gets its own log_dir: drlhp never lets a new run overwrite an earlier run's labels.
    defaults["log_dir"] = os.path.join(defaults.get("log_dir", Args.log_dir), time.strftime("%Y%m%d-%H%M%S"))
    for f in dataclasses.fields(Args):
        default = defaults.get(f.name, f.default)
        if f.type in (bool, "bool"):
            parser.add_argument("--" + f.name.replace("_", "-"), action="store_true", help=f.metadata["help"])
        else:
            parser.add_argument("--" + f.name.replace("_", "-"), type=type(f.default), default=default,
                                help=f"{f.metadata['help']} (default: {default})")
    args = Args(**vars(parser.parse_args()))
    if args.resume and args.log_dir == defaults["log_dir"]:
        parser.error("--resume needs --log-dir naming the run to continue")
    if args.human and args.web:
        parser.error("choose one of --human (window + terminal) and --web (a browser)")
    return args


def train_from_preferences(venv: VecEnv, args: Args, make_agent: Callable[[VecEnv, int], BaseAlgorithm]) -> None:
    """Wrap ``venv``, warm the reward predictor up on a random policy, then train ``make_agent(venv, seed)``."""
    if args.true_reward:
        logger = TrueReturnLogger(None, args.log_every)
        make_agent(venv, args.seed).learn(args.total_timesteps, callback=logger)
        print(f"done (true reward, no drlhp): mean true return of the last {len(logger.returns)} episodes "
              f"{np.mean(logger.returns):.1f}")
        return
    wrapped = HumanPreferencesVecEnvWrapper(
        venv,
        segment_length=args.segment_length,
        synthetic_preferences=not (args.human or args.web),
        labelling="web" if args.web else "terminal",
        web_port=args.web_port,
        n_initial_prefs=args.n_initial_prefs,
        label_budget=args.label_budget or None,
        label_schedule=args.label_schedule,
        label_schedule_steps=args.total_timesteps,
        pair_selection=args.pair_selection,
        ensemble_size=args.ensemble_size,
        n_initial_training_steps=args.n_initial_training_steps,
        log_dir=args.log_dir,
        resume=args.resume,
        tensorboard_log=args.tensorboard_log or None,
        seed=args.seed,
    )
    print(f"drlhp run in {args.log_dir}{' (resumed)' if args.resume else ''}", flush=True)
    with wrapped:
        random_return = warm_up_reward_predictor(wrapped, args.seed)
        stats = wrapped.stats()
        print(f"reward predictor ready after {stats['training_steps']} training steps on {stats['run_labels']} "
              f"labels; random policy's true return: {one_decimal(random_return)}", flush=True)
        logger = TrueReturnLogger(wrapped, args.log_every)
        agent = make_agent(wrapped, args.seed)
        agent.tensorboard_log = args.tensorboard_log or None  # drlhp's figures join the agent's run there
        agent.learn(args.total_timesteps, callback=[logger, HumanPreferencesLogger()])
        result = f"{np.mean(logger.returns):.1f}" if logger.returns else "n/a (no episode finished)"
        stats = wrapped.stats()
        print(f"done: mean true return of the last {len(logger.returns)} episodes {result} "
              f"(random policy: {one_decimal(random_return)}); labels: {stats['run_labels']} in all "
              f"({stats['labels_asked']} asked of a budget of {stats['label_budget'] or 'unlimited'}); "
              f"logs in {args.log_dir}")


def one_decimal(x: float) -> str:
    return "n/a (no warm-up: resumed)" if np.isnan(x) else f"{x:.1f}"


def episode_returns(infos) -> list[float]:
    """True returns of the episodes that ended this step (SB3's Monitor records the env's own reward)."""
    return [info["episode"]["r"] for info in infos if "episode" in info]


class TrueReturnLogger(BaseCallback):
    """Prints the env's true episode return, whatever reward the agent is trained on."""

    def __init__(self, env, log_every: int) -> None:
        super().__init__()
        self.env, self.log_every = env, log_every
        self.returns: deque[float] = deque(maxlen=20)
        self.start = time.monotonic()
        self._next_log = log_every

    def _on_step(self) -> bool:
        self.returns.extend(episode_returns(self.locals["infos"]))
        if self.num_timesteps >= self._next_log:
            self._next_log += self.log_every
            mean = f"{np.mean(self.returns):5.1f}" if self.returns else "  n/a"
            line = (f"step {self.num_timesteps:7d} | {self.num_timesteps / (time.monotonic() - self.start):4.0f} SPS | "
                    f"true return (last {len(self.returns)} episodes) {mean}")
            if self.env is not None:
                stats = self.env.stats()
                line += (f" | reward: {'predicted' if self.env.using_reward_from_predictor else 'true     '} | "
                         f"labels {stats['run_labels']:5d} | reward-training steps {stats['training_steps']:4d}")
            print(line, flush=True)
        return True


def warm_up_reward_predictor(venv: HumanPreferencesVecEnvWrapper, seed: int) -> float:
    """Act randomly until the initial labels are in, then wait for the reward predictor's first training
    steps (the paper's pre-training); returns the random policy's mean true episode return."""
    print(f"labelling {venv.config.n_initial_prefs} pairs of clips of a random policy ...", flush=True)
    venv.action_space.seed(seed)
    venv.reset()
    returns: list[float] = []
    while not venv.using_reward_from_predictor and venv.stats()["run_labels"] < venv.config.n_initial_prefs:
        actions = np.array([venv.action_space.sample() for _ in range(venv.num_envs)])
        returns += episode_returns(venv.step(actions)[3])
    print("training the reward predictor on them ...", flush=True)
    venv.wait_for_reward_predictor()
    return float(np.mean(returns)) if returns else float("nan")
