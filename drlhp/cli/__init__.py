"""The ``drlhp`` command and the offline jobs behind it: collect, train-reward, eval-reward, show-prefs, plot.

``main`` is the console script's entry point (``drlhp = "drlhp.cli:main"``).
"""
from drlhp.cli.main import main

__all__ = ["main"]
