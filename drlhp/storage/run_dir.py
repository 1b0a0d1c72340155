"""A ``log_dir`` holds one run: starting in one that is not empty either resumes that run or keeps it intact.

Where each of a run's files sits: ``drlhp.storage.layout``.

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
from drlhp.storage.files import append_csv_row, set_aside
from drlhp.storage.layout import HUMAN_LABELS_FILENAME, LogDir

#: ``human_labels.csv``'s one schema, whichever labeller writes it: a field a labeller does not measure is
#: left empty (the web page measures no display rate; the terminal labeller has no names).
HUMAN_LABEL_COLUMNS = ("pair", "clip_left", "clip_right", "label", "labeller", "seconds_to_answer", "display_fps",
                       "seconds_from_last_answer_to_this_pair")


def can_resume(log_dir: str) -> bool:
    """Whether ``log_dir`` holds a run to resume: labels or a reward-network checkpoint."""
    files = LogDir(log_dir)
    return os.path.isdir(log_dir) and (files.has_labels() or os.path.exists(files.checkpoint))


def refuse_earlier_labels(log_dir: str) -> None:
    """Raise ``LogDirHasLabelsError`` if a new run collecting into ``log_dir`` would overwrite labels."""
    files = LogDir(log_dir)
    if not files.has_labels():
        return
    found = [os.path.basename(p) for p in files.snapshot if os.path.exists(p)]
    found += [os.path.relpath(p, log_dir) for p in files.journal_files()][:3]
    raise LogDirHasLabelsError(
        f"log_dir {os.path.abspath(log_dir)!r} holds labels of an earlier run ({', '.join(found)}); a new run "
        "would overwrite them. Pass resume=True to continue that run, or prefs_dir= naming it to start a new "
        "run from its labels in another log_dir, or give this run a new log_dir.")


def set_aside_earlier_logs(log_dir: str) -> list[str]:
    """Rename an earlier run's CSV logs to ``<name>.<last modified>.csv``; returns the new names."""
    paths = (LogDir(log_dir).metrics, LogDir(log_dir).human_labels)
    return [set_aside(path) for path in paths if os.path.exists(path)]


def log_human_label(path: str, **fields) -> None:
    """Append one answer to ``human_labels.csv`` at ``path`` (fields: ``HUMAN_LABEL_COLUMNS``)."""
    unknown = set(fields) - set(HUMAN_LABEL_COLUMNS)
    if unknown:
        raise ValueError(f"not columns of {HUMAN_LABELS_FILENAME}: {sorted(unknown)}")
    append_csv_row(path, HUMAN_LABEL_COLUMNS, fields)
