"""One run per log_dir: a second run is refused; a dead run's log_dir is free again."""
import os
import signal

import pytest
from conftest import FAST, FakePixelEnv, step_until

from drlhp import HumanPreferencesEnvWrapper, LogDirInUseError, PrefDB
from drlhp.storage.layout import LOCK_FILENAME
from drlhp.storage.lock import LogDirLock


def test_a_second_run_on_the_same_log_dir_is_refused_and_the_first_goes_on(tmp_path):
    with HumanPreferencesEnvWrapper(FakePixelEnv(), log_dir=str(tmp_path), train_reward=False, **FAST) as first:
        step_until(first, lambda: first.stats().labels_received >= 5)
        in_use = rf"'{tmp_path}' is in use .*program pid {os.getpid()}.*own log_dir="
        with pytest.raises(LogDirInUseError, match=in_use):
            HumanPreferencesEnvWrapper(FakePixelEnv(), log_dir=str(tmp_path), **FAST)
        step_until(first, lambda: first.stats().labels_received >= 10)
        saved = len(PrefDB.load(first.save_prefs()[0]))
    assert saved >= 8  # the first run's labels, untouched by the refused one


def test_a_killed_runs_log_dir_is_free_at_once(tmp_path):
    first = HumanPreferencesEnvWrapper(FakePixelEnv(), log_dir=str(tmp_path), **FAST)
    try:
        owner = first.pipeline.processes["reward_trainer"]  # the lock's holder
        os.kill(owner.pid, signal.SIGKILL)
        owner.join(10)
        with HumanPreferencesEnvWrapper(FakePixelEnv(), log_dir=str(tmp_path), train_reward=False, **FAST) as second:
            step_until(second, lambda: second.stats().labels_received >= 3)
    finally:
        try:
            first.close()
        except Exception:  # it reports its killed worker; that is not what this test is about
            pass


def test_a_torn_or_foreign_lock_file_does_not_matter(tmp_path):
    (tmp_path / LOCK_FILENAME).write_text("{not json")
    lock = LogDirLock(str(tmp_path))
    lock.acquire(program_pid=123)
    try:
        with pytest.raises(LogDirInUseError, match="program pid 123"):
            LogDirLock(str(tmp_path)).acquire(program_pid=456)
    finally:
        lock.release()
    again = LogDirLock(str(tmp_path))
    again.acquire(program_pid=789)  # released: free again
    again.release()
