"""A worker that raises mid-run, after real work (labels collected, a checkpoint trained): the main process is told at
its next step, or at close() if the worker died since the last one; every label the run reported comes back on
resume; no process is left; close() is prompt. (A worker killed by a signal, or failing at start: test_failures.py.)"""
import multiprocessing
import os
import time

import pytest
from conftest import FAST, FakePixelEnv, gone, labels_by_seq, step_until, wait_for

from drlhp import HumanPreferencesEnvWrapper, WorkerError
from drlhp.label_store.database import PrefBuffer
from drlhp.reward.optimiser import RewardOptimiser

#: How long close() may take after a worker failed (what test_failures.py allows a close in any state).
PROMPT_CLOSE_S = 15.0
TRAINER_FAULT = "CUDA error: an illegal memory access was encountered (raised by the test)"
LABELLER_FAULT = "the labeller failed mid-run (raised by the test)"


class LabellerFailingOnCue:
    """Answers every pair until the file ``cue`` exists, then raises at its next pair, as a labeller of one's own
    with a bug would. Module level, so it pickles into the interface process (on a cluster too: test_cluster.py).
    The cue is a file, not an Event: a Ray service runs in a process of Ray's, which no Event of the test's reaches."""

    pairs_per_segment = 1.0

    def __init__(self, cue: str) -> None:
        self.cue = cue

    def label(self, a, b) -> float:
        if os.path.exists(self.cue):
            raise RuntimeError(LABELLER_FAULT)
        return 1.0

    def close(self) -> None:
        pass


class LabellerSignalling:
    """Answers every pair, and sets ``answered`` (a process Event, which gymnasium could not deep-copy)."""

    pairs_per_segment = 1.0

    def __init__(self, answered) -> None:
        self.answered = answered

    def label(self, a, b) -> float:
        self.answered.set()
        return 1.0

    def close(self) -> None:
        pass


def test_a_labeller_of_ones_own_may_hold_a_process_event(tmp_path):
    answered = multiprocessing.get_context("spawn").Event()
    env = HumanPreferencesEnvWrapper(FakePixelEnv(), labeller=LabellerSignalling(answered), log_dir=str(tmp_path),
                                     **FAST)
    try:
        step_until(env, answered.is_set)
    finally:
        env.close()


def fail_training_steps_on(cue, monkeypatch) -> None:
    """From when ``cue`` is set, the trainer's training step raises as torch does on a GPU fault. The workers must be
    started with ``mp_start_method="fork"``: a forked trainer inherits this patch (a spawned one would not); nothing
    a run's settings name runs inside the trainer, so there is no public way to make it raise."""
    train_step = RewardOptimiser.train_step

    def train_step_failing_on_cue(self, *args, **kwargs):
        if cue.is_set():
            raise RuntimeError(TRAINER_FAULT)
        return train_step(self, *args, **kwargs)

    monkeypatch.setattr(RewardOptimiser, "train_step", train_step_failing_on_cue)


def run_until_a_checkpoint_is_in_use(env) -> None:
    """Step ``env`` until it rewards with a checkpoint the trainer wrote (on the initial labels, at least)."""
    step_until(env, lambda: env.stats().predictor_training_step is not None)
    assert env.stats().labels_sent >= FAST["n_initial_prefs"]


def close_promptly(env) -> None:
    """``env.close()``, which must not wait out a dead worker's timeouts."""
    start = time.monotonic()
    try:
        env.close()
    finally:
        assert time.monotonic() - start < PROMPT_CLOSE_S


def assert_labels_come_back_on_resume(log_dir: str, answered: int) -> None:
    """A run resumed in ``log_dir`` holds the ``answered`` labels the closed run reported (one journaled as its
    interface was stopped but not yet counted may be there too), numbered without a gap."""
    with HumanPreferencesEnvWrapper(FakePixelEnv(), log_dir=log_dir, resume=True, train_reward=False,
                                    **FAST) as resumed:
        run_labels = resumed.stats().run_labels
    seqs = [seq for seq, *_ in labels_by_seq(PrefBuffer.load_all(log_dir))]
    assert run_labels == len(seqs) >= answered
    assert seqs == list(range(len(seqs)))


@pytest.mark.parametrize("noticed_at", ["next step", "close"])
def test_a_trainer_that_raises_mid_run_is_reported_and_loses_no_label(tmp_path, monkeypatch, noticed_at):
    cue = multiprocessing.get_context("fork").Event()
    fail_training_steps_on(cue, monkeypatch)
    env = HumanPreferencesEnvWrapper(FakePixelEnv(), log_dir=str(tmp_path), mp_start_method="fork", **FAST)
    pids = [p.pid for p in env.pipeline.processes.values()]
    try:
        run_until_a_checkpoint_is_in_use(env)
        cue.set()  # the trainer trains on without new labels: its next step raises
        if noticed_at == "next step":
            with pytest.raises(WorkerError) as err:
                step_until(env, lambda: False)
        else:  # it dies while the main process does not step: close() is the first to see it
            assert wait_for(lambda: gone(env.pipeline.processes["reward_trainer"].pid), timeout=60)
            with pytest.raises(WorkerError) as err:
                close_promptly(env)
    finally:
        close_promptly(env)  # after the failure was reported (at the step, or by close()), closing raises nothing
    assert "reward_trainer process failed" in str(err.value) and TRAINER_FAULT in str(err.value)
    assert all(gone(pid) for pid in pids)
    # The interface went on labelling until close(), after the trainer died: those labels too.
    assert_labels_come_back_on_resume(str(tmp_path), env.stats().labels_sent)


def test_an_interface_that_raises_mid_run_is_reported_at_the_next_step_and_loses_no_label(tmp_path):
    cue = tmp_path / "fail now"
    env = HumanPreferencesEnvWrapper(FakePixelEnv(), labeller=LabellerFailingOnCue(str(cue)),
                                     log_dir=str(tmp_path / "log"), **FAST)
    pids = [p.pid for p in env.pipeline.processes.values()]
    try:
        run_until_a_checkpoint_is_in_use(env)
        cue.touch()  # the labeller raises at the pair the next clip brings
        with pytest.raises(WorkerError) as err:
            step_until(env, lambda: False)
    finally:
        close_promptly(env)
    assert "pref_interface process failed" in str(err.value) and LABELLER_FAULT in str(err.value)
    assert all(gone(pid) for pid in pids)
    assert_labels_come_back_on_resume(str(tmp_path / "log"), env.stats().labels_sent)
