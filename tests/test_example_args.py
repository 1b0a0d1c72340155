"""The examples' command line: what it hands to drlhp, and what it refuses."""
from __future__ import annotations

import sys

import pytest
from common import parse_args, wrapper_settings  # examples/' own module (pytest's pythonpath, pyproject.toml)

from drlhp.config import PreferenceConfig

# What the examples set on purpose rather than leave to the library: the run's length, budget, directory and seed.
RUN_SPECIFIC = {"label_budget", "label_schedule_steps", "log_dir", "resume", "seed"}


def settings_for(monkeypatch, *argv: str) -> dict:
    monkeypatch.setattr(sys, "argv", ["example", *argv])
    return wrapper_settings(parse_args("an example"))


def test_without_flags_an_example_gets_the_library_defaults(monkeypatch):
    settings = settings_for(monkeypatch)
    library = PreferenceConfig()
    differing = {name: (value, getattr(library, name)) for name, value in settings.items()
                 if name not in RUN_SPECIFIC and value != getattr(library, name)}
    assert differing == {}
    assert settings["reward_predictor_weight_average"] is not None


def test_none_turns_a_setting_off(monkeypatch):
    assert settings_for(monkeypatch, "--reward-predictor-weight-average", "none")[
        "reward_predictor_weight_average"] is None
    assert settings_for(monkeypatch, "--reward-predictor-weight-average", "0.9")[
        "reward_predictor_weight_average"] == 0.9
    assert settings_for(monkeypatch, "--label-filter", "0.1")["label_filter"] == 0.1
    assert settings_for(monkeypatch, "--label-budget", "none")["label_budget"] is None


@pytest.mark.parametrize("value", ["1", "-0.5"])
def test_a_setting_out_of_range_is_refused_with_the_fix_before_the_run_starts(monkeypatch, capsys, value):
    with pytest.raises(SystemExit):
        settings_for(monkeypatch, "--reward-predictor-weight-average", value)
    err = capsys.readouterr().err
    assert "drlhp's settings: reward_predictor_weight_average" in err and "(e.g. 0.99), or None" in err


def test_a_resumed_run_is_not_refused_for_its_log_dir_while_the_arguments_are_read(monkeypatch, tmp_path):
    # Whether log_dir holds a run to resume is the run's to say (a true-reward run keeps no labels there).
    assert settings_for(monkeypatch, "--resume", "--log-dir", str(tmp_path))["resume"] is True


def test_the_reward_scale_reaches_drlhp(monkeypatch):
    settings = settings_for(monkeypatch, "--reward-scale", "1")
    assert settings["reward_scale"] == 1.0
    assert PreferenceConfig(**settings).reward_scale == 1.0


@pytest.mark.parametrize("argv, problem", [
    (("--life-loss-penalty", "-1"), "--life-loss-penalty must be >= 0"),
    (("--life-loss-penalty", "1", "--true-reward"), "a true-reward run learns from the score"),
    (("--life-loss-penalty", "1", "--human"), "a person judges a life lost themselves"),
])
def test_a_life_loss_penalty_where_no_synthetic_teacher_counts_is_refused(monkeypatch, capsys, argv, problem):
    with pytest.raises(SystemExit):
        settings_for(monkeypatch, *argv)
    assert problem in capsys.readouterr().err


def test_a_life_loss_penalty_on_an_env_without_lives_is_refused_before_the_run_starts(monkeypatch, capsys, tmp_path):
    from common import train_from_preferences
    from stable_baselines3.common.env_util import make_vec_env

    from drlhp.envs import MovingDotEnv

    log_dir = tmp_path / "run"
    monkeypatch.setattr(sys, "argv", ["example", "--life-loss-penalty", "1", "--log-dir", str(log_dir)])
    venv = make_vec_env(MovingDotEnv, n_envs=1)
    with pytest.raises(SystemExit) as stopped:
        train_from_preferences(venv, parse_args("an example"), make_agent=None, env_id="drlhp/MovingDot-v0")
    assert stopped.value.code == 2
    assert "drlhp/MovingDot-v0 as this example makes it has no lives to count" in capsys.readouterr().err
    assert not log_dir.exists()


def test_the_teachers_flags_reach_drlhps_synthetic_teacher(monkeypatch):
    from drlhp import SyntheticTeacher

    assert settings_for(monkeypatch)["synthetic_teacher"] == SyntheticTeacher()  # the perfect teacher
    settings = settings_for(monkeypatch, "--teacher-mistake-rate", "0.1", "--teacher-equal-threshold", "0.5",
                            "--teacher-beta", "2")
    assert settings["synthetic_teacher"] == SyntheticTeacher(beta=2.0, mistake_rate=0.1, equal_threshold=0.5)
    assert PreferenceConfig(**settings).synthetic_teacher.mistake_rate == 0.1


@pytest.mark.parametrize("argv, problem", [
    (("--teacher-mistake-rate", "1.5"), "mistake_rate must be in [0, 1]"),
    (("--teacher-beta", "0"), "beta must be > 0"),
    (("--teacher-mistake-rate", "0.1", "--true-reward"), "--teacher-mistake-rate: the synthetic teacher's settings"),
    (("--teacher-equal-threshold", "1", "--web"), "a person is their own"),
    (("--standardised-reward",), "--standardised-reward is the true-reward run's control"),
])
def test_a_teacher_or_control_that_cannot_apply_is_refused_with_the_fix(monkeypatch, capsys, argv, problem):
    with pytest.raises(SystemExit):
        settings_for(monkeypatch, *argv)
    assert problem in capsys.readouterr().err
