"""A setting is declared once (drlhp/config.py): its section, default and help reach the settings page, the
``drlhp`` command's flags and the examples' flags from there."""
from __future__ import annotations

import argparse
import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest
from common import Args  # examples/' own module (pytest's pythonpath, pyproject.toml)

from drlhp.cli.main import COLLECT_SETTINGS, TRAIN_REWARD_SETTINGS, build_parser
from drlhp.cli.setting_flags import add_setting_flags, flag, plain, settings_from, value_type
from drlhp.config import SECTIONS, PreferenceConfig, setting_help

ROOT = Path(__file__).resolve().parent.parent
PLAIN_VALUES = [f.name for f in dataclasses.fields(PreferenceConfig)
                if f.name not in {"synthetic_teacher", "synthetic_teachers", "labeller", "obs_transform_func"}]


def test_every_setting_is_declared_in_a_section_with_its_help():
    for f in dataclasses.fields(PreferenceConfig):
        assert f.metadata["section"] in SECTIONS, f.name
        assert len(f.metadata["help"]) > 10, f.name
    assert [s.title for s in SECTIONS] == ["Clips and pairs", "Labellers", "Reward model", "Storage", "Processes"]


def test_the_settings_page_is_generated_from_the_declarations():
    check = subprocess.run([sys.executable, "docs/scripts/settings_table.py", "--check"], cwd=ROOT,
                           capture_output=True, text=True, timeout=120)
    assert check.returncode == 0, check.stdout + check.stderr
    page = (ROOT / "docs/settings.md").read_text()
    for name in PLAIN_VALUES:
        assert f"| `{name}` |" in page


def test_each_setting_with_a_plain_value_parses_from_its_flag_to_its_default():
    parser = argparse.ArgumentParser()
    add_setting_flags(parser, PLAIN_VALUES)
    parsed = settings_from(parser.parse_args([]), PLAIN_VALUES)
    assert PreferenceConfig(**parsed) == PreferenceConfig()  # every declared default, through the flags


def test_a_flag_takes_none_where_the_setting_may_be_none_and_no_where_it_is_yes_or_no():
    parser = argparse.ArgumentParser()
    add_setting_flags(parser, ["label_filter", "label_budget", "adaptive_l2", "reward_centre"])
    args = parser.parse_args(["--label-filter", "none", "--label-budget", "none", "--no-adaptive-l2"])
    assert (args.label_filter, args.label_budget, args.adaptive_l2) == (None, None, False)
    assert parser.parse_args(["--label-filter", "0.1"]).label_filter == 0.1
    with pytest.raises(SystemExit):
        parser.parse_args(["--reward-centre", "mode"])  # not one of its values
    with pytest.raises(SystemExit):
        parser.parse_args(["--reward-centre", "none"])  # it may not be None


def test_a_setting_holding_an_object_has_no_flag():
    with pytest.raises(ValueError, match="holds an object"):
        value_type("labeller")


def test_the_command_and_the_examples_show_the_declared_help_under_the_settings_name():
    sub = build_parser()._subparsers._group_actions[0].choices  # the subcommands' parsers
    for command, names in (("train-reward", TRAIN_REWARD_SETTINGS), ("collect", COLLECT_SETTINGS)):
        actions = {a.dest: a for a in sub[command]._actions}
        for name in names:
            assert flag(name) in actions[name].option_strings
            assert actions[name].help.startswith(plain(setting_help(name)).replace("%", "%%"))
    for f in dataclasses.fields(Args):
        if "setting" in f.metadata:
            assert f.metadata["setting"] == f.name  # one name from the example's flag to the engine
            # The examples' own defaults: a budget a run spends in minutes, and a seeded (repeatable) run.
            assert f.default == getattr(PreferenceConfig, f.name) or f.name in {"label_budget", "seed"}
            assert f.metadata["also"] or f.name not in {"log_dir", "resume", "seed", "tensorboard_log"}


def test_plain_help_keeps_the_words_of_a_link_and_names_its_page():
    assert plain("see [Normalisation](reward-model.md#normalisation), `mean`") == \
        "see Normalisation (docs/reward-model.md), mean"
