"""examples/halfcheetah_offline_iql.py end to end at a small scale: a dataset of SAC snapshots' episodes, labels, a
reward model, the dataset relabelled, IQL on both rewards; a second run goes on where the first stopped."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("mujoco")
pytest.importorskip("d3rlpy")
minari = pytest.importorskip("minari")

from drlhp.storage.curve_csv import current_rows, read_rows  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLE = os.path.join(ROOT, "examples", "halfcheetah_offline_iql.py")
SMALL = ["--up-to", "2000", "--episodes-per-agent", "2", "--episode-length", "100", "--labels", "30",
         "--reward-steps", "20", "--eval-every", "50", "--eval-episodes", "1", "--seeds", "0"]


def run(out, *extra: str) -> str:
    proc = subprocess.run([sys.executable, EXAMPLE, "--out", str(out), *SMALL, *extra], capture_output=True,
                          text=True, timeout=300, cwd=out)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def test_the_offline_example_labels_relabels_and_runs_iql_on_both_rewards_and_resumes(tmp_path, monkeypatch):
    from agent_checkpoint import kept_agent_path, save_agent
    from mujoco_recipe import make_mujoco, make_sac_agent

    agents = tmp_path / "sac"
    for steps in (1000, 2000, 3000):  # 3000 is past --up-to: left out
        agent = make_sac_agent(make_mujoco("HalfCheetah-v5", 1, steps), steps)
        save_agent(agent, kept_agent_path(str(agents), steps), steps, {"env": "halfcheetah", "n_envs": 1,
                                                                        "run": "true_reward"})
    out = run(tmp_path, "--agents", str(agents / "agent"), "--iql-steps", "50")
    assert "random policy" in out and "SAC at 2000 steps" in out and "SAC at 3000" not in out
    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "datasets"))
    source = minari.load_dataset("drlhp/halfcheetah-sac-upto2k-v0")
    assert source.total_episodes == 6 and source.total_steps == 600  # a random policy and 2 snapshots, 2 each
    episode = next(source.iterate_episodes())
    assert episode.infos["qpos"].shape == (101, 9) and episode.infos["qvel"].shape == (101, 9)  # a person sees it
    relabelled = minari.load_dataset("drlhp/halfcheetah-sac-upto2k-relabelled-seed0-v0")
    assert json.loads(relabelled.storage.metadata["drlhp"])["reward_model"]["provenance"]["train_labels"] > 0
    # Run again with more steps: the stages done are kept, IQL goes on from its last evaluation.
    out = run(tmp_path, "--iql-steps", "100")
    curves = {arm: current_rows(read_rows(str(tmp_path / f"iql_{arm}_seed0" / "learning_curve.csv")))
              for arm in ("drlhp", "true_reward")}
    for rows in curves.values():
        assert [(r["agent_steps"], r["session"]) for r in rows] == [("50", "0"), ("100", "1")]
        assert all(np.isfinite(float(r["true_episode_return"])) and r["episode_length"] == "100" for r in rows)
    # The records: the dataset named, a drlhp run's reward model beside its curve.
    command = f"python examples/halfcheetah_offline_iql.py --out {tmp_path} {' '.join(SMALL)} --iql-steps 100"
    launch = {"command": command, "commit": "0" * 40, "started": "2026-12-02T00:00:00Z", "runs": ["offline_iql"]}
    (tmp_path / "launch.json").write_text(json.dumps({"launches": [launch]}))
    proc = subprocess.run([sys.executable, "-m", "benchmarks.experiments.offline_iql", "--out", str(tmp_path),
                           "--record", str(tmp_path / "results"), "--record-only"], capture_output=True, text=True,
                          timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    records = tmp_path / "results" / "halfcheetah_iql"
    drlhp = json.loads((records / "drlhp_seed0_30labels" / "run.json").read_text())
    assert drlhp["dataset"]["id"] == "drlhp/halfcheetah-sac-upto2k-v0" and drlhp["labels"] >= 30
    assert drlhp["dataset"]["relabelled"] == "drlhp/halfcheetah-sac-upto2k-relabelled-seed0-v0"
    assert (records / "drlhp_seed0_30labels" / "reward_training_metrics.csv.gz").exists()
    # The curve's labels are those the reward model learned from (the true reward's: none).
    assert {r["labels"] for r in curves["drlhp"]} == {str(drlhp["labels"])}
    assert {r["labels"] for r in curves["true_reward"]} == {"0"}
    truth = json.loads((records / "true_reward_seed0" / "run.json").read_text())
    assert truth["agent_steps"] == 100 and truth["dataset"]["relabelled"] is None
