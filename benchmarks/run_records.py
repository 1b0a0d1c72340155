"""Run records: each agent run the docs cite lives in a folder of its own under ``benchmarks/results/<task>/``.

A record folder holds the run's learning curve (``curve.csv``: its own current rows in the merged columns of
``learning_curves.py``, one row per finished episode), drlhp's reward-training metrics where the run had them,
and ``run.json``, which says what the run was::

    game                     the env id (PongNoFrameskip-v4)
    task                     the example that ran it (pong): the folder under benchmarks/results
    arm                      "drlhp" (synthetic labels) or "true_reward" (the env's own reward)
    seed                     the example's --seed
    label_budget, labels     the labels the run could ask for and those it used (null for the true reward)
    agent_steps              the agent's steps at the end of the run
    defaults                 true when the command chose nothing about the reward model or labelling (only
                             the label budget, the seed and the length); false for a lever tried
    variant                  "defaults", or a short name of what the command changed (a lever)
    teacher                  who gave the synthetic labels, by what differs from the perfect teacher (the clip
                             with the larger true return always wins): {} for the perfect teacher,
                             {"mistake_rate": 0.1} for one answer in ten the wrong way round; null for the true
                             reward. It does not touch "defaults", which is about drlhp's own settings
    description              that change in words
    commit                   the commit whose code ran
    command                  the command that ran it
    settings                 {"example": the example's arguments, "env_kwargs": what ``gymnasium.make`` got
                             beside the id ({} for the env as registered), "drlhp": drlhp's resolved settings
                             (null for the true reward)}
    wall_time_s              the run's wall time, all its sessions
    date                     the day it finished
    curve                    the curve's file name (curve.csv)
    reward_training_metrics  that file's name, or null
    reconstructed            true for a run recorded after the fact, from the docs and the history of the
                             time (its settings as the code of its commit resolved them)
    notes                    anything else a reader should know (the machine was shared, resumed ...)

``benchmarks/learning_curves.py --record benchmarks/results`` writes a record for each finished run;
``benchmarks/results_report.py`` reads them all.
"""
from __future__ import annotations

import csv
import json
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
RECORD_FILE = "run.json"
CURVE_FILE = "curve.csv"
METRICS_FILE = "reward_training_metrics.csv"
CURVE_COLUMNS = ("run", "agent_steps", "true_episode_return", "labels", "wall_time_s", "episode_length", "session")
ARMS = ("drlhp", "true_reward")
KEYS = ("game", "task", "arm", "seed", "label_budget", "labels", "agent_steps", "defaults", "variant", "teacher",
        "description", "commit", "command", "settings", "wall_time_s", "date", "curve", "reward_training_metrics",
        "reconstructed", "notes")


class RecordError(ValueError):
    """A run record that is incomplete or names a file that is not there."""


@dataclass(frozen=True)
class Record:
    folder: Path
    data: dict

    def __getitem__(self, key: str):
        return self.data[key]

    @property
    def name(self) -> str:
        return f"{self.folder.parent.name}/{self.folder.name}"

    def curve(self) -> dict[str, np.ndarray]:
        """The run's episodes: agent steps and true returns, as arrays."""
        with open(self.folder / self.data["curve"], newline="") as f:
            rows = list(csv.DictReader(f))
        return {"agent_steps": np.array([int(r["agent_steps"]) for r in rows]),
                "true_episode_return": np.array([float(r["true_episode_return"]) for r in rows]),
                "labels": np.array([int(r["labels"]) for r in rows])}


def record_name(arm: str, seed: int, labels: int | None, variant: str = "defaults", teacher: dict | None = None) -> str:
    """A record folder's name, from what the run is: ``drlhp_seed1_3000labels``, ``true_reward_seed1``, a teacher
    other than the perfect one after them (``drlhp_seed0_200labels_mistake-rate-0.1``), and the variant last for a
    lever (``drlhp_seed0_3000labels_median-centre``)."""
    parts = [arm, f"seed{seed}"]
    if arm == "drlhp":
        parts.append(f"{labels}labels")
    if teacher:
        parts.append(teacher_name(teacher))
    if variant != "defaults":
        parts.append(variant)
    return "_".join(parts)


def teacher_name(teacher: dict) -> str:
    """A teacher in a name: ``mistake-rate-0.1``, ``mistake-rate-0.1-life-loss-penalty-1``."""
    return "-".join(f"{name.replace('_', '-')}-{value if isinstance(value, str) else format(value, 'g')}"
                    for name, value in teacher.items())


def free_folder(task_dir: Path, name: str) -> Path:
    """``task_dir/name``, or ``name_2``, ``name_3`` ... when the same configuration ran before."""
    folder, n = task_dir / name, 1
    while folder.exists():
        n += 1
        folder = task_dir / f"{name}_{n}"
    return folder


def check(data: dict, folder: Path) -> None:
    missing = [k for k in KEYS if k not in data]
    if missing:
        raise RecordError(f"{folder / RECORD_FILE} lacks {missing}: rewrite it with every key of "
                          "benchmarks/run_records.py's KEYS")
    if data["arm"] not in ARMS:
        raise RecordError(f"{folder / RECORD_FILE}: arm {data['arm']!r} is not one of {ARMS}")
    for key in ("curve", "reward_training_metrics"):
        if data[key] is not None and not (folder / data[key]).is_file():
            raise RecordError(f"{folder / RECORD_FILE} names {key} {data[key]!r}, which is not in {folder}")


def write_record(folder: Path, data: dict, curve_rows: list[dict], metrics_path: str | None = None) -> Path:
    """Write a record folder: the curve's rows, a copy of the metrics file if any, and ``run.json``."""
    folder.mkdir(parents=True, exist_ok=False)
    with open(folder / CURVE_FILE, "w", newline="") as f:
        writer = csv.DictWriter(f, CURVE_COLUMNS, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(curve_rows)
    data = {**data, "curve": CURVE_FILE, "reward_training_metrics": None}
    if metrics_path is not None and os.path.exists(metrics_path):
        (folder / METRICS_FILE).write_bytes(Path(metrics_path).read_bytes())
        data["reward_training_metrics"] = METRICS_FILE
    data = {k: data.get(k) for k in KEYS}
    check(data, folder)
    (folder / RECORD_FILE).write_text(json.dumps(data, indent=1) + "\n")
    return folder


def read_records(root: Path = RESULTS) -> list[Record]:
    """Every record under ``root``, checked, in folder order."""
    records = []
    for path in sorted(root.rglob(RECORD_FILE)):
        data = json.loads(path.read_text())
        check(data, path.parent)
        records.append(Record(path.parent, data))
    return records
