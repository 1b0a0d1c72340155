"""The examples' agent checkpoint, ``<log_dir>/agent/agent.pt``: an SB3 agent saved so that a killed run can go
on where it was -- same weights, optimisers' state, step count and schedule progress; for an off-policy agent
(SAC, TD3, DQN) also its replay buffer, beside it in ``agent/replay_buffer.npz``, and for an agent that learns
through ``VecNormalize`` (RL Zoo's MuJoCo PPO) its running statistics.

Loading a file must never run code from it, so this does not use SB3's ``save``/``load`` or
``save_replay_buffer`` (they pickle): the agent file is a ``torch.save`` of plain tensors, numbers and strings,
read back with ``torch.load(weights_only=True)``, and the buffer a NumPy ``.npz`` of arrays read with
``allow_pickle=False``. The agent itself is rebuilt by the example's ``make_agent``.
"""
from __future__ import annotations

import os

import numpy as np
import torch
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.buffers import ReplayBuffer
from stable_baselines3.common.running_mean_std import RunningMeanStd
from stable_baselines3.common.utils import get_device
from stable_baselines3.common.vec_env import VecNormalize

from drlhp.storage.files import atomic_write

FORMAT = "drlhp-examples-agent-checkpoint/2"
#: Read too: on-policy agents only, their one optimiser under "optimizer" (the runs started before off-policy).
FORMAT_ON_POLICY_ONLY = "drlhp-examples-agent-checkpoint/1"
#: Settings a resumed run must share with the checkpoint: the policy and its counters only mean
#: something for the same env, the same number of envs and the same kind of run.
MUST_MATCH = {"env": "the same example", "n_envs": "--n-envs", "run": "--true-reward or not"}


class AgentCheckpointError(ValueError):
    """An agent checkpoint that cannot be loaded into this run; the message names the file and the fix."""


def agent_checkpoint_path(log_dir: str) -> str:
    return os.path.join(log_dir, "agent", "agent.pt")


def kept_agent_path(log_dir: str, agent_steps: int) -> str:
    """Where ``--keep-agents`` keeps a copy of the agent saved at ``agent_steps``."""
    return os.path.join(log_dir, "agent", f"agent_{agent_steps}.pt")


def replay_buffer_path(path: str) -> str:
    """Where the agent checkpoint ``path``'s replay buffer goes."""
    return os.path.join(os.path.dirname(path), "replay_buffer.npz")


def save_agent(agent: BaseAlgorithm, path: str, total_timesteps: int, settings: dict, **extra) -> None:
    """Write the agent's state to ``path`` atomically (a temporary file, then a rename), and an off-policy agent's
    replay buffer beside it.

    Call it between rollouts (the weights then hold every update of the steps counted). ``settings``:
    plain values, :data:`MUST_MATCH` among them; ``extra``: further plain values to keep (e.g. wall time).
    """
    modules, tensors = agent._get_torch_save_params()  # SB3's list: "policy", its optimisers, e.g. log_ent_coef
    state = {
        "format": FORMAT,
        "policy": agent.policy.state_dict(),
        "optimizers": {name: _attr(agent, name).state_dict() for name in modules if name != "policy"},
        "tensors": {name: _attr(agent, name).detach().cpu() for name in tensors},
        "num_timesteps": int(agent.num_timesteps),
        "n_updates": int(agent._n_updates),
        "episode_num": int(agent._episode_num),
        "total_timesteps": int(total_timesteps),
        "settings": dict(settings),
        **extra,
    }
    normalize = agent.get_vec_normalize_env()
    if normalize is not None:  # the policy only makes sense of observations scaled by these statistics
        state["vec_normalize"] = _normalize_state(normalize)
    buffer = getattr(agent, "replay_buffer", None)
    if isinstance(buffer, ReplayBuffer):  # first, so that an agent file never points past its buffer
        with atomic_write(replay_buffer_path(path)) as f:
            np.savez(f, **_buffer_arrays(buffer))
    with atomic_write(path) as f:
        torch.save(state, f)


def _attr(agent: BaseAlgorithm, dotted: str):
    for name in dotted.split("."):
        agent = getattr(agent, name)
    return agent


def _normalize_state(normalize: VecNormalize) -> dict:
    """VecNormalize's running statistics, as tensors (what ``weights_only`` loading allows)."""
    def stats(rms: RunningMeanStd) -> dict:
        return {"mean": torch.as_tensor(rms.mean), "var": torch.as_tensor(rms.var), "count": float(rms.count)}
    if not isinstance(normalize.obs_rms, RunningMeanStd):
        raise AgentCheckpointError("VecNormalize of dict observations is not saved by the examples' checkpoint")
    return {"obs_rms": stats(normalize.obs_rms), "ret_rms": stats(normalize.ret_rms),
            "returns": torch.as_tensor(normalize.returns)}


def _restore_normalize(normalize: VecNormalize, saved: dict) -> None:
    for name in ("obs_rms", "ret_rms"):
        rms: RunningMeanStd = getattr(normalize, name)
        if saved[name]["mean"].shape != np.shape(rms.mean):
            raise ValueError(f"VecNormalize's {name} is of shape {tuple(saved[name]['mean'].shape)}, this env's "
                             f"{np.shape(rms.mean)}")
        rms.mean, rms.var = saved[name]["mean"].numpy().copy(), saved[name]["var"].numpy().copy()
        rms.count = saved[name]["count"]
    normalize.returns = saved["returns"].numpy().copy()


def _buffer_arrays(buffer: ReplayBuffer) -> dict[str, np.ndarray]:
    """The filled slots of every array of ``buffer`` (of a dict of them: ``name.key``), and where it is
    (``pos``, ``full``)."""
    filled = buffer.buffer_size if buffer.full else buffer.pos
    arrays = {"pos": np.array(buffer.pos), "full": np.array(buffer.full)}
    for name, value in vars(buffer).items():
        if isinstance(value, np.ndarray):
            arrays[name] = value[:filled]
        elif isinstance(value, dict) and all(isinstance(v, np.ndarray) for v in value.values()):
            arrays.update({f"{name}.{key}": v[:filled] for key, v in value.items()})
    return arrays


def restore_replay_buffer(buffer: ReplayBuffer, path: str) -> None:
    """Fill ``buffer`` (the fresh agent's, of the same size) from ``replay_buffer_path(path)``."""
    file = replay_buffer_path(path)
    try:
        with np.load(file, allow_pickle=False) as saved:
            buffer.pos, buffer.full = int(saved["pos"]), bool(saved["full"])
            expected = _buffer_arrays(buffer)  # the slots the saved buffer had filled, in this buffer
            if set(saved.files) != set(expected) or any(saved[k].shape != expected[k].shape for k in expected):
                raise ValueError("its arrays are not this agent's buffer's")
            for name in expected.keys() - {"pos", "full"}:
                expected[name][...] = saved[name]  # views of the buffer's arrays: written in place
    except (OSError, ValueError, KeyError) as e:
        raise AgentCheckpointError(f"{file}: cannot restore the agent's replay buffer ({e}); resume with the run's "
                                   f"own settings, or move {os.path.dirname(path)} away to start the agent afresh") \
            from e


def load_agent_state(path: str, settings: dict | None = None) -> dict:
    """Read the checkpoint at ``path`` without running any code from it; check it fits ``settings``.

    Raises :class:`AgentCheckpointError` if the file is not an agent checkpoint or is one for other settings.
    """
    fix = (f"move {path} away to start the agent afresh (a drlhp run keeps its labels and reward network), "
           "or point --log-dir at the run it belongs to")
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # torch raises many kinds here (zip, unpickling, refusals of code): all mean "not one"
        # torch's own message suggests weights_only=False, i.e. running the file's code: not repeated here.
        raise AgentCheckpointError(f"{path} is not an agent checkpoint: not a torch file of tensors and plain "
                                   f"values ({type(e).__name__}); {fix}") from e
    if isinstance(state, dict) and state.get("format") == FORMAT_ON_POLICY_ONLY:
        state.update(optimizers={"policy.optimizer": state.pop("optimizer")}, tensors={})
    elif not isinstance(state, dict) or state.get("format") != FORMAT:
        raise AgentCheckpointError(f"{path} is not an agent checkpoint of the examples (no {FORMAT!r} marker); {fix}")
    for key, how in MUST_MATCH.items():
        saved = state["settings"].get(key)
        if settings is not None and saved != settings[key]:
            raise AgentCheckpointError(
                f"{path} was written for {key}={saved!r}, but this run has {key}={settings[key]!r}: resume with "
                f"the run's own settings ({how}), or {fix}")
    return state


def restore_agent(agent: BaseAlgorithm, state: dict, path: str) -> None:
    """Load ``state`` (from :func:`load_agent_state`) into ``agent``, a fresh one from the same ``make_agent``.

    Continue with ``agent.learn(total - agent.num_timesteps, reset_num_timesteps=False)``: SB3 then sets its
    ``_total_timesteps`` back to ``total``, so the learning-rate and clip schedules' progress
    (``1 - num_timesteps / total``) continues where it was.
    """
    try:
        agent.policy.load_state_dict(state["policy"])
        modules, tensors = agent._get_torch_save_params()
        if set(state["optimizers"]) != set(modules) - {"policy"} or set(state["tensors"]) != set(tensors):
            raise ValueError(f"it holds {sorted(state['optimizers'])} and {sorted(state['tensors'])}")
        for name, optimizer_state in state["optimizers"].items():
            _attr(agent, name).load_state_dict(optimizer_state)
        for name, tensor in state["tensors"].items():
            with torch.no_grad():
                _attr(agent, name).copy_(tensor.to(get_device(agent.device)))
        normalize = agent.get_vec_normalize_env()
        if (normalize is None) != ("vec_normalize" not in state):
            raise ValueError("VecNormalize statistics saved for an agent without VecNormalize, or none for one with "
                             "it")
        if normalize is not None:
            _restore_normalize(normalize, state["vec_normalize"])
    except (RuntimeError, ValueError, KeyError) as e:
        raise AgentCheckpointError(f"{path} does not fit this agent ({str(e).splitlines()[0]}): it was written by "
                                   "another policy or algorithm setting; resume with the run's own settings, or "
                                   f"move {path} away to start the agent afresh") from e
    buffer = getattr(agent, "replay_buffer", None)
    if isinstance(buffer, ReplayBuffer):
        restore_replay_buffer(buffer, path)
    agent.num_timesteps = state["num_timesteps"]
    agent._n_updates = state["n_updates"]
    agent._episode_num = state["episode_num"]
    # learn() recomputes this before the first update; set it now so the agent is consistent before that too.
    agent._current_progress_remaining = 1.0 - state["num_timesteps"] / max(1, state["total_timesteps"])
