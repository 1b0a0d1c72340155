"""Writing files: atomically (a reader never sees a half-written one), and log rows."""
from __future__ import annotations

import contextlib
import csv
import os
import tempfile
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
    """Append ``row`` to the CSV file ``path``, writing the header first if the file is new."""
    new_file = not os.path.exists(path)
    with open(path, "a", newline="") as f:
        writer = csv.DictWriter(f, columns)
        if new_file:
            writer.writeheader()
        writer.writerow(row)
