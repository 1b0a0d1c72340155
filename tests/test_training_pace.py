"""``training_steps_per_label``: the reward trainer, without a process, pauses at that many steps per label of the
run, on a checkpoint, and goes on as labels come; a resumed run stays paused, a pretrained network's own steps are
not the run's."""
from __future__ import annotations

import multiprocessing
import queue

import numpy as np
import pytest

from drlhp import PreferenceConfig
from drlhp.clips.clip import Clip, pack
from drlhp.clips.frames import infer_frame_spec
from drlhp.errors import ConfigError
from drlhp.label_store.stream import ClipData, ForgetClip, Preference
from drlhp.runtime.settings import trainer_config
from drlhp.runtime.shared import SharedStats, StopFlag
from drlhp.runtime.trainer_process import TrainerProcess, pause_step
from drlhp.storage.layout import LogDir

LENGTH, SPEC = 3, infer_frame_spec(np.zeros(2, np.float32))
PER_LABEL, INTERVAL = 6, 4
SETTINGS = dict(segment_length=LENGTH, training_steps_per_label=PER_LABEL, reward_predictor_ckpt_interval=INTERVAL,
                n_initial_prefs=4, n_initial_training_steps=4, reward_predictor_batch_size=4, ensemble_size=1, seed=0,
                val_fraction=0.2, label_budget=None)


def trainer(log_dir, pretrained_ckpt: str | None = None, **changes) -> TrainerProcess:
    config = PreferenceConfig(log_dir=str(log_dir), **{**SETTINGS, **changes})
    ctx = multiprocessing.get_context("spawn")
    return TrainerProcess(trainer_config(config, SPEC, pretrained_ckpt), None, queue.Queue(), queue.Queue(),
                          StopFlag(ctx), SharedStats(ctx))


def give_labels(t: TrainerProcess, n: int) -> None:
    """What the interface sends for ``n`` more labels: two new clips each (the first the better), then its label."""
    for _ in range(n):
        seq = t.store.buffer.n_received
        a, b = (pack(Clip(2 * seq + i, np.full((LENGTH, 2), i - seq, np.float32), np.zeros(LENGTH)))
                for i in (0, 1))
        for record in (ClipData(a), ClipData(b), Preference(a.clip_id, b.clip_id, 1.0, seq, "test"),
                       ForgetClip(a.clip_id)):
            t.store.add(record)


def train_until_paused(t: TrainerProcess, most: int = 1000) -> int:
    """Take training steps while the trainer would; the step it stopped at."""
    for _ in range(most):
        if not t._can_train:
            return t.learner.step
        t._train_step()
    raise AssertionError(f"still training after {most} steps")


def test_the_pause_is_the_steps_per_label_after_what_the_network_brought_rounded_up_to_a_checkpoint():
    assert pause_step(6, 4, 0, 4) == 24
    assert pause_step(6, 5, 0, 4) == 32  # 30, on to the next checkpoint
    assert pause_step(6, 4, 1000, 100) == 1100


def test_the_trainer_pauses_on_a_checkpoint_and_goes_on_for_each_new_label(tmp_path):
    t = trainer(tmp_path)
    give_labels(t, 3)
    assert train_until_paused(t) == 0  # fewer than n_initial_prefs: not started
    give_labels(t, 1)
    assert train_until_paused(t) == 4 * PER_LABEL
    assert t.learner.checkpointed  # the run's reward is the network as trained when it waits
    give_labels(t, 1)
    assert train_until_paused(t) == pause_step(PER_LABEL, 5, 0, INTERVAL) == 32
    assert t.learner.checkpointed


def test_a_resumed_run_stays_paused_and_a_pretrained_network_trains_the_runs_steps_on_top(tmp_path):
    first = trainer(tmp_path / "first")
    give_labels(first, 5)
    assert train_until_paused(first) == 32
    first.store.save(str(tmp_path / "first"))

    resumed = trainer(tmp_path / "first", resume=True)
    assert resumed.learner.step == 32 and train_until_paused(resumed) == 32
    give_labels(resumed, 1)
    assert train_until_paused(resumed) == 36

    pretrained = trainer(tmp_path / "second", pretrained_ckpt=LogDir(str(tmp_path / "first")).checkpoint)
    give_labels(pretrained, 4)
    assert train_until_paused(pretrained) == 36 + 4 * PER_LABEL


def test_training_without_pause_is_the_default(tmp_path):
    t = trainer(tmp_path, training_steps_per_label=None)
    give_labels(t, 4)
    for _ in range(3 * 4 * PER_LABEL):
        assert t._can_train
        t._train_step()


def test_too_few_steps_per_label_for_the_first_labels_to_start_the_reward_is_refused():
    with pytest.raises(ConfigError, match=r"training_steps_per_label=1 .* raise it to at least 13"):
        PreferenceConfig(training_steps_per_label=1, n_initial_prefs=4, n_initial_training_steps=50)


def test_a_wrapped_envs_trainer_waits_at_its_pause_with_the_network_it_paused_with_in_use(tmp_path):
    from conftest import FAST, FakePixelEnv, step_until

    from drlhp import HumanPreferencesEnvWrapper

    per_label, budget = 8, 12
    pause = pause_step(per_label, budget, 0, FAST["reward_predictor_ckpt_interval"])
    with HumanPreferencesEnvWrapper(FakePixelEnv(), log_dir=str(tmp_path), training_steps_per_label=per_label,
                                    **{**FAST, "label_budget": budget, "label_schedule_steps": 200}) as env:
        # Without the pause the trainer runs past this step within moments of the last label, and it is never seen.
        step_until(env, lambda: env.stats().run_labels == budget and env.stats().training_steps == pause
                   and env.stats().predictor_training_step == pause)
    assert env.stats().training_steps == pause
