"""The small messages between the processes (the labels themselves travel as ``drlhp.label_store.stream`` records)."""
from __future__ import annotations

from typing import NamedTuple

from drlhp.label_store.agreement import Agreement


class RunStart(NamedTuple):
    """Trainer -> interface, once the run's earlier labels are loaded: where numbering and counts continue."""

    first_clip_id: int  # added to the env side's clip numbers (0, 1, ...), so ids never repeat in a log_dir
    next_seq: int  # the sequence number of the run's next label
    n_retracted: int = 0  # the run's labels taken back: the label budget has counted next_seq - n_retracted
    agreement: Agreement | None = None  # pairs answered twice so far, per labeller pair (the live count goes on)


class SaveLabels(NamedTuple):
    """Main -> trainer: write train.pkl.gz and val.pkl.gz into ``directory``, then reply."""

    directory: str


class TrainerReady(NamedTuple):
    """Trainer -> main, once it holds the log_dir lock and has loaded what the run starts from."""

    n_train: int
    n_val: int
    n_labels: int  # every label of the run so far
    training_step: int  # the reward network's


class LabelsSaved(NamedTuple):
    """Trainer -> main: the reply to ``SaveLabels``."""

    paths: list[str]
    n_train: int
    n_val: int


class TrainerFailed(NamedTuple):
    """Trainer -> main, instead of a reply: ``error`` is raised in the main process (a ``log_dir`` in use, a
    bad file to start from, or a ``WorkerError`` carrying the traceback of a command that failed)."""

    error: BaseException


# A ``None`` on a queue means "no more messages from this sender".
