"""TensorBoard: the trainer's scalars, and drlhp's figures in SB3's own run, read back with TensorBoard's reader;
and the metrics CSV beside them."""
import csv
import glob
import math
import os

import gymnasium
import pytest
from conftest import FAST, FakePixelEnv, step_until, step_vec_until
from stable_baselines3 import PPO
from stable_baselines3.common.env_util import make_vec_env
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

import drlhp  # noqa: F401  (registers drlhp/MovingDot-v0)
from drlhp import HumanPreferencesEnvWrapper
from drlhp.cli.plot import read_metrics
from drlhp.label_store.agreement import Agreement
from drlhp.reward.learner import Evaluation
from drlhp.reward.metrics import MetricsLog
from drlhp.sb3 import HumanPreferencesLogger, HumanPreferencesVecEnvWrapper
from drlhp.storage.layout import LogDir


def scalars(run_dir):
    acc = EventAccumulator(run_dir)
    acc.Reload()
    return {tag: [e.value for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}


def test_the_trainer_writes_the_reward_models_scalars_to_a_run_of_its_own(tmp_path):
    for _ in range(2):
        with HumanPreferencesEnvWrapper(FakePixelEnv(), log_dir=str(tmp_path / f"log{_}"),
                                        tensorboard_log=str(tmp_path / "tb"), **FAST) as env:
            step_until(env, lambda: env.stats().training_steps >= 8)
    runs = sorted(glob.glob(str(tmp_path / "tb" / "drlhp_reward_*")))
    assert [r.rsplit("_", 1)[1] for r in runs] == ["1", "2"]  # two runs, two curves
    values = scalars(runs[0])
    for tag in ("reward/train_loss", "reward/val_accuracy", "reward/labels", "reward/pairs_per_second",
                "reward/raw_reward_std", "labels/retracted"):
        assert tag in values and len(values[tag]) >= 2, sorted(values)
    assert values["reward/labels"] == sorted(values["reward/labels"]) and values["reward/labels"][-1] > 0


def test_the_sb3_callback_puts_drlhps_figures_in_the_agents_run(tmp_path):
    venv = HumanPreferencesVecEnvWrapper(make_vec_env("drlhp/MovingDot-v0", n_envs=2, seed=0),
                                         log_dir=str(tmp_path / "log"), **{**FAST, "segment_length": 10})
    with venv:
        step_vec_until(venv, lambda: venv.using_reward_from_predictor)  # warm up on random actions, as the examples do
        model = PPO("MlpPolicy", venv, n_steps=64, batch_size=64, n_epochs=1, seed=0,
                    tensorboard_log=str(tmp_path / "tb"))
        model.learn(256, callback=HumanPreferencesLogger())
    values = scalars(glob.glob(str(tmp_path / "tb" / "PPO_1"))[0])
    assert "train/value_loss" in values  # the agent's own curves, in the same run
    assert values["drlhp/using_predicted_reward"] == [1.0] * len(values["drlhp/using_predicted_reward"])
    assert values["drlhp/labels"][-1] > 0
    assert all(-1.0 <= r <= 1.0 for r in values["drlhp/reward_correlation"]) and values["drlhp/reward_correlation"]


def test_the_callback_without_a_drlhp_wrapper_says_what_to_do(tmp_path):
    model = PPO("MlpPolicy", make_vec_env(lambda: gymnasium.make("CartPole-v1"), n_envs=1), n_steps=64)
    with pytest.raises(TypeError, match="wrap your VecEnv with it"):
        model.learn(64, callback=HumanPreferencesLogger())


def evaluation(step):
    return Evaluation(step, n_train_labels=8, n_val_labels=2, train_loss=0.6, train_accuracy=0.7, val_loss=0.65,
                      val_accuracy=0.6, l2_coefficient=0.01, pairs_per_second=100.0, raw_reward_centre=0.0,
                      raw_reward_std=1.0, centre_gap=0.25 * step)


def read_rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_retractions_and_agreement_go_to_the_metrics_csv_and_tensorboard(tmp_path):
    agreement = Agreement()
    for first, second in [(1.0, 1.0), (0.5, 0.5), (1.0, 0.0)]:
        agreement.add("web:al", first, "web:bo", second)
    agreement.add("web:bo", 0.0, "web:cy", 1.0)
    metrics = MetricsLog(LogDir(str(tmp_path)).metrics, str(tmp_path / "tb"))
    metrics.write(evaluation(1), labels=10, pairs_asked=10, labels_remaining=None)  # nothing answered twice yet
    metrics.write(evaluation(2), labels=14, pairs_asked=14, labels_remaining=86, labels_retracted=2,
                  agreement=agreement)
    metrics.close()
    rows = read_rows(LogDir(str(tmp_path)).metrics)
    assert [(r["labels_retracted"], r["pairs_answered_twice"], r["agreement"]) for r in rows] == [
        ("0", "0", "nan"), ("2", "4", "0.5")]
    assert [r["centre_gap"] for r in rows] == ["0.25", "0.5"]
    values = scalars(glob.glob(str(tmp_path / "tb" / "drlhp_reward_*"))[0])
    assert values["labels/retracted"] == [0.0, 2.0] and values["reward/centre_gap"] == [0.25, 0.5]
    assert values["labels/agreement"] == [0.5]  # no point while no pair was answered twice
    assert values["labels/agreement/web:al~web:bo"] == [pytest.approx(2 / 3)]
    assert values["labels/agreement/web:bo~web:cy"] == [0.0]
    m = read_metrics(str(tmp_path))  # drlhp plot reads the new columns as numbers
    assert m["labels_retracted"].tolist() == [0, 2] and math.isnan(m["agreement"][0]) and m["agreement"][1] == 0.5


def test_a_metrics_file_of_other_columns_is_set_aside(tmp_path):
    path = LogDir(str(tmp_path)).metrics
    with open(path, "w") as f:
        f.write("step,loss\n1,0.5\n")
    MetricsLog(path).write(evaluation(1), labels=1, pairs_asked=1, labels_remaining=None)
    assert len(os.listdir(tmp_path)) == 2 and [r["training_step"] for r in read_rows(path)] == ["1"]
