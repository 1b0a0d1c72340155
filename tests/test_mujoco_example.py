"""The MuJoCo examples run from state: SAC with its buffer relabelled, PPO behind VecNormalize; a stopped run goes on
with its buffer or its statistics."""
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

pytest.importorskip("mujoco")
EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples")
SMALL = ["--label-budget", "40", "--n-initial-prefs", "10", "--n-initial-training-steps", "5", "--save-every", "500",
         "--log-every", "500"]


def run(log_dir, steps: int, *extra: str, example: str = "halfcheetah_sac.py") -> str:
    # In the run's directory: MuJoCo writes its warnings to MUJOCO_LOG.TXT where it runs.
    command = [sys.executable, os.path.join(EXAMPLES, example), *SMALL, "--total-timesteps", str(steps),
               "--log-dir", str(log_dir), *extra]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=240, cwd=log_dir)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def test_halfcheetah_sac_learns_on_the_predicted_reward_and_resumes_with_its_replay_buffer(tmp_path):
    out = run(tmp_path, 1000)
    assert "reward: predicted" in out and "labels: 40 in all" in out
    buffer = np.load(tmp_path / "agent" / "replay_buffer.npz")
    assert int(buffer["pos"]) == 1000 and buffer["observations"].shape == (1000, 1, 17)
    out = run(tmp_path, 1500, "--resume")
    assert "resuming the agent at step 1000" in out
    assert int(np.load(tmp_path / "agent" / "replay_buffer.npz")["pos"]) == 1500


def test_halfcheetah_ppo_learns_behind_vec_normalize_and_resumes_with_its_statistics(tmp_path):
    out = run(tmp_path, 1024, example="halfcheetah_ppo.py")
    assert "reward: predicted" in out and "labels: 40 in all" in out
    state = torch.load(tmp_path / "agent" / "agent.pt", weights_only=True)
    assert state["num_timesteps"] == 1024 and state["vec_normalize"]["obs_rms"]["mean"].shape == (17,)
    count = state["vec_normalize"]["obs_rms"]["count"]
    assert round(count) == 1 + 1024  # the first reset's observation and every agent step's
    out = run(tmp_path, 1536, "--resume", example="halfcheetah_ppo.py")
    assert "resuming the agent at step 1024" in out
    resumed = torch.load(tmp_path / "agent" / "agent.pt", weights_only=True)["vec_normalize"]["obs_rms"]["count"]
    assert resumed == pytest.approx(count + 1 + 512)  # went on from the saved statistics: a reset, 512 steps


def test_the_hopper_example_runs_whole_episodes_when_the_hopper_falls():
    from hopper_sac import ENV_ID, ENV_KWARGS
    from mujoco_recipe import make_mujoco

    venv = make_mujoco(ENV_ID, 1, 0, **ENV_KWARGS)
    venv.reset()
    venv.action_space.seed(0)
    hopper = venv.envs[0].unwrapped
    fell_at = None
    for step in range(1, 1001):
        _, _, dones, infos = venv.step(np.array([venv.action_space.sample()]))
        if fell_at is None and not hopper.is_healthy:
            fell_at = step
        if dones[0]:
            break
    venv.close()
    assert fell_at is not None and fell_at < 200  # random actions topple it early ...
    assert step == 1000 and infos[0]["TimeLimit.truncated"]  # ... and the episode still runs its 1,000 steps
