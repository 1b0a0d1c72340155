"""TensorBoard: the trainer's scalars, and drlhp's figures in SB3's own run, read back with TensorBoard's reader."""
import glob

import gymnasium
import numpy as np
import pytest
from conftest import FAST, FakePixelEnv, step_until
from stable_baselines3 import PPO
from stable_baselines3.common.env_util import make_vec_env
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

import drlhp  # noqa: F401  (registers drlhp/MovingDot-v0)
from drlhp import HumanPreferencesEnvWrapper
from drlhp.sb3 import HumanPreferencesLogger, HumanPreferencesVecEnvWrapper


def scalars(run_dir):
    acc = EventAccumulator(run_dir)
    acc.Reload()
    return {tag: [e.value for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}


def test_the_trainer_writes_the_reward_models_scalars_to_a_run_of_its_own(tmp_path):
    for _ in range(2):
        with HumanPreferencesEnvWrapper(FakePixelEnv(), log_dir=str(tmp_path / f"log{_}"),
                                        tensorboard_log=str(tmp_path / "tb"), **FAST) as env:
            step_until(env, lambda: env.stats()["training_steps"] >= 8)
    runs = sorted(glob.glob(str(tmp_path / "tb" / "drlhp_reward_*")))
    assert [r.rsplit("_", 1)[1] for r in runs] == ["1", "2"]  # two runs, two curves
    values = scalars(runs[0])
    for tag in ("reward/train_loss", "reward/val_accuracy", "reward/labels", "reward/pairs_per_second",
                "reward/raw_reward_std"):
        assert tag in values and len(values[tag]) >= 2, sorted(values)
    assert values["reward/labels"] == sorted(values["reward/labels"]) and values["reward/labels"][-1] > 0


def test_the_sb3_callback_puts_drlhps_figures_in_the_agents_run(tmp_path):
    venv = HumanPreferencesVecEnvWrapper(make_vec_env("drlhp/MovingDot-v0", n_envs=2, seed=0),
                                         log_dir=str(tmp_path / "log"), **{**FAST, "segment_length": 10})
    with venv:
        venv.reset()
        while not venv.using_reward_from_predictor:  # warm up on random actions, as the examples do
            venv.step(np.array([venv.action_space.sample() for _ in range(2)]))
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
