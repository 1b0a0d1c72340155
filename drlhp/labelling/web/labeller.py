"""People label in their browsers: a web page served from the preference-interface process.

Unlike the terminal labeller, which asks one pair and waits, this one works many
pairs at once: the interface offers pairs into a ``PairPool`` while labellers
ask for them, and records each answer (journal first) as it comes; the browser's
request for the next pair returns once its answer is on disk. A second page, for the
run's owner (its own token), shows who labels, their pace and how often labellers agree. See
``drlhp.labelling.web.server`` for the routes and their checks, and docs/labelling.md
("In a browser") for reaching the page from a laptop (ssh -L).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from drlhp.clips.clip import Clip
from drlhp.clips.frames import FrameSpec
from drlhp.labelling.answers import Event, TakeBack
from drlhp.labelling.display import auto_zoom, frame_hw
from drlhp.labelling.schedule import labels_remaining
from drlhp.labelling.web.clips import ClipImages
from drlhp.labelling.web.pool import PairPool
from drlhp.labelling.web.server import LabellingServer, PageSettings, ServerThread
from drlhp.storage.run_dir import log_human_label


@dataclass(frozen=True)
class WebConfig:
    """Where the page is served and how it shows clips (each from the run's ``drlhp.PreferenceConfig``)."""

    frame_spec: FrameSpec
    token: str  # the run's secret: every request needs it
    owner_token: str  # the owner page's secret (the labellers' token does not open it)
    host: str
    port: int  # 0: any free port
    zoom: int | None  # None: about 336 px per clip
    fps: float
    pair_timeout: float  # seconds before a pair handed out and not answered goes to someone else
    label_budget: int | None  # the run's label budget, to show what is left of it (None: no budget)
    log_path: str | None  # CSV of answers: who, how long
    instructions: str | None  # the task in words, shown above the clips
    undo_limit: int  # answers each labeller may take back, newest first
    second_opinion_share: float  # share of answered pairs also asked to a second labeller
    seed: int | None


class WebLabeller:
    """The labeller behind the page; ``url`` is its address, token included."""

    pairs_per_segment: float | None = None  # ask as fast as people answer (and the label schedule allows)

    def __init__(self, config: WebConfig) -> None:
        self.config = config
        self.pool = PairPool(config.pair_timeout, undo_limit=config.undo_limit,
                             second_opinion_share=config.second_opinion_share, seed=config.seed)
        self.clips = ClipImages(config.frame_spec)
        self._total, self._asked = 0, 0
        self._agreement: list = []  # Agreement.rows(): (labeller, labeller, pairs answered by both, same, share)
        h, w = frame_hw(config.frame_spec)
        settings = PageSettings(h, w, config.zoom or auto_zoom(config.frame_spec), config.fps, config.instructions,
                                config.undo_limit)
        server = LabellingServer(self.pool, self.clips, settings, config.token, self._progress, config.owner_token)
        self._server = ServerThread(server.app, config.host, config.port)
        host = f"[{config.host}]" if ":" in config.host else config.host
        self.url = f"http://{host}:{self._server.port}/?token={config.token}"
        self.owner_url = f"http://{host}:{self._server.port}/owner?token={config.owner_token}"

    def _progress(self) -> dict:
        return {"total": self._total, "remaining": labels_remaining(self.config.label_budget, self._asked),
                "agreement": self._agreement}

    def set_progress(self, run_labels: int, asked: int, agreement: list | None = None) -> None:
        """The run's labels so far (resumed ones too), pairs asked, and agreement rows (``Agreement.rows()``):
        what the pages show."""
        self._total, self._asked = run_labels, asked
        if agreement is not None:
            self._agreement = agreement

    def label(self, a: Clip, b: Clip) -> float | None:
        raise TypeError("the web labeller takes pairs with offer() and gives answers with take_answers()")

    def offer(self, a: Clip, b: Clip) -> None:
        self.pool.offer(a, b)

    def wants_pairs(self) -> bool:
        return self.pool.wants_pairs()

    def take_answers(self) -> list[Event]:
        return self.pool.take_answers()

    def acknowledge(self, event: Event) -> None:
        """The answer (or take-back) is recorded (journaled, or a skip): log it and let its browser go on."""
        answer = event.answer if isinstance(event, TakeBack) else event
        if self.config.log_path and answer.label is not None:
            log_human_label(self.config.log_path, pair=answer.pair_id, clip_left=answer.a.clip_id,
                            clip_right=answer.b.clip_id, label="undo" if isinstance(event, TakeBack) else answer.label,
                            labeller=answer.labeller,
                            seconds_to_answer="" if answer.seconds is None else f"{answer.seconds:.3f}")
        if not isinstance(event, TakeBack):
            self.pool.recorded(event)
        event.done.set_result(True)

    def show_episode(self, frames: list[np.ndarray]) -> None:
        self.clips.set_episode(frames)

    def close(self) -> None:
        self.pool.fail_waiting("drlhp is stopping")
        self._server.stop()

