"""PreferenceConfig: one set of settings for every front-end, checked once."""
import pytest
from conftest import FAST, FakePixelEnv

from drlhp import HumanPreferencesEnvWrapper, PreferenceConfig


def test_keyword_arguments_override_a_given_config():
    base = PreferenceConfig(segment_length=10, seed=3)
    merged = PreferenceConfig.from_kwargs(base, {"segment_length": 20})
    assert (merged.segment_length, merged.seed) == (20, 3) and base.segment_length == 10


def test_a_misspelt_argument_names_itself_and_the_valid_ones():
    with pytest.raises(TypeError, match=r"unknown drlhp argument\(s\) \['segment_lenght'\].*'segment_length'"):
        PreferenceConfig.from_kwargs(None, {"segment_lenght": 5})


@pytest.mark.parametrize("kwargs, message", [
    (dict(segment_queue_size=0), "segment_queue_size must be >= 1"),
    (dict(reward_scale=0), "reward_scale must be > 0"),
    (dict(synthetic_preferences=False, display_fps=0), "display_fps must be > 0"),
    (dict(synthetic_preferences=False, labelling="browser"), "labelling must be one of"),
    (dict(labelling="web"), "pass synthetic_preferences=False as well"),
    (dict(synthetic_preferences=False, labelling="web", web_port=70000), "web_port must be a port number"),
    (dict(synthetic_preferences=False, labelling="web", web_pair_timeout=0), "web_pair_timeout must be > 0"),
])
def test_bad_values_fail_when_the_config_is_made(kwargs, message):
    with pytest.raises(ValueError, match=message):
        PreferenceConfig(**kwargs)


def test_a_wrapper_takes_a_config_and_reports_it(tmp_path):
    config = PreferenceConfig(log_dir=str(tmp_path), collect_prefs=False, train_reward=False)
    with HumanPreferencesEnvWrapper(FakePixelEnv(), config=config, segment_length=FAST["segment_length"]) as env:
        assert env.config == PreferenceConfig(log_dir=str(tmp_path), collect_prefs=False, train_reward=False,
                                              segment_length=FAST["segment_length"])
        assert env.log_dir == str(tmp_path) and env.stats()["n_envs"] == 1
