
import numpy as np
import pytest

from drlhp.clips.frames import infer_frame_spec
from drlhp.labelling.display import auto_zoom, compose_pair, display_problem, displayable, zoomed


def show(frame):
    return displayable(frame, infer_frame_spec(frame))


def test_grayscale_becomes_gray_rgb():
    img = show(np.full((5, 7), 90, np.uint8))
    assert img.shape == (5, 7, 3) and img.dtype == np.uint8 and np.all(img == 90)
    assert np.all(show(np.full((5, 7, 1), 90, np.uint8)) == 90)


def test_rgb_is_kept_in_both_layouts():
    hwc = np.zeros((4, 6, 3), np.uint8)
    hwc[..., 0] = 200  # red
    assert np.array_equal(show(hwc), hwc)
    chw = np.zeros((3, 4, 6), np.uint8)  # channels first
    chw[0] = 200
    assert np.array_equal(show(chw), hwc)


@pytest.mark.parametrize("layout", ["CHW", "HWC", "SHWC"])
def test_frame_stacks_show_their_newest_frame(layout):
    stack = np.stack([np.full((10, 12), v, np.uint8) for v in (10, 20, 30, 40)])  # oldest first
    frame = {"CHW": stack, "HWC": np.moveaxis(stack, 0, -1), "SHWC": stack[..., None]}[layout]
    assert infer_frame_spec(frame).layout == layout
    img = show(frame)
    assert img.shape == (10, 12, 3) and np.all(img == 40)


def test_float_frames_are_scaled_to_bytes():
    assert np.all(show(np.full((3, 3), 0.5, np.float32)) == 127)
    assert np.all(show(np.full((3, 3), 7.0, np.float32)) == 255)  # clipped, not wrapped


def test_vectors_cannot_be_shown():
    with pytest.raises(ValueError, match="obs_transform_func"):
        show(np.zeros(8, np.float32))


def test_zoom_is_whole_and_square():
    img = np.arange(6, dtype=np.uint8).reshape(2, 3, 1).repeat(3, axis=2)
    z = zoomed(img, 3)
    assert z.shape == (6, 9, 3) and np.all(z[:3, :3] == 0) and np.all(z[3:, 6:] == 5)
    assert auto_zoom(infer_frame_spec(np.zeros((84, 84, 4), np.uint8))) == 4
    assert auto_zoom(infer_frame_spec(np.zeros((7, 5), np.uint8))) == 48  # small frames become watchable
    assert auto_zoom(infer_frame_spec(np.zeros((500, 300, 3), np.uint8))) == 1


def test_pair_is_drawn_side_by_side_with_a_border():
    pytest.importorskip("cv2")
    left, right = np.full((4, 5, 3), 50, np.uint8), np.full((4, 5, 3), 150, np.uint8)
    canvas = compose_pair(left, right, zoom=2, progress=0.5, title="pair 1")
    body = canvas[28:36]  # below the caption bar, above the progress bar
    assert body.shape[1] == 2 * 10 + 8
    assert np.all(body[:, :10] == 50) and np.all(body[:, 18:] == 150)
    assert np.all(body[:, 10:18] == (0, 200, 255))  # the border (BGR)
    assert np.all(canvas[-6:, :10] == (80, 220, 80)) and np.all(canvas[-6:, 18:] == 40)  # half the progress bar


def test_no_display_is_reported(monkeypatch):
    monkeypatch.delenv("DISPLAY", raising=False)
    assert "DISPLAY is not set" in display_problem()
    monkeypatch.setenv("DISPLAY", ":4321")  # nothing listens there
    assert "cannot be reached" in display_problem()
