"""drlhp's errors: one root, ``DrlhpError``, each keeping the built-in base code already catches; a user's
mistake raises one naming the fix. No process is started here (tests/test_bad_files.py has a worker's
startup error raised in the main process)."""
import inspect
import pickle

import pytest

import drlhp
from drlhp import errors
from drlhp.label_store.database import PrefBuffer
from drlhp.labelling.schedule import LabelSchedule

ALL_ERRORS = [cls for _, cls in inspect.getmembers(errors, inspect.isclass) if cls.__module__ == errors.__name__]


def test_every_error_drlhp_defines_is_a_drlhp_error_and_importable_from_drlhp():
    assert len(ALL_ERRORS) >= 10
    for cls in ALL_ERRORS:
        assert issubclass(cls, drlhp.DrlhpError), cls
        if cls is not errors.PreferenceServiceDied:  # the cluster's: from drlhp.cluster
            assert getattr(drlhp, cls.__name__) is cls and cls.__name__ in drlhp.__all__


@pytest.mark.parametrize("cls, builtin", [
    (errors.ConfigError, ValueError), (errors.UnknownSettingError, TypeError), (errors.ObservationError, ValueError),
    (errors.MissingExtraError, ImportError), (errors.NoDisplayError, RuntimeError), (errors.UsageError, RuntimeError),
    (errors.MissingFileError, FileNotFoundError), (errors.NoLabelsError, FileNotFoundError),
    (errors.NoLabelsError, ValueError), (errors.PrefDBFormatError, ValueError), (errors.WorkerError, RuntimeError),
    (errors.LogDirHasLabelsError, FileExistsError), (errors.InvalidAnswer, ValueError),
])
def test_each_error_keeps_its_builtin_base(cls, builtin):
    assert issubclass(cls, builtin)


@pytest.mark.parametrize("cls", ALL_ERRORS)
def test_errors_cross_processes_as_themselves(cls):
    error = pickle.loads(pickle.dumps(cls("the problem; the fix")))
    assert type(error) is cls and str(error) == "the problem; the fix"


def test_a_bad_setting_is_a_config_error_naming_the_setting():
    with pytest.raises(drlhp.ConfigError, match="segment_length must be >= 1"):
        drlhp.PreferenceConfig(segment_length=0)
    with pytest.raises(drlhp.ConfigError, match="reward_net_arch must be one of"):
        drlhp.PreferenceConfig(reward_net_arch="resnet")  # type: ignore[arg-type]
    with pytest.raises(drlhp.DrlhpError, match="label_schedule must be one of"):
        LabelSchedule(budget=None, kind="sometimes")  # type: ignore[arg-type]


def test_an_unknown_setting_is_a_drlhp_error_and_a_type_error():
    with pytest.raises(drlhp.UnknownSettingError, match="segment_lenght"):
        drlhp.PreferenceConfig.from_kwargs(None, {"segment_lenght": 25})
    with pytest.raises(TypeError):
        drlhp.PreferenceConfig.from_kwargs(None, {"segment_lenght": 25})


def test_a_directory_without_labels_is_a_no_labels_error(tmp_path):
    with pytest.raises(drlhp.NoLabelsError, match="Point prefs_dir at the log_dir") as refused:
        PrefBuffer.load_all(str(tmp_path))
    assert isinstance(refused.value, FileNotFoundError)  # as before this error had a class of its own


def test_observations_drlhp_cannot_use_are_an_observation_error():
    from drlhp.clips.frames import infer_frame_spec

    with pytest.raises(drlhp.ObservationError, match="obs_transform_func"):
        infer_frame_spec("not an array")
