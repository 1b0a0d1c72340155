"""A private Xvfb display and tmux server, for driving drlhp's human labelling as a person would: the
human-labelling tests' and ``human_labelling_rate.py``'s."""
from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import time
import uuid
from collections.abc import Iterator
from typing import Callable

TOOLS = ("Xvfb", "tmux", "xdotool", "import")


def missing_tools() -> list:
    return [t for t in TOOLS if shutil.which(t) is None]


@contextlib.contextmanager
def virtual_desktop() -> Iterator[tuple[str, dict, Callable[..., str]]]:
    """Yields (DISPLAY, an environment with it set, ``tmux(*args) -> stdout``); both servers stop afterwards."""
    read_fd, write_fd = os.pipe()
    xvfb = subprocess.Popen(["Xvfb", "-displayfd", str(write_fd), "-screen", "0", "1280x800x24", "-nolisten", "tcp"],
                            pass_fds=(write_fd,), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(write_fd)
    with os.fdopen(read_fd) as f:
        display = ":" + f.readline().strip()  # Xvfb writes its display number once it is ready
    socket = f"drlhp-{uuid.uuid4().hex[:8]}"
    env = dict(os.environ, DISPLAY=display)

    def tmux(*args: str) -> str:
        return subprocess.run(["tmux", "-L", socket, *args], env=env, capture_output=True, text=True, timeout=30).stdout

    try:
        yield display, env, tmux
    finally:
        tmux("kill-server")
        xvfb.terminate()
        xvfb.wait(10)


def wait_for_text(tmux: Callable[..., str], text: str, timeout: float = 60.0) -> str:
    """Poll the tmux pane until ``text`` shows (a bounded wait); returns the pane's text."""
    deadline = time.monotonic() + timeout
    while True:
        screen = tmux("capture-pane", "-p", "-S", "-500")
        if text in screen:
            return screen
        if time.monotonic() > deadline:
            raise TimeoutError(f"never saw {text!r} in the terminal:\n{screen}")
        time.sleep(0.05)
