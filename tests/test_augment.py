"""Augmentation of clips while the reward network trains, and SURF's pseudo-labels."""
import numpy as np
import pytest
import torch
from conftest import FAST, FakePixelEnv, step_until

from drlhp import HumanPreferencesEnvWrapper, PrefBuffer
from drlhp.cli.offline import train_reward
from drlhp.clips.clip import Clip
from drlhp.clips.frames import frames_to_net_input, infer_frame_spec
from drlhp.reward.augment import random_shift, temporal_crop
from drlhp.reward.optimiser import Augmentation, RewardOptimiser, pseudo_labels
from drlhp.reward.predictor import NetConfig, RewardPredictor


def numbered_clips(m, n, length, side=8):
    """Clips whose frames are filled with their (member, pair, frame) number, so a crop shows where it came from."""
    values = np.arange(m * n * length).reshape(m, n, length, 1, 1, 1)
    return np.broadcast_to(values, (m, n, length, side, side, 1)).astype(np.int64)


def test_temporal_crop_cuts_every_clip_to_one_length_each_at_its_own_start():
    a, b = numbered_clips(3, 5, 25), numbered_clips(3, 5, 25) + 10_000
    rng = np.random.default_rng(0)
    starts = set()
    for _ in range(20):
        ca, cb = temporal_crop(a, b, 15, rng)
        length = ca.shape[2]
        assert 15 <= length <= 25 and ca.shape == cb.shape == (3, 5, length, 8, 8, 1)
        for clips, original in ((ca, a), (cb, b)):
            first = clips[:, :, 0, 0, 0, 0]
            # Each clip is a window of consecutive frames of the same clip.
            np.testing.assert_array_equal(clips[..., 0, 0, 0], first[..., None] + np.arange(length))
            start = first - original[:, :, 0, 0, 0, 0]
            assert np.all((start >= 0) & (start <= 25 - length))
            starts.update(start.ravel().tolist())
    assert len(starts) > 5  # starts vary


def test_random_shift_moves_all_frames_of_a_clip_alike_and_keeps_the_shape():
    frame = np.zeros((16, 16, 1), np.uint8)
    frame[6:9, 6:9] = 255  # a square at rows/cols 6-8
    clips = np.stack([frame] * 10)  # two clips of 5 frames
    x = frames_to_net_input(clips, infer_frame_spec(frame))
    shifted = random_shift(x, clip_length=5, pad=3, generator=torch.Generator().manual_seed(1))
    assert shifted.shape == x.shape
    offsets = []
    for clip in range(2):
        frames = shifted[clip * 5:(clip + 1) * 5]
        assert torch.equal(frames, frames[:1].expand_as(frames))  # one shift per clip
        ys, xs = torch.nonzero(frames[0, 0] > 0, as_tuple=True)
        assert len(ys) == 9  # the square moved whole (never near an edge here)
        offsets.append((int(ys.min()) - 6, int(xs.min()) - 6))
    assert all(abs(dy) <= 3 and abs(dx) <= 3 for dy, dx in offsets)
    assert random_shift(x, 5, 0, torch.Generator()) is x


def test_an_augmented_step_keeps_the_labels_and_reduces_the_loss(one_torch_thread):
    rng = np.random.default_rng(0)
    frames = rng.integers(0, 256, (2, 8, 25, 32, 32, 1), dtype=np.uint8)
    labels = (rng.random(8) > 0.5).astype(np.float32)
    torch.manual_seed(0)
    optimiser = RewardOptimiser(RewardPredictor(NetConfig(infer_frame_spec(frames[0, 0, 0]), dropout=0.0)), lr=3e-3,
                            augmentation=Augmentation(shift=4, crop_min_length=15), seed=0)
    before = labels.copy()
    losses = [optimiser.train_step(frames[0], frames[1], labels)[0] for _ in range(60)]
    np.testing.assert_array_equal(labels, before)
    assert np.mean(losses[-10:]) < np.mean(losses[:10])


def test_pseudo_labels_only_above_the_threshold():
    diff = torch.tensor([4.0, -4.0, 0.1, -0.5, 2.0])  # P(a) = 0.982, 0.018, 0.525, 0.378, 0.881
    sure, labels = pseudo_labels(diff, 0.95)
    assert sure.tolist() == [True, True, False, False, False] and labels.tolist() == [1.0, 0.0]
    sure, labels = pseudo_labels(diff, 0.6)
    assert sure.tolist() == [True, True, False, True, True] and labels.tolist() == [1.0, 0.0, 0.0, 1.0]


def test_pseudo_labels_train_only_confident_pairs():
    rng = np.random.default_rng(1)
    frames = rng.integers(0, 256, (2, 1, 4, 5, 16, 16, 1), dtype=np.uint8)
    labels = np.ones((1, 4), np.float32)
    predictor = RewardPredictor(NetConfig(infer_frame_spec(frames[0, 0, 0, 0]), dropout=0.0))
    unsure = RewardOptimiser(predictor, augmentation=Augmentation(pseudo_label_threshold=0.999))
    unsure.train_step(frames[0], frames[1], labels, unlabelled=(frames[1], frames[0]))
    assert unsure.pseudo_label_fraction == 0.0  # an untrained network is sure of nothing
    eager = RewardOptimiser(predictor, augmentation=Augmentation(pseudo_label_threshold=0.5000001))
    eager.train_step(frames[0], frames[1], labels, unlabelled=(frames[1], frames[0]))
    assert eager.pseudo_label_fraction > 0.5


def test_augmentation_settings_are_checked():
    for bad in (dict(shift=-1), dict(crop_min_length=0), dict(pseudo_label_threshold=0.5),
                dict(pseudo_label_threshold=1.0)):
        with pytest.raises(ValueError):
            Augmentation(**bad)


def test_a_live_run_with_every_lever_stores_only_the_labels_it_was_given(tmp_path):
    """Pseudo-labels train the network but never reach the database or the journal."""
    settings = {**FAST, "label_budget": 30, "label_schedule_steps": 500}
    env = HumanPreferencesEnvWrapper(FakePixelEnv(), log_dir=str(tmp_path), **settings, augment_shift=2,
                                     temporal_crop_min_length=3, pseudo_label_threshold=0.51)
    with env:
        step_until(env, lambda: env.stats().training_steps >= 40 and env.stats().labels_received >= 30)
        received = env.stats().labels_received
    assert received == 30
    saved = PrefBuffer.load_all(str(tmp_path))
    assert len(saved.train_db) + len(saved.val_db) == 30
    for a, b, label in [*saved.train_db.prefs, *saved.val_db.prefs]:  # each the teacher's, from true returns
        ra, rb = saved.train_db.segments.get(a, saved.val_db.segments.get(a)).true_return, \
            saved.train_db.segments.get(b, saved.val_db.segments.get(b)).true_return
        assert label == (1.0 if ra > rb else 0.0 if ra < rb else 0.5)


def test_train_reward_takes_the_levers_and_leaves_the_labels_alone(tmp_path):
    rng = np.random.default_rng(2)
    buffer = PrefBuffer(100, 0.2)
    for i in range(20):
        a, b = (Clip(2 * i + k, rng.integers(0, 256, (5, 16, 16, 1), dtype=np.uint8), rng.random(5))
                for k in (0, 1))
        buffer.add(a, b, float(a.true_return > b.true_return))
    buffer.save(str(tmp_path / "prefs"))
    row = train_reward(str(tmp_path / "prefs"), str(tmp_path / "run"), steps=20, reward_predictor_ckpt_interval=10,
                       ensemble_size=1, augment_shift=2, temporal_crop_min_length=3, pseudo_label_threshold=0.51)
    assert row["training_step"] == 20 and row["n_train_labels"] + row["n_val_labels"] == 20
    saved = PrefBuffer.load_all(str(tmp_path / "prefs"))
    assert len(saved.train_db) + len(saved.val_db) == 20
    assert not (tmp_path / "run" / "train.pkl.gz").exists()  # a training-only run writes no labels
