"""Writing files: atomically (a reader never sees a half-written one), and log rows."""
from __future__ import annotations

import contextlib
import csv
import os
import tempfile
import time
from collections.abc import Iterator, Sequence
from typing import BinaryIO


@contextlib.contextmanager
def atomic_write(path: str) -> Iterator[BinaryIO]:
    """Open a temporary file next to ``path``; on success fsync it and rename it over ``path``.

    The rename is atomic on POSIX, so readers see either the old or the new file;
    on an exception the temporary file is removed and ``path`` is untouched.
    """
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix="." + os.path.basename(path) + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    dir_fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def append_csv_row(path: str, columns: Sequence[str], row: dict) -> None:
    """Append ``row`` (a column it lacks is left empty) to the CSV file ``path``, writing the header first
    if the file is new. A file with other columns (from an older drlhp) is set aside, never mixed into."""
    if os.path.exists(path):
        with open(path, newline="") as f:
            header = next(csv.reader(f), None)
        if header != list(columns):
            set_aside(path)
    new_file = not os.path.exists(path)
    with open(path, "a", newline="") as f:
        writer = csv.DictWriter(f, columns)
        if new_file:
            writer.writeheader()
        writer.writerow(row)


def set_aside(path: str) -> str:
    """Rename ``<name>.csv`` to ``<name>.<last modified>.csv`` beside it; returns the new path."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(os.path.getmtime(path)))
    new = f"{os.path.splitext(path)[0]}.{stamp}.csv"
    os.replace(path, new)
    return new
