"""Turning stored frames into pictures a person can watch, and checking that a screen exists.

Pure NumPy except for ``cv2.resize``/``cv2.putText``; opening windows is the
human labeller's job (``drlhp.labelling.human``).
"""
from __future__ import annotations

import os
import socket
import sys

import numpy as np

from drlhp.clips.frames import FrameSpec
from drlhp.errors import ObservationError

BORDER_PX = 8
CAPTION_PX = 28
PROGRESS_PX = 6
#: The square an env's render is fitted into before a person is shown it. Why this small: the interface keeps
#: ``max_segs`` clips of renders (200 x 25 x 160 x 160 x 3 bytes = 384 MB), and a body's motion reads well at
#: 160 px shown twice as large.
DISPLAY_PX = 160
DISPLAY_SPEC = FrameSpec((DISPLAY_PX, DISPLAY_PX, 3), "uint8", "HWC")


def require_images(spec: FrameSpec, who: str) -> None:
    """Raise ``ObservationError`` unless frames of ``spec`` are images a person can be shown (``who`` shows them)."""
    if not spec.is_image:
        raise ObservationError(f"{who} needs images to show: these observations are flat vectors. Wrap the env with "
                               "HumanPreferencesEnvWrapper made with render_mode=\"rgb_array\" (a person is then shown"
                               " its renders), or pass obs_transform_func= returning an image (HxW, HxWxC, CxHxW or "
                               "SxHxWxC)")


def fitted_render(image: object) -> np.ndarray:
    """An env's RGB render (H, W, 3) as ``DISPLAY_SPEC``: shrunk by the smallest whole factor that fits (each
    block of pixels averaged), centred on black."""
    if not isinstance(image, np.ndarray) or image.ndim != 3 or image.shape[2] != 3 or image.dtype != np.uint8:
        got = (f"an array of shape {image.shape} and dtype {image.dtype}" if isinstance(image, np.ndarray)
               else type(image).__name__)
        raise ObservationError(f"env.render() returned {got}, not an RGB image (H, W, 3) of uint8: a person is "
                               "shown the env's renders (display_frames), so make the env with "
                               "render_mode=\"rgb_array\", or pass display_frames=\"observations\"")
    rgb: np.ndarray = image
    h, w = rgb.shape[:2]
    k = -(-max(h, w) // DISPLAY_PX)  # ceil
    if k > 1:
        h, w = h // k, w // k
        rgb = rgb[:h * k, :w * k].reshape(h, k, w, k, 3).mean(axis=(1, 3)).astype(np.uint8)
    out = np.zeros(DISPLAY_SPEC.shape, np.uint8)
    top, left = (DISPLAY_PX - h) // 2, (DISPLAY_PX - w) // 2
    out[top:top + h, left:left + w] = rgb
    return out


def displayable(frame: np.ndarray, spec: FrameSpec) -> np.ndarray:
    """One frame as an RGB uint8 image (H, W, 3).

    Frame stacks show their newest frame: the last channel of HWC / first-axis
    stacks whose channel count is not 1 or 3 (Atari-style 4 grayscale frames), the
    last entry of an SxHxWxC stack. Floats are taken to be in [0, 1].
    """
    if spec.layout == "vector":
        raise ObservationError("flat-vector observations cannot be shown to a person; show the env's renders "
                               "(display_frames=\"render\") or pass obs_transform_func= returning an image")
    img = frame
    if spec.layout == "SHWC":
        img = img[-1]
    elif spec.layout == "CHW":
        img = img[0] if img.shape[0] == 1 else np.moveaxis(img, 0, -1) if img.shape[0] == 3 else img[-1]
    if img.ndim == 3:
        img = img[..., 0] if img.shape[2] == 1 else img if img.shape[2] == 3 else img[..., -1]
    if not np.issubdtype(img.dtype, np.uint8):
        scale = 255.0 if np.issubdtype(img.dtype, np.floating) else 1.0
        img = np.clip(img.astype(np.float64) * scale, 0, 255).astype(np.uint8)
    if img.ndim == 2:
        img = np.repeat(img[..., None], 3, axis=2)
    return np.ascontiguousarray(img)


def auto_zoom(spec: FrameSpec, target_px: int = 336) -> int:
    """A whole-number zoom that shows a frame about ``target_px`` tall (84x84 -> 4x)."""
    h, w = frame_hw(spec)
    return max(1, round(target_px / max(h, w)))


def frame_hw(spec: FrameSpec) -> tuple[int, int]:
    """Height and width of an image frame."""
    s = spec.shape
    return (s[0], s[1]) if spec.layout in ("HW", "HWC") else (s[1], s[2])


def zoomed(img: np.ndarray, zoom: int) -> np.ndarray:
    """Scale by a whole number in both directions (nearest neighbour: pixels stay square and sharp)."""
    return np.repeat(np.repeat(img, zoom, axis=0), zoom, axis=1) if zoom > 1 else img


def compose_pair(left: np.ndarray, right: np.ndarray, zoom: int, progress: float, title: str) -> np.ndarray:
    """Two RGB frames side by side: a title bar, "L"/"R" captions, a border, a clip-progress bar (BGR for OpenCV)."""
    import cv2

    a, b = zoomed(left, zoom), zoomed(right, zoom)
    h, w = a.shape[:2]
    canvas = np.full((CAPTION_PX + h + PROGRESS_PX, 2 * w + BORDER_PX, 3), 40, np.uint8)
    canvas[CAPTION_PX:CAPTION_PX + h, :w] = a[..., ::-1]
    canvas[CAPTION_PX:CAPTION_PX + h, w + BORDER_PX:] = b[..., ::-1]
    canvas[:, w:w + BORDER_PX] = (0, 200, 255)  # the border between the clips, in orange
    for text, x in (("L", 6), ("R", w + BORDER_PX + 6)):
        cv2.putText(canvas, text, (x, CAPTION_PX - 7), cv2.FONT_HERSHEY_SIMPLEX, 0.7, (255, 255, 255), 2)
    cv2.putText(canvas, title, (w - 60, CAPTION_PX - 9), cv2.FONT_HERSHEY_SIMPLEX, 0.45, (200, 200, 200), 1)
    canvas[-PROGRESS_PX:, : int(round(progress * canvas.shape[1]))] = (80, 220, 80)
    return canvas


def display_problem() -> str | None:
    """Why no window can be opened here, or None if one can.

    OpenCV's Qt backend aborts the whole process (uncatchably) when it cannot
    reach a display, so this is checked before any window is opened.
    """
    if sys.platform != "linux":
        return None
    display = os.environ.get("DISPLAY", "")
    if not display:
        return "no display is available (DISPLAY is not set)"
    host, _, rest = display.rpartition(":")
    number = rest.split(".")[0]
    try:
        if host in ("", "unix"):
            with socket.socket(socket.AF_UNIX) as s:
                s.settimeout(2)
                s.connect(f"/tmp/.X11-unix/X{number}")
        else:
            socket.create_connection((host, 6000 + int(number)), timeout=2).close()
    except (OSError, ValueError) as e:
        return f"the display DISPLAY={display} cannot be reached ({e})"
    return None
