import copy

import numpy as np
import pytest
import torch
from conftest import assert_same_in_float32

from drlhp.clips.frames import infer_frame_spec
from drlhp.reward.bootstrap import bootstrap_counts, member_batches
from drlhp.reward.normaliser import RewardNormaliser
from drlhp.reward.optimiser import RewardOptimiser
from drlhp.reward.predictor import ARCHS, CHECKPOINT_FORMAT, NetConfig, RewardPredictor, member_input

FRAMES = np.random.default_rng(0).integers(0, 255, (6, 64, 64, 1), dtype=np.uint8)


def ensemble(n_members=3, frames=FRAMES, **kwargs):
    torch.manual_seed(0)
    return RewardPredictor(NetConfig(infer_frame_spec(frames[0]), n_members=n_members, **kwargs))


def one_member(predictor, m):
    """Member ``m`` of an ensemble as a network of its own, from slices of the ensemble's weights."""
    single = RewardPredictor(NetConfig(predictor.config.frame_spec, predictor.config.dropout,
                                       predictor.config.batchnorm, n_members=1, arch=predictor.config.arch))
    state = {}
    for (name, w), module_w in zip(predictor.net.state_dict().items(), single.net.state_dict().values()):
        if w.dim() == 0:
            state[name] = w  # batchnorm's step counter
        elif w.shape[0] == predictor.n_members and w.shape[1:] == module_w.shape[1:]:
            state[name] = w[m:m + 1]  # MemberLinear
        else:
            k = w.shape[0] // predictor.n_members
            state[name] = w[m * k:(m + 1) * k]  # grouped conv / batchnorm channels
    single.net.load_state_dict(state)
    return single


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("frames", [FRAMES, np.random.default_rng(1).random((6, 7)).astype(np.float32)])
@pytest.mark.parametrize("batchnorm", [False, True])
def test_each_member_is_an_independent_network(frames, batchnorm, arch):
    p = ensemble(frames=frames, batchnorm=batchnorm, arch=arch)
    members = p.member_rewards(frames)
    assert members.shape == (6, 3) and not np.allclose(members[:, 0], members[:, 1])
    for m in range(3):
        assert_same_in_float32(members[:, m], one_member(p, m).member_rewards(frames)[:, 0])
    # The lean per-step path (one shared first layer) agrees with the module path.
    with torch.no_grad():
        module_out = p.net.eval()(member_input(torch.from_numpy(frames).float().permute(0, 3, 1, 2) / 255, 3)
                                  if frames.ndim == 4 else member_input(torch.from_numpy(frames), 3))
    assert_same_in_float32(members, module_out.numpy())


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("shape", [(84, 84, 4), (64, 64, 1), (20, 20, 3)])  # (20, 20, 3): "same" padding
def test_the_one_frame_path_matches_the_network_after_training_in_place(shape, arch):
    frames = np.random.default_rng(2).integers(0, 256, (16, *shape), dtype=np.uint8)
    p = ensemble(frames=frames, arch=arch)
    optimiser = RewardOptimiser(p, lr=1e-2)  # the inference calls must see weights trained after they were built
    pairs = (np.stack([frames[:8].reshape(4, 2, *shape)] * 3), np.stack([frames[8:].reshape(4, 2, *shape)] * 3))
    optimiser.train_step(*pairs, np.ones((3, 4), np.float32))
    with torch.no_grad():
        net_input = torch.from_numpy(frames[:4]).float().permute(0, 3, 1, 2) / 255
        module_out = p.net.eval()(member_input(net_input, 3)).numpy()
    one_at_a_time = np.concatenate([p.member_rewards(frames[i:i + 1]) for i in range(4)])
    assert_same_in_float32(one_at_a_time, module_out)
    assert_same_in_float32(p.member_rewards(frames[:4]), module_out)


def test_a_training_step_moves_each_member_by_its_own_pairs_only():
    p = ensemble(dropout=0.0)
    optimiser = RewardOptimiser(p, lr=1e-2)
    before = copy.deepcopy(p.net.state_dict())
    fa = np.stack([FRAMES[None, :2]] * 3).repeat(4, axis=1)  # (3 members, 4 pairs, 2 frames, ...)
    fb = fa.copy()
    fb[1] = 255 - fb[1]
    # Members 0 and 2 get pairs of equal clips labelled "equally good": their loss is at its minimum, gradient 0.
    labels = np.array([[0.5] * 4, [1.0] * 4, [0.5] * 4], np.float32)
    optimiser.train_step(fa, fb, labels)
    name, first = next(iter(p.net.named_parameters()))  # the first convolution's weights
    changed = (first.detach() - before[name]).abs().sum(dim=(1, 2, 3)).view(3, -1).sum(1)
    assert changed[1] > 0 and changed[0] == 0 and changed[2] == 0


def test_an_ensemble_checkpoint_holds_every_member_and_loads_without_code(tmp_path):
    p = ensemble()
    p.normaliser = RewardNormaliser.fit(p.member_rewards(FRAMES), 0.05)
    path = str(tmp_path / "r.ckpt")
    p.save(path)
    state = torch.load(path, weights_only=True)  # plain tensors and containers: nothing to execute
    assert state["format"] == CHECKPOINT_FORMAT and state["net_config"]["n_members"] == 3
    q = RewardPredictor.load(path)
    assert q.n_members == 3 and q.normaliser == p.normaliser
    np.testing.assert_allclose(q.member_rewards(FRAMES), p.member_rewards(FRAMES))
    np.testing.assert_allclose(q.rewards(FRAMES), p.normaliser(p.member_rewards(FRAMES)), rtol=1e-5)


def test_bootstrap_counts_are_poisson_1_fixed_per_label_and_independent_across_members():
    ids = np.stack([np.arange(20_000), np.arange(20_000) + 7], axis=1)
    counts = [bootstrap_counts(ids, m, seed=0) for m in range(3)]
    for c in counts:
        assert c.mean() == pytest.approx(1.0, abs=0.03) and c.var() == pytest.approx(1.0, abs=0.05)
        assert np.mean(c == 0) == pytest.approx(np.exp(-1), abs=0.01)
    assert abs(np.corrcoef(counts[0], counts[1])[0, 1]) < 0.03
    np.testing.assert_array_equal(bootstrap_counts(ids[5000:6000], 0, seed=0), counts[0][5000:6000])
    assert not np.array_equal(bootstrap_counts(ids, 0, seed=1), counts[0])


def test_each_member_trains_on_its_own_resample():
    pairs = [(i, 1000 + i, 1.0) for i in range(200)]
    ids = np.array([p[:2] for p in pairs])
    rng = np.random.default_rng(0)
    drawn = np.concatenate([member_batches(pairs, 3, 16, rng) for _ in range(2000)], axis=1)  # (3, 32000)
    for m in range(3):
        counts = bootstrap_counts(ids, m)
        freq = np.bincount(drawn[m], minlength=200)
        assert freq[counts == 0].sum() == 0  # a label outside member m's resample never reaches it
        expected = counts / counts.sum() * drawn.shape[1]
        assert np.corrcoef(freq, expected)[0, 1] > 0.95  # and the others in proportion to their count
    single = member_batches(pairs, 1, 16, rng)
    assert single.shape == (1, 16)
