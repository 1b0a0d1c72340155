"""Gather preferences on any gymnasium env from the shell (``drlhp collect``)."""
from __future__ import annotations

import base64
import importlib
import io
import json
import os
import pickle
import sys
import zipfile
from typing import Any, Callable

import gymnasium
import numpy as np

from drlhp.errors import ConfigError, FileFormatError, MissingExtraError
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
    """An SB3 model's deterministic action for an observation; loading it runs no code from the file.

    SB3's own ``load`` unpickles (with cloudpickle) whatever the file's settings hold: a model file from elsewhere
    could run any code. Here only what acting needs is unpickled, and only if it refers to nothing but SB3's
    networks, torch's layers and optimisers, gymnasium's spaces and NumPy's arrays (``_SafeUnpickler``); the
    training-only settings (schedules, buffers, the last observations) are never unpickled.
    """
    if algo not in SB3_ALGOS:
        raise ConfigError(f"--algo must be one of {SB3_ALGOS}, got {algo!r}")
    try:
        import drlhp.frontends.quiet_gym  # noqa: F401  (before SB3, which imports gym)

        sb3 = importlib.import_module("stable_baselines3")
    except ImportError as e:
        raise MissingExtraError('--policy needs Stable-Baselines3: pip install "drlhp[sb3]"') from e
    with open(path, "rb") as f:
        data = f.read()  # once: SB3 reads these bytes, not a file that may change after the check
    try:
        custom_objects = _unpickled_without_code(data)
        model = getattr(sb3, algo.upper()).load(io.BytesIO(data), device="cpu", custom_objects=custom_objects)
    except _RefusedGlobal as e:
        raise FileFormatError(f"{path} is not an SB3 model drlhp loads: {e}, none of SB3's networks, torch's "
                              "layers, gymnasium's spaces or NumPy's arrays; not loaded, because unpickling it could "
                              "run code from the file") from e
    except Exception as e:  # SB3 and zipfile raise many kinds for a foreign or corrupt file
        first_line = str(e).strip().splitlines()[0] if str(e).strip() else ""
        raise FileFormatError(f"{path} is not an SB3 {algo.upper()} model: {type(e).__name__}: {first_line[:200]}. "
                              f"Pass a .zip that {algo.upper()}.save() wrote, and its --algo") from e
    return lambda obs: model.predict(obs, deterministic=True)[0]


#: The settings an SB3 model's file pickles that acting needs: unpickled by ``_SafeUnpickler``.
_SB3_TO_ACT = ("policy_class", "policy_kwargs", "observation_space", "action_space")
#: What replaces the training-only settings it pickles (default: None) where SB3's setup needs a value.
_SB3_TRAINING_ONLY = {"learning_rate": 0.0, "clip_range": 0.0, "train_freq": 1}


def _unpickled_without_code(model_zip: bytes) -> dict[str, Any]:
    """SB3's ``custom_objects`` for every setting the model's file pickles: SB3 then unpickles none of them."""
    with zipfile.ZipFile(io.BytesIO(model_zip)) as archive:
        settings = json.loads(archive.read("data"))
    pickled = {key: value[":serialized:"] for key, value in settings.items()
               if isinstance(value, dict) and ":serialized:" in value}
    return {key: _SafeUnpickler(io.BytesIO(base64.b64decode(text)), key).load() if key in _SB3_TO_ACT
            else _SB3_TRAINING_ONLY.get(key) for key, text in pickled.items()}


class _RefusedGlobal(pickle.UnpicklingError):
    pass


#: NumPy's functions and classes that rebuild arrays, dtypes and random generators (a space's seed) from a pickle.
_NUMPY_REBUILDERS = {
    "numpy": {"dtype", "ndarray"},
    "numpy.core.multiarray": {"_reconstruct", "scalar"},
    "numpy._core.multiarray": {"_reconstruct", "scalar"},
    "numpy.core.numeric": {"_frombuffer"},
    "numpy._core.numeric": {"_frombuffer"},
    "numpy.random._pickle": {"__generator_ctor", "__bit_generator_ctor", "__randomstate_ctor"},
    "numpy.random.bit_generator": {"SeedSequence", "__pyx_unpickle_SeedSequence"},
    "numpy.random._pcg64": {"PCG64", "PCG64DXSM"},
    "numpy.random._mt19937": {"MT19937"},
    "numpy.random._philox": {"Philox"},
    "numpy.random._sfc64": {"SFC64"},
}
#: Packages whose classes a model's network and spaces are made of.
_CLASS_PACKAGES = ("stable_baselines3.", "torch.nn.", "torch.optim.", "gymnasium.spaces.")


class _SafeUnpickler(pickle.Unpickler):
    """Unpickles only NumPy's rebuilders and classes of SB3's networks, torch's layers and optimisers and
    gymnasium's spaces: a pickle can call only what it refers to, and none of these runs code it is given."""

    def __init__(self, file: io.BytesIO, setting: str) -> None:
        super().__init__(file)
        self.setting = setting

    def find_class(self, module: str, name: str) -> Any:
        import gymnasium.spaces
        import torch

        if name in _NUMPY_REBUILDERS.get(module, ()):
            return getattr(importlib.import_module(module), name)
        if module.startswith(_CLASS_PACKAGES) and name.isidentifier():
            try:
                found = getattr(importlib.import_module(module), name, None)
            except ImportError:
                found = None
            if isinstance(found, type) and issubclass(found, (torch.nn.Module, torch.optim.Optimizer,
                                                              gymnasium.spaces.Space)):
                return found
        raise _RefusedGlobal(f"its {self.setting} refers to {module}.{name}")


def collect(env_id: str | None, log_dir: str, n_labels: int, policy: str | None = None, algo: str = "ppo",
            on_label: Callable[[int], None] | None = None, dataset: str | None = None, **settings) -> list[str]:
    """Play ``env_id`` (randomly, or with an SB3 policy), or replay the Minari ``dataset``'s episodes, until the run
    holds ``n_labels`` labels, then save them.

    ``settings``: the wrapper's arguments (``synthetic_preferences``, ``segment_length``, ``seed``,
    ``resume``, ...). ``on_label(n)`` reports the run's label count as it grows. Returns the saved files.
    """
    if (env_id is None) == (dataset is None):
        raise ConfigError("collect from an env (its id) or from a dataset (--dataset), one of the two")
    if dataset is not None and policy:
        raise ConfigError("a dataset's episodes are replayed as recorded: --policy has nothing to act on")
    if dataset is not None:
        env = _replay(dataset, people=settings.get("synthetic_preferences") is False)
    else:
        assert env_id is not None  # one of the two: checked above
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


def _replay(dataset: str, people: bool) -> gymnasium.Env:
    """The dataset's episodes as an env; it renders for a person where ``people`` label."""
    from drlhp.datasets.replay_env import DatasetReplayEnv

    return DatasetReplayEnv(dataset, render_mode="rgb_array" if people else None)
