"""The preference database's old import path (the original drlhp's name), kept so old imports still work.

Everything is defined in ``drlhp.reward.pref_db``.
"""
from drlhp.reward.pref_db import (
    FORMAT_NAME,
    FORMAT_VERSION,
    READABLE_VERSIONS,
    TRAIN_FILE,
    VAL_FILE,
    PrefBuffer,
    PrefDB,
    PrefDBFormatError,
    clip_format,
    has_labels,
)

__all__ = [
    "FORMAT_NAME", "FORMAT_VERSION", "READABLE_VERSIONS", "TRAIN_FILE", "VAL_FILE", "PrefBuffer", "PrefDB",
    "PrefDBFormatError", "clip_format", "has_labels",
]
