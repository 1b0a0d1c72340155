"""Gather preferences on any gymnasium env from the shell (``drlhp collect``)."""
from __future__ import annotations

import importlib
import os
import sys
from typing import Callable

import gymnasium
import numpy as np

from drlhp.errors import ConfigError, MissingExtraError
from drlhp.frontends.env_wrapper import HumanPreferencesEnvWrapper

SB3_ALGOS = ("ppo", "a2c", "dqn", "sac", "td3", "ddpg")


def make_env(env_id: str) -> gymnasium.Env:
    """``gymnasium.make(env_id)``, with ale-py's Atari envs registered first (``ALE/Pong-v5``).

    ``module:EnvName-v0`` imports ``module`` first, so an env your own module registers works too.
    """
    if ":" in env_id and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # as `python -m` would: find the user's module where they run the command
    if env_id.startswith("ALE/"):
        try:
            import ale_py
        except ImportError as e:
            raise MissingExtraError(f"{env_id} needs ale-py: pip install ale-py") from e
        gymnasium.register_envs(ale_py)
    try:
        return gymnasium.make(env_id)
    except gymnasium.error.Error as e:
        raise ConfigError(f"cannot make env {env_id!r}: {e}. Pass an id gymnasium.make accepts, e.g. "
                         "drlhp/MovingDot-v0, ALE/Pong-v5, or my_module:MyEnv-v0 for one your module registers") from e


def load_policy(path: str, algo: str) -> Callable[[np.ndarray], np.ndarray]:
    """An SB3 model's deterministic action for an observation."""
    if algo not in SB3_ALGOS:
        raise ConfigError(f"--algo must be one of {SB3_ALGOS}, got {algo!r}")
    try:
        sb3 = importlib.import_module("stable_baselines3")
    except ImportError as e:
        raise MissingExtraError('--policy needs Stable-Baselines3: pip install "drlhp[sb3]"') from e
    model = getattr(sb3, algo.upper()).load(path, device="cpu")
    return lambda obs: model.predict(obs, deterministic=True)[0]


def collect(env_id: str, log_dir: str, n_labels: int, policy: str | None = None, algo: str = "ppo",
            on_label: Callable[[int], None] | None = None, **settings) -> list[str]:
    """Play ``env_id`` (randomly, or with an SB3 policy) until the run holds ``n_labels`` labels, then save them.

    ``settings``: the wrapper's arguments (``synthetic_preferences``, ``segment_length``, ``seed``,
    ``resume``, ...). ``on_label(n)`` reports the run's label count as it grows. Returns the saved files.
    """
    env = make_env(env_id)
    act = load_policy(policy, algo) if policy else None
    seed = settings.get("seed")
    # Collecting a database: labels as fast as they come (n_labels is where it stops), unless told otherwise.
    settings.setdefault("label_budget", None)
    wrapped = HumanPreferencesEnvWrapper(env, collect_prefs=True, train_reward=False, log_dir=log_dir, **settings)
    with wrapped:
        env.action_space.seed(seed)
        obs, _ = wrapped.reset(seed=seed)
        seen = -1
        while (n := wrapped.stats().run_labels or 0) < n_labels:  # None only on a Ray runner
            if on_label is not None and n != seen:
                on_label(n)
                seen = n
            action = act(obs) if act else env.action_space.sample()
            obs, _, terminated, truncated, _ = wrapped.step(action)
            if terminated or truncated:
                obs, _ = wrapped.reset()
        if on_label is not None:
            on_label(wrapped.stats().run_labels or 0)
        return wrapped.save_prefs()
