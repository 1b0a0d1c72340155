"""People label in their browsers: a web page served from the preference-interface process.

Unlike the terminal labeller, which asks one pair and waits, this one works many
pairs at once: the interface offers pairs into a ``PairPool`` while labellers
ask for them, and records each answer (journal first) as it comes; the browser's
request for the next pair returns once its answer is on disk. See
``drlhp.labelling.web.server`` for the routes and their checks, and docs/labelling.md
("In a browser") for reaching the page from a laptop (ssh -L).
"""
from __future__ import annotations

import secrets
from dataclasses import dataclass

import numpy as np

from drlhp.clips.frames import FrameSpec
from drlhp.clips.segments import Segment
from drlhp.config import PreferenceConfig, worker_settings
from drlhp.labelling.display import auto_zoom, frame_hw
from drlhp.labelling.web.clips import ClipImages
from drlhp.labelling.web.pool import Answer, PairPool
from drlhp.labelling.web.server import LabellingServer, PageSettings, ServerThread
from drlhp.storage.layout import LogDir
from drlhp.storage.run_dir import log_human_label


@dataclass(frozen=True)
class WebConfig:
    """Where the page is served and how it shows clips."""

    frame_spec: FrameSpec
    token: str
    host: str = "127.0.0.1"
    port: int = 8765  # 0: any free port
    zoom: int | None = None  # None: about 336 px per clip
    fps: float = 20.0
    pair_timeout: float = 120.0  # seconds before a pair handed out and not answered goes to someone else
    budget: int | None = None  # the run's label budget, to show what is left of it
    log_path: str | None = None  # CSV of answers: who, how long

    @classmethod
    def from_preference_config(cls, config: PreferenceConfig, frame_spec: FrameSpec) -> WebConfig:
        """Where and how the page of a run with ``config`` shows clips, with a new random token for this run."""
        return worker_settings(cls, config, _WEB_SETTINGS, frame_spec=frame_spec, token=secrets.token_urlsafe(24),
                               log_path=LogDir(config.log_dir).human_labels)


#: ``WebConfig``'s fields named otherwise in ``PreferenceConfig``.
_WEB_SETTINGS = {"host": "web_host", "port": "web_port", "zoom": "display_zoom", "fps": "display_fps",
                 "pair_timeout": "web_pair_timeout", "budget": "label_budget"}


class WebLabeller:
    """The labeller behind the page; ``url`` is its address, token included."""

    pairs_per_segment: float | None = None  # ask as fast as people answer (and the label schedule allows)
    concurrent = True  # offers pairs and takes answers instead of ``label(a, b)``

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
        budget = self.config.budget
        return {"total": self._total, "remaining": None if budget is None else max(0, budget - self._asked)}

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

