"""Failure paths: bad arguments, corrupt files, a worker raising, a worker killed, closing in any state."""
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest
import torch
from conftest import FAST, FakePixelEnv, step_until, wait_for

from drlhp import HumanPreferencesEnvWrapper, PrefDB, PrefDBFormatError, WorkerError


class FailingLabeller:
    """Answers a few pairs, then raises (module level, so it pickles into the worker)."""

    pairs_per_segment = 1.0

    def __init__(self):
        self.n = 0

    def label(self, a, b):
        self.n += 1
        if self.n > 3:
            raise RuntimeError("labeller exploded on purpose")
        return 1.0

    def close(self):
        pass


@pytest.mark.parametrize("kwargs, message", [
    (dict(segment_length=0), "segment_length"),
    (dict(val_fraction=1.0), "val_fraction"),
    (dict(max_segs=1), "max_segs"),
    (dict(mp_start_method="teleport"), "mp_start_method"),
    (dict(prefs_dir="/nonexistent"), "prefs_dir"),
    (dict(pretrained_reward_predictor_dir="/nonexistent"), "pretrained_reward_predictor_dir"),
    (dict(collect_prefs=False, train_reward=True), "prefs_dir"),
    (dict(reward_predictor_device="gpu"), r"reward_predictor_device='gpu' is not a torch device .*'cpu'"),
])
def test_bad_arguments_fail_at_construction(tmp_path, kwargs, message):
    with pytest.raises(ValueError, match=message):
        HumanPreferencesEnvWrapper(FakePixelEnv(), log_dir=str(tmp_path), **kwargs)


def test_corrupt_prefs_file_fails_at_construction_with_its_reason(tmp_path):
    (tmp_path / "train.pkl.gz").write_bytes(b"garbage")
    (tmp_path / "val.pkl.gz").write_bytes(b"garbage")
    with pytest.raises(PrefDBFormatError, match="not a valid drlhp preference database"):
        HumanPreferencesEnvWrapper(FakePixelEnv(), prefs_dir=str(tmp_path), collect_prefs=False,
                                   log_dir=str(tmp_path / "log"), **FAST)


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_a_device_the_trainer_cannot_find_fails_at_construction_with_the_fix(tmp_path):
    with pytest.raises(ValueError, match=r"reward_predictor_device='cuda', but torch finds 0 CUDA.*'auto'"):
        HumanPreferencesEnvWrapper(FakePixelEnv(), log_dir=str(tmp_path), reward_predictor_device="cuda", **FAST)


def test_corrupt_pretrained_checkpoint_is_refused(tmp_path):
    (tmp_path / "reward_predictor.ckpt").write_bytes(b"not a checkpoint")
    with pytest.raises(ValueError, match="is not a valid drlhp reward-predictor checkpoint"):
        HumanPreferencesEnvWrapper(FakePixelEnv(), pretrained_reward_predictor_dir=str(tmp_path),
                                   collect_prefs=False, train_reward=False)


def test_worker_exception_is_raised_in_the_main_process_with_its_traceback(tmp_path):
    env = HumanPreferencesEnvWrapper(FakePixelEnv(), labeller=FailingLabeller(), log_dir=str(tmp_path), **FAST)
    with pytest.raises(WorkerError) as err:
        step_until(env, lambda: False, timeout=60)
    assert "pref_interface" in str(err.value) and "labeller exploded on purpose" in str(err.value)
    assert "Traceback" in str(err.value)
    start = time.monotonic()
    env.close()
    assert time.monotonic() - start < 15


def test_worker_killed_by_sigkill_is_reported_not_hung(tmp_path):
    env = HumanPreferencesEnvWrapper(FakePixelEnv(), log_dir=str(tmp_path), **FAST)
    try:
        env.reset()
        victim = env.pipeline.processes["reward_trainer"]
        os.kill(victim.pid, signal.SIGKILL)
        victim.join(10)
        with pytest.raises(WorkerError, match="SIGKILL"):
            for _ in range(1000):
                env.step(0)
    finally:
        start = time.monotonic()
        env.close()
        assert time.monotonic() - start < 15


def test_close_is_idempotent_and_prompt_while_training(tmp_path):
    env = HumanPreferencesEnvWrapper(FakePixelEnv(), log_dir=str(tmp_path), **FAST)
    step_until(env, lambda: env.stats().training_steps >= 2)
    start = time.monotonic()
    env.close()
    env.close()
    assert time.monotonic() - start < 15
    with pytest.raises(RuntimeError, match="save_prefs"):
        env.save_prefs()


def test_switch_to_predicted_reward_without_a_checkpoint_explains_itself(tmp_path):
    with HumanPreferencesEnvWrapper(FakePixelEnv(), log_dir=str(tmp_path), train_reward=False, **FAST) as env:
        with pytest.raises(RuntimeError, match="No reward predictor yet"):
            env.switch_to_predicted_reward()


def test_children_save_labels_and_exit_when_the_main_process_dies(tmp_path):
    script = textwrap.dedent(f"""
        import os, sys
        sys.path.insert(0, {os.path.dirname(__file__)!r})
        from conftest import FakePixelEnv, FAST, step_until
        from drlhp import HumanPreferencesEnvWrapper
        if __name__ == "__main__":
            env = HumanPreferencesEnvWrapper(FakePixelEnv(), log_dir={str(tmp_path)!r}, **FAST)
            step_until(env, lambda: env.stats().labels_received >= 10)
            print(" ".join(str(p.pid) for p in env.pipeline.processes.values()), flush=True)
            os.kill(os.getpid(), 9)  # a crash: no close(), no save_prefs()
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    pids = [int(p) for p in proc.stdout.split()]
    assert len(pids) == 2, proc.stderr

    def gone(pid):  # exited: no such process, or a zombie waiting for PID 1 to reap it
        try:
            with open(f"/proc/{pid}/stat") as f:
                return f.read().rsplit(")", 1)[1].split()[0] == "Z"
        except FileNotFoundError:
            return True

    assert wait_for(lambda: all(gone(p) for p in pids), timeout=40), "orphaned drlhp workers are still running"
    saved = PrefDB.load(str(tmp_path / "train.pkl.gz")), PrefDB.load(str(tmp_path / "val.pkl.gz"))
    assert sum(len(db) for db in saved) >= 10  # the labels made before the crash survived it
    # The crashed run's log_dir is free again once its trainer has saved, and the run resumes.
    with HumanPreferencesEnvWrapper(FakePixelEnv(), log_dir=str(tmp_path), train_reward=False, resume=True,
                                    **FAST) as env:
        assert env.stats().run_labels >= 10


def test_workers_outlive_a_sigterm_to_the_process_group_so_the_main_process_stops_cleanly(tmp_path):
    # A job scheduler (Slurm's scancel) or a terminal signals every process of the job. The main process
    # handles SIGTERM as the examples do (finish the step, save, close); its workers must still be alive then.
    script = textwrap.dedent(f"""
        import signal, sys, threading
        sys.path.insert(0, {os.path.dirname(__file__)!r})
        from conftest import FakePixelEnv, FAST, step_until
        from drlhp import HumanPreferencesEnvWrapper
        if __name__ == "__main__":
            # No label may leave the database for its size: every one received must be on disk.
            env = HumanPreferencesEnvWrapper(FakePixelEnv(), log_dir={str(tmp_path)!r}, max_prefs_in_db=10**6,
                                             **FAST)
            sigterm = threading.Event()
            signal.signal(signal.SIGTERM, lambda *_: sigterm.set())
            step_until(env, lambda: env.stats().labels_received >= 5)
            print(" ".join(str(p.pid) for p in env.pipeline.processes.values()), flush=True)
            step_until(env, sigterm.is_set)
            received = env.stats().labels_received
            step_until(env, lambda: env.stats().labels_received >= received + 3)  # the interface is alive
            env.save_prefs()  # and so is the trainer
            env.close()
            print(env.stats().labels_received, flush=True)
    """)
    stderr = tmp_path / "stderr.txt"  # a file, not a pipe: the workers' logging must never block on it
    with open(stderr, "w") as err:
        proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=err, text=True,
                                start_new_session=True)
    try:
        pids = [int(p) for p in proc.stdout.readline().split()]
        assert len(pids) == 2, stderr.read_text()
        os.killpg(proc.pid, signal.SIGTERM)
        out = proc.communicate(timeout=120)[0]
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    assert proc.returncode == 0, stderr.read_text()
    for pid in pids:
        assert not os.path.exists(f"/proc/{pid}"), "a worker outlived the script"
    saved = PrefDB.load(str(tmp_path / "train.pkl.gz")), PrefDB.load(str(tmp_path / "val.pkl.gz"))
    assert sum(len(db) for db in saved) >= int(out) >= 8


@pytest.mark.parametrize("ending", ["", "raise RuntimeError('the script failed')"])
def test_a_script_that_ends_without_close_exits_and_keeps_its_labels(tmp_path, ending):
    # Before the exit handler, __del__ closed the pipeline during interpreter shutdown and hung for ever.
    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {os.path.dirname(__file__)!r})
        from conftest import FakePixelEnv, FAST, step_until
        from drlhp import HumanPreferencesEnvWrapper
        if __name__ == "__main__":
            env = HumanPreferencesEnvWrapper(FakePixelEnv(), log_dir={str(tmp_path)!r}, train_reward=False, **FAST)
            step_until(env, lambda: env.stats().labels_received >= 5)
            print(" ".join(str(p.pid) for p in env.pipeline.processes.values()), flush=True)
            {ending}
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert proc.returncode == (1 if ending else 0), proc.stderr
    for pid in map(int, proc.stdout.split()):
        assert not os.path.exists(f"/proc/{pid}"), "a worker outlived the script"
    saved = PrefDB.load(str(tmp_path / "train.pkl.gz")), PrefDB.load(str(tmp_path / "val.pkl.gz"))
    assert sum(len(db) for db in saved) >= 5


def test_labels_are_autosaved_at_intervals(tmp_path):
    with HumanPreferencesEnvWrapper(FakePixelEnv(), log_dir=str(tmp_path), train_reward=False,
                                    prefs_autosave_interval=0.2, **FAST) as env:
        step_until(env, lambda: env.stats().labels_received >= 5)
        path = str(tmp_path / "train.pkl.gz")
        assert wait_for(lambda: os.path.exists(path), timeout=10), "no autosave happened"
        assert len(PrefDB.load(path)) >= 1


def test_a_script_without_a_main_guard_is_told_how_to_fix_it(tmp_path):
    script = tmp_path / "no_guard.py"
    script.write_text(textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {os.path.dirname(__file__)!r})
        from conftest import FakePixelEnv
        from drlhp import HumanPreferencesEnvWrapper
        env = HumanPreferencesEnvWrapper(FakePixelEnv(), log_dir={str(tmp_path / "logs")!r})
    """))
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    assert 'WorkerError' in proc.stderr and 'if __name__ == "__main__":' in proc.stderr


def test_a_worker_that_died_since_the_last_step_is_reported_by_close(tmp_path):
    env = HumanPreferencesEnvWrapper(FakePixelEnv(), log_dir=str(tmp_path), **FAST)
    step_until(env, lambda: env.stats().labels_received >= 3)
    victim = env.pipeline.processes["pref_interface"]
    os.kill(victim.pid, signal.SIGKILL)
    victim.join(10)
    with pytest.raises(WorkerError, match="pref_interface process was killed by signal SIGKILL.*resume=True"):
        env.close()
    env.close()  # reported once; closing again is a no-op



def _poll_forever(flag, polling) -> None:
    polling.set()
    while not flag.is_set():
        pass


def test_a_stop_flag_can_be_set_after_a_process_polling_it_was_sigkilled():
    # A multiprocessing.Event fails this: the killed poller usually dies inside is_set() holding
    # the Event's lock, and set() (what close() calls) then waits forever.
    import multiprocessing
    import threading

    from drlhp.runtime.shared import StopFlag

    # Forked: the poller only spins on shared memory, so it needs nothing a spawned process would import (this
    # module, torch) first; how it was started does not matter to the lock it may die holding.
    ctx = multiprocessing.get_context("fork")
    for _ in range(3):
        flag, polling = StopFlag(ctx), StopFlag(ctx)
        poller = ctx.Process(target=_poll_forever, args=(flag, polling), daemon=True)
        poller.start()
        assert polling.wait(timeout=60)
        os.kill(poller.pid, signal.SIGKILL)
        poller.join(10)
        setter = threading.Thread(target=flag.set, daemon=True)
        setter.start()
        setter.join(5)
        assert not setter.is_alive() and flag.wait(timeout=0)
