import numpy as np
import pytest
import torch

from drlhp.clips.frames import FrameSpec, frames_to_net_input, infer_frame_spec


@pytest.mark.parametrize("shape, layout, net_shape", [
    ((84, 84), "HW", (1, 84, 84)),
    ((84, 84, 3), "HWC", (3, 84, 84)),
    ((84, 84, 4), "HWC", (4, 84, 84)),
    ((4, 84, 84), "CHW", (4, 84, 84)),
    ((4, 30, 20, 3), "SHWC", (12, 30, 20)),
    ((17,), "vector", (17,)),
])
def test_layouts_are_inferred_and_converted(shape, layout, net_shape):
    frames = np.random.default_rng(0).integers(0, 256, (2, *shape), dtype=np.uint8)
    spec = infer_frame_spec(frames[0])
    assert spec.layout == layout and spec.net_input_shape == net_shape
    x = frames_to_net_input(frames, spec)
    assert tuple(x.shape) == (2, *net_shape) and x.dtype == torch.float32
    assert float(x.max()) <= 1.0 and float(x.min()) >= 0.0


def test_channels_are_not_mixed_up():
    frame = np.zeros((5, 6, 3), np.uint8)
    frame[..., 1] = 255  # only the green channel is on
    x = frames_to_net_input(frame[None], infer_frame_spec(frame))
    assert torch.equal(x[0, 1], torch.ones(5, 6)) and float(x[0, 0].sum()) == 0 == float(x[0, 2].sum())


def test_stacked_rgb_frames_keep_each_frame_and_channel():
    stack = np.zeros((2, 4, 4, 3), np.uint8)
    stack[1, ..., 2] = 255  # newest frame, blue channel
    x = frames_to_net_input(stack[None], infer_frame_spec(stack))
    assert [float(x[0, c].sum()) for c in range(6)] == [0, 0, 0, 0, 0, 16]


def test_float_frames_are_not_rescaled():
    frame = np.full((8, 8), 0.25, np.float32)
    assert float(frames_to_net_input(frame[None], infer_frame_spec(frame)).max()) == 0.25


@pytest.mark.parametrize("bad", [{"a": 1}, np.zeros((2, 2, 2, 2, 2)), np.array(["x"]), np.zeros((0, 3))])
def test_bad_observations_get_an_actionable_error(bad):
    with pytest.raises(ValueError, match="obs_transform_func"):
        infer_frame_spec(bad)


def test_spec_round_trips_through_a_dict():
    spec = infer_frame_spec(np.zeros((4, 84, 84), np.uint8))
    assert FrameSpec.from_dict(spec.to_dict()) == spec
