"""The examples' agent checkpoint, ``<log_dir>/agent/agent.pt``: an SB3 on-policy agent saved so that a
killed run can go on where it was -- same weights, optimiser state, step count and schedule progress.

Loading a file must never run code from it, so this does not use SB3's ``save``/``load`` (they
cloudpickle): the file is a ``torch.save`` of plain tensors, numbers and strings, read back with
``torch.load(weights_only=True)``. The agent itself is rebuilt by the example's ``make_agent``.
"""
from __future__ import annotations

import os

import torch
from stable_baselines3.common.on_policy_algorithm import OnPolicyAlgorithm

from drlhp.storage.files import atomic_write

FORMAT = "drlhp-examples-agent-checkpoint/1"
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


def save_agent(agent: OnPolicyAlgorithm, path: str, total_timesteps: int, settings: dict, **extra) -> None:
    """Write the agent's state to ``path`` atomically (a temporary file, then a rename).

    Call it between rollouts (the weights then hold every update of the steps counted). ``settings``:
    plain values, :data:`MUST_MATCH` among them; ``extra``: further plain values to keep (e.g. wall time).
    """
    state = {
        "format": FORMAT,
        "policy": agent.policy.state_dict(),
        "optimizer": agent.policy.optimizer.state_dict(),
        "num_timesteps": int(agent.num_timesteps),
        "n_updates": int(agent._n_updates),
        "episode_num": int(agent._episode_num),
        "total_timesteps": int(total_timesteps),
        "settings": dict(settings),
        **extra,
    }
    with atomic_write(path) as f:
        torch.save(state, f)


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
    if not isinstance(state, dict) or state.get("format") != FORMAT:
        raise AgentCheckpointError(f"{path} is not an agent checkpoint of the examples (no {FORMAT!r} marker); {fix}")
    for key, how in MUST_MATCH.items():
        saved = state["settings"].get(key)
        if settings is not None and saved != settings[key]:
            raise AgentCheckpointError(
                f"{path} was written for {key}={saved!r}, but this run has {key}={settings[key]!r}: resume with "
                f"the run's own settings ({how}), or {fix}")
    return state


def restore_agent(agent: OnPolicyAlgorithm, state: dict, path: str = "the agent checkpoint") -> None:
    """Load ``state`` (from :func:`load_agent_state`) into ``agent``, a fresh one from the same ``make_agent``.

    Continue with ``agent.learn(total - agent.num_timesteps, reset_num_timesteps=False)``: SB3 then sets its
    ``_total_timesteps`` back to ``total``, so the learning-rate and clip schedules' progress
    (``1 - num_timesteps / total``) continues where it was.
    """
    try:
        agent.policy.load_state_dict(state["policy"])
        agent.policy.optimizer.load_state_dict(state["optimizer"])
    except (RuntimeError, ValueError, KeyError) as e:
        raise AgentCheckpointError(f"{path} does not fit this agent ({str(e).splitlines()[0]}): it was written by "
                                   "another policy or algorithm setting; resume with the run's own settings, or "
                                   f"move {path} away to start the agent afresh") from e
    agent.num_timesteps = state["num_timesteps"]
    agent._n_updates = state["n_updates"]
    agent._episode_num = state["episode_num"]
    # learn() recomputes this before the first update; set it now so the agent is consistent before that too.
    agent._current_progress_remaining = 1.0 - state["num_timesteps"] / max(1, state["total_timesteps"])
