"""A run's learning curve: ``<log_dir>/learning_curve.csv``, one row per finished episode.

The examples write it whatever the agent is trained on (``run`` is ``drlhp`` or ``true_reward``), so a
run learning from preferences and its true-reward baseline are compared on the env's own return
against agent steps. Columns:

- ``run``: ``drlhp`` or ``true_reward``.
- ``session``: 0 for the run's first process, +1 for each resume.
- ``session_start_step``: the agent step the session started from (its agent checkpoint's; 0 if afresh).
- ``agent_steps``: the agent's steps (all envs together) when the episode ended. drlhp's warm-up on a
  random policy is not counted: those are not the agent's steps, and their episodes are not rows.
- ``true_episode_return``, ``episode_length``: the env's own return and length of the episode.
- ``labels``: the run's labels by then (0 for the true-reward baseline).
- ``wall_time_s``: seconds since the run started, summed over its sessions up to the agent checkpoint
  each resume started from (drlhp's process start-up and warm-up included).

The file is only ever appended to, and flushed as rows come, so a killed run keeps its rows. A run
killed between two agent checkpoints resumes from the older one: the killed session's rows after that
step describe agent steps that were lost. They stay in the file; :func:`read_learning_curve` drops them.
"""
from __future__ import annotations

import csv
import os

import numpy as np

from drlhp.errors import ConfigError, FileFormatError
from drlhp.storage.files import drop_partial_line, writing
from drlhp.storage.layout import LogDir

COLUMNS = ("run", "session", "session_start_step", "agent_steps", "true_episode_return", "episode_length",
           "labels", "wall_time_s")
RUNS = ("drlhp", "true_reward")


def learning_curve_path(log_dir: str) -> str:
    """``log_dir``'s learning curve file."""
    return LogDir(log_dir).learning_curve


def read_rows(path: str) -> list[dict]:
    """The file's rows as written (strings), superseded ones included; [] if there is no file."""
    if not os.path.exists(path):
        return []
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    missing = set(COLUMNS) - set(rows[0]) if rows else set()
    if missing:
        raise FileFormatError(f"{path} is not a learning curve: it lacks the columns {sorted(missing)}")
    return rows


class LearningCurveWriter:
    """Appends one row per finished episode to ``<log_dir>/learning_curve.csv`` as session ``session``."""

    def __init__(self, log_dir: str, run: str, session: int, session_start_step: int) -> None:
        if run not in RUNS:
            raise ConfigError(f"run must be one of {RUNS}, got {run!r}")
        self._path = path = learning_curve_path(log_dir)
        with writing(path):
            os.makedirs(log_dir, exist_ok=True)
            if os.path.exists(path):
                drop_partial_line(path)  # a row cut short when the disk filled
            new_file = not os.path.exists(path) or os.path.getsize(path) == 0
            self._file = open(path, "a", newline="")
            self._writer = csv.DictWriter(self._file, COLUMNS)
            if new_file:
                self._writer.writeheader()
        self._fixed = {"run": run, "session": session, "session_start_step": session_start_step}

    def add(self, agent_steps: int, true_return: float, episode_length: int, labels: int, wall_time_s: float) -> None:
        with writing(self._path):  # a row may go to the disk here, when the file's buffer fills
            self._writer.writerow({**self._fixed, "agent_steps": agent_steps,
                                   "true_episode_return": f"{true_return:.6g}", "episode_length": episode_length,
                                   "labels": labels, "wall_time_s": f"{wall_time_s:.1f}"})

    def flush(self) -> None:
        """Hand the rows to the OS: a killed process keeps them (a power cut may not)."""
        with writing(self._path):
            self._file.flush()

    def close(self) -> None:
        with writing(self._path):
            self._file.close()


def next_session(log_dir: str, run: str) -> int:
    """The session number a new process of the run in ``log_dir`` writes under (0 for a new run).

    Raises ``FileFormatError`` if the file holds another kind of run: two kinds of run never share a curve.
    """
    path = learning_curve_path(log_dir)
    rows = read_rows(path)
    other = {r["run"] for r in rows} - {run}
    if other:
        raise FileFormatError(f"{path} holds the learning curve of a {'/'.join(sorted(other))} run, not a {run} run: "
                         f"resume it with the same kind of run, or use a new --log-dir")
    return max((int(r["session"]) for r in rows), default=-1) + 1


def current_rows(rows: list[dict]) -> list[dict]:
    """Drop the rows a later session superseded: those past the step that session resumed from."""
    starts = {int(r["session"]): int(r["session_start_step"]) for r in rows}
    # For each session, the earliest step any later session resumed from (None: no later session).
    resumed_from = {s: min((starts[later] for later in starts if later > s), default=None) for s in starts}
    return [r for r in rows if (resumed := resumed_from[int(r["session"])]) is None
            or int(r["agent_steps"]) <= resumed]


def read_learning_curve(log_dir_or_file: str) -> dict[str, np.ndarray] | None:
    """The run's current learning curve as arrays by column, sorted by agent step; None without a file or rows."""
    path = log_dir_or_file if log_dir_or_file.endswith(".csv") else learning_curve_path(log_dir_or_file)
    rows = current_rows(read_rows(path))
    if not rows:
        return None
    return curve_from_rows(rows, COLUMNS)


def curve_from_rows(rows: list[dict], columns: tuple[str, ...]) -> dict[str, np.ndarray]:
    """Rows of a learning-curve CSV as arrays by column (``run`` as strings), sorted by agent step."""
    rows = sorted(rows, key=lambda r: int(r["agent_steps"]))  # stable: episodes of one step keep their order
    curve = {key: np.array([float(r[key]) for r in rows]) for key in columns if key != "run"}
    curve["run"] = np.array([r["run"] for r in rows])
    return curve


def smooth(values: np.ndarray, window: int) -> np.ndarray:
    """Mean of the last ``window`` values (fewer at the start): a trailing moving average."""
    if len(values) == 0:
        return values
    sums = np.cumsum(np.insert(np.asarray(values, float), 0, 0.0))
    ends = np.arange(1, len(values) + 1)
    starts = np.maximum(0, ends - window)
    return (sums[ends] - sums[starts]) / (ends - starts)
