"""Run records: learning_curves.py writes one per finished run, with what made it; the records are checked."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "examples"))
import run_records  # noqa: E402  (the benchmarks' own module, from benchmarks/)
from agent_checkpoint import load_agent_state  # noqa: E402  (the examples' own module, from examples/)
from learning_curves import changed_defaults, drlhp_settings, launches_of, teacher_of  # noqa: E402
from run_records import RecordError, free_folder, read_records, record_name, write_record  # noqa: E402

ROW = {"run": "drlhp", "agent_steps": 100, "true_episode_return": 1.5, "labels": 8, "wall_time_s": 3.0,
       "episode_length": 50, "session": 0}


def a_record(**changes) -> dict:
    return {**{key: None for key in run_records.KEYS}, "game": "g", "task": "t", "arm": "drlhp", "seed": 0,
            "defaults": True, **changes}


def test_a_record_folder_is_named_by_what_the_run_is_and_a_repeat_gets_a_number(tmp_path):
    assert record_name("drlhp", 1, 3000) == "drlhp_seed1_3000labels"
    assert record_name("drlhp", 0, 200, "no-relabel", {"mistake_rate": 0.1, "beta": "inf"}) == (
        "drlhp_seed0_200labels_mistake-rate-0.1-beta-inf_no-relabel")
    assert teacher_of({"teacher_mistake_rate": 0.3, "teacher_beta": "inf", "life_loss_penalty": 2.0}) == {
        "mistake_rate": 0.3, "life_loss_penalty": 2.0}
    assert teacher_of({"seed": 0}) == {}  # a run from before the teacher's flags: the perfect teacher
    assert record_name("true_reward", 2, 3000) == "true_reward_seed2"
    assert record_name("drlhp", 0, 1000, "median-centre") == "drlhp_seed0_1000labels_median-centre"
    write_record(free_folder(tmp_path, "drlhp_seed0_40labels"), a_record(), [ROW])
    assert free_folder(tmp_path, "drlhp_seed0_40labels") == tmp_path / "drlhp_seed0_40labels_2"


def test_records_are_read_back_and_an_incomplete_one_names_what_it_lacks(tmp_path):
    folder = write_record(tmp_path / "t" / "a", a_record(seed=3), [ROW, {**ROW, "agent_steps": 200}])
    [record] = read_records(tmp_path)
    assert record["seed"] == 3 and record["curve"] == "curve.csv" and record["reward_training_metrics"] is None
    assert list(record.curve()["agent_steps"]) == [100, 200]

    data = json.loads((folder / "run.json").read_text())
    del data["commit"]
    (folder / "run.json").write_text(json.dumps(data))
    with pytest.raises(RecordError, match=r"lacks \['commit'\]"):
        read_records(tmp_path)
    (folder / "run.json").write_text(json.dumps({**data, "commit": "abc"}))
    (folder / "curve.csv").unlink()
    with pytest.raises(RecordError, match="names curve 'curve.csv', which is not in"):
        read_records(tmp_path)


def test_only_the_label_budget_seed_bookkeeping_and_the_teacher_leave_a_run_on_the_defaults():
    assert changed_defaults(["--label-budget", "3000", "--seed=1", "--keep-agents", "--save-every", "0"]) == []
    assert changed_defaults(["--teacher-mistake-rate", "0.1", "--teacher-beta=2", "--life-loss-penalty", "1"]) == []
    assert changed_defaults(["--label-budget", "3000", "--reward-centre", "median", "--no-reward-net-batchnorm",
                             "--n-initial-prefs=250"]) == ["--reward-centre median", "--no-reward-net-batchnorm",
                                                           "--n-initial-prefs=250"]


def run_learning_curves(*args: str) -> str:
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "learning_curves.py"), *args],
                          capture_output=True, text=True, timeout=240,
                          env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    return done.stdout


def test_a_record_takes_the_command_that_started_its_own_arm_when_the_arms_of_one_out_were_launched_apart():
    true_start = {"command": "... --arm true_reward", "commit": "a", "runs": ["true_reward"]}
    drlhp_start = {"command": "... --arm drlhp", "commit": "b", "runs": ["drlhp"]}
    true_resume = {"command": "... --arm true_reward --resume", "commit": "c", "runs": ["true_reward"]}
    launches = [true_start, drlhp_start, true_resume]
    assert launches_of(launches, "drlhp") == [drlhp_start]
    assert launches_of(launches, "true_reward") == [true_start, true_resume]
    # Noted before launch.json named its runs: the command's --arm says which ran, both without one.
    older = {"command": "python benchmarks/learning_curves.py --example e --out o", "commit": "d"}
    older_true = {"command": "python benchmarks/learning_curves.py --arm true_reward --out o", "commit": "e"}
    older_true_resume = {"command": "python benchmarks/learning_curves.py --arm=true_reward --resume", "commit": "f"}
    assert launches_of([older, drlhp_start], "drlhp") == [older, drlhp_start]
    assert launches_of([older], "true_reward") == [older]
    assert launches_of([older_true, older_true_resume, drlhp_start], "drlhp") == [drlhp_start]
    assert launches_of([older_true, older_true_resume, drlhp_start], "true_reward") == [older_true, older_true_resume]


def test_learning_curves_records_each_finished_run_once_with_its_command_commit_and_settings(tmp_path):
    out, results = tmp_path / "lc", tmp_path / "results"
    tiny = ["--n-envs", "2", "--segment-length", "5", "--n-initial-prefs", "8", "--n-initial-training-steps", "4",
            "--label-budget", "40", "--save-every", "0", "--teacher-mistake-rate", "0.2"]
    run_learning_curves("--example", "moving_dot", "--out", str(out), "--total-timesteps", "256",
                        "--record", str(results), *tiny)
    records = {r["arm"]: r for r in read_records(results)}
    assert set(records) == {"drlhp", "true_reward"}
    drlhp, true_reward = records["drlhp"], records["true_reward"]
    assert drlhp.folder.parent == results / "moving_dot"
    assert drlhp.folder.name.startswith("drlhp_seed0_40labels_") and true_reward.folder.name.startswith(
        "true_reward_seed0_")  # not the defaults: the variant names what the command changed
    assert not drlhp["defaults"] and "--segment-length 5" in drlhp["description"]
    # The teacher is named apart from drlhp's settings: in the folder's name and under "teacher", not in the variant.
    assert drlhp.folder.name.startswith("drlhp_seed0_40labels_mistake-rate-0.2_") and "mistake" not in drlhp["variant"]
    assert drlhp["teacher"] == {"mistake_rate": 0.2} and true_reward["teacher"] is None
    assert drlhp["settings"]["drlhp"]["synthetic_teacher"]["mistake_rate"] == 0.2
    assert drlhp["settings"]["example"]["teacher_beta"] == "inf"  # strict JSON: the perfect rationality by name
    assert (drlhp["game"], drlhp["task"], drlhp["agent_steps"], drlhp["label_budget"]) == (
        "drlhp/MovingDot-v0", "moving_dot", 256, 40)
    assert 8 <= drlhp["labels"] <= 40 and true_reward["labels"] is None
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True).stdout
    assert drlhp["commit"].startswith(head.strip()) and "--record" in drlhp["command"]
    launches = json.loads((out / "launch.json").read_text())["launches"]
    assert [launch["runs"] for launch in launches] == [["drlhp", "true_reward"]]
    assert drlhp["settings"]["drlhp"]["segment_length"] == 5 and true_reward["settings"]["drlhp"] is None
    assert drlhp["settings"]["example"]["label_budget"] == 40 and drlhp["settings"]["env_kwargs"] == {}
    # A run from before the checkpoint kept drlhp's settings gets them resolved from its arguments, the same.
    state = load_agent_state(str(out / "drlhp" / "agent" / "agent.pt"))
    older = {key: value for key, value in state.items() if key != "drlhp_settings"}
    assert drlhp_settings(older) == state["drlhp_settings"] == drlhp["settings"]["drlhp"]
    assert drlhp["reward_training_metrics"] == "reward_training_metrics.csv"
    curve = drlhp.curve()
    assert len(curve["agent_steps"]) > 0 and curve["agent_steps"][-1] <= 256

    again = run_learning_curves("--example", "moving_dot", "--out", str(out), "--plot-only", "--record", str(results))
    assert again.count("recorded before") == 2 and len(read_records(results)) == 2
