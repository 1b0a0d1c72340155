"""Where each file of a run sits in its ``log_dir``: the one module that knows the layout.

::

  log_dir/
    drlhp.lock                          one run at a time (drlhp.storage.lock)
    train.pkl.gz, val.pkl.gz            the label snapshot (drlhp.label_store.database)
    label_journal/<first seq>.journal   labels since the snapshot (drlhp.label_store.journal)
    reward_predictor_checkpoints/
      reward_predictor.ckpt             the reward network and its normaliser
      optimizer_state.pt                Adam's state, so a resumed run trains on as if never stopped
    reward_history/step_<N>.ckpt        the agent's reward model at agent step N (drlhp.sb3.KeepRewardModels)
    reward_training_metrics.csv         a row per checkpoint
    human_labels.csv                    a row per answer a person gave
    learning_curve.csv                  the examples' episodes (drlhp.storage.curve_csv)
    drlhp_plot.png                      ``drlhp plot``'s figure

A directory given as ``prefs_dir`` is read as a ``log_dir`` too: its snapshot and journal.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

LOCK_FILENAME = "drlhp.lock"
TRAIN_FILE = "train.pkl.gz"
VAL_FILE = "val.pkl.gz"
JOURNAL_DIRNAME = "label_journal"
JOURNAL_SUFFIX = ".journal"
CHECKPOINT_DIRNAME = "reward_predictor_checkpoints"
CHECKPOINT_FILENAME = "reward_predictor.ckpt"
TRAINER_STATE_FILENAME = "optimizer_state.pt"
REWARD_HISTORY_DIRNAME = "reward_history"
METRICS_FILENAME = "reward_training_metrics.csv"
HUMAN_LABELS_FILENAME = "human_labels.csv"
LEARNING_CURVE_FILENAME = "learning_curve.csv"
PLOT_FILENAME = "drlhp_plot.png"


@dataclass(frozen=True)
class LogDir:
    """The paths of the files of the run in ``path`` (nothing is created here)."""

    path: str

    def _join(self, *names: str) -> str:
        return os.path.join(self.path, *names)

    @property
    def lock(self) -> str:
        return self._join(LOCK_FILENAME)

    @property
    def snapshot(self) -> tuple[str, str]:
        """The label snapshot's two files: training and validation labels."""
        return self._join(TRAIN_FILE), self._join(VAL_FILE)

    @property
    def journal_dir(self) -> str:
        return self._join(JOURNAL_DIRNAME)

    @property
    def checkpoint_dir(self) -> str:
        return self._join(CHECKPOINT_DIRNAME)

    @property
    def checkpoint(self) -> str:
        return self._join(CHECKPOINT_DIRNAME, CHECKPOINT_FILENAME)

    @property
    def trainer_state(self) -> str:
        return self._join(CHECKPOINT_DIRNAME, TRAINER_STATE_FILENAME)

    @property
    def reward_history_dir(self) -> str:
        return self._join(REWARD_HISTORY_DIRNAME)

    def reward_history(self, agent_steps: int) -> str:
        """The reward model the agent had at ``agent_steps``, as ``KeepRewardModels`` keeps it."""
        return self._join(REWARD_HISTORY_DIRNAME, f"step_{agent_steps}.ckpt")

    @property
    def metrics(self) -> str:
        return self._join(METRICS_FILENAME)

    @property
    def human_labels(self) -> str:
        return self._join(HUMAN_LABELS_FILENAME)

    @property
    def learning_curve(self) -> str:
        return self._join(LEARNING_CURVE_FILENAME)

    @property
    def plot(self) -> str:
        return self._join(PLOT_FILENAME)

    def journal_files(self) -> list[str]:
        """The journal's files, oldest first (empty if there is no journal)."""
        directory = self.journal_dir
        if not os.path.isdir(directory):
            return []
        return [os.path.join(directory, f) for f in sorted(os.listdir(directory)) if f.endswith(JOURNAL_SUFFIX)]

    def journal_from_first_label(self) -> bool:
        """Whether the journal's oldest file starts at the run's first label (so it holds every label since)."""
        files = self.journal_files()
        return bool(files) and os.path.basename(files[0]) == journal_file_name(0)

    def has_labels(self) -> bool:
        """Whether the directory holds a label snapshot or journal (of an earlier run)."""
        return any(os.path.exists(p) for p in self.snapshot) or any(os.path.getsize(p) for p in self.journal_files())


def journal_file_name(first: int) -> str:
    """The name of the journal file whose records start at the run's label number (or position) ``first``."""
    return f"{first:012d}{JOURNAL_SUFFIX}"


def checkpoint_path(directory: str) -> str:
    """The checkpoint file inside ``directory`` (a log_dir's checkpoint folder), or ``directory`` if it is a file."""
    return directory if os.path.isfile(directory) else os.path.join(directory, CHECKPOINT_FILENAME)
