"""Clips as PNG sprite sheets for the labelling page: each encoded once, then served from a cache.

A sheet lays a clip's frames out row by row in a near-square grid (the page cuts
frame ``i`` out at column ``i % cols``, row ``i // cols``), so a 25-frame 84×84 clip
is one 5×5 image of ~420×420 pixels: one request, lossless, and decoded once by the
browser. Encoding uses Pillow at zlib level 1 (the fastest: the page waits for it) in the
server's thread pool.
"""
from __future__ import annotations

import io
import math
import threading
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np

from drlhp.clips.frames import FrameSpec
from drlhp.labelling.display import displayable

#: Encoded clips kept: more than the pairs out with a few dozen labellers at once.
CACHE_SIZE = 256


def sheet_cols(n_frames: int) -> int:
    return max(1, math.ceil(math.sqrt(n_frames)))


def sprite_png(frames: Sequence[np.ndarray] | np.ndarray, spec: FrameSpec) -> bytes:
    """The frames (as a person is shown them) in a grid of ``sheet_cols(len(frames))`` columns, as a PNG."""
    from PIL import Image

    images = [displayable(f, spec) for f in frames]
    if all(_is_gray(img) for img in images):  # a third of the pixels to encode and send
        images = [img[..., 0] for img in images]
    h, w = images[0].shape[:2]
    cols = sheet_cols(len(images))
    rows = math.ceil(len(images) / cols)
    sheet = np.zeros((rows * h, cols * w) + images[0].shape[2:], np.uint8)
    for i, img in enumerate(images):
        r, c = divmod(i, cols)
        sheet[r * h:(r + 1) * h, c * w:(c + 1) * w] = img
    buf = io.BytesIO()
    Image.fromarray(sheet).save(buf, format="PNG", compress_level=1)
    return buf.getvalue()


def _is_gray(img: np.ndarray) -> bool:
    return bool((img[..., 0] == img[..., 1]).all() and (img[..., 1] == img[..., 2]).all())


class ClipImages:
    """Sprite sheets of clips by id (cached) and of the last full episode."""

    def __init__(self, spec: FrameSpec) -> None:
        self.spec = spec
        self._lock = threading.Lock()
        self._cache: OrderedDict[int, bytes] = OrderedDict()
        self._episode: tuple[int, list[np.ndarray]] = (0, [])
        self._episode_png: tuple[int, bytes] | None = None

    def clip_png(self, clip_id: int, frames: Sequence[np.ndarray] | np.ndarray) -> bytes:
        with self._lock:
            png = self._cache.get(clip_id)
            if png is not None:
                self._cache.move_to_end(clip_id)
                return png
        png = sprite_png(frames, self.spec)
        with self._lock:
            self._cache[clip_id] = png
            while len(self._cache) > CACHE_SIZE:
                self._cache.popitem(last=False)
        return png

    def set_episode(self, frames: list[np.ndarray]) -> None:
        """The agent's last full episode (called for each one; encoded only when asked for)."""
        with self._lock:
            self._episode = (self._episode[0] + 1, frames)

    def episode(self) -> tuple[int, int]:
        """The last episode's id (0: none yet) and its number of frames."""
        with self._lock:
            return self._episode[0], len(self._episode[1])

    def episode_png(self, episode_id: int) -> bytes | None:
        """That episode's sheet, or None if a newer one replaced it."""
        with self._lock:
            current, frames = self._episode
            cached = self._episode_png
        if episode_id != current or not frames:
            return None
        if cached is not None and cached[0] == episode_id:
            return cached[1]
        png = sprite_png(frames, self.spec)
        with self._lock:
            self._episode_png = (episode_id, png)
        return png
