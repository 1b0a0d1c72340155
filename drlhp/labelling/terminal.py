"""Asking a person in a terminal, without blocking the video that plays meanwhile.

The preference interface runs in a child process whose stdin multiprocessing
has replaced with /dev/null (the bug that made the original drlhp record every
answer as "incomparable"). So it opens the terminal itself: the controlling
terminal ``/dev/tty`` by default (works from a shell, inside tmux, and with the
main program's stdin redirected), or a terminal named explicitly.
"""
from __future__ import annotations

import os
import select

from drlhp.errors import InvalidAnswer  # noqa: F401  (importable from here, as before)
from drlhp.labelling.answers import LABELS, TYPED, Choice, parse_typed
from drlhp.labelling.protocols import UNDO, Undo

#: What a person types, and the label it means (P(left clip is better)): from the one map in answers.py.
ANSWERS = {word: LABELS[answer] for word, answer in TYPED.items() if answer is not Choice.SKIP}
INCOMPARABLE = LABELS[Choice.SKIP]
#: The terminal asked in unless another is named (``PreferenceConfig.human_terminal``): the controlling one.
CONTROLLING_TERMINAL = "/dev/tty"
HELP = ("Type L (left is better), R (right is better), E (equally good), U (take back your last answer), "
        "or just Enter if they can't be compared.")
#: What may be typed (any case) to take back the last answer.
UNDO_WORDS = frozenset({"u", "undo"})


def parse_answer(text: str) -> float | Undo | None:
    """1.0, 0.0 or 0.5 for L / R / E (any case), None for an empty answer, ``UNDO`` for U / undo; raises
    InvalidAnswer otherwise."""
    if text.strip().lower() in UNDO_WORDS:
        return UNDO
    return parse_typed(text).label


def terminal_problem(path: str) -> str | None:
    """Why ``path`` cannot be used to ask questions, or None."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_NOCTTY)
    except OSError as e:
        return f"cannot open the terminal {path} ({e.strerror})"
    try:
        if not os.isatty(fd):
            return f"{path} is not a terminal"
    finally:
        os.close(fd)
    return None


class TerminalPrompt:
    """Writes questions to a terminal and collects the lines typed there, without blocking."""

    def __init__(self, path: str = CONTROLLING_TERMINAL) -> None:
        self.fd = os.open(path, os.O_RDWR | os.O_NOCTTY)
        self._partial = b""

    def say(self, text: str) -> None:
        os.write(self.fd, text.encode())

    def drain(self) -> None:
        """Forget anything typed before the question was asked."""
        while self.lines(timeout=0):
            pass
        self._partial = b""

    def lines(self, timeout: float) -> list[str]:
        """Complete lines typed so far (waits up to ``timeout`` s for the first)."""
        out: list[str] = []
        while select.select([self.fd], [], [], timeout)[0]:
            data = os.read(self.fd, 4096)
            if not data:
                break
            *done, self._partial = (self._partial + data).split(b"\n")
            out += [d.decode(errors="replace").rstrip("\r") for d in done]
            timeout = 0
        return out

    def close(self) -> None:
        try:
            os.close(self.fd)
        except OSError:
            pass
