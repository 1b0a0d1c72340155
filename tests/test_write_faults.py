"""Writes the disk or the directory refuses: a full disk, a log_dir that is a file. Each must reach the main process
as one ``WriteError`` line naming the file, keep every label the run acknowledged, and leave a run that resumes.

The full disk is real where the tests run as root (as on CI): a tmpfs of its own, filled mid-run. Elsewhere the
trainer and interface are forked with ``os.fsync`` refusing (ENOSPC) files of the run once the disk is "full", as
a disk that fills makes fsync fail; the rest of the path (what the workers do, what the main process is told, what
a resume finds) is the same.
"""
import contextlib
import errno
import os
import shutil
import subprocess
import time

import pytest
from conftest import FAST, FakePixelEnv, step_until
from test_label_journal import clips

from drlhp import HumanPreferencesEnvWrapper, NoLabelsError, PrefBuffer, WriteError
from drlhp.label_store.journal import JournalWriter, read_journal
from drlhp.storage.curve_csv import LearningCurveWriter, read_rows
from drlhp.storage.files import append_csv_row, atomic_writes
from drlhp.storage.layout import LogDir

DISK_BYTES = 64 * 2 ** 20  # room for a slow machine's run to collect for long before fill() (1.5 MiB here)


class FullDisk:
    """A directory whose disk can be filled mid-run (``fill()``) and freed again (``free()``)."""

    def __init__(self, root: str, real: bool) -> None:
        self.root, self.real = root, real
        self.ballast = os.path.join(root, "ballast")
        self.settings = {} if real else {"mp_start_method": "fork"}  # a forked worker inherits the patched fsync
        if real:  # made now: on a disk the run has already filled, creating it would fail
            open(self.ballast, "wb").close()

    def fill(self) -> None:
        """Take every free byte (or, without a tmpfs, make fsync refuse the run's files)."""
        with open(self.ballast, "ab") as f:
            if not self.real:
                return
            with contextlib.suppress(OSError):
                while True:
                    f.write(b"\0" * 65536)
                    f.flush()

    def free(self) -> None:
        os.unlink(self.ballast)


@pytest.fixture
def full_disk(tmp_path, monkeypatch):
    root = str(tmp_path / "disk")
    os.makedirs(root)
    mounted = os.geteuid() == 0 and subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={DISK_BYTES}", "tmpfs", root], capture_output=True).returncode == 0
    disk = FullDisk(root, real=mounted)
    if not mounted:
        fsync = os.fsync

        def fsync_refusing_when_full(fd: int) -> None:
            # Files under the disk's directory only, and only once it is "full".
            if os.path.exists(disk.ballast) and os.readlink(f"/proc/self/fd/{fd}").startswith(root):
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            fsync(fd)

        monkeypatch.setattr(os, "fsync", fsync_refusing_when_full)
    try:
        yield disk
    finally:
        if mounted:
            subprocess.run(["umount", "-l", root], check=True)


def one_line_naming(error: BaseException, *words: str) -> None:
    message = str(error)
    assert "\n" not in message and "Traceback" not in message, message
    for word in words:
        assert word in message, message


def test_a_disk_that_fills_mid_run_is_one_line_every_label_comes_back_and_the_run_resumes(full_disk):
    log_dir = os.path.join(full_disk.root, "run")
    env = HumanPreferencesEnvWrapper(FakePixelEnv(), log_dir=log_dir, **{**FAST, **full_disk.settings})
    try:
        step_until(env, lambda: env.stats().run_labels >= 20 and env.stats().training_steps >= 4)
        full_disk.fill()
        reported = [env.stats().run_labels]  # what the run reported at each step until it failed
        with pytest.raises(WriteError) as failure:
            step_until(env, lambda: reported.append(env.stats().run_labels), timeout=120)
    finally:
        start = time.monotonic()
        env.close()  # the other process failing too goes to the log: the run's failure was reported once
        assert time.monotonic() - start < 30
    one_line_naming(failure.value, "no space", log_dir, "resume=True")
    full_disk.free()
    resumed = HumanPreferencesEnvWrapper(FakePixelEnv(), log_dir=log_dir, resume=True, **FAST)
    try:
        assert resumed.stats().run_labels >= reported[-1]
        # ... and goes on collecting and writing where it stopped.
        step_until(resumed, lambda: resumed.stats().run_labels >= reported[-1] + 5)
    finally:
        resumed.close()
    assert PrefBuffer.load_all(log_dir).n_labels >= reported[-1] + 5


def test_a_log_dir_that_is_a_file_fails_before_any_work_and_the_file_is_untouched(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("mine")
    with pytest.raises(WriteError) as failure:
        HumanPreferencesEnvWrapper(FakePixelEnv(), log_dir=str(path), **FAST)
    one_line_naming(failure.value, str(path), "it is a file", "directory")
    assert path.read_text() == "mine"


def test_a_log_dir_replaced_by_a_file_mid_run_is_one_line_and_the_run_resumes_once_it_is_back(tmp_path):
    log_dir, aside = tmp_path / "run", tmp_path / "run.aside"
    env = HumanPreferencesEnvWrapper(FakePixelEnv(), log_dir=str(log_dir), **FAST)
    try:
        step_until(env, lambda: env.stats().run_labels >= 10 and env.stats().training_steps >= 4)
        # Root ignores permissions: a file where the directory was is what makes it unwritable here.
        blocker = tmp_path / "blocker"
        blocker.write_text("in the way")
        os.rename(log_dir, aside)
        for _ in range(100):  # a worker's next checkpoint may have made the directory again in between: clear it
            try:
                os.rename(blocker, log_dir)
                break
            except IsADirectoryError:
                shutil.rmtree(log_dir, ignore_errors=True)
        else:
            pytest.fail(f"the workers kept making {log_dir} again: no file could take its place")
        reported = [env.stats().run_labels]
        with pytest.raises(WriteError) as failure:
            step_until(env, lambda: reported.append(env.stats().run_labels), timeout=120)
    finally:
        env.close()
    one_line_naming(failure.value, str(log_dir), "a file stands where")
    log_dir.unlink()
    os.rename(aside, log_dir)
    resumed = HumanPreferencesEnvWrapper(FakePixelEnv(), log_dir=str(log_dir), resume=True, train_reward=False,
                                         **FAST)
    try:
        assert resumed.stats().run_labels >= reported[-1]
    finally:
        resumed.close()


def test_a_snapshot_is_all_or_nothing_a_failure_writing_it_leaves_the_earlier_one_whole(tmp_path):
    train, val = (str(tmp_path / name) for name in ("train.pkl.gz", "val.pkl.gz"))
    with atomic_writes([train, val]) as (f_train, f_val):
        f_train.write(b"old train")
        f_val.write(b"old val")
    with pytest.raises(WriteError, match="no space"), atomic_writes([train, val]) as (f_train, f_val):
        f_train.write(b"new train")  # written in full ...
        raise OSError(errno.ENOSPC, "No space left on device")  # ... and the disk fills during val
    assert open(train, "rb").read() == b"old train" and open(val, "rb").read() == b"old val"
    assert sorted(os.listdir(tmp_path)) == ["train.pkl.gz", "val.pkl.gz"]  # no temporary file left


def labelled_run(log_dir: str, n: int) -> JournalWriter:
    """A run's journal of ``n`` labels (0, 1, ...) in ``log_dir``, split as PrefBuffer's default."""
    writer = JournalWriter(log_dir, labels_in_snapshot=lambda: 0, val_fraction=0.2)
    segs = clips(2 * n + 4)
    for i in range(n):
        writer.append(i, segs[2 * i], segs[2 * i + 1], 1.0, "synthetic")
    return writer


def test_half_a_snapshot_with_the_journal_resumes_with_every_label(tmp_path):
    # What a drlhp that wrote the two files one by one left when the disk filled between them.
    labelled_run(str(tmp_path), 10).close()
    PrefBuffer.load_all(str(tmp_path)).train_db.save(str(tmp_path / "train.pkl.gz"), n_labels=10, val_fraction=0.2)
    buffer = PrefBuffer.load_all(str(tmp_path))
    assert (len(buffer.train_db), len(buffer.val_db), buffer.n_received) == (8, 2, 10)


def test_half_a_snapshot_without_every_label_in_the_journal_is_refused_naming_the_missing_file(tmp_path):
    labelled_run(str(tmp_path), 4).close()
    buffer = PrefBuffer.load_all(str(tmp_path))
    buffer.train_db.save(str(tmp_path / "train.pkl.gz"), n_labels=4, val_fraction=0.2)
    first = LogDir(str(tmp_path)).journal_files()[0]
    os.rename(first, os.path.join(os.path.dirname(first), "000000000003.journal"))  # the earlier labels dropped
    with pytest.raises(NoLabelsError, match="has no val.pkl.gz"):
        PrefBuffer.load_all(str(tmp_path))


def test_a_journal_write_that_fails_part_way_leaves_the_journal_whole(tmp_path, monkeypatch):
    writer = labelled_run(str(tmp_path), 3)
    write = os.write

    def half_then_full(fd: int, data) -> int:
        write(fd, bytes(data[:len(data) // 2]))
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "write", half_then_full)
    segs = clips(10)
    with pytest.raises(WriteError, match="no space"):
        writer.append(3, segs[6], segs[7], 0.0, "synthetic")
    monkeypatch.undo()
    writer.append(4, segs[8], segs[9], 0.0, "synthetic")  # space again: the journal goes on after the last whole record
    writer.close()
    assert [rec.seq for rec in read_journal(str(tmp_path)) if hasattr(rec, "a")] == [0, 1, 2, 4]


def test_a_csv_row_cut_short_by_a_full_disk_is_dropped_before_the_next(tmp_path):
    metrics = str(tmp_path / "metrics.csv")
    append_csv_row(metrics, ("step", "loss"), {"step": 1, "loss": 0.5})
    with open(metrics, "a") as f:
        f.write("2,0.4")  # the rest of the row never reached the disk
    append_csv_row(metrics, ("step", "loss"), {"step": 3, "loss": 0.3})
    assert open(metrics).read().splitlines() == ["step,loss", "1,0.5", "3,0.3"]

    curve = LearningCurveWriter(str(tmp_path), "drlhp", 0, 0)
    curve.add(10, 1.0, 10, 0, 1.0)
    curve.close()
    with open(LogDir(str(tmp_path)).learning_curve, "a") as f:
        f.write("drlhp,0,0,20,2")
    curve = LearningCurveWriter(str(tmp_path), "drlhp", 1, 10)
    curve.add(30, 3.0, 10, 0, 3.0)
    curve.close()
    assert [row["agent_steps"] for row in read_rows(LogDir(str(tmp_path)).learning_curve)] == ["10", "30"]
