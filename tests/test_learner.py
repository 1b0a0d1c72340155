"""The learner, without a process: it trains on the database it is handed, checkpoints as it goes, and the
checkpoint is what the predictor loads; it trains on the torch device it is given."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import assert_same_in_float32

from drlhp.clips.clip import Clip
from drlhp.clips.frames import infer_frame_spec
from drlhp.label_store.database import PrefBuffer
from drlhp.reward.augment import NO_AUGMENTATION
from drlhp.reward.learner import Learner, LearnerConfig, fit_normaliser
from drlhp.reward.predictor import FORWARD_BATCH, NetConfig, RewardPredictor
from drlhp.reward.torch_setup import torch_device
from drlhp.storage.layout import LogDir

LENGTH, FEATURES = 5, 4
SPEC = infer_frame_spec(np.zeros(FEATURES, np.float32))  # flat frames: a small MLP, milliseconds a step


def labelled(n_pairs: int, seed: int) -> PrefBuffer:
    """Pairs of clips of random frames whose true reward is the frame's first feature, labelled by their returns."""
    rng = np.random.default_rng(seed)
    buffer = PrefBuffer(10_000, 0.25)
    for i in range(n_pairs):
        a, b = (Clip(2 * i + k, rng.normal(size=(LENGTH, FEATURES)).astype(np.float32), np.zeros(LENGTH))
                for k in (0, 1))
        buffer.add(a, b, float(a.frames[:, 0].sum() > b.frames[:, 0].sum()))
    return buffer


def settings(**changes) -> LearnerConfig:
    base = dict(net=NetConfig(SPEC, dropout=0.0), lr=1e-2, batch_size=16, noise_prob=0.0, weight_decay=1e-4,
                adaptive_l2=True, adaptive_l2_factor=1.5, augmentation=NO_AUGMENTATION, reward_scale=0.05,
                reward_centre="mean", ckpt_interval=20, n_initial_training_steps=5, seed=0, device="cpu",
                weight_average=None, estimate_noise_prob=False, label_filter=None, label_flip=None)
    return LearnerConfig(**{**base, **changes})


def test_the_learner_learns_the_labels_and_checkpoints_at_its_steps(tmp_path):
    torch.manual_seed(0)
    labels = labelled(200, seed=1)
    untrained = Learner(settings(), str(tmp_path / "untrained")).checkpoint(labels.train_db, labels.val_db)
    learner = Learner(settings(), str(tmp_path))
    evaluations = learner.train(60, labels.train_db, labels.val_db)
    assert [e.training_step for e in evaluations] == [5, 20, 40, 60] and learner.step == 60
    last = evaluations[-1]
    assert untrained.training_step == 0 and untrained.val_accuracy < 0.6  # about chance
    assert last.val_accuracy > 0.85
    assert last.n_train_labels + last.n_val_labels == 200 and last.l2_coefficient > 0
    assert learner.checkpointed

    loaded = RewardPredictor.load(LogDir(str(tmp_path)).checkpoint)
    frames = labels.val_db.segments[labels.val_db.prefs[0][0]].frames
    assert loaded.training_step == 60 and loaded.device.type == "cpu"
    assert_same_in_float32(loaded.normalised_rewards(frames), learner.predictor.normalised_rewards(frames))
    # The normaliser was fitted on the training clips: zero mean and the reward scale over them.
    clips = np.concatenate([s.frames for s in labels.train_db.segments.values()])
    assert abs(loaded.normalised_rewards(clips).mean()) < 0.02


def test_a_learner_set_to_the_median_centres_its_checkpoints_reward_there(tmp_path):
    labels = labelled(40, seed=3)
    learner = Learner(settings(reward_centre="median"), str(tmp_path))
    last = learner.train(5, labels.train_db, labels.val_db)[-1]
    clips = np.concatenate([s.frames for s in labels.train_db.segments.values()])
    loaded = RewardPredictor.load(LogDir(str(tmp_path)).checkpoint)
    rewards = loaded.normalised_rewards(clips)
    assert abs(np.median(rewards)) < 1e-6  # a mean-centred reward's median is its skew
    # The evaluation says how far the mean lies from that median, in standard deviations (the same clips: all).
    assert last.centre_gap == pytest.approx(rewards.mean() / rewards.std(), rel=1e-3, abs=1e-4)


def test_a_learner_resumes_from_its_checkpoint_with_the_optimiser_state(tmp_path):
    labels = labelled(40, seed=2)
    learner = Learner(settings(), str(tmp_path))
    learner.train(7, labels.train_db, labels.val_db)
    assert not learner.checkpointed  # step 7: after the one at 5, before the one at 20
    learner.checkpoint(labels.train_db, labels.val_db, evaluate=False)
    again = Learner(settings(), str(tmp_path), resume=True)
    assert again.step == 7 and again.checkpointed
    assert again.optimiser.optimizer.state_dict()["state"]  # Adam's moments came back
    assert Learner(settings(), str(tmp_path)).step == 0  # a new run starts afresh


def test_a_learner_needs_training_pairs(tmp_path):
    with pytest.raises(ValueError, match="no training pairs"):
        Learner(settings(), str(tmp_path)).train(1, PrefBuffer(10, 0.2).train_db, PrefBuffer(10, 0.2).val_db)


def test_the_device_setting_is_checked_and_auto_picks_cuda_only_where_there_is_one():
    assert torch_device("cpu") == torch.device("cpu")
    assert torch_device("auto").type == ("cuda" if torch.cuda.is_available() else "cpu")
    with pytest.raises(ValueError, match=r"reward_predictor_device='gpu' is not a torch device .*'auto'"):
        torch_device("gpu")


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_asking_for_cuda_where_there_is_none_says_what_to_pass_instead():
    with pytest.raises(ValueError, match=r"torch finds 0 CUDA device\(s\).*'auto'"):
        torch_device("cuda")


def test_a_learner_on_the_cpu_device_trains_there(tmp_path):
    labels = labelled(40, seed=3)
    learner = Learner(settings(device="auto" if not torch.cuda.is_available() else "cpu"), str(tmp_path))
    learner.train(5, labels.train_db, labels.val_db)
    assert learner.predictor.device.type == "cpu"
    assert all(p.device.type == "cpu" for p in learner.predictor.net.parameters())


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_a_learner_on_a_gpu_trains_there_and_its_checkpoint_loads_on_the_cpu(tmp_path):
    labels = labelled(200, seed=4)
    learner = Learner(settings(device="cuda"), str(tmp_path))
    evaluations = learner.train(60, labels.train_db, labels.val_db)
    assert all(p.device.type == "cuda" for p in learner.predictor.net.parameters())
    assert evaluations[-1].val_accuracy > 0.85
    loaded = RewardPredictor.load(LogDir(str(tmp_path)).checkpoint)
    assert all(p.device.type == "cpu" for p in loaded.net.parameters())
    frames = labels.val_db.segments[labels.val_db.prefs[0][0]].frames
    assert_same_in_float32(loaded.rewards(frames), learner.predictor.rewards(frames))  # GPU kernels vs CPU ones
    resumed = Learner(settings(device="cuda"), str(tmp_path), resume=True)
    resumed.train(1, labels.train_db, labels.val_db)  # Adam's state came back onto the GPU


def test_train_reward_with_a_seed_starts_from_the_same_weights_each_time(tmp_path):
    from drlhp.cli.offline import train_reward

    rng = np.random.default_rng(0)
    buffer = PrefBuffer(100, 0.2)
    for i in range(10):
        a, b = (Clip(2 * i + k, rng.integers(0, 256, (5, 16, 16, 1), dtype=np.uint8), rng.random(5)) for k in (0, 1))
        buffer.add(a, b, float(a.true_return > b.true_return))
    buffer.save(str(tmp_path / "prefs"))

    def first_checkpoint(run: str, seed: int) -> dict:
        train_reward(str(tmp_path / "prefs"), str(tmp_path / run), steps=1, reward_predictor_ckpt_interval=1,
                     ensemble_size=1, seed=seed)
        return RewardPredictor.load(LogDir(str(tmp_path / run)).checkpoint).net.state_dict()

    torch.manual_seed(1)  # whatever state torch is in before, the seed decides
    one = first_checkpoint("one", seed=7)
    torch.rand(5)
    two = first_checkpoint("two", seed=7)
    other = first_checkpoint("other", seed=8)
    assert one.keys() == two.keys() and all(torch.equal(one[k], two[k]) for k in one)
    assert any(not torch.equal(one[k], other[k]) for k in one)


def test_the_normaliser_is_fitted_on_every_frame_of_its_clips_however_many_are_unpacked_at_a_time():
    labels = labelled(50, seed=2)  # about 75 training clips: more than one forward batch (40 clips of 5 frames)
    predictor = RewardPredictor(NetConfig(SPEC, dropout=0.0))
    clips = list(labels.train_db.segments.values())
    every_frame = predictor.member_rewards(np.concatenate([s.frames for s in clips]))

    normaliser, gaps = fit_normaliser(predictor, labels.train_db, 512, 0.05, np.random.default_rng(0), centre="mean")
    assert len(clips) > 64
    assert np.allclose(normaliser.centre, every_frame.mean(axis=0), rtol=1e-5)
    assert np.allclose(normaliser.std, every_frame.std(axis=0), rtol=1e-5)
    median = np.median(every_frame, axis=0)
    assert np.allclose(gaps, (normaliser.centre - median) / normaliser.std, rtol=1e-4, atol=1e-6)

    by_median, _ = fit_normaliser(predictor, labels.train_db, 512, 0.05, np.random.default_rng(0), centre="median")
    assert np.allclose(by_median.centre, np.median(every_frame, axis=0), rtol=1e-5)
    assert np.allclose(by_median.std, normaliser.std)

    by_lower, _ = fit_normaliser(predictor, labels.train_db, 512, 0.05, np.random.default_rng(0), centre="lower")
    assert np.allclose(by_lower.centre, np.minimum(normaliser.centre, by_median.centre))

    some, _ = fit_normaliser(predictor, labels.train_db, 10, 0.05, np.random.default_rng(0), centre="mean")
    assert not np.allclose(some.centre, normaliser.centre)  # fewer clips than there are: a sample of them


def test_the_normaliser_unpacks_no_more_clips_at_a_time_than_a_forward_batch_takes():
    rng = np.random.default_rng(3)
    buffer = PrefBuffer(100, 0.0)
    for i in range(30):  # clips of 25 frames (Pong's length): 8 to a forward batch of 200 frames
        a, b = (Clip(2 * i + k, rng.normal(size=(25, FEATURES)).astype(np.float32), np.zeros(25)) for k in (0, 1))
        buffer.add(a, b, 1.0)
    predictor = RewardPredictor(NetConfig(SPEC, dropout=0.0))
    unpacked = []  # frames handed to the network at once
    forward = predictor.member_rewards

    def counting(frames: np.ndarray) -> np.ndarray:
        unpacked.append(len(frames))
        return forward(frames)

    predictor.member_rewards = counting  # type: ignore[method-assign]
    fit_normaliser(predictor, buffer.train_db, 512, 0.05, np.random.default_rng(0))
    assert sum(unpacked) == 60 * 25 and max(unpacked) == FORWARD_BATCH


def test_a_weight_average_follows_its_decay_and_weighs_early_steps_more():
    from drlhp.reward.weight_average import WeightAverage

    net, average = torch.nn.Linear(1, 1, bias=False), WeightAverage(0.99)
    expected = None
    for step in range(1, 301):  # weights that grow by 1 a step: the average lags them
        with torch.no_grad():
            net.weight.fill_(float(step))
        average.update(net, step)
        keep = min(0.99, (1 + step) / (10 + step))
        expected = float(step) if expected is None else keep * expected + (1 - keep) * step
        if step == 50:
            with average.applied(net):
                # A plain 0.99 average would still be mostly the first steps' weights (11.5 here).
                assert 40 < net.weight.item() < 50
    with average.applied(net):
        assert net.weight.item() == pytest.approx(expected, rel=1e-5)
        assert 300 - 100 < net.weight.item() < 300  # less than 1 / (1 - decay) steps behind
    assert net.weight.item() == 300.0  # the weights as trained are back


def test_a_learner_with_a_weight_average_checkpoints_the_average_and_resumes_from_its_weights(tmp_path):
    labels = labelled(40, seed=5)
    learner = Learner(settings(weight_average=0.9), str(tmp_path))
    learner.train(20, labels.train_db, labels.val_db)  # a checkpoint at 20
    trained = {k: v.clone() for k, v in learner.predictor.net.state_dict().items()}
    saved = RewardPredictor.load(LogDir(str(tmp_path)).checkpoint).net.state_dict()
    with learner.average.applied(learner.predictor.net):
        assert all(torch.equal(saved[k], v) for k, v in learner.predictor.net.state_dict().items())
    assert not all(torch.equal(saved[k], v) for k, v in trained.items())  # the average, not the last step

    again = Learner(settings(weight_average=0.9), str(tmp_path), resume=True)
    assert all(torch.equal(again.predictor.net.state_dict()[k], v) for k, v in trained.items())
    with again.average.applied(again.predictor.net):
        assert all(torch.equal(saved[k], v) for k, v in again.predictor.net.state_dict().items())
