"""A person labels pairs: the clips loop in a window while the terminal asks L / R / E.

Runs in the preference-interface process. The wait for an answer is a loop at
``fps``: draw the next frame of both clips (and of the last full episode in a
second window), let OpenCV handle window events for the rest of the frame's
time (a key pressed in the window answers too), then read whatever was typed
in the terminal. Playback never stops while the question waits.
"""
from __future__ import annotations

import os
import statistics
import time
from collections import deque
from dataclasses import dataclass
from typing import Callable

import numpy as np

from drlhp.clips.clip import Clip
from drlhp.clips.frames import FrameSpec
from drlhp.errors import InvalidAnswer, MissingExtraError, NoDisplayError
from drlhp.labelling.display import (
    BORDER_PX,
    auto_zoom,
    compose_pair,
    display_problem,
    displayable,
    frame_hw,
    require_images,
    zoomed,
)
from drlhp.labelling.protocols import UNDO, Undo
from drlhp.labelling.terminal import HELP, TerminalPrompt, parse_answer, terminal_problem
from drlhp.labelling.x11_remap import remap_own_window
from drlhp.storage.run_dir import log_human_label

PAIR_WINDOW = "drlhp: which clip is better?"
TERMINAL_LABELLER = "terminal"  # human_labels.csv's labeller column for answers typed in the terminal
EPISODE_WINDOW = "drlhp: last full episode"
QUESTION = "[L]eft better, [R]ight better, [E]qual, [U]ndo last, Enter = can't compare: "
#: Frames drawn while a new window is looked for on screen to be mapped again (``_show``).
REMAP_TRIES = 40
#: Answers the pace shown is the median of.
PACE_WINDOW = 20


@dataclass(frozen=True)
class HumanConfig:
    """How pairs are shown to a person and where the answers are typed (each from the run's
    ``drlhp.PreferenceConfig``)."""

    frame_spec: FrameSpec
    zoom: int | None  # None: about 336 px per clip
    fps: float
    terminal: str  # the terminal's device, e.g. /dev/tty
    log_path: str | None  # CSV of answers and display timings
    instructions: str | None  # the task in words, printed above every question
    undo_limit: int  # answers the person may take back, newest first


def check_can_ask(frame_spec: FrameSpec, terminal: str) -> None:
    """Raise a clear error unless a person can be shown clips of ``frame_spec`` here and answer in ``terminal``."""
    require_images(frame_spec, "Labelling in a window")
    problem = display_problem()
    if problem:
        raise NoDisplayError(
            f"Human preferences show clips in a window, but {problem}. Run on a desktop, with ssh -X, "
            "or under a virtual display (Xvfb :99 & export DISPLAY=:99) and view it with a VNC client; "
            "or collect with synthetic_preferences=True.")
    problem = terminal_problem(terminal)
    if problem:
        raise NoDisplayError(
            f"Human preferences are typed in a terminal, but {problem}. Start the program from a terminal "
            "(a shell or tmux; stdin may be redirected), or pass human_terminal='/dev/pts/N' naming the "
            "terminal to ask in (`tty` prints a terminal's name).")
    import_cv2_gui()


def import_cv2_gui():
    """``cv2`` with a GUI, or an ImportError saying what to install."""
    try:
        import cv2
    except ImportError as e:
        raise MissingExtraError('Human labelling shows clips with OpenCV: pip install "drlhp[gui]" '
                          "(opencv-python; not opencv-python-headless)") from e
    gui = [line for line in cv2.getBuildInformation().splitlines() if line.strip().startswith("GUI:")]
    if gui and gui[0].split(":", 1)[1].strip().upper() == "NONE":
        raise MissingExtraError("The installed OpenCV has no GUI (opencv-python-headless?). pip uninstall "
                          'opencv-python-headless, then pip install "drlhp[gui]"')
    return cv2


class HumanLabeller:
    """Asks a person about each pair; ``None`` (incomparable) when they just press Enter."""

    pairs_per_segment: float | None = None  # ask as fast as the person answers

    def __init__(self, config: HumanConfig, stop_event, idle: Callable[[], None] = lambda: None) -> None:
        self.cv2 = import_cv2_gui()
        fonts = "/usr/share/fonts/truetype/dejavu"
        if os.path.isdir(fonts):  # OpenCV's Qt ships no fonts and complains without them
            os.environ.setdefault("QT_QPA_FONTDIR", fonts)
        self.config, self.stop_event, self.idle = config, stop_event, idle
        self.zoom = config.zoom or auto_zoom(config.frame_spec)
        self.prompt = TerminalPrompt(config.terminal)
        self.episode: list[np.ndarray] = []
        self._episode_i = 0
        self.n_asked = 0
        self.n_labels = 0  # labels given in this session, not counting those taken back
        self._undoable: deque[tuple[int, int, int]] = deque(maxlen=config.undo_limit or 1)  # (pair, clips) to take back
        self._seconds: deque[float] = deque(maxlen=PACE_WINDOW)
        self._last_answer: float | None = None
        self.last_seconds: float | None = None  # how long the last answer took
        # Where each window goes: the episode beside the pair, not on top of it (without a window manager
        # both open at 0, 0). Opened at their first picture (``_show``).
        h, w = frame_hw(config.frame_spec)
        self._window_x = {PAIR_WINDOW: 0, EPISODE_WINDOW: 2 * w * self.zoom + BORDER_PX + 20}
        self._opened: set[str] = set()
        self._to_remap: dict[str, int] = {}  # window -> frames left to try (see ``_show``)

    def show_episode(self, frames: list[np.ndarray]) -> None:
        """Loop these frames (the agent's last full episode) in the smaller window.

        Called for every finished episode, often many times between two frames
        drawn: only the list is kept; each frame is converted when it is drawn.
        """
        self.episode = frames
        self._episode_i = 0

    def _heading(self) -> str:
        """What is printed above each question: the task, and the labels so far with their pace."""
        task = f"\nTask: {self.config.instructions}" if self.config.instructions else ""
        pace = f", {statistics.median(self._seconds):.1f} s each" if self._seconds else ""
        return f"{task}\n[{self.n_labels} labels{pace}]\n"

    def label(self, a: Clip, b: Clip) -> float | Undo | None:
        cv2, spec = self.cv2, self.config.frame_spec
        self.n_asked += 1
        left = [displayable(f, spec) for f in a.shown]
        right = [displayable(f, spec) for f in b.shown]
        self.prompt.drain()
        self.prompt.say(f"{self._heading()}Pair {self.n_asked}: clip {a.clip_id} (L) vs clip {b.clip_id} (R). "
                        f"{QUESTION}")
        tick = 1.0 / self.config.fps
        shown_at = next_frame = time.monotonic()
        since_last = shown_at - self._last_answer if self._last_answer is not None else float("nan")
        n_frames = 0
        while not self.stop_event.is_set():
            i = n_frames % len(left)
            pair = compose_pair(left[i], right[i], self.zoom, (i + 1) / len(left), f"pair {self.n_asked}")
            self._show(PAIR_WINDOW, pair)
            if self.episode:
                frame = displayable(self.episode[self._episode_i % len(self.episode)], spec)
                self._show(EPISODE_WINDOW, zoomed(frame, max(1, self.zoom // 2))[..., ::-1])
                self._episode_i += 1
            n_frames += 1
            last_drawn = time.monotonic()
            # Keep to the schedule (waitKey often wakes a millisecond late), but after a
            # real stall (more than a frame behind) restart it rather than race to catch up.
            next_frame = max(next_frame + tick, time.monotonic() - tick)
            typed = []
            key = cv2.waitKey(max(1, int((next_frame - time.monotonic()) * 1000)))
            if key != -1 and chr(key & 0xFF).lower() in "lreu":
                typed.append(chr(key & 0xFF))
                self.prompt.say(f"{typed[0].upper()} (pressed in the window)\n")
            typed += self.prompt.lines(timeout=0)
            for text in typed:
                try:
                    label = parse_answer(text)
                except InvalidAnswer:
                    self.prompt.say(f"{HELP}\nPair {self.n_asked}: {QUESTION}")
                    continue
                if label is UNDO:
                    if not (self._undoable and self.config.undo_limit):
                        self.prompt.say(f"Nothing to take back (your last {self.config.undo_limit} answers of this "
                                        f"session can be).\nPair {self.n_asked}: {QUESTION}")
                        continue
                    self._take_back()
                    return UNDO
                now = time.monotonic()
                self._last_answer = now
                fps = (n_frames - 1) / (last_drawn - shown_at) if n_frames > 1 else float("nan")
                self._count(a, b, label, now - shown_at)
                self._record(a, b, label, now - shown_at, fps, since_last)
                return label
            self.idle()
        return None

    def _show(self, window: str, picture: np.ndarray) -> None:
        """Draw ``picture`` in ``window``, opening the window at its first picture.

        A window is moved only once it shows a picture: on X without a window manager, Qt sometimes
        never paints a window moved before its first picture (a black window; 3 in 35 tries on Xvfb).
        """
        cv2 = self.cv2
        if window in self._opened:
            cv2.imshow(window, picture)
            if self._to_remap.get(window):
                # Once it is on screen, map it again from outside Qt: on a busy machine Qt sometimes
                # never paints a window it has just shown (``x11_remap``).
                remapped = remap_own_window(window)
                self._to_remap[window] = 0 if remapped else self._to_remap[window] - 1
            return
        # GUI_NORMAL: no Qt toolbar or status bar, just the picture.
        cv2.namedWindow(window, cv2.WINDOW_AUTOSIZE | cv2.WINDOW_GUI_NORMAL)
        cv2.imshow(window, picture)
        cv2.waitKey(1)
        cv2.moveWindow(window, self._window_x[window], 0)
        self._opened.add(window)
        self._to_remap[window] = REMAP_TRIES

    def _count(self, a: Clip, b: Clip, label: float | None, seconds: float) -> None:
        """A label given: shown in the count and pace, and the person may take it back."""
        if label is not None:
            self.n_labels += 1
            self._undoable.append((self.n_asked, a.clip_id, b.clip_id))
            self._seconds.append(seconds)

    def _record(self, a: Clip, b: Clip, label, seconds, fps, since_last) -> None:
        self.last_seconds = seconds  # the preference interface records it with the label
        if self.config.log_path:
            log_human_label(self.config.log_path, pair=self.n_asked, clip_left=a.clip_id, clip_right=b.clip_id,
                            label="" if label is None else label, labeller=TERMINAL_LABELLER,
                            seconds_to_answer=f"{seconds:.3f}", display_fps=f"{fps:.1f}",
                            seconds_from_last_answer_to_this_pair=f"{since_last:.3f}")

    def _take_back(self) -> None:
        """The person takes back their last answer (the interface retracts it and asks that pair again)."""
        pair, clip_left, clip_right = self._undoable.pop()
        self.n_labels -= 1
        self.prompt.say(f"Took back your answer to pair {pair}: it comes again.\n")
        if self.config.log_path:
            log_human_label(self.config.log_path, pair=pair, clip_left=clip_left, clip_right=clip_right,
                            label="undo", labeller=TERMINAL_LABELLER)

    def close(self) -> None:
        self.prompt.close()
        try:
            self.cv2.destroyAllWindows()
            self.cv2.waitKey(1)
        except Exception:
            pass
