import copy
import math

import numpy as np
import pytest
import torch
from conftest import assert_same_in_float32

from drlhp.clips.frames import frames_to_net_input, infer_frame_spec
from drlhp.errors import LAST_TO_CONVERT, CheckpointFormatError
from drlhp.reward.layers import SpatialSoftmax, peak_softmax, spatial_softmax
from drlhp.reward.normaliser import MIN_STD, RewardNormaliser
from drlhp.reward.optimiser import RewardOptimiser
from drlhp.reward.predictor import (
    ARCHS,
    FORWARD_INPUT_BYTES,
    FRAME_NORMS,
    MemberLinear,
    NetConfig,
    RewardPredictor,
    build_reward_net,
    member_input,
    preference_accuracy,
    preference_loss,
)

t = torch.tensor


def test_loss_known_values():
    assert preference_loss(t([1.0]), t([0.0]), t([1.0])).item() == pytest.approx(math.log(1 + math.exp(-1)))
    assert preference_loss(t([1.0]), t([0.0]), t([0.0])).item() == pytest.approx(math.log(1 + math.exp(1)))
    # A tie is 1/2 - 1/2: equal predicted returns give exactly log 2.
    assert preference_loss(t([3.0]), t([3.0]), t([0.5])).item() == pytest.approx(math.log(2))
    # Mean over the batch.
    both = preference_loss(t([1.0, 1.0]), t([0.0, 0.0]), t([1.0, 0.0])).item()
    assert both == pytest.approx((math.log(1 + math.exp(-1)) + math.log(1 + math.exp(1))) / 2)


def test_noise_model_bounds_the_loss_of_confident_mistakes():
    p_wrong = 0.1 / 2  # the labeller answered at random and picked the other side
    loss = preference_loss(t([1000.0]), t([0.0]), t([0.0]), noise_prob=0.1).item()
    assert loss == pytest.approx(-math.log(p_wrong), rel=1e-6)
    right = preference_loss(t([1000.0]), t([0.0]), t([1.0]), noise_prob=0.1).item()
    assert right == pytest.approx(-math.log(1 - p_wrong), rel=1e-6)
    d = t([0.7], requires_grad=True)
    preference_loss(d, t([0.0]), t([1.0]), noise_prob=0.1).backward()
    assert d.grad.item() < 0  # still pushes the preferred return up


def test_accuracy_leaves_ties_out():
    acc, n = preference_accuracy(t([2.0, 0.0, 1.0, 1.0]), t([1.0, 1.0, 1.0, 0.0]), t([1.0, 1.0, 0.5, 0.0]))
    assert (acc, n) == (pytest.approx(1 / 3), 3)
    assert preference_accuracy(t([1.0]), t([1.0]), t([1.0])) == (0.5, 1)  # predicted tie: half
    acc, n = preference_accuracy(t([1.0]), t([0.0]), t([0.5]))
    assert math.isnan(acc) and n == 0


@pytest.mark.parametrize("shape", [(84, 84, 4), (4, 84, 84), (12, 12), (7, 9, 3), (2, 50, 40, 3), (10,)])
@pytest.mark.parametrize("batchnorm", [False, True])
def test_net_gives_one_scalar_per_frame(shape, batchnorm):
    frames = np.random.default_rng(0).integers(0, 256, (6, *shape), dtype=np.uint8)
    predictor = RewardPredictor(NetConfig(infer_frame_spec(frames[0]), batchnorm=batchnorm))
    out = predictor.raw_rewards(frames)
    assert out.shape == (6,) and np.all(np.isfinite(out))


def test_paper_network_on_atari_frames():
    net = build_reward_net(NetConfig(infer_frame_spec(np.zeros((84, 84, 4), np.uint8)), arch="atari"))
    convs = [m for m in net.modules() if isinstance(m, torch.nn.Conv2d)]
    assert [(c.out_channels, c.kernel_size[0], c.stride[0], c.padding[0]) for c in convs] == [
        (16, 7, 3, 0), (16, 5, 2, 0), (16, 3, 1, 0), (16, 3, 1, 0)]
    linears = [m for m in net.modules() if isinstance(m, MemberLinear)]
    assert [tuple(m.weight.shape) for m in linears] == [(1, 64, 7 * 7 * 16), (1, 1, 64)]


@pytest.mark.parametrize("arch", ARCHS)
def test_checkpoint_round_trip(tmp_path, arch):
    frames = np.random.default_rng(1).integers(0, 256, (5, 20, 20, 1), dtype=np.uint8)
    p = RewardPredictor(NetConfig(infer_frame_spec(frames[0]), arch=arch), normaliser=RewardNormaliser(0.3, 2.0, 0.05),
                        training_step=42)
    path = str(tmp_path / "reward_predictor.ckpt")
    p.save(path)
    q = RewardPredictor.load(path)
    assert q.training_step == 42 and q.normaliser == p.normaliser and q.config == p.config
    np.testing.assert_allclose(q.raw_rewards(frames), p.raw_rewards(frames))
    assert q.reward(frames[0]) == pytest.approx((p.raw_rewards(frames[:1])[0] - 0.3) / 2.0 * 0.05)


def test_a_sharper_keypoint_softmax_moves_the_keypoint_onto_a_faintly_brighter_spot():
    logits = torch.zeros(1, 1, 8, 8)
    logits[0, 0, 7, 7] = 0.5  # a small object the first convolutions barely tell from the background
    grid = SpatialSoftmax(1, 8, 8).grid
    soft, sharp = (spatial_softmax(logits, grid, 1, temperature)[0] for temperature in (1.0, 0.1))
    # (x, y) of the corner is (1, 1): at temperature 1 the keypoint stays near the centre, at 0.1 it is drawn there.
    assert soft.max() < 0.05 and sharp.min() > 0.5


def test_the_keypoint_softmax_never_makes_denormal_floats_and_keeps_what_weighs():
    # A trained network's sharp maps: logits from the peak down to 110 below it, at 0.5 steps, so some fall
    # where float32's exp is denormal (87-103 below the peak), whose arithmetic is several times slower.
    logits = (-torch.arange(0, 110, 0.5)).view(1, -1, 1).repeat(1, 1, 3).requires_grad_()
    attention = peak_softmax(logits, dim=1)
    attention.mul(torch.rand_like(attention)).sum().backward()
    tiny = torch.finfo(torch.float32).tiny
    for t in (attention, logits.grad):
        assert not ((t != 0) & (t.abs() < tiny)).any(), "denormal floats"
    plain = torch.softmax(logits.detach(), dim=1)
    assert torch.allclose(attention, plain, rtol=0, atol=1e-20)
    # float32's exp is denormal between 87 and 103 below the peak (a CPU that flushes denormals shows 0 there).
    assert ((logits.detach() < -87) & (logits.detach() > -103)).any(), "the logits no longer reach the denormal range"


def test_the_keypoint_network_drops_out_only_in_its_dense_head():
    net = build_reward_net(NetConfig(infer_frame_spec(np.zeros((32, 32, 1), np.uint8)), arch="keypoints",
                                     dropout=0.5, frame_norm="none")).train()
    body, head = net[0], net[1:]
    x = torch.rand(4, 1, 32, 32)
    torch.manual_seed(0)
    assert torch.equal(body(x), body(x))  # the keypoints of a frame are the same in every training pass
    features = body(x)
    assert not torch.equal(head(features), head(features))
    # A placeholder keeps dropout's place: checkpoints saved when the convolutions had dropout still load.
    assert [type(m).__name__ for m in body] == ["Conv2d", "LeakyReLU", "Identity", "Conv2d", "LeakyReLU", "Identity",
                                                "Conv2d", "SpatialSoftmax"]


@pytest.mark.parametrize("earlier", ["v1", "arch", "n_members", "keypoint_temperature", "frame_norm"])
def test_a_checkpoint_of_an_earlier_drlhp_is_refused_naming_how_to_convert_it(tmp_path, earlier):
    p = RewardPredictor(NetConfig(infer_frame_spec(np.zeros((20, 20, 1), np.uint8))))
    p.save(str(tmp_path / "r.ckpt"))
    state = torch.load(str(tmp_path / "r.ckpt"), weights_only=True)
    if earlier == "v1":
        state["format"] = "drlhp-reward-predictor-v1"
    else:
        del state["net_config"][earlier]
    torch.save(state, str(tmp_path / "old.ckpt"))
    with pytest.raises(CheckpointFormatError, match=f"earlier, unreleased drlhp.*{'v1' if earlier == 'v1' else earlier}"
                       f".*commit {LAST_TO_CONVERT}.*RewardPredictor.load\\(path\\).save\\(path\\)"):
        RewardPredictor.load(str(tmp_path / "old.ckpt"))



def test_checkpoint_with_code_in_it_is_refused(tmp_path):
    marker = tmp_path / "ran"

    class Evil:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    path = str(tmp_path / "evil.ckpt")
    torch.save({"format": "drlhp-reward-predictor-v1", "x": Evil()}, path)
    with pytest.raises(ValueError, match="is not a valid drlhp reward-predictor checkpoint"):
        RewardPredictor.load(path)
    assert not marker.exists()


def test_corrupt_checkpoint_gets_a_clear_error(tmp_path):
    path = tmp_path / "reward_predictor.ckpt"
    path.write_bytes(b"\x00" * 100)
    with pytest.raises(ValueError, match="is not a valid drlhp reward-predictor checkpoint"):
        RewardPredictor.load(str(path))


def test_normaliser_gives_zero_mean_and_the_chosen_std():
    raw = np.random.default_rng(0).normal(3.0, 7.0, (1000, 1))
    norm = RewardNormaliser.fit(raw, scale=0.05, centre="mean")
    out = norm(raw)
    assert abs(out.mean()) < 1e-9 and out.std() == pytest.approx(0.05)
    constant = RewardNormaliser.fit(np.full(10, 2.0), scale=1.0)
    assert constant(np.array([2.0])) == 0.0  # no division by zero


def test_a_median_centred_reward_gives_a_typical_frame_zero_where_the_mean_makes_it_cost():
    # Breakout's shape: most frames are ordinary, a few (points) are worth much more.
    rng = np.random.default_rng(0)
    raw = np.concatenate([rng.normal(0.0, 0.1, (950, 1)), rng.normal(3.0, 0.1, (50, 1))])
    ordinary = raw[:950]
    by_mean, by_median = (RewardNormaliser.fit(raw, 0.05, centre) for centre in ("mean", "median"))
    assert np.median(by_mean(ordinary)) < -0.005  # a typical frame costs: a longer episode earns less
    assert abs(np.median(by_median(ordinary))) < 0.001 and abs(np.median(by_median(raw))) < 1e-12
    np.testing.assert_allclose(by_median(raw).std(), 0.05)  # the same scale
    q = RewardNormaliser.from_dict(by_median.to_dict())
    assert q == by_median and np.array_equal(q(raw), by_median(raw))


def test_the_lower_centre_is_the_median_where_rare_gains_lift_the_mean_and_the_mean_where_rare_losses_lower_it():
    rng = np.random.default_rng(0)
    ordinary = rng.normal(0.0, 0.1, (950, 1))
    gains, losses = (np.concatenate([ordinary, rng.normal(sign * 3.0, 0.1, (50, 1))]) for sign in (1, -1))
    for raw, lower_one in ((gains, "median"), (losses, "mean")):  # Breakout's shape; Pong's while points are lost
        assert RewardNormaliser.fit(raw, 0.05, "lower") == RewardNormaliser.fit(raw, 0.05, lower_one)
        assert np.median(RewardNormaliser.fit(raw, 0.05, "lower")(ordinary)) >= -1e-3  # a typical frame never costs


def test_a_network_whose_output_hardly_varies_rewards_exactly_zero_not_amplified_noise():
    # Measured on Pong: a dead network's raw rewards varied by 1.3e-8; divided by that std, they reached 1e5.
    rng = np.random.default_rng(0)
    dead = rng.normal(-0.0267, 1.3e-8, (1000, 1))
    norm = RewardNormaliser.fit(dead, scale=0.05)
    assert norm.std[0] < MIN_STD  # the checkpoint records how flat it was
    # Exactly 0 on the frames it was fitted on and on others: no rounding noise gets through, on any CPU.
    assert np.all(norm(dead) == 0.0) and np.all(norm(rng.normal(-0.0267, 1e-6, (100, 1))) == 0.0)
    # A checkpoint written when the std was floored at MIN_STD (before flat members were left out) reads as flat.
    assert RewardNormaliser(centre=-0.0267, std=MIN_STD, scale=0.05)(np.array([-0.02671])) == 0.0


def test_a_flat_ensemble_member_is_left_out_of_the_mean():
    rng = np.random.default_rng(0)
    live = rng.normal(3.0, 7.0, (500, 2))
    raw = np.column_stack([live[:, 0], np.full(500, 0.5) + rng.normal(0, 1e-9, 500), live[:, 1]])
    norm = RewardNormaliser.fit(raw, scale=0.05)
    only_live = RewardNormaliser.fit(live, scale=0.05)
    np.testing.assert_array_equal(norm.member_weights[1], 0.0)
    np.testing.assert_allclose(norm(raw), only_live(live), rtol=1e-12, atol=1e-15)  # float64 arithmetic only


def test_an_ensemble_reward_is_the_mean_of_its_members_normalised_rewards():
    rng = np.random.default_rng(0)
    raw = np.stack([rng.normal(3.0, 7.0, 500), rng.normal(-100.0, 0.1, 500), rng.normal(0, 1, 500)], axis=1)
    norm = RewardNormaliser.fit(raw, scale=0.05, centre="mean")
    each = (raw - raw.mean(0)) / raw.std(0) * 0.05
    np.testing.assert_allclose(norm(raw), each.mean(1))  # the tiny-scale member counts as much as the others


def test_optimiser_step_reduces_loss_on_a_fixed_batch():
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    frames_a = rng.integers(0, 256, (8, 3, 10), dtype=np.uint8).astype(np.float32) / 255
    frames_b = frames_a[:, :, ::-1].copy()
    labels = (frames_a[:, :, 0].sum(1) > frames_b[:, :, 0].sum(1)).astype(np.float32)
    optimiser = RewardOptimiser(RewardPredictor(NetConfig(infer_frame_spec(frames_a[0, 0]), dropout=0.0)), lr=1e-2)
    first, _ = optimiser.evaluate([(frames_a, frames_b, labels)])
    for _ in range(50):
        optimiser.train_step(frames_a, frames_b, labels)
    last, acc = optimiser.evaluate([(frames_a, frames_b, labels)])
    assert last < first * 0.5 and acc == 1.0 and optimiser.predictor.training_step == 50
    # Evaluated a few pairs at a time (bounded memory), the figures are the same.
    halves = [(frames_a[i:i + 3], frames_b[i:i + 3], labels[i:i + 3]) for i in range(0, 8, 3)]
    assert optimiser.evaluate(halves) == pytest.approx((last, acc))


@pytest.mark.parametrize("arch", ARCHS)
def test_centred_frames_are_rewarded_the_same_whatever_the_backgrounds_brightness(arch):
    torch.manual_seed(0)
    frames = np.random.default_rng(0).integers(0, 100, (6, 40, 40, 4), dtype=np.uint8)
    spec = infer_frame_spec(frames[0])
    centred, plain = (RewardPredictor(NetConfig(spec, arch=arch, frame_norm=norm)) for norm in ("centre", "none"))
    assert [type(m).__name__ for m in centred.net[0]][0] == "FrameNorm"  # the default
    brighter = frames + np.uint8(90)  # Pong's grey instead of black, say
    np.testing.assert_allclose(centred.raw_rewards(brighter), centred.raw_rewards(frames), atol=1e-5)
    assert not np.allclose(plain.raw_rewards(brighter), plain.raw_rewards(frames), atol=1e-5)


def test_frame_norm_must_be_one_of_its_modes():
    with pytest.raises(ValueError, match="frame_norm must be one of"):
        NetConfig(infer_frame_spec(np.zeros((20, 20, 1), np.uint8)), frame_norm="mean")


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("frame_norm", FRAME_NORMS)
@pytest.mark.parametrize("shape, batchnorm", [((84, 84, 4), False), ((12, 12), True), ((10,), True)])
def test_fast_single_frame_path_matches_the_network(shape, batchnorm, arch, frame_norm):
    torch.manual_seed(0)
    frames = np.random.default_rng(0).integers(0, 256, (64, *shape), dtype=np.uint8)
    predictor = RewardPredictor(NetConfig(infer_frame_spec(frames[0]), batchnorm=batchnorm, arch=arch,
                                          frame_norm=frame_norm),
                                normaliser=RewardNormaliser(0.1, 0.5, 2.0))
    optimiser = RewardOptimiser(predictor, lr=1e-2)  # move weights and batchnorm statistics away from their init
    for _ in range(3):
        optimiser.train_step(frames[:8].reshape(4, 2, *shape), frames[8:16].reshape(4, 2, *shape),
                             np.ones(4, np.float32))
    fast = [predictor.reward(f) for f in frames[:5]]
    with torch.no_grad():  # the plain module path, as in training
        raw = predictor.net.eval()(frames_to_net_input(frames[:5], predictor.config.frame_spec)).numpy()[:, 0]
    assert_same_in_float32(fast, (raw - 0.1) / 0.5 * 2.0)


def test_optimiser_state_is_restored_only_for_the_checkpoint_it_was_saved_with(tmp_path):
    spec = infer_frame_spec(np.zeros((8, 8, 1), np.uint8))
    rng = np.random.default_rng(0)
    clips = rng.integers(0, 256, (2, 4, 3, 8, 8, 1), dtype=np.uint8)
    batch = (clips[0], clips[1], np.array([1.0, 0.0, 1.0, 0.5], np.float32))
    optimiser = RewardOptimiser(RewardPredictor(NetConfig(spec)))
    for _ in range(3):
        optimiser.train_step(*batch)
    optimiser.predictor.save(str(tmp_path / "r.ckpt"))
    optimiser.save_state(str(tmp_path / "opt.pt"))

    resumed = RewardOptimiser(RewardPredictor.load(str(tmp_path / "r.ckpt")))
    assert resumed.load_state(str(tmp_path / "opt.pt"))
    saved, restored = optimiser.optimizer.state_dict()["state"], resumed.optimizer.state_dict()["state"]
    assert saved.keys() == restored.keys()
    assert all(torch.equal(saved[k]["exp_avg_sq"], restored[k]["exp_avg_sq"]) for k in saved)
    # One step on from both: the same weights, as if the run had never stopped.
    for t in (optimiser, resumed):
        torch.manual_seed(0)  # the same dropout masks
        t.train_step(*batch)
    pairs = zip(optimiser.predictor.net.parameters(), resumed.predictor.net.parameters())
    assert all(torch.allclose(p, q) for p, q in pairs)

    optimiser.train_step(*batch)  # the state file now belongs to an older step than this network
    optimiser.predictor.save(str(tmp_path / "r.ckpt"))
    assert not RewardOptimiser(RewardPredictor.load(str(tmp_path / "r.ckpt"))).load_state(str(tmp_path / "opt.pt"))


def test_a_step_taken_a_few_pairs_per_pass_is_the_same_step():
    spec = infer_frame_spec(np.zeros((8, 8, 1), np.uint8))
    rng = np.random.default_rng(1)
    clips = rng.integers(0, 256, (2, 7, 3, 8, 8, 1), dtype=np.uint8)
    labels = np.array([1.0, 0.0, 0.5, 1.0, 0.0, 1.0, 0.5], np.float32)
    torch.manual_seed(0)
    net = build_reward_net(NetConfig(spec, dropout=0.0))
    optimisers = [RewardOptimiser(RewardPredictor(NetConfig(spec, dropout=0.0), copy.deepcopy(net)), pairs_per_pass=k)
                for k in (7, 3)]
    results = [t.train_step(clips[0], clips[1], labels) for t in optimisers]
    assert_same_in_float32(results[0], results[1])  # (loss, accuracy), summed over the pairs in another order
    # The same gradient (Adam's first step is ~lr * sign(gradient): compare what it was given).
    # All of them at once: one backward pass rounds every gradient at the scale of the largest terms it sums,
    # so a tensor whose gradients are all tiny keeps no precision of its own.
    grads = [torch.cat([p.grad.flatten() for p in t.predictor.net.parameters()]) for t in optimisers]
    assert_same_in_float32(grads[1], grads[0])


@pytest.mark.parametrize("frame_shape, n_members, n_pairs, passes", [
    ((4, 84, 84), 1, 3, [2, 1]),  # Pong's frames: 5.6 MB of network input a pair, so 2 pairs a pass
    ((64, 64), 1, 5, [4, 1]),  # MovingDot's: 0.8 MB a pair, so as many as a pass takes, 4
    ((4, 84, 84), 3, 2, [1, 1]),  # an ensemble's members share a pass: a pair of each, its least
])
def test_a_pass_takes_as_many_pairs_as_its_input_bytes_allow(monkeypatch, frame_shape, n_members, n_pairs, passes):
    import drlhp.reward.optimiser as optimiser_module

    spec = infer_frame_spec(np.zeros(frame_shape, np.uint8))
    optimiser = RewardOptimiser(RewardPredictor(NetConfig(spec, n_members=n_members)))
    inputs = []  # (pairs, bytes) of each pass's network input
    real = optimiser_module.clip_returns

    def recording(net, x, n_clips):
        inputs.append((n_clips // 2, x.nbytes))
        return real(net, x, n_clips)

    monkeypatch.setattr(optimiser_module, "clip_returns", recording)
    clips = np.random.default_rng(0).integers(0, 256, (2, n_members, n_pairs, 25, *frame_shape), dtype=np.uint8)
    labels = np.ones((n_members, n_pairs), np.float32)
    optimiser.train_step(clips[0], clips[1], labels)
    optimiser.evaluate([(clips[0, 0], clips[1, 0], labels[0])])
    assert [pairs for pairs, _ in inputs] == passes * 2  # training, then evaluation
    assert all(nbytes <= FORWARD_INPUT_BYTES or pairs == 1 for pairs, nbytes in inputs)


@pytest.mark.parametrize("frame_shape, batches", [((4, 84, 84), [111, 111, 28]), ((64, 64), [200, 50])])
def test_rewarding_many_frames_passes_no_more_input_at_once_than_its_bytes_allow(frame_shape, batches):
    frames = np.random.default_rng(0).integers(0, 256, (250, *frame_shape), dtype=np.uint8)
    predictor = RewardPredictor(NetConfig(infer_frame_spec(frames[0])))
    passes = []
    forward = predictor._forward

    def recording(x: np.ndarray) -> torch.Tensor:
        passes.append(len(x))
        return forward(x)

    predictor._forward = recording  # type: ignore[method-assign]
    rewards = predictor.member_rewards(frames)
    assert passes == batches and max(passes) * 4 * frames[0].size <= FORWARD_INPUT_BYTES
    assert_same_in_float32(rewards, predictor.member_rewards(frames, batch_size=250))  # the same rewards in one pass


def test_an_evaluation_in_batches_and_passes_scores_as_all_its_pairs_at_once():
    rng = np.random.default_rng(4)
    frames_a, frames_b = rng.normal(size=(2, 8, 5, 6)).astype(np.float32)
    labels = np.array([1.0, 0.0, 0.5, 1.0, 1.0, 0.0, 0.5, 0.0], np.float32)
    predictor = RewardPredictor(NetConfig(infer_frame_spec(frames_a[0, 0]), dropout=0.0, n_members=3),
                                normaliser=RewardNormaliser((0.0, 0.1, -0.1), (1.0, 3.0, 0.5)))
    optimiser = RewardOptimiser(predictor, noise_prob=0.1, pairs_per_pass=2)
    batches = [(frames_a[i:i + 3], frames_b[i:i + 3], labels[i:i + 3]) for i in range(0, 8, 3)]  # 3, 3, 2 pairs

    with torch.no_grad():
        predictor.net.eval()
        ra, rb = (predictor.net(member_input(torch.from_numpy(f.reshape(-1, 6)), 3)).view(8, 5, 3).sum(1)
                  for f in (frames_a, frames_b))
    target = torch.from_numpy(labels)
    loss = float(preference_loss(ra, rb, target[:, None].expand_as(ra), 0.1))
    weights = torch.tensor(predictor.normaliser.member_weights, dtype=torch.float32)
    accuracy = preference_accuracy(ra @ weights, rb @ weights, target)[0]
    assert optimiser.evaluate(batches) == pytest.approx((loss, accuracy), rel=1e-5)
