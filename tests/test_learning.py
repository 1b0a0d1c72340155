"""The learned reward must track the true reward of the bundled task."""
import gymnasium
import numpy as np
import pytest
import torch
from scipy.stats import spearmanr

import drlhp  # noqa: F401  (registers drlhp/MovingDot-v0)
from drlhp import PrefDB
from drlhp.clips.clip import Clip
from drlhp.clips.cutting import ClipBuilder
from drlhp.clips.frames import infer_frame_spec
from drlhp.labelling.protocols import SyntheticLabeller
from drlhp.reward.optimiser import RewardOptimiser
from drlhp.reward.predictor import ARCHS, NetConfig, RewardPredictor


def random_segments(env, n, length, seed):
    rng = np.random.default_rng(seed)
    obs, _ = env.reset(seed=seed)
    builder = ClipBuilder(infer_frame_spec(obs), length)
    out = []
    while len(out) < n:
        obs, reward, terminated, truncated, _ = env.step(int(rng.integers(env.action_space.n)))
        done = builder.add(obs, reward)
        if done is not None:
            out.append(Clip(seed * 10_000 + len(out), done[0].copy(), done[1].copy()))
        if terminated or truncated:
            builder.end_episode()
            env.reset()
    return out


# Train steps each network needs here: the keypoint network starts from a coordinate
# readout (its untrained ranking is already ~0.7) and needs a couple of hundred steps to move
# past it; the CNN starts near 0 and gets there sooner. Labelled clips of 10 frames: a step
# costs half of one on 25-frame clips and learns as much (over three seeds, the held-out
# ranking at the last step: keypoints 0.88-0.96 against 0.87-0.91 on 25 frames; the CNN
# 0.94 by step 80 against 0.95 at step 120).
TRAIN_STEPS = {"atari": 80, "keypoints": 200}
CLIP_LENGTH = 10


@pytest.mark.parametrize("arch", ARCHS)
def test_learned_reward_ranks_held_out_frames_like_the_true_reward(arch, one_torch_thread):
    torch.manual_seed(0)
    env = gymnasium.make("drlhp/MovingDot-v0")
    train = random_segments(env, 200, CLIP_LENGTH, seed=1)
    held_out = random_segments(env, 30, 25, seed=2)
    rng = np.random.default_rng(0)
    db, labeller = PrefDB(1000), SyntheticLabeller()
    for _ in range(600):
        a, b = rng.choice(len(train), 2, replace=False)
        db.append(train[a], train[b], labeller.label(train[a], train[b]))
    optimiser = RewardOptimiser(RewardPredictor(NetConfig(infer_frame_spec(train[0].frames[0]), arch=arch)))
    frames = np.concatenate([s.frames for s in held_out])
    true = np.concatenate([s.rewards for s in held_out])
    before = spearmanr(optimiser.predictor.raw_rewards(frames), true).statistic
    for _ in range(TRAIN_STEPS[arch]):
        optimiser.train_step(*db.batch(rng.integers(0, len(db), 16)))
    after = spearmanr(optimiser.predictor.raw_rewards(frames), true).statistic
    assert after > max(0.85, before + 0.1), (before, after)
