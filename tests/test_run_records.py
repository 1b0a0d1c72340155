"""Run records: learning_curves.py writes one per finished run, with what made it; the records are checked."""
from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
from agent_checkpoint import load_agent_state  # examples/' own module (pytest's pythonpath, pyproject.toml)

from benchmarks.experiments.learning_curves import changed_defaults, drlhp_settings, launches_of, teacher_of
from benchmarks.report import run_records
from benchmarks.report.run_records import RecordError, free_folder, read_records, record_name, slim, write_record

ROOT = Path(__file__).resolve().parent.parent

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
    assert changed_defaults(["--label-budget", "3000", "--seed=1", "--keep-agents", "--save-every", "0",
                            "--keep-reward-models", "5000"]) == []
    assert changed_defaults(["--teacher-mistake-rate", "0.1", "--teacher-beta=2", "--life-loss-penalty", "1"]) == []
    assert changed_defaults(["--label-budget", "3000", "--reward-centre", "median", "--no-reward-predictor-batchnorm",
                             "--n-initial-prefs=250"]) == ["--reward-centre median", "--no-reward-predictor-batchnorm",
                                                           "--n-initial-prefs=250"]


def run_learning_curves(*args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "benchmarks.experiments.learning_curves", *args],
                          capture_output=True, text=True, timeout=240, cwd=ROOT,
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
    # The metrics gzipped in the record, the same rows as the log_dir's plain CSV, with no time stamp in the bytes.
    assert drlhp["reward_training_metrics"] == "reward_training_metrics.csv.gz"
    plain = (out / "drlhp" / "reward_training_metrics.csv").read_bytes()
    assert (drlhp.folder / "reward_training_metrics.csv.gz").read_bytes() == run_records.gzipped(plain)
    assert drlhp.metrics() == run_records.read_csv(out / "drlhp" / "reward_training_metrics.csv") != []
    assert true_reward.metrics() is None
    curve = drlhp.curve()
    assert len(curve["agent_steps"]) > 0 and curve["agent_steps"][-1] <= 256

    again = run_learning_curves("--example", "moving_dot", "--out", str(out), "--plot-only", "--record", str(results))
    assert again.count("recorded before") == 2 and len(read_records(results)) == 2


def test_the_records_folder_keeps_to_its_budget():
    """benchmarks/results/ under 20 MiB, no file in it over 2 MiB: the message names what breaks it and the fix."""
    problem = run_records.over_budget(run_records.RESULTS)
    assert problem is None, problem


def test_the_budget_names_each_file_over_it_and_the_slim_command(tmp_path, monkeypatch):
    (tmp_path / "t" / "a").mkdir(parents=True)
    (tmp_path / "t" / "a" / "big.csv").write_bytes(b"0" * 600)
    (tmp_path / "t" / "a" / "small.csv").write_bytes(b"0" * 100)
    assert run_records.over_budget(tmp_path) is None
    monkeypatch.setattr(run_records, "FILE_LIMIT_BYTES", 500)
    problem = run_records.over_budget(tmp_path)
    assert problem is not None and "big.csv is" in problem and "small.csv" not in problem
    assert "python -m benchmarks.report.run_records slim" in problem
    monkeypatch.setattr(run_records, "BUDGET_BYTES", 700)
    assert "not under" in run_records.over_budget(tmp_path)


def test_slim_gzips_a_records_plain_metrics_rounds_its_floats_and_repacks_recordings_once(tmp_path):
    folder = write_record(tmp_path / "t" / "drlhp_seed0_40labels", a_record(), [ROW])
    rows = b"training_step,val_accuracy\r\n50,0.6250000000000001\r\n100,0.75\r\n"
    # A record as older code wrote it: the plain CSV (its floats to 17 digits), named so in run.json (its other
    # bytes as they were).
    (folder / "reward_training_metrics.csv").write_bytes(rows)
    text = (folder / "run.json").read_text().replace('"reward_training_metrics": null',
                                                     '"reward_training_metrics": "reward_training_metrics.csv"')
    (folder / "run.json").write_text(text)
    frames = np.tile(np.arange(84 * 84, dtype=np.uint8).reshape(84, 84), (50, 1, 1))
    recording = tmp_path / "t" / "policies" / "agent_7.npz"
    recording.parent.mkdir()
    np.savez_compressed(recording, newest=frames, rewards=np.ones(50, np.float32), agent_steps=7)

    done = slim(tmp_path)
    assert len(done) == 2 and "gzipped" in done[0] and "with LZMA" in done[1]
    assert not (folder / "reward_training_metrics.csv").exists()
    assert gzip.decompress((folder / "reward_training_metrics.csv.gz").read_bytes()) == rows.replace(
        b"0.6250000000000001", b"0.625")
    assert (folder / "run.json").read_text() == text.replace('metrics.csv"', 'metrics.csv.gz"')
    [record] = read_records(tmp_path)
    assert record.metrics() == [{"training_step": "50", "val_accuracy": "0.625"},
                                {"training_step": "100", "val_accuracy": "0.75"}]
    with zipfile.ZipFile(recording) as z:
        assert {m.compress_type for m in z.infolist()} == {zipfile.ZIP_LZMA}
    with np.load(recording, allow_pickle=False) as data:
        assert (data["newest"] == frames).all() and data["newest"].dtype == np.uint8 and int(data["agent_steps"]) == 7
    lean = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    assert slim(tmp_path) == [] and {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == lean


def test_recordings_saved_with_lzma_are_the_same_bytes_each_time_and_load_as_npz(tmp_path):
    arrays = {"observations": np.linspace(0, 1, 60, dtype=np.float32).reshape(20, 3), "seed": 3}
    run_records.save_arrays(tmp_path / "a.npz", **arrays)
    run_records.save_arrays(tmp_path / "b.npz", **arrays)
    assert (tmp_path / "a.npz").read_bytes() == (tmp_path / "b.npz").read_bytes()
    with np.load(tmp_path / "a.npz", allow_pickle=False) as data:
        assert data.files == ["observations", "seed"] and (data["observations"] == arrays["observations"]).all()
