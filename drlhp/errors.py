"""Every error drlhp raises for you to catch, in one place (each is also importable from ``drlhp``).

Built-in types are their bases, so code that catches ``ValueError`` or ``RuntimeError`` still does.
"""
from __future__ import annotations


class WorkerError(RuntimeError):
    """A drlhp background process failed; the message carries its traceback."""


class LogDirInUseError(RuntimeError):
    """Another drlhp run is using this ``log_dir``."""


class LogDirHasLabelsError(FileExistsError):
    """A new run would collect into a ``log_dir`` that holds an earlier run's labels."""


class PrefDBFormatError(ValueError):
    """A preference file is corrupt, tampered with, or not a drlhp preference database."""


class CheckpointFormatError(ValueError):
    """A reward-predictor checkpoint is corrupt, of another program, or holds more than tensors."""


class PreferenceServiceDied(RuntimeError):
    """The preference service's actor (or its node) died; the message says where its labels are."""


class InvalidAnswer(ValueError):
    """A labeller typed something other than L, R, E or nothing."""
