"""Writing files: atomically (a reader never sees a half-written one), and log rows; a write the disk or the
directory refuses becomes one ``WriteError`` naming the file and the way on."""
from __future__ import annotations

import contextlib
import csv
import errno
import os
import tempfile
import time
from collections.abc import Iterator, Sequence
from typing import BinaryIO

from drlhp.errors import WriteError

#: Why the OS refused a write, for the faults a person can mend; any other OSError stays as it is (a bug, or a
#: fault drlhp cannot name the way out of).
WRITE_FAULTS = {
    errno.ENOSPC: "no space is left on its disk",
    errno.EDQUOT: "the disk quota is used up",
    errno.EACCES: "permission denied",
    errno.EPERM: "permission denied",
    errno.EROFS: "its file system is read-only",
    errno.ENOTDIR: "a file stands where one of its directories should be",
    errno.EEXIST: "a file stands where one of its directories should be",
}


#: What a run does after a write failed, once the fault is mended.
RESUME = ("then start the run again with resume=True (the examples: --resume): everything it wrote before is kept, "
          "every label it acknowledged among it.")


def write_error(path: str, error: OSError, then: str = RESUME) -> WriteError | None:
    """The ``WriteError`` for ``error``, met writing ``path`` (or several paths, named together), ending with what
    to do ``then``; None if it is not a fault a person can mend."""
    cause = WRITE_FAULTS.get(error.errno) if error.errno is not None else None
    if cause is None:
        return None
    if error.errno in (errno.ENOSPC, errno.EDQUOT):
        fix = "Free space on that disk (or give the run a log_dir on another)"
    elif error.errno in (errno.ENOTDIR, errno.EEXIST):
        fix = "Move that file out of the way (or give the run another log_dir)"
    else:
        fix = "Make the directory writable (or give the run another log_dir)"
    return WriteError(f"drlhp could not write {path}: {cause}. {fix}, {then}")


@contextlib.contextmanager
def writing(*paths: str, then: str = RESUME) -> Iterator[None]:
    """Raise the OS's refusal to write ``paths`` as a ``WriteError`` ending with what to do ``then`` (from the OSError,
    which keeps the details)."""
    try:
        yield
    except WriteError:
        raise
    except OSError as e:
        error = write_error(" and ".join(os.path.abspath(path) for path in paths), e, then)
        if error is None:
            raise
        raise error from e


@contextlib.contextmanager
def atomic_writes(paths: Sequence[str]) -> Iterator[list[BinaryIO]]:
    """Open a temporary file next to each of ``paths``; once all are written, fsync them and rename each over its
    path.

    A rename is atomic on POSIX, so readers see each file old or new; a failure while writing (a full disk) removes
    the temporary files and leaves every path as it was. Only a crash between the renames (nothing is left to fail
    there but the machine) leaves some paths new and others old.
    """
    temporary: list[str] = []
    try:
        with writing(*paths), contextlib.ExitStack() as stack:
            files: list[BinaryIO] = []
            for path in paths:
                directory = os.path.dirname(os.path.abspath(path))
                os.makedirs(directory, exist_ok=True)
                fd, tmp = tempfile.mkstemp(dir=directory, prefix="." + os.path.basename(path) + ".", suffix=".tmp")
                temporary.append(tmp)
                files.append(stack.enter_context(os.fdopen(fd, "wb")))
            yield files
            for f in files:
                f.flush()
                os.fsync(f.fileno())
        for tmp, path in zip(temporary, paths):
            os.replace(tmp, path)
    except BaseException:
        for tmp in temporary:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
        raise
    for directory in {os.path.dirname(os.path.abspath(path)) for path in paths}:
        fsync_dir(directory)


@contextlib.contextmanager
def atomic_write(path: str) -> Iterator[BinaryIO]:
    """``atomic_writes`` of one file: readers see ``path`` old or new, never half written."""
    with atomic_writes([path]) as (f,):
        yield f


def fsync_dir(directory: str) -> None:
    """Make the directory's entries (a file renamed into it) survive a power cut."""
    dir_fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def append_csv_row(path: str, columns: Sequence[str], row: dict) -> None:
    """Append ``row`` (a column it lacks is left empty) to the CSV file ``path``, writing the header first
    if the file is new. A file with other columns (from an older drlhp) is set aside, never mixed into; a row cut
    short by a failed write (a full disk) is dropped before the next is written."""
    with writing(path):
        if os.path.exists(path):
            with open(path, newline="") as f:
                header = next(csv.reader(f), None)
            if header != list(columns):
                set_aside(path)
            else:
                drop_partial_line(path)
        new_file = not os.path.exists(path) or not os.path.getsize(path)
        with open(path, "a", newline="") as f:
            writer = csv.DictWriter(f, columns)
            if new_file:
                writer.writeheader()
            writer.writerow(row)


def drop_partial_line(path: str) -> None:
    """Cut a last line without its newline (a write that failed part way) off the text file ``path``."""
    with open(path, "rb+") as f:
        end = f.seek(0, os.SEEK_END)
        if not end:
            return
        f.seek(end - 1)
        if f.read(1) == b"\n":
            return
        f.seek(max(0, end - 65536))
        tail = f.read()
        f.truncate(end - len(tail) + tail.rfind(b"\n") + 1)


def prepare_log_dir(log_dir: str) -> None:
    """Create ``log_dir`` if need be and try writing a file in it: before a run does any work, a log_dir it cannot
    write raises a ``WriteError`` naming it and the fix."""
    if os.path.exists(log_dir) and not os.path.isdir(log_dir):
        raise WriteError(f"log_dir {os.path.abspath(log_dir)!r} cannot be written: it is a file. Give the run a "
                         "directory (a new one, or the log_dir of the run to resume).")
    with writing(log_dir, then="then start the run again."):
        os.makedirs(log_dir, exist_ok=True)
        with tempfile.TemporaryFile(dir=log_dir):
            pass


def set_aside(path: str) -> str:
    """Rename ``<name>.csv`` to ``<name>.<last modified>.csv`` beside it; returns the new path."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(os.path.getmtime(path)))
    new = f"{os.path.splitext(path)[0]}.{stamp}.csv"
    os.replace(path, new)
    return new
