"""The MuJoCo example runs from state with SAC, its buffer relabelled, and a stopped run goes on with its buffer."""
import os
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("mujoco")
EXAMPLE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples", "halfcheetah_sac.py")
SMALL = ["--label-budget", "40", "--n-initial-prefs", "10", "--n-initial-training-steps", "5", "--save-every", "500",
         "--log-every", "500"]


def run(log_dir, steps: int, *extra: str) -> str:
    # In the run's directory: MuJoCo writes its warnings to MUJOCO_LOG.TXT where it runs.
    proc = subprocess.run([sys.executable, EXAMPLE, *SMALL, "--total-timesteps", str(steps), "--log-dir", str(log_dir),
                           *extra], capture_output=True, text=True, timeout=240, cwd=log_dir)
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
