"""Every error drlhp raises for you to catch, in one place (each is also importable from ``drlhp``).

``DrlhpError`` is the root: ``except drlhp.DrlhpError`` catches every one of them. Each also keeps a
built-in base, so code that catches ``ValueError``, ``RuntimeError``, ``ImportError`` or
``FileNotFoundError`` still does. Errors that are drlhp's own bugs (an internal invariant broken)
stay built-in types: they are not yours to handle.
"""
from __future__ import annotations

#: The last commit of drlhp that reads files of its earlier, unreleased forms (a reward checkpoint of format v1 or
#: without every network setting, a preference database of versions 1-3): loading one there and saving it again
#: converts it, and the errors for such files say so.
LAST_TO_CONVERT = "18477f6"


class DrlhpError(Exception):
    """The root of every error drlhp defines."""


class ConfigError(DrlhpError, ValueError):
    """A setting (of ``PreferenceConfig``, an engine or a command) has a value drlhp cannot use; the
    message names the setting and the values it takes."""


class UnknownSettingError(ConfigError, TypeError):
    """An argument that is not a drlhp setting (a ``TypeError`` too, as for any unknown keyword)."""


class MissingExtraError(DrlhpError, ImportError):
    """An optional dependency is not installed; the message gives the ``pip install "drlhp[...]"`` line."""


class NoDisplayError(DrlhpError, RuntimeError):
    """Human labelling needs a display (``DISPLAY``) or a terminal it cannot find; the message says which."""


class ObservationError(DrlhpError, ValueError):
    """Observations drlhp cannot cut into clips or show (their shape, dtype, or a change between steps)."""


class UsageError(DrlhpError, RuntimeError):
    """A call the run cannot answer as it is set up (e.g. ``save_prefs()`` without collecting labels)."""


class MissingFileError(DrlhpError, FileNotFoundError):
    """A file or directory you pointed drlhp at does not exist."""


class NoLabelsError(DrlhpError, FileNotFoundError, ValueError):
    """A directory holds no labelled pairs (or none of the split asked for) to train or evaluate on."""


class FileFormatError(DrlhpError, ValueError):
    """A file drlhp reads is not in the format it expects."""


class WorkerError(DrlhpError, RuntimeError):
    """A drlhp background process failed; the message carries its traceback."""


class WriteError(DrlhpError, OSError):
    """A file of the run could not be written (no space left, permission denied, a file where its directory
    should be); the message names the file, the cause and the way on. What the run wrote before is intact."""


class LogDirInUseError(DrlhpError, RuntimeError):
    """Another drlhp run is using this ``log_dir``."""


class LogDirHasLabelsError(DrlhpError, FileExistsError):
    """A new run would collect into a ``log_dir`` that holds an earlier run's labels."""


class PrefDBFormatError(FileFormatError):
    """A preference file is corrupt, tampered with, or not a drlhp preference database."""


class DatasetFormatError(FileFormatError):
    """A dataset lacks what drlhp reads from it (its episodes' observations, rewards, terminations and
    truncations), or holds them in shapes that do not fit together."""


class CheckpointFormatError(FileFormatError):
    """A reward-predictor checkpoint is corrupt, of another program or an earlier drlhp, or holds more than tensors."""


class PreferenceServiceDied(DrlhpError, RuntimeError):
    """The preference service's actor (or its node) died; the message says where its labels are."""


class InvalidAnswer(DrlhpError, ValueError):
    """A labeller typed something other than L, R, E or nothing."""


class NothingToUndo(DrlhpError, ValueError):
    """A labeller asked to take back an answer, but has none left to take back (none given this session, or the
    last ``undo_limit`` taken back already)."""
