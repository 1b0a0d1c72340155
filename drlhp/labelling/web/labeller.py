"""People label in their browsers: a web page served from the preference-interface process.

Unlike the terminal labeller, which asks one pair and waits, this one works many
pairs at once: the interface offers pairs into a ``PairPool`` while labellers
ask for them, and records each answer (journal first) as it comes; the browser's
request for the next pair returns once its answer is on disk. See
``drlhp.labelling.web.server`` for the routes and their checks, and docs/labelling.md
("In a browser") for reaching the page from a laptop (ssh -L).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from drlhp.clips.frames import FrameSpec
from drlhp.clips.segments import Segment
from drlhp.labelling.display import auto_zoom, frame_hw
from drlhp.labelling.schedule import labels_remaining
from drlhp.labelling.web.clips import ClipImages
from drlhp.labelling.web.pool import Answer, PairPool
from drlhp.labelling.web.server import LabellingServer, PageSettings, ServerThread
from drlhp.storage.run_dir import log_human_label


@dataclass(frozen=True)
class WebConfig:
    """Where the page is served and how it shows clips (each from the run's ``drlhp.PreferenceConfig``)."""

    frame_spec: FrameSpec
    token: str  # the run's secret: every request needs it
    host: str
    port: int  # 0: any free port
    zoom: int | None  # None: about 336 px per clip
    fps: float
    pair_timeout: float  # seconds before a pair handed out and not answered goes to someone else
    budget: int | None  # the run's label budget, to show what is left of it (None: no budget)
    log_path: str | None  # CSV of answers: who, how long


class WebLabeller:
    """The labeller behind the page; ``url`` is its address, token included."""

    pairs_per_segment: float | None = None  # ask as fast as people answer (and the label schedule allows)

    def __init__(self, config: WebConfig) -> None:
        self.config = config
        self.pool = PairPool(config.pair_timeout)
        self.clips = ClipImages(config.frame_spec)
        self._total, self._asked = 0, 0
        h, w = frame_hw(config.frame_spec)
        settings = PageSettings(h, w, config.zoom or auto_zoom(config.frame_spec), config.fps)
        server = LabellingServer(self.pool, self.clips, settings, config.token, self._progress)
        self._server = ServerThread(server.app, config.host, config.port)
        host = f"[{config.host}]" if ":" in config.host else config.host
        self.url = f"http://{host}:{self._server.port}/?token={config.token}"

    def _progress(self) -> dict:
        return {"total": self._total, "remaining": labels_remaining(self.config.budget, self._asked)}

    def set_progress(self, run_labels: int, asked: int) -> None:
        """The run's labels so far (resumed ones too) and pairs asked: what the page shows."""
        self._total, self._asked = run_labels, asked

    def label(self, a: Segment, b: Segment) -> float | None:
        raise TypeError("the web labeller takes pairs with offer() and gives answers with take_answers()")

    def offer(self, a: Segment, b: Segment) -> None:
        self.pool.offer(a, b)

    def wants_pairs(self) -> bool:
        return self.pool.wants_pairs()

    def take_answers(self) -> list[Answer]:
        return self.pool.take_answers()

    def acknowledge(self, answer: Answer) -> None:
        """The answer is recorded (journaled, or a skip): log it and let its browser go on."""
        if self.config.log_path and answer.label is not None:
            log_human_label(self.config.log_path, pair=answer.pair_id, clip_left=answer.a.seg_id,
                            clip_right=answer.b.seg_id, label=answer.label, labeller=answer.labeller,
                            seconds_to_answer="" if answer.seconds is None else f"{answer.seconds:.3f}")
        answer.done.set_result(True)

    def show_episode(self, frames: list[np.ndarray]) -> None:
        self.clips.set_episode(frames)

    def close(self) -> None:
        self.pool.fail_waiting("drlhp is stopping")
        self._server.stop()

