"""A ``log_dir`` holds one run: starting in one that is not empty either resumes that run or keeps it intact.

A run's files in ``log_dir``: the label snapshot (``train.pkl.gz``, ``val.pkl.gz``)
and journal (``label_journal/``), the reward network
(``reward_predictor_checkpoints/``: the checkpoint, and the optimiser state next to
it), ``reward_training_metrics.csv`` and ``human_labels.csv``.

- ``resume=True`` continues the run: its labels, network, optimiser, normaliser
  and label numbering; the metrics CSV goes on with the same rows.
- A new run never overwrites an earlier run's labels: collecting into a
  ``log_dir`` that holds some raises ``LogDirHasLabelsError`` (unless they are its
  own ``prefs_dir``: loaded, they become part of the new run).
- A new run that trains starts its own metrics file; an earlier run's CSVs are
  renamed with their last-modified time, so rows of two runs never mix.
"""
from __future__ import annotations

import os

from drlhp.errors import LogDirHasLabelsError
from drlhp.labelling.journal import journal_files
from drlhp.reward.predictor import CHECKPOINT_DIRNAME, CHECKPOINT_FILENAME
from drlhp.reward.pref_db import has_labels
from drlhp.storage.files import append_csv_row, set_aside

METRICS_FILENAME = "reward_training_metrics.csv"
HUMAN_LABELS_FILENAME = "human_labels.csv"
#: ``human_labels.csv``'s one schema, whichever labeller writes it: a field a labeller does not measure is
#: left empty (the web page measures no display rate; the terminal labeller has no names).
HUMAN_LABEL_COLUMNS = ("pair", "clip_left", "clip_right", "label", "labeller", "seconds_to_answer", "display_fps",
                       "seconds_from_last_answer_to_this_pair")
TRAINER_STATE_FILENAME = "optimizer_state.pt"


def checkpoint_file(log_dir: str) -> str:
    return os.path.join(log_dir, CHECKPOINT_DIRNAME, CHECKPOINT_FILENAME)


def trainer_state_file(log_dir: str) -> str:
    return os.path.join(log_dir, CHECKPOINT_DIRNAME, TRAINER_STATE_FILENAME)


def can_resume(log_dir: str) -> bool:
    """Whether ``log_dir`` holds a run to resume: labels or a reward-network checkpoint."""
    return os.path.isdir(log_dir) and (has_labels(log_dir) or os.path.exists(checkpoint_file(log_dir)))


def refuse_earlier_labels(log_dir: str) -> None:
    """Raise ``LogDirHasLabelsError`` if a new run collecting into ``log_dir`` would overwrite labels."""
    if not has_labels(log_dir):
        return
    found = [f for f in ("train.pkl.gz", "val.pkl.gz") if os.path.exists(os.path.join(log_dir, f))]
    found += [os.path.relpath(p, log_dir) for p in journal_files(log_dir)][:3]
    raise LogDirHasLabelsError(
        f"log_dir {os.path.abspath(log_dir)!r} holds labels of an earlier run ({', '.join(found)}); a new run "
        "would overwrite them. Pass resume=True to continue that run, or prefs_dir= naming it to start a new "
        "run from its labels in another log_dir, or give this run a new log_dir.")


def set_aside_earlier_logs(log_dir: str) -> list[str]:
    """Rename an earlier run's CSV logs to ``<name>.<last modified>.csv``; returns the new names."""
    paths = (os.path.join(log_dir, name) for name in (METRICS_FILENAME, HUMAN_LABELS_FILENAME))
    return [set_aside(path) for path in paths if os.path.exists(path)]


def log_human_label(path: str, **fields) -> None:
    """Append one answer to ``human_labels.csv`` at ``path`` (fields: ``HUMAN_LABEL_COLUMNS``)."""
    unknown = set(fields) - set(HUMAN_LABEL_COLUMNS)
    if unknown:
        raise ValueError(f"not columns of {HUMAN_LABELS_FILENAME}: {sorted(unknown)}")
    append_csv_row(path, HUMAN_LABEL_COLUMNS, fields)
