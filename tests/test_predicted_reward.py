"""A reward model as a file to reuse: what its checkpoint says it was trained on, and ``PredictedRewardWrapper``
rewarding an env with it in this process, without the pipeline."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import FakePixelEnv
from test_learner import FEATURES, labelled, settings

import drlhp
from drlhp import CheckpointFormatError, MissingFileError, ObservationError, PredictedRewardWrapper, RewardPredictor
from drlhp.reward.learner import Learner
from drlhp.storage.layout import LogDir, checkpoint_path


def feature_env(size: int = FEATURES) -> FakePixelEnv:
    """Flat float observations of ``size`` features (the learner tests' frames); its own reward is the first."""
    return FakePixelEnv((size,), np.float32, reward_fn=lambda t: (t % 256) / 255)  # each feature is (t % 256) / 255


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> tuple[str, int, int, float]:
    """A run's checkpoint folder after 40 steps on 120 labelled pairs, with its labels' counts and val accuracy."""
    torch.manual_seed(0)
    log_dir = str(tmp_path_factory.mktemp("run"))
    labels = labelled(120, seed=2)
    last = Learner(settings(), log_dir).train(40, labels.train_db, labels.val_db)[-1]
    return (str(LogDir(log_dir).checkpoint_dir), last.n_train_labels, last.n_val_labels, last.val_accuracy)


def test_a_checkpoint_says_what_it_was_trained_on_and_by_which_drlhp(trained):
    folder, n_train, n_val, val_accuracy = trained
    model = RewardPredictor.load(checkpoint_path(folder))
    about = model.provenance
    assert about["drlhp_version"] == drlhp.__version__
    assert (about["train_labels"], about["val_labels"]) == (n_train, n_val) and n_train + n_val == 120
    assert about["val_accuracy"] == pytest.approx(val_accuracy) and val_accuracy > 0.8
    assert about["val_accuracy_step"] == model.training_step == 40
    assert about["settings"]["lr"] == settings().lr and about["settings"]["augmentation"]["shift"] == 0
    assert model.config.frame_spec.shape == (FEATURES,)


def test_a_checkpoint_written_unscored_at_close_says_which_step_its_accuracy_is_of(tmp_path):
    labels = labelled(60, seed=3)
    learner = Learner(settings(), str(tmp_path))
    scored = learner.train(45, labels.train_db, labels.val_db)[-1]  # checkpoints at 5, 20 and 40; then 5 more steps
    learner.checkpoint(labels.train_db, labels.val_db, evaluate=False)  # as the trainer does at close
    model = RewardPredictor.load(LogDir(str(tmp_path)).checkpoint)
    assert model.training_step == 45 and scored.training_step == 40
    assert model.provenance["val_accuracy"] == pytest.approx(scored.val_accuracy)
    assert model.provenance["val_accuracy_step"] == 40


def test_the_wrapper_rewards_each_step_with_the_models_reward_of_the_observation_it_ends_in(trained):
    folder = trained[0]
    model = RewardPredictor.load(checkpoint_path(folder))
    env = PredictedRewardWrapper(feature_env(), folder)  # the folder, as a run leaves it
    env.reset(seed=0)
    for _ in range(5):
        obs, reward, _, _, info = env.step(0)
        assert reward == pytest.approx(model.reward(obs)) and info[drlhp.PREDICTED_REWARD_KEY] == reward
        assert info[drlhp.TRUE_REWARD_KEY] == pytest.approx(float(obs[0]))
    # The model learnt the first feature: its reward ranks observations as the env's own does.
    frames = np.eye(FEATURES, dtype=np.float32) * np.array([[3.0], [0.0], [0.0], [0.0]])
    assert model.rewards(frames)[0] > model.rewards(np.zeros((1, FEATURES), np.float32))[0]


def test_an_env_of_other_frames_is_refused_naming_both_shapes(trained):
    with pytest.raises(ObservationError, match=r"shape \(4,\).*shape \(6,\)|shape \(6,\).*shape \(4,\)"):
        PredictedRewardWrapper(feature_env(size=6), trained[0])
    # ... unless obs_transform_func gives the frames it was trained on.
    env = PredictedRewardWrapper(feature_env(size=6), trained[0], obs_transform_func=lambda obs: obs[:FEATURES])
    env.reset(seed=0)
    assert np.isfinite(env.step(0)[1])


def test_a_missing_or_tampered_file_is_one_clear_error(trained, tmp_path):
    with pytest.raises(MissingFileError, match="no checkpoint at"):
        PredictedRewardWrapper(feature_env(), str(tmp_path / "nowhere.ckpt"))
    state = torch.load(checkpoint_path(trained[0]), weights_only=True)
    first = next(iter(state["state_dict"]))
    state["state_dict"][first] = state["state_dict"][first] + 0.01  # a weight changed, the file still well formed
    torch.save(state, tmp_path / "changed.ckpt")
    with pytest.raises(CheckpointFormatError, match="do not match the digest it was written with"):
        PredictedRewardWrapper(feature_env(), str(tmp_path / "changed.ckpt"))
    data = bytearray(open(checkpoint_path(trained[0]), "rb").read())
    data[len(data) // 2:len(data) // 2 + 64] = bytes(64)  # a stretch of the file overwritten
    (tmp_path / "damaged.ckpt").write_bytes(bytes(data))
    with pytest.raises(CheckpointFormatError, match="not a valid drlhp reward-predictor checkpoint|do not match"):
        PredictedRewardWrapper(feature_env(), str(tmp_path / "damaged.ckpt"))
