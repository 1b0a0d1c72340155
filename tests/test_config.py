"""PreferenceConfig: one set of settings for every front-end, checked once."""
import numpy as np
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
    (dict(reward_centre="mode"), "reward_centre must be one of"),
    (dict(reward_predictor_weight_average=1.0), r"reward_predictor_weight_average .* in \(0, 1\)"),
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
        assert env.log_dir == str(tmp_path) and env.stats().n_envs == 1


def test_each_worker_takes_its_settings_from_the_run_settings(tmp_path):
    from drlhp.clips.frames import infer_frame_spec
    from drlhp.runtime.settings import human_config, interface_config, trainer_config

    config = PreferenceConfig(log_dir=str(tmp_path), reward_predictor_lr=0.5, reward_predictor_batch_size=3,
                              torch_threads=5, trainer_torch_threads=2, prefs_autosave_interval=7.0, seed=11,
                              max_segs=33, synthetic_prefs_per_segment=0.5, n_candidate_pairs=9,
                              pair_selection="random", display_fps=12.0, human_terminal="/dev/pts/7", label_budget=77,
                              augment_shift=2, reward_predictor_device="cpu:0", n_initial_training_steps=9,
                              reward_predictor_dropout=0.3, ckpt_poll_interval=0.25, reward_centre="median",
                              reward_predictor_weight_average=0.9)
    spec = infer_frame_spec(np.zeros((8, 8, 3), np.uint8))
    trainer = trainer_config(config, spec, None)
    learner, labels = trainer.learner, trainer.labels
    assert (learner.lr, learner.batch_size, trainer.trainer_torch_threads, labels.snapshot_interval, learner.seed,
            trainer.label_budget, trainer.log_dir, labels.log_dir) == (0.5, 3, 2, 7.0, 11, 77, *[str(tmp_path)] * 2)
    assert (learner.device, learner.n_initial_training_steps, learner.net.dropout, learner.reward_centre,
            learner.weight_average) == ("cpu:0", 9, 0.3, "median", 0.9)
    assert learner.net.frame_spec == spec and learner.augmentation == config.augmentation
    assert labels.clip_length == config.segment_length and labels.journaling
    human = human_config(config, spec)
    assert (human.fps, human.terminal, human.log_path) == (12.0, "/dev/pts/7", str(tmp_path / "human_labels.csv"))
    interface = interface_config(config, human, None, selection_ckpt="a.ckpt")
    assert (interface.max_segs, interface.seed, interface.pairs_per_segment, interface.n_candidate_pairs,
            interface.schedule, interface.human) == (33, 11, 0.5, 9, config.schedule, human)
    assert interface.selection_ckpt is None  # pair_selection="random" asks no ensemble
    assert interface.ckpt_poll_interval == 0.25  # the ensemble that picks pairs is refreshed as often as the reward
    assert interface.journal_log_dir == str(tmp_path)


def test_no_worker_setting_restates_a_default_of_the_run_settings():
    """A worker's setting that PreferenceConfig also has takes its value from there: it has no default of its own
    to drift from the run's (those with a default are the engines' own, with no PreferenceConfig setting)."""
    import dataclasses

    from drlhp.label_store.store import LabelStoreConfig
    from drlhp.labelling.human import HumanConfig
    from drlhp.labelling.web.labeller import WebConfig
    from drlhp.reward.learner import LearnerConfig
    from drlhp.runtime.settings import InterfaceConfig, TrainerConfig

    own_defaults = {"n_val_pairs", "n_normaliser_clips"}
    for cls in (LearnerConfig, LabelStoreConfig, HumanConfig, WebConfig, TrainerConfig, InterfaceConfig):
        defaulted = {f.name for f in dataclasses.fields(cls)
                     if f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING}
        assert defaulted <= own_defaults, f"{cls.__name__} restates defaults: {sorted(defaulted - own_defaults)}"


def test_a_setting_keeps_its_name_from_the_keyword_to_the_engine():
    """Wherever drlhp builds an engine's settings (a ``...Config(...)`` call), a field filled from a setting, or from
    an engine field of the same route, has that name: less a prefix of FLAT_PREFIXES, or as ENGINE_NAMES maps a
    seed word. Positional arguments are read by the dataclass's field order."""
    import ast
    import dataclasses
    import importlib
    from pathlib import Path

    from drlhp.runtime.settings import ENGINE_NAMES, FLAT_PREFIXES

    settings = {f.name for f in dataclasses.fields(PreferenceConfig)}
    assert set(ENGINE_NAMES) <= settings

    def same_route(field: str, source: str) -> bool:
        if source not in settings:
            return field == source or source not in engine_names  # not a setting's route
        return field in {source, ENGINE_NAMES.get(source)} | {source[len(p):] for p in FLAT_PREFIXES
                                                               if source.startswith(p)}

    engine_names = settings | set(ENGINE_NAMES.values())
    package = Path(__file__).parents[1] / "drlhp"
    renamed, calls = [], 0
    for path in sorted(package.rglob("*.py")):
        module_name = ".".join(path.relative_to(package.parent).with_suffix("").parts).removesuffix(".__init__")
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id.endswith("Config")):
                continue
            cls = getattr(importlib.import_module(module_name), node.func.id, None)
            if not dataclasses.is_dataclass(cls):
                continue
            calls += 1
            passed = list(zip((f.name for f in dataclasses.fields(cls)), node.args))
            passed += [(kw.arg, kw.value) for kw in node.keywords if kw.arg]
            for field, value in passed:
                if isinstance(value, ast.Attribute) and not same_route(field, value.attr):
                    renamed.append(f"{path.name}:{node.lineno}: {node.func.id}.{field} from ...{value.attr}")
    assert calls >= 8  # settings.py's engines, the interface's, the offline trainer's
    assert not renamed, renamed
