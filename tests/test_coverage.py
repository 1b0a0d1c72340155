"""Pairs chosen for coverage (``pair_selection="coverage"``): of the candidate pairs, the one whose clips lie
farthest from the clips asked about before."""
import multiprocessing
import queue

import numpy as np
from conftest import FAST, FakePixelEnv, step_until

from drlhp import HumanPreferencesEnvWrapper, PreferenceConfig
from drlhp.clips.clip import Clip
from drlhp.labelling.coverage import GRID, clip_features
from drlhp.labelling.interface import PrefInterface, PrefInterfaceConfig


class NoLabeller:
    pairs_per_segment = 1.0


def state_clip(clip_id: int, centre: float, rng: np.random.Generator) -> Clip:
    """Five steps of a 3-dim state near ``centre``."""
    return Clip(clip_id, (centre + 0.1 * rng.standard_normal((5, 3))).astype(np.float32), np.zeros(5))


def interface_over(clips: list[Clip], n_candidate_pairs: int = 1000) -> PrefInterface:
    interface = PrefInterface(PrefInterfaceConfig(max_segs=100, seed=0, n_candidate_pairs=n_candidate_pairs,
                                                  coverage=True), NoLabeller(), None)
    for clip in clips:
        interface.add_clip(clip)
    return interface


def ids(pair) -> set[int]:
    return {pair[0].clip_id, pair[1].clip_id}


def test_a_clip_is_its_observations_mean_and_std_over_time():
    frames = np.array([[0.0, 10.0], [2.0, 10.0]], np.float32)
    np.testing.assert_allclose(clip_features(frames), [1.0, 10.0, 1.0, 0.0])


def test_images_are_averaged_down_to_a_coarse_grid_per_channel():
    frames = np.zeros((4, 84, 84, 4), np.uint8)
    frames[:, :42, :, 1] = 200  # the top half of channel 1 is bright in every frame
    features = clip_features(frames)
    assert features.shape == (2 * GRID * GRID * 4,)
    means = features[:GRID * GRID * 4].reshape(GRID, GRID, 4)
    np.testing.assert_allclose(means[:, :, 1].mean(axis=1), [200] * 4 + [0] * 4, atol=1e-4)
    assert not means[:, :, [0, 2, 3]].any() and not features[GRID * GRID * 4:].any()  # and nothing moves


def test_the_first_pair_is_random_then_the_pair_showing_what_was_not_asked_about():
    rng = np.random.default_rng(0)
    ordinary = [state_clip(i, 0.0, rng) for i in range(20)]
    rare_a, rare_b = state_clip(20, 5.0, rng), state_clip(21, -5.0, rng)
    interface = interface_over([*ordinary, rare_a, rare_b])
    chooser = interface.chooser
    assert chooser.pick() is not None  # nothing asked yet: any pair covers as much
    interface.mark_asked(ordinary[0], rare_a)
    assert 21 in ids(chooser.pick())  # the one kind of clip never asked about
    interface.mark_asked(ordinary[1], rare_b)
    picks = [ids(chooser.pick()) for _ in range(5)]
    assert all(not p & {20, 21} for p in picks)  # both rare clips are covered now: no pull towards either


def test_an_answer_taken_back_uncovers_its_clips_unless_another_pair_showed_them():
    rng = np.random.default_rng(1)
    ordinary = [state_clip(i, 0.0, rng) for i in range(20)]
    rare = state_clip(20, 5.0, rng)
    interface = interface_over([*ordinary, rare])
    interface.mark_asked(ordinary[0], ordinary[1])
    interface.mark_asked(ordinary[2], rare)
    interface.mark_asked(ordinary[3], rare)
    interface._unmark_asked(ordinary[3], rare)
    assert 20 not in ids(interface.chooser.pick())  # still covered by the pair with clip 2
    interface._unmark_asked(ordinary[2], rare)
    assert 20 in ids(interface.chooser.pick())


def still(clip_id: int, *position: float) -> Clip:
    """Five steps standing at ``position``."""
    return Clip(clip_id, np.tile(np.asarray(position, np.float32), (5, 1)), np.zeros(5))


def test_clips_asked_about_stay_covered_after_they_leave_the_buffer():
    interface = PrefInterface(PrefInterfaceConfig(max_segs=10, seed=0, n_candidate_pairs=1000, coverage=True),
                              NoLabeller(), None)
    old = [still(0, 5, 0), still(1, 0, 0)]
    for clip in old:
        interface.add_clip(clip)
    interface.mark_asked(*old)
    for clip in [still(2, 5, 0), still(3, 0, 5), *(still(i, 0, 0.1 * i) for i in range(4, 12))]:  # evicts both
        interface.add_clip(clip)
    assert set(interface.chooser.clips) == set(range(2, 12))
    # Clip 2 stands where the evicted clip 0 stood: covered. Clip 3 is the farthest from both, then clip 11.
    assert ids(interface.chooser.pick()) == {3, 11}


def test_the_run_setting_reaches_the_interface_process(tmp_path):
    from drlhp.runtime.interface_process import InterfaceProcess
    from drlhp.runtime.messages import RunStart
    from drlhp.runtime.settings import interface_config
    from drlhp.runtime.shared import SharedStats

    config = PreferenceConfig(log_dir=str(tmp_path), pair_selection="coverage", autosave_prefs=False)
    settings = interface_config(config, None, None, selection_ckpt="a.ckpt")
    assert settings.pair_selection == "coverage" and settings.selection_ckpt is None  # no ensemble asked
    process = InterfaceProcess(settings, None, queue.Queue(), RunStart(0, 0), None,
                               SharedStats(multiprocessing.get_context("spawn")))
    assert process.interface.chooser.coverage is not None and process.interface.chooser.scorer is None


def test_a_run_with_pairs_chosen_for_coverage_labels_and_trains(tmp_path):
    with HumanPreferencesEnvWrapper(FakePixelEnv(), log_dir=str(tmp_path), pair_selection="coverage", **FAST) as env:
        env.reset()
        step_until(env, lambda: env.using_reward_from_predictor)
        assert env.stats().labels_sent >= FAST["n_initial_prefs"]
