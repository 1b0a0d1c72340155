"""Imported before Stable-Baselines3: the old ``gym`` package, if installed, imported with its banner swallowed.

SB3 imports ``gym`` when it is installed, to convert its spaces, and d3rlpy (drlhp's ``offline`` extra) requires it.
``import gym`` prints a deprecation notice of several lines to stderr, which would stand before every run's output
and every one-line error drlhp prints. drlhp never uses gym.
"""
from __future__ import annotations

import contextlib
import importlib.util
import io
import sys

if "gym" not in sys.modules and importlib.util.find_spec("gym") is not None:
    with contextlib.redirect_stderr(io.StringIO()):
        import gym  # noqa: F401
