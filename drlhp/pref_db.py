"""The preference database's old import path (the original drlhp's name), kept so old imports still work.

Everything is defined in ``drlhp.labels.pref_db``, but for the files' names and places in a log_dir:
``drlhp.storage.layout``.
"""
from drlhp.labels.pref_db import (
    FORMAT_NAME,
    FORMAT_VERSION,
    READABLE_VERSIONS,
    PrefBuffer,
    PrefDB,
    PrefDBFormatError,
    clip_format,
)
from drlhp.storage.layout import TRAIN_FILE, VAL_FILE, LogDir


def has_labels(directory: str) -> bool:
    """Whether ``directory`` holds a label snapshot or journal (of an earlier run)."""
    return LogDir(directory).has_labels()


__all__ = [
    "FORMAT_NAME", "FORMAT_VERSION", "READABLE_VERSIONS", "TRAIN_FILE", "VAL_FILE", "PrefBuffer", "PrefDB",
    "PrefDBFormatError", "clip_format", "has_labels",
]
